// Rotating capability signing keys (issue 17; docs/security.md "Rotating
// signing keys"). The MDS makes a random 32-byte key per period and signs
// every capability with the current one, naming it by key_id in the token;
// the OSSes get the keys from the MDS (sealed, key_wrap.h) and verify with
// whichever one a token names. The cluster key signs no capability.
//
// KeyRotator (the MDS) holds, at any time:
//   - the current key, which signs;
//   - the next key, published to the OSSes (in every heartbeat answer) before
//     it signs anything, so that no OSS meets a token of a key it was never
//     told of (unless it has missed heartbeats: the client then retries);
//   - earlier keys until every token they signed has expired: a key stops
//     signing at a rotation and is retired `lifetime` later.
// A rotation happens every `period`, or on RotateNow (`sfs key rotate`, a
// suspected leak): then the next key is thrown away (it was published, so it
// may have leaked too), a fresh one is published, and after `publish` it
// becomes current and every older key is retired at once: tokens they signed
// are refused (EACCES) from the OSSes' next heartbeat on, and clients renew.
// Key ids are random at start and then count up, so two MDS runs do not
// reuse each other's ids (an OSS's cache of verified tokens is keyed by id).
//
// KeyRing (an OSS) holds what the MDS published last: at most kMaxKeys keys
// and which one is current (what the OSS signs its own pulls with).
//
// Times are unix milliseconds passed in, so tests need no clock.
// Thread safety: every method of both classes may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/auth/capability.h"

namespace sfs::auth {

// The default period (sfs-mds --cap-key-period-s): 15 minutes, longer than a
// capability's life (10), so at most three keys are live (previous, current,
// next), and short enough that a key read out of an OSS's memory forges for
// at most two periods and a lifetime (40 minutes).
constexpr int64_t kDefaultKeyPeriodSec = 900;
// A forced rotation's key is published this long before it signs: two or
// three heartbeats (1 s by default) for every OSS to learn it.
constexpr int64_t kForcedRotationPublishMs = 3000;

// One key as the MDS publishes it.
struct PublishedKey {
  ClusterKey key;
  bool current = false;
};

class KeyRotator {
 public:
  // period_ms: how long a key signs; lifetime_ms: how long a capability
  // lasts (a key is kept that long after it stops signing); publish_ms: how
  // long a forced rotation's key is published before it signs.
  // REQUIRES: all > 0.
  KeyRotator(int64_t period_ms, int64_t lifetime_ms, int64_t publish_ms);

  // The key that signs now (rotating first if due).
  ClusterKey Current(int64_t now_ms);
  // Every key an OSS must accept now: retired ones are left out.
  std::vector<PublishedKey> Published(int64_t now_ms);

  struct Rotation {
    uint32_t new_id = 0;         // the key that will sign
    int64_t signs_from_ms = 0;   // when it starts to
    std::vector<uint32_t> retiring;  // retired then, at once
  };
  // Starts a forced rotation (above). A second call before it completes
  // replaces its key again.
  Rotation RotateNow(int64_t now_ms);
  int64_t period_ms() const { return period_ms_; }

 private:
  struct Entry {
    ClusterKey key;
    int64_t retire_ms = INT64_MAX;  // refused from then on
  };
  void AdvanceLocked(int64_t now_ms);
  ClusterKey MakeKeyLocked();

  const int64_t period_ms_, lifetime_ms_, publish_ms_;
  std::mutex mu_;
  // Oldest first; the last is the next key, the one before it the current.
  std::vector<Entry> keys_;         // GUARDED_BY(mu_)
  int64_t switch_ms_ = 0;           // GUARDED_BY(mu_): the next becomes current then
  bool forced_ = false;             // GUARDED_BY(mu_): that switch retires all older keys
  uint32_t next_id_ = 0;            // GUARDED_BY(mu_)
};

class KeyRing {
 public:
  static constexpr size_t kMaxKeys = 8;

  // Replaces the keys with what the MDS published, oldest first: the last
  // kMaxKeys of them (the newest, which the current and next are).
  void Install(std::vector<PublishedKey> keys);
  // The key named id, or nullopt: unknown, or retired by the MDS.
  std::optional<ClusterKey> Find(uint32_t id) const;
  // Find(id).has_value(), without copying the key.
  bool Has(uint32_t id) const;
  // The key the MDS signs with now, or nullopt before the first Install.
  std::optional<ClusterKey> Current() const;
  std::vector<uint32_t> ids() const;

 private:
  using Set = std::vector<PublishedKey>;
  mutable std::mutex mu_;
  std::shared_ptr<const Set> set_ = std::make_shared<const Set>();  // GUARDED_BY(mu_)
};

// Checks a token against the key its key_id names in ring (Verify, capability.h):
// EACCES "capability of an unknown or retired key" when ring has none.
Result<Capability> Verify(std::string_view token, const KeyRing& ring, int64_t now);
// The key_id a token names, read without checking anything (0 if too short).
uint32_t TokenKeyId(std::string_view token);
// True iff st is the refusal above: the client may renew and retry.
bool IsUnknownKey(const Status& st);
// That refusal, for key id.
Status UnknownKey(uint32_t id);
// 32 random bytes (OpenSSL RAND_bytes). SFS_CHECKs it got them.
std::string RandomKeyBytes();

}  // namespace sfs::auth
