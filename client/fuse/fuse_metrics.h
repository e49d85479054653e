// FuseMetrics: what sfs-mount counts for GET /metrics (-o metrics_listen=;
// docs/operations.md "Metrics"): requests and latency per FUSE op, and bytes
// asked for by reads and given by writes. FuseOpScope wraps every callback of
// FuseOps::Table(): it sets the thread's job (job_ids.h, client/lib/job_id.h)
// so libsfs's OSS and MDS requests carry it, and times the callback.
//
// The latency is the callback's: for every op but a blocking lock wait (setlk
// with sleep, flock) and write-behind writes that is until the reply, as each
// OnX replies before it returns (fuse_ops.h).
//
// Thread safety: any thread.
#pragma once

#include <sys/types.h>

#include <array>
#include <chrono>
#include <cstdint>

#include "client/lib/job_id.h"
#include "common/metrics/metrics.h"

namespace sfs::fuse {

enum class FuseOp : uint8_t {
  kLookup,
  kForget,
  kForgetMulti,
  kGetattr,
  kSetattr,
  kReadlink,
  kMknod,
  kMkdir,
  kUnlink,
  kRmdir,
  kSymlink,
  kRename,
  kLink,
  kOpen,
  kCreate,
  kRead,
  kWriteBuf,
  kFlush,
  kRelease,
  kGetlk,
  kSetlk,
  kFlock,
  kFsync,
  kFallocate,
  kLseek,
  kCopyFileRange,
  kOpendir,
  kReaddir,
  kReaddirplus,
  kReleasedir,
  kFsyncdir,
  kStatfs,
  kSetxattr,
  kGetxattr,
  kListxattr,
  kRemovexattr,
  kCount
};

class FuseMetrics {
 public:
  // REQUIRES: registry outlives this object.
  explicit FuseMetrics(metrics::Registry* registry);
  void Record(FuseOp op, uint64_t nanos, uint64_t read_bytes, uint64_t write_bytes);

 private:
  struct OpSeries {
    metrics::Counter* requests = nullptr;
    metrics::Histogram* latency = nullptr;
  };
  std::array<OpSeries, static_cast<size_t>(FuseOp::kCount)> ops_{};
  metrics::Counter* read_bytes_;
  metrics::Counter* write_bytes_;
};

// One FUSE callback. m may be null (no metrics: only the job is set).
class FuseOpScope {
 public:
  // pid: the process the request comes from (its job: job_ids.h).
  FuseOpScope(pid_t pid, FuseMetrics* m, FuseOp op, uint64_t read_bytes = 0,
              uint64_t write_bytes = 0);
  ~FuseOpScope();
  FuseOpScope(const FuseOpScope&) = delete;
  FuseOpScope& operator=(const FuseOpScope&) = delete;

 private:
  client::JobScope job_;
  FuseMetrics* const m_;
  const FuseOp op_;
  const uint64_t read_bytes_, write_bytes_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace sfs::fuse
