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
// the requests in service is max_idle × size.
//
// Thread safety: all methods may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
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
    Lease& operator=(Lease&&) = default;
    ~Lease() {
      if (pool_ != nullptr && buf_ != nullptr) pool_->Put(std::move(buf_));
    }
    uint8_t* data() const { return buf_.get(); }

   private:
    ReadBuffers* pool_ = nullptr;
    std::unique_ptr<uint8_t[]> buf_;
  };

  ReadBuffers(size_t size, size_t max_idle) : size_(size), max_idle_(max_idle) {}
  ReadBuffers(const ReadBuffers&) = delete;
  ReadBuffers& operator=(const ReadBuffers&) = delete;

  size_t size() const { return size_; }
  // A buffer of size() bytes (contents unspecified): an idle one if any.
  Lease Get();
  // Buffers waiting in the pool now.
  size_t idle() const;

 private:
  void Put(std::unique_ptr<uint8_t[]> buf);

  const size_t size_;
  const size_t max_idle_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<uint8_t[]>> idle_;  // GUARDED_BY(mu_)
};

}  // namespace sfs::fuse
