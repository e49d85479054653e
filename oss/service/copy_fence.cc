// CopyFence (see copy_fence.h).
#include "oss/service/copy_fence.h"

#include <cerrno>
#include <mutex>
#include <string>

#include "common/log.h"

namespace sfs::oss {

void CopyFence::Expect(std::chrono::milliseconds d) {
  deadline_ms_.store(Now() + d.count(), std::memory_order_release);
}

void CopyFence::Back() {
  if (Now() > deadline_ms_.load(std::memory_order_acquire)) away_.store(true);
  deadline_ms_.store(INT64_MAX, std::memory_order_release);
}

void CopyFence::Synced(uint64_t epoch, uint64_t version, const std::vector<Object>* set) {
  {
    std::unique_lock<std::shared_mutex> lock(mu_);
    if (set != nullptr) {
      const size_t before = fenced_.size();
      fenced_ = std::set<Object>(set->begin(), set->end());
      if (fenced_.size() != before) LogSizeLocked();
    }
    epoch_ = epoch;
    version_ = version;
  }
  away_.store(false, std::memory_order_release);
}

void CopyFence::Lift(const std::vector<Object>& objects) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  size_t erased = 0;
  for (const Object& o : objects) erased += fenced_.erase(o);
  if (erased != 0) LogSizeLocked();
}

void CopyFence::LogSizeLocked() const {
  LOG_INFO("stale-copy fence: " << fenced_.size() << " object(s) of this OSS's OSTs not ok at the MDS");
}

uint64_t CopyFence::epoch() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  return epoch_;
}

uint64_t CopyFence::version() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  return version_;
}

size_t CopyFence::size() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  return fenced_.size();
}

Status CopyFence::CheckRead(uint32_t ost, uint64_t oid, bool* in_set) const {
  if (in_set != nullptr) *in_set = false;
  if (!armed()) return Status::Ok();
  if (away_.load(std::memory_order_acquire) ||
      Now() > deadline_ms_.load(std::memory_order_acquire)) {
    return Status::Errno(ESTALE, "this OSS has not heard from the MDS since it was away; "
                                 "read another copy");
  }
  std::shared_lock<std::shared_mutex> lock(mu_);
  if (fenced_.count({ost, oid}) != 0) {
    if (in_set != nullptr) *in_set = true;
    return Status::Errno(ESTALE, "copy " + std::to_string(oid) + " on OST " + std::to_string(ost) +
                                     " is marked stale at the MDS; read another copy");
  }
  return Status::Ok();
}

}  // namespace sfs::oss
