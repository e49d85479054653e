// MdsMetrics: what sfs-mds counts for GET /metrics (docs/operations.md
// "Metrics"): requests and latency per op (until the reply is sent, a wait
// for the commit or for lease revocations included), errors by op and errno,
// and per-job ops (jobstats). Table sizes, commits and the recovery state are
// collectors added by main.cc.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "common/metrics/job_stats.h"
#include "common/metrics/metrics.h"
#include "common/rpc/rpc.h"

namespace sfs::mds {

class MdsMetrics {
 public:
  static constexpr int kMaxOp = 128;  // MdsRequest op case numbers are below this

  // REQUIRES: registry outlives this object.
  explicit MdsMetrics(metrics::Registry* registry);

  // One request done. op: MdsRequest's op case (0 = none); code: its errno.
  void Record(int op, int code, uint64_t nanos, std::string_view job);
  // done, wrapped so that the reply it sends is recorded (the errno read from
  // the MdsResponse it carries).
  rpc::ReplyFn Counted(int op, std::string_view job, rpc::ReplyFn done);
  // A serialized MdsResponse's errno; parses it only when it is not OK.
  static int CodeOf(const std::string& payload);

 private:
  struct OpSeries {
    metrics::Counter* requests = nullptr;
    metrics::Histogram* latency = nullptr;
  };
  std::array<OpSeries, kMaxOp> ops_{};
  std::array<const char*, kMaxOp> names_{};
  metrics::Family<metrics::Counter>* errors_;
  metrics::JobStats jobs_{"sfs_mds_job"};
};

}  // namespace sfs::mds
