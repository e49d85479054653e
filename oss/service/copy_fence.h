// CopyFence: which mirror copies this OSS must not serve to clients (issue 16;
// docs/redundancy.md "The stale-copy fence").
//
// A copy whose OSS was away while writers went on is marked stale at the MDS
// (durably), but a client that fetched the layout before still lists it as
// good and would read the bytes it missed once the OSS is back. So the MDS
// sends every OSS, in each heartbeat's answer, the copies on its OSTs that are
// not ok (a full set, re-sent only when its version moved), and a client's
// read of a mirror copy (OssRequest.mirror_copy) is refused with ESTALE and
// OssResponse.stale_copy while the copy is in that set: the client reads
// another copy and stops using this one.
//
// The set is only as good as its last sync. Until the first sync after the
// OSS started, and after any stretch in which the registrar did not run when
// it meant to (the process was stopped, or starved: the MDS may have marked
// copies meanwhile), every mirror-copy read is refused until the next sync.
// An MDS that is down does not count: the registrar keeps running (its calls
// fail), so copies go on being served, and no copy can be marked stale while
// the MDS is down. A partition between this OSS and the MDS that heals is
// served on the old set for at most one heartbeat.
//
// Thread safety: all methods may be called concurrently.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <set>
#include <shared_mutex>
#include <utility>
#include <vector>

#include "common/status.h"

namespace sfs::oss {

class CopyFence {
 public:
  using Clock = std::chrono::steady_clock;
  using Object = std::pair<uint32_t, uint64_t>;  // (OST, oid)

  // Off until the registrar arms it: an OSS without an MDS fences nothing.
  void Arm() { armed_.store(true, std::memory_order_release); }
  bool armed() const { return armed_.load(std::memory_order_acquire); }

  // The registrar, before each wait or call that should end within d: if it
  // has not come back by then, the process was away.
  void Expect(std::chrono::milliseconds d);
  // The registrar, back from that wait or call: notes an absence (a late
  // return), which holds until the next Synced.
  void Back();
  // A heartbeat answer: the MDS run and version of its set, and the set when
  // it sent one (the version differs from ours), else nullptr.
  void Synced(uint64_t epoch, uint64_t version, const std::vector<Object>* set);
  // The MDS marked these ok: out of the set now (the next heartbeat's full
  // set agrees, the version having moved).
  void Lift(const std::vector<Object>& objects);
  // What to send the MDS so it knows which set we hold.
  uint64_t epoch() const;
  uint64_t version() const;

  // OK, or ESTALE naming why this client read of a mirror copy is refused;
  // *in_set: because the MDS has it not ok (else: not synced since away,
  // which passes within moments: the client may ask again).
  Status CheckRead(uint32_t ost, uint64_t oid, bool* in_set = nullptr) const;
  size_t size() const;

 private:
  static int64_t Now() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               Clock::now().time_since_epoch()).count();
  }
  void LogSizeLocked() const;  // REQUIRES: mu_ held
  std::atomic<bool> armed_{false};
  std::atomic<bool> away_{true};            // never synced yet
  std::atomic<int64_t> deadline_ms_{INT64_MAX};
  mutable std::shared_mutex mu_;
  std::set<Object> fenced_;  // GUARDED_BY(mu_)
  uint64_t epoch_ = 0;       // GUARDED_BY(mu_)
  uint64_t version_ = 0;     // GUARDED_BY(mu_)
};

}  // namespace sfs::oss
