// Quality of service on an OSS: which request runs next when jobs and tenants
// compete for it (issue 17; docs/qos.md).
//
// Every request belongs to a class: "job:<SFS_JOBID>", "tenant:<name>" when
// a rule names its tenant and none its job, or "resync" (the MDS's mirror
// copies). A class's rule (QosRule) gives
//   - limits: read MiB/s, write MiB/s and IOPS it may never exceed on this
//     OSS, whatever else is idle (a GCRA token bucket each, with a burst of
//     kBurst seconds of its rate);
//   - a reservation: the IOPS and MiB/s it is served ahead of everyone while
//     it is below them (mClock's reservation tag);
//   - a weight: its share of what is left, by start-time fair queuing over
//     a cost of 1 + bytes/64 KiB per request (a 1 MiB write costs as much as
//     17 small reads: about their ratio of disk time).
// A class without a rule has weight 1 and no limit, so with QoS on, jobs that
// have no rule still share the OSS fairly instead of first come first served.
//
// QosQueue is the policy, single-threaded, over an injected clock (seconds),
// so that its unit test is exact. QosScheduler runs it: a request is queued
// there and a pool of executor threads (the OSS's concurrency) takes the next
// one the policy allows, sleeping until a limited class becomes eligible. With
// no rule at all the OSS does not queue anything (OssService bypasses it).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace sfs::oss {

struct QosRule {
  // Limits; 0 = none. Bytes per second and requests per second.
  double read_bps = 0;
  double write_bps = 0;
  double iops = 0;
  // Reservation; 0 = none.
  double reserve_bps = 0;
  double reserve_iops = 0;
  double weight = 1;  // > 0
  bool operator==(const QosRule&) const = default;
};

using QosRules = std::map<std::string, QosRule>;

// The tenant of a request with no authenticated tenant (a cluster without a
// key, a client that did no handshake, a server's own request). An OSS takes
// every other tenant from the request's verified capability
// (OssService::WhoForQos), never from a field the client sets.
inline constexpr const char* kDefaultTenant = "default";
// The job id of the MDS's mirror resync copies (mirror_resyncer.cc). With a
// cluster key only a server's capability may claim it.
inline constexpr const char* kResyncJob = "sfs:resync";

// What a request asks of the OSS.
struct QosCost {
  uint64_t read_bytes = 0;
  uint64_t write_bytes = 0;
};

// The class of a request with this job id and tenant under these rules:
// "resync"; else "tenant:<t>" when t is an authenticated tenant (not
// kDefaultTenant) with a rule, since the job id is the client's own word and
// must not let a limited tenant out of its limit; else "job:<id>" with a
// rule; else "tenant:<t>" with a rule; else "job:<id>" (unruled).
std::string QosClassOf(const QosRules& rules, const std::string& job_id, const std::string& tenant);

// Per class, what the scheduler did (for metrics and `sfs qos show`).
struct QosClassStats {
  uint64_t dispatched = 0;
  uint64_t delayed = 0;       // requests that waited in the queue at all
  double wait_seconds = 0;    // total time requests waited
  uint64_t read_bytes = 0;
  uint64_t write_bytes = 0;
};

class QosQueue {
 public:
  // Seconds of a limit's rate that may go at once after an idle spell.
  static constexpr double kBurst = 0.05;
  // The bytes that cost as much as one request in the fair share.
  static constexpr double kCostBytes = 64 * 1024;

  using Item = std::function<void()>;

  void SetRules(QosRules rules);
  void Push(const std::string& cls, QosCost cost, Item item, double now);
  // The item to run now under the policy, or none; then *wake is when the
  // earliest queued one becomes eligible (+inf when nothing is queued).
  std::optional<Item> Pop(double now, double* wake);
  // Whether a request of cls with this cost, arriving now, is the one Pop
  // would dispatch at once: its class has nothing queued, its limits let it
  // go, and no other eligible class comes first (by reservation tag or fair
  // share start tag). If so it is charged and counted as dispatched, as Pop
  // would, and the caller runs it itself; else nothing changes (Push it).
  bool TakeNow(const std::string& cls, QosCost cost, double now);
  // Every queued item, in class order, regardless of limits (for shutdown).
  std::vector<Item> TakeAll();
  size_t size() const { return queued_; }
  const std::map<std::string, QosClassStats>& stats() const { return stats_; }

 private:
  struct Queued {
    QosCost cost;
    Item item;
    double enqueued;
  };
  struct ClassState {
    std::deque<Queued> q;
    // GCRA theoretical arrival times of the limit buckets.
    double tat_read = -std::numeric_limits<double>::infinity();
    double tat_write = -std::numeric_limits<double>::infinity();
    double tat_ops = -std::numeric_limits<double>::infinity();
    double r_tag = 0;       // reservation tag
    double finish = 0;      // fair-share finish tag of its last dispatched request
    double start = 0;       // start tag of the head (valid while q is not empty)
  };
  const QosRule& RuleOf(const std::string& cls) const;
  // The class Pop would dispatch now (nullptr: none eligible; *wake then as
  // Pop's); *reserved: for its reservation, not its fair share.
  ClassState* Choose(double now, double* wake, std::string* name, bool* reserved);
  // Takes the head of s (named name) off its queue, charges and counts it.
  Item Dispatch(ClassState* s, const std::string& name, bool reserved, double now);
  // When the head of s may start under its limits.
  double EligibleAt(const ClassState& s, const QosRule& r) const;
  bool InReservation(const ClassState& s, const QosRule& r, double now) const;

  QosRules rules_;
  QosRule default_rule_;
  std::unordered_map<std::string, ClassState> classes_;
  std::map<std::string, QosClassStats> stats_;
  double vtime_ = 0;  // the fair-share virtual time: start tag of the last dispatch
  size_t queued_ = 0;
};

class QosScheduler {
 public:
  explicit QosScheduler(int threads);
  ~QosScheduler();  // Stop()s

  // Empty rules switch queueing off (enabled() false); queued work still runs.
  void SetRules(QosRules rules);
  bool enabled() const { return enabled_.load(std::memory_order_acquire); }
  QosRules rules() const;
  // QosClassOf under the rules in force.
  std::string ClassOf(const std::string& job_id, const std::string& tenant) const;
  // ClassOf, iff that class has a rule of its own (or is resync); else none.
  std::optional<std::string> RuledClass(const std::string& job_id, const std::string& tenant) const;
  // Runs fn on an executor thread when the policy lets class cls go.
  void Submit(const std::string& cls, QosCost cost, std::function<void()> fn);
  // Runs fn on the calling thread, now, iff an executor is free and the
  // policy would dispatch it at once (QosQueue::TakeNow): what an idle
  // executor would do, without the hand-off between threads. False: not
  // run (Submit it).
  bool RunNow(const std::string& cls, QosCost cost, const std::function<void()>& fn);
  // Runs everything still queued at once, ignoring limits, and joins the threads.
  void Stop();
  std::map<std::string, QosClassStats> stats() const;
  size_t queued() const;

 private:
  void Run();

  mutable std::mutex mu_;
  std::condition_variable cv_;
  QosQueue queue_;     // guarded by mu_
  QosRules rules_;     // guarded by mu_
  bool stopping_ = false;
  // Requests running (on executors or by RunNow); at most slots_ at a time.
  size_t running_ = 0;
  size_t slots_ = 1;
  std::atomic<bool> enabled_{false};
  std::vector<std::thread> threads_;
};

}  // namespace sfs::oss
