// ReadBuffers: a bounded free list of READ reply buffers (see read_buffers.h).
#include "client/fuse/read_buffers.h"

#include <utility>

namespace sfs::fuse {

ReadBuffers::Lease ReadBuffers::Get() {
  {
    std::unique_lock<std::mutex> lock(mu_);
    ++waiting_;
    returned_.wait(lock, [this] { return leased_ < max_leased_; });
    --waiting_;
    ++leased_;
    if (!idle_.empty()) {
      std::unique_ptr<uint8_t[]> buf = std::move(idle_.back());
      idle_.pop_back();
      return Lease(this, std::move(buf));
    }
  }
  return Lease(this, std::make_unique_for_overwrite<uint8_t[]>(size_));
}

size_t ReadBuffers::idle() const {
  std::lock_guard<std::mutex> lock(mu_);
  return idle_.size();
}

size_t ReadBuffers::waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return waiting_;
}

void ReadBuffers::Put(std::unique_ptr<uint8_t[]> buf) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    --leased_;
    if (idle_.size() < max_idle_) idle_.push_back(std::move(buf));
  }
  returned_.notify_one();
  // else: freed as buf goes out of scope.
}

}  // namespace sfs::fuse
