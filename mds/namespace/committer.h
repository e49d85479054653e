// Committer: decides when the namespace's writes become durable, the way
// ext4's journal (commit=N) and Lustre's MDT do.
//
// A mutating op writes its batch to the KvStore unsynced and replies: the
// batch is in LevelDB's log in the OS page cache, so it survives the death of
// the sfs-mds process but not of the machine. A commit thread then calls
// KvStore::Sync() every `interval` if something was written since the last
// commit, bounding what a power loss can take to one interval. Commit() is
// for callers that need durability now (the SyncReq behind a client's fsync
// and fsyncdir, object destroys): it returns once everything noted before it
// is durable, joining a running commit where it can (KvStore::Sync groups
// concurrent callers). With interval 0 there is no thread and the namespace
// commits before every reply: an op waits for its Commit() (sync each op),
// or, inside a DeferScope (the RPC service), returns at once having noted the
// write, and the service holds the reply until WhenDurable() says a commit
// covered it. A waiter thread then fdatasyncs back to back while anything
// waits, so every reply waits for at most two commits and concurrent ops
// share one (group commit), without holding a worker or the I/O thread.
//
// A failed Sync is sticky: the OS may have dropped the dirty pages it could
// not write, so no later Sync can promise what came before it; every later
// Commit() fails with the first error (as ext4 aborts its journal).
//
// Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "common/metrics/metrics.h"
#include "common/status.h"
#include "mds/namespace/kv_store.h"

namespace sfs::mds {

inline constexpr int64_t kDefaultCommitIntervalMs = 0;

class Committer {
 public:
  // REQUIRES: store outlives the Committer; interval_ms >= 0 (0 = sync each op).
  Committer(KvStore* store, int64_t interval_ms);
  ~Committer();

  bool sync_each_op() const { return interval_.count() == 0; }
  // Records that a batch was written (call after KvStore::Write returned);
  // returns its number for WhenDurable.
  uint64_t NoteWrite() { return written_.fetch_add(1, std::memory_order_acq_rel) + 1; }
  // The number of writes noted so far, and of those known durable.
  uint64_t written() const { return written_.load(std::memory_order_acquire); }
  uint64_t committed() const { return committed_.load(std::memory_order_acquire); }
  // Calls fn once write number `seq` (and every one before it) is durable,
  // with the commit's status (the sticky error if commits failed); at once,
  // on this thread, if it is already. Otherwise fn runs on the waiter thread
  // (started on first use), which must not block in it for long.
  void WhenDurable(uint64_t seq, std::function<void(const Status&)> fn);

  // While one is alive on a thread, Namespace ops in sync-each-op mode do not
  // wait for their commit there: they note what to wait for in the scope
  // (seq(), 0 if nothing), and the caller waits with WhenDurable. Nests.
  class DeferScope {
   public:
    DeferScope();
    ~DeferScope();
    DeferScope(const DeferScope&) = delete;
    DeferScope& operator=(const DeferScope&) = delete;
    uint64_t seq() const { return seq_; }
    // The innermost scope of this thread, or null.
    static DeferScope* Current();
    void Note(uint64_t seq) { seq_ = seq > seq_ ? seq : seq_; }

   private:
    DeferScope* const outer_;
    uint64_t seq_ = 0;
  };
  // Returns once every write noted before this call is durable. No fsync when
  // nothing was noted since the last commit.
  Status Commit();
  // Starts the periodic commit thread (nothing with interval 0). Idempotent.
  void Start();
  // Stops the thread, then commits everything written so far (also writes
  // that were not noted). Called again, commits what was noted since.
  Status Stop();

  // For tests and logs: commits that ran a Sync, and passes of the thread.
  uint64_t commits() const { return commits_.load(); }
  // Every KvStore::Sync's time goes there too (metrics; null = none). Any thread.
  void set_sync_histogram(metrics::Histogram* h) { sync_histogram_.store(h); }
  uint64_t sync_failures() const { return sync_failures_.load(); }
  uint64_t ticks() const { return ticks_.load(); }

 private:
  void Loop();
  void WaiterLoop();
  Status SyncStore();
  // committed_ = max(committed_, target).
  void RaiseCommitted(uint64_t target);

  KvStore* const store_;
  const std::chrono::milliseconds interval_;
  std::atomic<uint64_t> written_{0};    // writes noted
  std::atomic<uint64_t> committed_{0};  // writes noted before a finished Sync began
  std::atomic<uint64_t> commits_{0};
  std::atomic<uint64_t> sync_failures_{0};
  std::atomic<metrics::Histogram*> sync_histogram_{nullptr};
  std::atomic<uint64_t> ticks_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;      // GUARDED_BY(mu_)
  bool stopped_ = false;   // GUARDED_BY(mu_): Stop() finished its final commit
  Status failed_;          // GUARDED_BY(mu_): the first failed Sync, sticky
  std::thread thread_;
  struct Waiter {
    uint64_t seq;
    std::function<void(const Status&)> fn;
  };
  std::vector<Waiter> waiters_;  // GUARDED_BY(mu_)
  std::thread waiter_thread_;    // GUARDED_BY(mu_) to start; joined by Stop()
};

}  // namespace sfs::mds
