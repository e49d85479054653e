// ReadBuffers: the reply buffers of sfs-mount's READ requests, kept for reuse.
//
// A READ of up to 1 MiB is received from the OSSes straight into its reply
// buffer (libsfs Striper, TCP channel bulk_in) and written to /dev/fuse from
// there. A fresh 1 MiB buffer for every request came from mmap (glibc hands
// out large blocks that way and gives them back on free), so the socket
// receive first took a page fault and a page clear for every 4 KiB of it:
// 10 % of sfs-mount's CPU during a cold 1 MiB read (docs/benchmarks.md,
// "Performance pass 3"). Buffers of `size` bytes are therefore kept: a
// request takes one, and returns it when its reply has been sent. At most
// `max_idle` wait in the pool; the rest are freed, so the memory kept beyond
// the requests in service is max_idle × size. At most `max_leased` are out
// at once: a READ of 4 MiB (-o max_read_kb) takes four times the memory of
// one of 1 MiB, so the mount bounds the bytes, not just the workers (64 of
// them with 4 MiB each would be 256 MiB); Get() waits for a Lease to end.
//
// Thread safety: all methods may be called from any thread.
#pragma once

#include <cstddef>
#include <condition_variable>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <vector>

namespace sfs::fuse {

class ReadBuffers {
 public:
  // A buffer of the pool's size; back to the pool when it goes out of scope.
  class Lease {
   public:
    Lease() = default;
    Lease(ReadBuffers* pool, std::unique_ptr<uint8_t[]> buf) : pool_(pool), buf_(std::move(buf)) {}
    Lease(Lease&&) = default;
    Lease& operator=(Lease&& other) {
      if (this != &other) {
        Return();
        pool_ = other.pool_;
        buf_ = std::move(other.buf_);
      }
      return *this;
    }
    ~Lease() { Return(); }
    uint8_t* data() const { return buf_.get(); }

   private:
    void Return() {
      if (pool_ != nullptr && buf_ != nullptr) pool_->Put(std::move(buf_));
    }
    ReadBuffers* pool_ = nullptr;
    std::unique_ptr<uint8_t[]> buf_;
  };

  // REQUIRES: max_leased > 0.
  ReadBuffers(size_t size, size_t max_idle,
              size_t max_leased = std::numeric_limits<size_t>::max())
      : size_(size), max_idle_(max_idle), max_leased_(max_leased) {}
  ReadBuffers(const ReadBuffers&) = delete;
  ReadBuffers& operator=(const ReadBuffers&) = delete;

  size_t size() const { return size_; }
  // A buffer of size() bytes (contents unspecified): an idle one if any.
  // Blocks while max_leased Leases are alive.
  Lease Get();
  // Buffers waiting in the pool now.
  size_t idle() const;
  // Callers of Get() waiting for a Lease to end, now.
  size_t waiting() const;

 private:
  void Put(std::unique_ptr<uint8_t[]> buf);

  const size_t size_;
  const size_t max_idle_;
  const size_t max_leased_;
  mutable std::mutex mu_;
  std::condition_variable returned_;  // a Lease ended
  size_t leased_ = 0;                 // GUARDED_BY(mu_)
  size_t waiting_ = 0;                // GUARDED_BY(mu_)
  std::vector<std::unique_ptr<uint8_t[]>> idle_;  // GUARDED_BY(mu_)
};

}  // namespace sfs::fuse
