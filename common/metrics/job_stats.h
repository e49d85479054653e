// JobStats: per-job operation and byte counters (Lustre's jobstats) with a
// bound on how many jobs get a label of their own.
//
// A request carries its job id (the SFS_JOBID of the process that made it;
// docs/operations.md "Jobstats"). At most max_jobs ids are tracked; when a new
// one arrives and the table is full, the least recently used id is folded into
// job="other" (its counts move there) and its slot goes to the new id. So a
// scrape shows at most max_jobs + 1 job series per metric, and totals summed
// over jobs never go down.
//
// Hot path: Add() for a job seen recently by this thread is a string compare
// and relaxed atomic adds (a small thread-local cache of job -> slot, checked
// against the table's eviction generation); only a job new to the thread, or
// a cache made stale by an eviction, takes the table's mutex. An Add racing
// the eviction of its job may land on the job that takes the slot: a few
// operations at most, only when more than max_jobs jobs are active.
//
// Thread safety: all methods may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/metrics/metrics.h"

namespace sfs::metrics {

class JobStats {
 public:
  static constexpr size_t kDefaultMaxJobs = 1000;
  // Longer job ids are cut to this many bytes (a label, not a payload).
  static constexpr size_t kMaxJobIdBytes = 128;

  // prefix: the metric names' start, e.g. "sfs_oss_job" gives
  // sfs_oss_job_ops_total, sfs_oss_job_read_bytes_total, sfs_oss_job_write_bytes_total.
  explicit JobStats(std::string prefix, size_t max_jobs = kDefaultMaxJobs);

  // Counts one request of `job` ("" = none: not counted).
  void Add(std::string_view job, uint64_t read_bytes, uint64_t write_bytes);
  // Writes the three families (register with Registry::AddCollector).
  void Render(Writer& w) const;
  size_t tracked() const;  // ids with a slot of their own

 private:
  struct Slot {
    std::string job;  // GUARDED_BY(mu_)
    std::atomic<uint64_t> ops{0}, read_bytes{0}, write_bytes{0};
    std::atomic<int64_t> last_use_ms{0};  // coarse monotonic clock: LRU order
  };
  Slot* Resolve(std::string_view job);
  void Fold(Slot& s);  // REQUIRES: mu_ held

  const std::string prefix_;
  const size_t max_jobs_;
  const uint64_t id_;                    // tells thread-local caches of different tables apart
  std::atomic<uint64_t> generation_{0};  // bumped at each eviction
  mutable std::mutex mu_;
  std::deque<Slot> slots_;                         // GUARDED_BY(mu_); never shrinks
  std::unordered_map<std::string, Slot*> by_job_;  // GUARDED_BY(mu_)
  Slot other_;                                     // folded counts (its job = "other")
};

}  // namespace sfs::metrics
