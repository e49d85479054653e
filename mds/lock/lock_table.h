// LockTable: the cluster-wide file locks (issue 14) — POSIX byte-range and
// OFD locks (fcntl) and flock(2) locks, granted by the MDS to (client,
// owner) pairs, where owner is the lock owner the client's kernel names
// (a process's files table for POSIX locks, an open file for OFD and
// flock locks). flock locks live in a space of their own, as on Linux.
//
// Set() answers at once (granted, EAGAIN on a conflict without wait,
// EDEADLK when waiting would close a cycle of waiting owners) or, for a
// blocking request, holds it as a waiter and calls its completion when the
// lock is granted — woken by the release that makes room, in arrival
// order among waiters that conflict. A waiter is answered EINPROGRESS
// ("still waiting, ask again") after its wait_ms, so no request is held
// longer than the client's RPC deadline; Cancel() ends it with EINTR (a
// signal at the waiting process).
//
// Liveness: Touch() notes a client as heard from. A client silent for
// client_timeout_ms loses its locks and its waits (a crashed or cut-off
// node never holds a lock for ever).
//
// Restart: the table is memory only; clients re-assert their locks after
// an MDS restart (reclaim). For grace_ms after start only reclaims are
// granted; other requests wait for the grace period to end, so a lock held
// before the restart is never given to someone else.
//
// Cached locks (libsfs's mirror-range locks, LockRequest.cache): a write
// lock asked with cache set is widened to the whole file when nobody else
// holds or waits on any of it, the client may keep one (may_cache: it has a
// watch to hear a recall on) and no cached lock of the file was recalled in
// the last cache_quiet_ms (contended files get the ranges asked for, as
// Lustre stops widening extent locks under contention). The client keeps it
// across its writes, so a lone writer's small writes cost no lock round
// trip. A request of another owner that conflicts with it calls recall once
// (the MDS sends the holder Invalidation.lock_recall) and waits as for any
// lock; the holder unlocks once its writes under it are done. A holder that
// never answers keeps it until it expires as a client (client_timeout_ms),
// as for any lock.
//
// Thread-safe. Completions run without the lock held, on the caller's
// thread or the table's timer thread; they must not block.
#pragma once

#include <condition_variable>
#include <atomic>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/lock/lock_range.h"
#include "common/status.h"

namespace sfs::mds {

// libsfs's own range locks (LockReq.ec_rows: EC rows, mirror ranges) are
// keyed apart from the inode's fcntl locks by this bit: inode numbers never
// reach it.
inline constexpr uint64_t kEcRowSpace = uint64_t{1} << 63;

struct LockOwner {
  uint64_t client = 0;
  uint64_t owner = 0;
  auto operator<=>(const LockOwner&) const = default;
};

struct LockRequest {
  uint64_t ino = 0;
  bool flock = false;   // flock(2) space; else POSIX/OFD byte ranges
  LockOwner owner;
  uint32_t pid = 0;     // for F_GETLK's answer
  lock::Range range;    // type kUnlock releases
  bool wait = false;    // F_SETLKW / flock without LOCK_NB
  bool reclaim = false; // re-asserted after an MDS restart
  int64_t wait_ms = 10000;
  bool cache = false;   // a write lock the client would keep (see "Cached locks")
};

// A lock someone holds (F_GETLK's answer).
struct LockHolder {
  LockOwner owner;
  uint32_t pid = 0;
  lock::Range range;
};

struct LockOptions {
  int64_t client_timeout_ms = 30000;
  int64_t grace_ms = 0;           // after start: only reclaims are granted
  // Called once, before the first lock is granted (sfs-mds records that a
  // restart must give clients a grace period to reclaim).
  std::function<void()> on_first_grant;
  int64_t cache_quiet_ms = 2000;  // no widened grant this long after a recall of the file's
};

// Cached locks' links to the clients (sfs-mds: the LeaseTable's watches).
struct CacheHooks {
  std::function<bool(uint64_t client)> may_cache;  // it would hear a recall
  // Asks holder to give back its cached lock on key (the inode number with
  // its space bit, kEcRowSpace). Runs without the table's lock; must not block.
  std::function<void(uint64_t key, LockOwner holder)> recall;
};

class LockTable {
 public:
  using Clock = std::function<int64_t()>;  // monotonic milliseconds
  using Done = std::function<void(Status)>;

