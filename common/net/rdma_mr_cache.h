// Memory registrations for RDMA bulk: a counted wrapper and the client cache.
//
// Registering memory pins its pages and is slow (a syscall, page walks), so
// the client keeps hot buffers registered: MrCache maps (address, length) to
// a registration and reuses it for any buffer inside a cached range. The cache
// cannot see free() or munmap(): a caller that frees or remaps a buffer it
// has used for bulk must call Invalidate() first. A stale registration would
// point at the old pages; the end-to-end body crc turns that into a detected
// error (and the channel invalidates and retries), never into wrong data.
//
// Thread-safe. A registration is released when the cache has dropped it and
// no call holds a reference any more, so nothing is deregistered under a
// transfer and nothing leaks: LiveRegistrations() counts them process-wide.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "common/status.h"

namespace sfs::net::rdma {

// One ibv_mr, deregistered by the destructor.
class Registration {
 public:
  // Registers [addr, addr+len) for local write and remote read/write; falls
  // back to remote read only for read-only memory.
  static Result<std::shared_ptr<Registration>> Create(ibv_pd* pd, const void* addr, size_t len);
  ~Registration();
  Registration(const Registration&) = delete;
  Registration& operator=(const Registration&) = delete;

  uint32_t lkey() const { return mr_->lkey; }
  uint32_t rkey() const { return mr_->rkey; }
  uintptr_t start() const { return start_; }
  size_t len() const { return len_; }
  bool writable() const { return writable_; }

 private:
  Registration(ibv_mr* mr, uintptr_t start, size_t len, bool writable)
      : mr_(mr), start_(start), len_(len), writable_(writable) {}
  ibv_mr* mr_;
  uintptr_t start_;
  size_t len_;
  bool writable_;
};

// Registrations alive in this process (cached, in use, or server-side).
int64_t LiveRegistrations();

class MrCache {
 public:
  MrCache(ibv_pd* pd, size_t max_bytes) : pd_(pd), max_bytes_(max_bytes) {}

  // A registration covering [addr, addr+len), reused when cached. want_write:
  // the peer will write into it (then read-only memory fails with EFAULT).
  Result<std::shared_ptr<Registration>> Acquire(const void* addr, size_t len, bool want_write);
  // Drops every cached registration overlapping [addr, addr+len).
  void Invalidate(const void* addr, size_t len);
  size_t size() const;

 private:
  struct Entry {
    std::shared_ptr<Registration> reg;
    uint64_t last_use = 0;
  };
  void EvictLocked();  // REQUIRES: mu_ held

  ibv_pd* const pd_;
  const size_t max_bytes_;
  mutable std::mutex mu_;
  std::map<uintptr_t, Entry> by_start_;  // GUARDED_BY(mu_)
  size_t bytes_ = 0;                     // GUARDED_BY(mu_)
  uint64_t clock_ = 0;                   // GUARDED_BY(mu_)
};

}  // namespace sfs::net::rdma
