// ReadBuffers: a bounded free list of READ reply buffers (see read_buffers.h).
#include "client/fuse/read_buffers.h"

#include <utility>

namespace sfs::fuse {

ReadBuffers::Lease ReadBuffers::Get() {
  {
    std::lock_guard<std::mutex> lock(mu_);
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

void ReadBuffers::Put(std::unique_ptr<uint8_t[]> buf) {
  std::lock_guard<std::mutex> lock(mu_);
  if (idle_.size() < max_idle_) idle_.push_back(std::move(buf));
  // else: freed as buf goes out of scope.
}

}  // namespace sfs::fuse
