// OssGate (issue 17; docs/security.md "OSS <-> MDS"): with a cluster key, the
// MDS serves a RegisterOssReq or HeartbeatReq only from an OSS that proves it
// holds the key, one challenge per request (common/auth/cluster_auth.h, the
// wire in mds.proto's OssHelloReq), and seals its OK answer with a MAC the
// OSS checks. Nothing else changes: without a key every request passes as
// before, and an OssHelloReq is refused EOPNOTSUPP so that a keyed OSS
// learns at once that this MDS is not keyed.
//
// A nonce is kept per client id for kNonceLifetimeMs and spent by the next
// register or heartbeat of that id, right or wrong: a captured request sent
// again finds no challenge (ESTALE) and a wrong key is EACCES, each logged in
// one line. Thread-safe.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "common/auth/signing_keys.h"
#include "common/status.h"
#include "mds.pb.h"

namespace sfs::mds {

class OssGate {
 public:
  static constexpr int64_t kNonceLifetimeMs = 30000;

  // REQUIRES: before serving; signing outlives us. key: the cluster key's
  // 32 bytes. Every sealed answer carries signing's published keys,
  // encrypted under a key derived from it (common/auth/key_wrap.h).
  void set_key(std::string key, auth::KeyRotator* signing) {
    key_ = std::move(key);
    signing_ = signing;
  }
  bool keyed() const { return key_.has_value(); }

  // The nonces an authenticated request's answer is sealed with.
  struct Seal {
    std::string oss_nonce;
    std::string nonce;
  };
  // Before the dispatch. True: *resp is the whole answer (a hello, or a
  // refusal). False: go on; *seal is set for an authenticated register or
  // heartbeat, whose OK answer then goes through Sign.
  bool Admit(const proto::MdsRequest& r, proto::MdsResponse* resp, std::optional<Seal>* seal);
  // If resp is OK: puts the sealed signing keys in its result, then sets its
  // oss_reply_mac over that result. REQUIRES: keyed().
  void Sign(const Seal& seal, const proto::MdsRequest& r, proto::MdsResponse* resp) const;

 private:
  Status Hello(const proto::MdsRequest& r, proto::MdsResponse* resp);
  Status Check(const proto::MdsRequest& r, Seal* seal);

  struct Pending {
    std::string oss_nonce;
    std::string nonce;
    int64_t expires_ms = 0;
  };
  std::optional<std::string> key_;
  auth::KeyRotator* signing_ = nullptr;
  std::mutex mu_;
  std::unordered_map<uint64_t, Pending> pending_;  // GUARDED_BY(mu_), by client id
};

}  // namespace sfs::mds
