// CapabilityCache: the capabilities an OSS has verified, by token.
//
// A client sends the same token with every request on a file's objects, for
// the token's whole life (minutes), so the OSS verifies it once and then
// finds it here by its bytes: a hash lookup instead of an HMAC-SHA256 (whose
// OpenSSL 3 one-shot form also fetches the digest and builds a context each
// call). Keyed by the exact token bytes, a hit is what verifying those bytes
// again would say, except for expiry and the key's retirement, checked on every hit. Only
// tokens that verified are kept, so a forged token pays the MAC every time.
// Bounded: a shard that fills up is emptied (tokens are re-verified once).
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <array>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/auth/capability.h"
#include "common/auth/signing_keys.h"

namespace sfs::auth {

class CapabilityCache {
 public:
  static constexpr size_t kShards = 16;
  static constexpr size_t kPerShard = 2048;

  // Verify(token, ring, now), from the cache when the token verified before
  // and ring still holds the key it names (a retired key's tokens are
  // refused from the cache too). REQUIRES: the same ring on every call.
  Result<std::shared_ptr<const Capability>> Verify(std::string_view token, const KeyRing& ring,
                                                   int64_t now);
  size_t size() const;
  uint64_t hits() const;

 private:
  struct Shard {
    mutable std::mutex mu;
    std::unordered_map<std::string, std::shared_ptr<const Capability>> map;
    uint64_t hits = 0;
  };
  std::array<Shard, kShards> shards_;
};

}  // namespace sfs::auth
