// The job the calling thread works for: carried as job_id on every OSS and
// MDS request the thread sends, so the servers count ops and bytes per job
// (jobstats, docs/operations.md). sfs-mount sets it from the SFS_JOBID of the
// process behind each FUSE request (client/fuse/job_ids.h); a program using
// libsfs directly may set it around its calls. Write-behind keeps the job of
// the write it queued (write_behind.cc).
//
// Thread safety: per thread by construction.
#pragma once

#include <string>
#include <string_view>
#include <utility>

namespace sfs::client {

namespace internal {
inline thread_local std::string current_job;
}  // namespace internal

// "" = none.
inline const std::string& CurrentJob() { return internal::current_job; }

// Sets the calling thread's job until destroyed (then the previous one again).
class JobScope {
 public:
  explicit JobScope(std::string_view job) : saved_(std::move(internal::current_job)) {
    internal::current_job.assign(job);
  }
  ~JobScope() { internal::current_job = std::move(saved_); }
  JobScope(const JobScope&) = delete;
  JobScope& operator=(const JobScope&) = delete;

 private:
  std::string saved_;
};

}  // namespace sfs::client
