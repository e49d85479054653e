// FuseMetrics: one series per FUSE op, resolved at construction.
#include "client/fuse/fuse_metrics.h"

#include "client/fuse/job_ids.h"

namespace sfs::fuse {
namespace {

// By FuseOp, as the libfuse lowlevel op names (write_buf counted as "write").
constexpr const char* kOpNames[] = {"lookup",       "forget",
                                    "forget_multi", "getattr",
                                    "setattr",      "readlink",
                                    "mknod",        "mkdir",
                                    "unlink",       "rmdir",
                                    "symlink",      "rename",
                                    "link",         "open",
                                    "create",       "read",
                                    "write",        "flush",
                                    "release",      "getlk",
                                    "setlk",        "flock",
                                    "fsync",        "fallocate",
                                    "lseek",        "copy_file_range",
                                    "opendir",      "readdir",
                                    "readdirplus",  "releasedir",
                                    "fsyncdir",     "statfs",
                                    "setxattr",     "getxattr",
                                    "listxattr",    "removexattr"};
static_assert(std::size(kOpNames) == static_cast<size_t>(FuseOp::kCount));

}  // namespace

FuseMetrics::FuseMetrics(metrics::Registry* r) {
  auto& requests = r->AddCounter("sfs_fuse_requests_total", "FUSE requests by op.", {"op"});
  auto& latency = r->AddHistogram("sfs_fuse_request_duration_seconds",
                                  "FUSE request time by op (until the callback returns).", {"op"});
  for (size_t i = 0; i < ops_.size(); ++i) {
    ops_[i] = {&requests.With({kOpNames[i]}), &latency.With({kOpNames[i]})};
  }
  read_bytes_ =
      &r->AddCounter("sfs_fuse_read_bytes_total", "Bytes asked for by FUSE reads.").With({});
  write_bytes_ =
      &r->AddCounter("sfs_fuse_write_bytes_total", "Bytes given by FUSE writes.").With({});
}

void FuseMetrics::Record(FuseOp op, uint64_t nanos, uint64_t read_bytes, uint64_t write_bytes) {
  const OpSeries& s = ops_[static_cast<size_t>(op)];
  s.requests->Inc();
  s.latency->ObserveNanos(nanos);
  if (read_bytes != 0) read_bytes_->Inc(read_bytes);
  if (write_bytes != 0) write_bytes_->Inc(write_bytes);
}

FuseOpScope::FuseOpScope(pid_t pid, FuseMetrics* m, FuseOp op, uint64_t read_bytes,
                         uint64_t write_bytes)
    : job_(JobIdOf(pid)), m_(m), op_(op), read_bytes_(read_bytes), write_bytes_(write_bytes) {
  if (m_ != nullptr) start_ = std::chrono::steady_clock::now();
}

FuseOpScope::~FuseOpScope() {
  if (m_ == nullptr) return;
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                                 start_);
  m_->Record(op_, static_cast<uint64_t>(ns.count()), read_bytes_, write_bytes_);
}

}  // namespace sfs::fuse
