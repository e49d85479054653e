#include "common/auth/capability_cache.h"

#include <functional>

namespace sfs::auth {

Result<std::shared_ptr<const Capability>> CapabilityCache::Verify(std::string_view token,
                                                                  const KeyRing& ring,
                                                                  int64_t now) {
  Shard& s = shards_[std::hash<std::string_view>{}(token) % kShards];
  {
    std::lock_guard lock(s.mu);
    auto it = s.map.find(std::string(token));
    if (it != s.map.end()) {
      if (now >= it->second->expiry) {
        s.map.erase(it);
        return Status::Errno(EACCES, "capability expired");
      }
      if (!ring.Has(it->second->key_id)) {
        const uint32_t id = it->second->key_id;
        s.map.erase(it);
        return UnknownKey(id);
      }
      ++s.hits;
      return it->second;
    }
  }
  Result<Capability> cap = auth::Verify(token, ring, now);
  if (!cap.ok()) return cap.status();
  auto shared = std::make_shared<const Capability>(std::move(*cap));
  std::lock_guard lock(s.mu);
  if (s.map.size() >= kPerShard) s.map.clear();
  s.map.emplace(std::string(token), shared);
  return shared;
}

size_t CapabilityCache::size() const {
  size_t n = 0;
  for (const Shard& s : shards_) {
    std::lock_guard lock(s.mu);
    n += s.map.size();
  }
  return n;
}

uint64_t CapabilityCache::hits() const {
  uint64_t n = 0;
  for (const Shard& s : shards_) {
    std::lock_guard lock(s.mu);
    n += s.hits;
  }
  return n;
}

}  // namespace sfs::auth
