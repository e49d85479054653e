// LockBook: this client's side of the cluster-wide locks (issue 14). It
// sends lock requests to the MDS (MdsClient::Lock), turns a blocking one
// into a series of bounded waits (the MDS answers EINPROGRESS after each,
// so no call outlives its deadline), and remembers what each owner holds
// so that
//  - a close or flush that releases an owner's locks costs no MDS call when
//    the owner holds none (the common case: most files are never locked);
//  - after an MDS restart every held lock is re-asserted (Reclaim) during
//    the MDS's grace period, before anyone else can take it.
// A request whose outcome is unknown (EIO after a lost connection) leaves
// the owner marked, so its release still goes to the MDS.
//
// Coherence: before an unlock that releases something, the caller's flush
// runs (write-behind drained, size reported): what was written under the
// lock is visible to the next holder.
//
// Thread-safe; mu_ is a leaf, never held across an MDS call.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "client/lib/client.h"
#include "client/lib/mds_client.h"
#include "common/lock/lock_range.h"

namespace sfs::client {

class LockBook {
 public:
  using Flush = std::function<Status()>;
  // Told the file's size at a grant (LockResp.size).
  using Granted = std::function<void(uint64_t size)>;
  // REQUIRES: mds outlives the book. wait: how long one MDS wait may last.
  LockBook(MdsClient* mds, std::chrono::milliseconds wait) : mds_(mds), wait_(wait) {}

  Result<LockSpec> Test(uint64_t ino, uint64_t owner, bool flock, const LockSpec& want);
  Status Set(uint64_t ino, uint64_t owner, bool flock, const LockSpec& l, bool wait,
             const Flush& flush, const Granted& granted = {});
  void Cancel(uint64_t ino, uint64_t owner, bool flock);
  Status Release(uint64_t ino, uint64_t owner, bool flock, const Flush& flush);
  // After an MDS restart: re-asserts every held lock. Returns how many
  // ranges the MDS refused (taken by someone else meanwhile; logged).
  int Reclaim();

 private:
  struct Key {
    uint64_t ino;
    bool flock;
    uint64_t owner;
    auto operator<=>(const Key&) const = default;
  };
  struct Held {
    std::vector<lock::Range> ranges;
    uint32_t pid = 0;
  };
  // Whether owner holds anything (or may, after an unknown outcome).
  bool MayHold(const Key& k);
  void Record(const Key& k, const lock::Range& r, uint32_t pid, bool known);

  MdsClient* const mds_;
  const std::chrono::milliseconds wait_;
  std::mutex mu_;
  std::map<Key, Held> held_;      // GUARDED_BY(mu_)
  std::set<Key> cancelled_;       // GUARDED_BY(mu_): waits a signal ended
};

}  // namespace sfs::client
