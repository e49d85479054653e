// JobStats: the table, its thread-local lookup cache and its eviction.
#include "common/metrics/job_stats.h"

#include <time.h>

#include <array>
#include <limits>

namespace sfs::metrics {
namespace {

std::atomic<uint64_t> next_table_id{1};

int64_t CoarseNowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

// A few recent (table, job) -> slot entries per thread, round-robin replaced.
struct CacheEntry {
  uint64_t table = 0;
  uint64_t generation = 0;
  std::string job;
  void* slot = nullptr;
};
constexpr size_t kCacheEntries = 4;
thread_local std::array<CacheEntry, kCacheEntries> cache;
thread_local size_t cache_next = 0;

}  // namespace

JobStats::JobStats(std::string prefix, size_t max_jobs)
    : prefix_(std::move(prefix)),
      max_jobs_(max_jobs == 0 ? 1 : max_jobs),
      id_(next_table_id.fetch_add(1)) {
  other_.job = "other";
}

void JobStats::Add(std::string_view job, uint64_t read_bytes, uint64_t write_bytes) {
  if (job.empty()) return;
  if (job.size() > kMaxJobIdBytes) job = job.substr(0, kMaxJobIdBytes);
  uint64_t gen = generation_.load(std::memory_order_acquire);
  Slot* s = nullptr;
  for (CacheEntry& e : cache) {
    if (e.table == id_ && e.generation == gen && e.job == job) {
      s = static_cast<Slot*>(e.slot);
      break;
    }
  }
  if (s == nullptr) {
    s = Resolve(job);
    CacheEntry& e = cache[cache_next++ % kCacheEntries];
    e = CacheEntry{id_, generation_.load(std::memory_order_acquire), std::string(job), s};
  }
  s->ops.fetch_add(1, std::memory_order_relaxed);
  if (read_bytes != 0) s->read_bytes.fetch_add(read_bytes, std::memory_order_relaxed);
  if (write_bytes != 0) s->write_bytes.fetch_add(write_bytes, std::memory_order_relaxed);
  int64_t now = CoarseNowMs();
  if (s->last_use_ms.load(std::memory_order_relaxed) != now) {
    s->last_use_ms.store(now, std::memory_order_relaxed);
  }
}

JobStats::Slot* JobStats::Resolve(std::string_view job) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string key(job);
  if (auto it = by_job_.find(key); it != by_job_.end()) return it->second;
  Slot* s = nullptr;
  if (slots_.size() < max_jobs_) {
    s = &slots_.emplace_back();
  } else {
    int64_t oldest = std::numeric_limits<int64_t>::max();
    for (Slot& c : slots_) {
      int64_t t = c.last_use_ms.load(std::memory_order_relaxed);
      if (t < oldest) {
        oldest = t;
        s = &c;
      }
    }
    generation_.fetch_add(1, std::memory_order_acq_rel);  // before the slot changes hands
    Fold(*s);
    by_job_.erase(s->job);
  }
  s->job = key;
  s->last_use_ms.store(CoarseNowMs(), std::memory_order_relaxed);
  by_job_.emplace(std::move(key), s);
  return s;
}

// Counters only go up, so the evicted job's counts move to "other" and its
// slot starts from zero by subtracting what moved (an Add racing this keeps
// its increment in the slot).
void JobStats::Fold(Slot& s) {
  for (std::atomic<uint64_t> Slot::*f : {&Slot::ops, &Slot::read_bytes, &Slot::write_bytes}) {
    uint64_t v = (s.*f).load(std::memory_order_relaxed);
    (other_.*f).fetch_add(v, std::memory_order_relaxed);
    (s.*f).fetch_sub(v, std::memory_order_relaxed);
  }
}

size_t JobStats::tracked() const {
  std::lock_guard<std::mutex> lock(mu_);
  return by_job_.size();
}

void JobStats::Render(Writer& w) const {
  struct Metric {
    const char* suffix;
    const char* help;
    std::atomic<uint64_t> Slot::*field;
  };
  const Metric kMetrics[] = {
      {"_ops_total", "Requests by job (SFS_JOBID of the calling process).", &Slot::ops},
      {"_read_bytes_total", "Bytes read by job.", &Slot::read_bytes},
      {"_write_bytes_total", "Bytes written by job.", &Slot::write_bytes},
  };
  std::lock_guard<std::mutex> lock(mu_);
  for (const Metric& m : kMetrics) {
    std::string name = prefix_ + m.suffix;
    w.Family(name, m.help, "counter");
    for (const Slot& s : slots_) {
      if (!s.job.empty())
        w.Sample(name, {{"job", s.job}}, (s.*m.field).load(std::memory_order_relaxed));
    }
    uint64_t other = (other_.*m.field).load(std::memory_order_relaxed);
    if (other != 0) w.Sample(name, {{"job", "other"}}, other);
  }
}

}  // namespace sfs::metrics