  explicit LockTable(LockOptions opts, Clock clock = {});
  ~LockTable();
  LockTable(const LockTable&) = delete;
  LockTable& operator=(const LockTable&) = delete;

  // F_GETLK: the first lock of another owner that conflicts with r, if any.
  std::optional<LockHolder> Test(const LockRequest& r);
  // Lock, or unlock (r.range.type == kUnlock). done is called exactly once.
  void Set(const LockRequest& r, Done done);
  // Ends owner's wait on ino (if any) with EINTR.
  void Cancel(uint64_t ino, bool flock, LockOwner owner);
  void Touch(uint64_t client);
  // Before the first Set; cached locks are never granted without it.
  void SetCacheHooks(CacheHooks hooks);
  // Whether owner holds ino's cached (widened) lock.
  bool HoldsCached(uint64_t ino, LockOwner owner);
  // Drops client's cached locks (it stopped watching: an unmount).
  void DropCached(uint64_t client);
  // Drops every lock and wait of client (its waits end with EIO).
  void DropClient(uint64_t client);
  // Expires silent clients, waits past their wait_ms and the grace period;
  // the timer thread calls it, tests may too.
  void Housekeep();

  size_t LockCount();  // ranges held, all owners
  size_t WaiterCount();

 private:
  struct Key {
    uint64_t ino;
    bool flock;
    auto operator<=>(const Key&) const = default;
  };
  struct Waiter {
    LockRequest req;
    Done done;
    int64_t deadline_ms;
  };
  struct Resource {
    std::map<LockOwner, std::vector<lock::Range>> held;
    std::list<Waiter> waiters;
    std::map<LockOwner, uint32_t> pids;
    std::optional<LockOwner> cached;  // holds the widened lock
    bool recalled = false;            // recall already asked of it
  };
  using Completions = std::vector<std::pair<Done, Status>>;

  // The owners whose locks on k conflict with r. REQUIRES: mu_ held.
  std::vector<LockOwner> ConflictsLocked(const Resource& res, const LockRequest& r) const;
  // Whether owner `from` waiting on `blockers` would wait, through other
  // waits, on itself. REQUIRES: mu_ held.
  bool WouldDeadlockLocked(LockOwner from, std::vector<LockOwner> blockers) const;
  void GrantLocked(Resource* res, const LockRequest& r);
  // Grants the waiters of k that no longer conflict. REQUIRES: mu_ held.
  void WakeLocked(const Key& k, Completions* out);
  void EraseIfEmptyLocked(const Key& k);
  bool InGraceLocked() const;
  // The widened whole-file range, if r may have it. REQUIRES: mu_ held.
  bool MayWidenLocked(const Key& k, const Resource& res, const LockRequest& r) const;
  // Drops blockers' cached lock: the recall to send, if not sent yet.
  // REQUIRES: mu_ held.
  void RecallLocked(const Key& k, Resource* res, const std::vector<LockOwner>& blockers,
                    std::vector<std::function<void()>>* out);
  void TimerLoop();

  const LockOptions opts_;
  const Clock clock_;
  const int64_t start_ms_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<Key, Resource> res_;                    // GUARDED_BY(mu_)
  std::list<std::pair<LockRequest, Done>> grace_;  // GUARDED_BY(mu_): held for the grace period
  std::unordered_map<uint64_t, int64_t> seen_;     // GUARDED_BY(mu_): clients with locks/waits
  std::atomic<size_t> tracked_{0};                 // seen_.size(), read without mu_ by Touch
  bool granted_any_ = false;                       // GUARDED_BY(mu_)
  CacheHooks cache_hooks_;                         // set before use
  std::map<Key, int64_t> recalls_;                 // GUARDED_BY(mu_): last recall per file
  bool stop_ = false;                              // GUARDED_BY(mu_)
  std::thread timer_;
};

}  // namespace sfs::mds
