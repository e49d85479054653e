// Registration wrapper and client registration cache; see rdma_mr_cache.h.
#include "common/net/rdma_mr_cache.h"

#include <atomic>
#include <cstring>

namespace sfs::net::rdma {
namespace {

std::atomic<int64_t> g_live{0};

// How many cached entries before a lookup point to examine for a containing range.
constexpr int kContainScan = 8;

}  // namespace

int64_t LiveRegistrations() { return g_live.load(); }

Result<std::shared_ptr<Registration>> Registration::Create(ibv_pd* pd, const void* addr,
                                                           size_t len) {
  void* a = const_cast<void*>(addr);
  int rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
  bool writable = true;
  ibv_mr* mr = ibv_reg_mr(pd, a, len, rw);
  if (mr == nullptr && (errno == EFAULT || errno == EACCES)) {
    writable = false;
    mr = ibv_reg_mr(pd, a, len, IBV_ACCESS_REMOTE_READ);
  }
  if (mr == nullptr) {
    return Status::FromErrno("ibv_reg_mr of " + std::to_string(len) + " bytes");
  }
  g_live++;
  return std::shared_ptr<Registration>(
      new Registration(mr, reinterpret_cast<uintptr_t>(addr), len, writable));
}

Registration::~Registration() {
  ibv_dereg_mr(mr_);
  g_live--;
}

Result<std::shared_ptr<Registration>> MrCache::Acquire(const void* addr, size_t len,
                                                        bool want_write) {
  auto a = reinterpret_cast<uintptr_t>(addr);
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = by_start_.upper_bound(a);
    for (int i = 0; i < kContainScan && it != by_start_.begin(); ++i) {
      --it;
      const Registration& r = *it->second.reg;
      if (r.start() <= a && a + len <= r.start() + r.len() && (r.writable() || !want_write)) {
        it->second.last_use = ++clock_;
        return it->second.reg;
      }
    }
  }
  SFS_ASSIGN_OR_RETURN(auto reg, Registration::Create(pd_, addr, len));
  if (want_write && !reg->writable()) return Status(EFAULT, "bulk_in buffer is not writable");
  std::lock_guard<std::mutex> l(mu_);
  auto [it, inserted] = by_start_.try_emplace(a);
  if (!inserted) bytes_ -= it->second.reg->len();  // replaced by a larger or writable one
  it->second = Entry{reg, ++clock_};
  bytes_ += len;
  EvictLocked();
  return reg;
}

void MrCache::EvictLocked() {
  while (bytes_ > max_bytes_) {
    auto victim = by_start_.end();
    for (auto it = by_start_.begin(); it != by_start_.end(); ++it) {
      if (it->second.reg.use_count() > 1) continue;  // in use by a call
      if (victim == by_start_.end() || it->second.last_use < victim->second.last_use) victim = it;
    }
    if (victim == by_start_.end()) return;
    bytes_ -= victim->second.reg->len();
    by_start_.erase(victim);
  }
}

void MrCache::Invalidate(const void* addr, size_t len) {
  auto a = reinterpret_cast<uintptr_t>(addr);
  std::lock_guard<std::mutex> l(mu_);
  for (auto it = by_start_.begin(); it != by_start_.end();) {
    const Registration& r = *it->second.reg;
    if (r.start() < a + len && a < r.start() + r.len()) {
      bytes_ -= r.len();
      it = by_start_.erase(it);
    } else {
      ++it;
    }
  }
}

size_t MrCache::size() const {
  std::lock_guard<std::mutex> l(mu_);
  return by_start_.size();
}

}  // namespace sfs::net::rdma
