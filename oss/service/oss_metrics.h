// OssMetrics: what sfs-oss counts for GET /metrics (docs/operations.md
// "Metrics"): requests, latency and errors per op, bytes read and written,
// requests and bytes in flight, per-job ops and bytes (jobstats), and each
// OST's space and state (read from the stores at scrape time).
//
// Record() and the in-flight gauges are relaxed atomics on series resolved at
// construction (one per op); the errno series of a failed request is found
// under its family's mutex (errors are rare), and job series through JobStats.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string_view>
#include <unordered_map>

#include "common/metrics/job_stats.h"
#include "common/metrics/metrics.h"

namespace sfs::oss {

class ObjectStore;
class QosScheduler;

class OssMetrics {
 public:
  // Op case numbers of OssRequest are below this.
  static constexpr int kMaxOp = 64;

  // REQUIRES: registry outlives this object.
  explicit OssMetrics(metrics::Registry* registry);

  // One request done: op is OssRequest's op case (0 = none), code its errno (0 = OK).
  void Record(int op, int code, uint64_t nanos, uint64_t read_bytes, uint64_t write_bytes,
              std::string_view job);
  // Around a request's handling: counts it (and bytes of data it carries) in flight.
  void Begin(uint64_t bytes) {
    inflight_requests_->Add(1);
    inflight_bytes_->Add(static_cast<int64_t>(bytes));
  }
  void End(uint64_t bytes) {
    inflight_requests_->Add(-1);
    inflight_bytes_->Add(-static_cast<int64_t>(bytes));
  }

  // Adds the OST space and state families, read at each scrape from what
  // targets() returns (OST index -> store).
  // REQUIRES: the stores outlive every scrape.
  void AddTargets(std::function<std::unordered_map<uint32_t, ObjectStore*>()> targets);
  // Adds the QoS families (per ruled class, "resync", and "other" for the
  // unruled jobs together), read from the scheduler at each scrape.
  // REQUIRES: qos outlives every scrape.
  void AddQos(const QosScheduler* qos);

 private:
  struct OpSeries {
    metrics::Counter* requests = nullptr;
    metrics::Histogram* latency = nullptr;
  };
  metrics::Registry* const registry_;
  std::array<OpSeries, kMaxOp> ops_{};
  std::array<const char*, kMaxOp> names_{};
  metrics::Family<metrics::Counter>* errors_;
  metrics::Counter* read_bytes_;
  metrics::Counter* write_bytes_;
  metrics::Gauge* inflight_requests_;
  metrics::Gauge* inflight_bytes_;
  metrics::JobStats jobs_{"sfs_oss_job"};
};

}  // namespace sfs::oss
