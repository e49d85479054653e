// BulkPool: idle buffers by capacity, mapped with mmap (page-aligned, no
// malloc header, given back to the kernel with munmap when over the bound).
#include "common/rpc/bulk_pool.h"

#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <utility>

namespace sfs::rpc {
namespace {

size_t RoundUp(size_t n) {
  return (n + BulkPool::kAlign - 1) / BulkPool::kAlign * BulkPool::kAlign;
}

uint8_t* MapBuffer(size_t capacity) {
  void* p = ::mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    std::fprintf(stderr, "BulkPool: mmap of %zu bytes failed\n", capacity);
    std::abort();
  }
  return static_cast<uint8_t*>(p);
}

}  // namespace

BulkBuffer::Block::~Block() { pool->Put(data, capacity); }

BulkPool::~BulkPool() {
  for (auto& [capacity, data] : idle_) ::munmap(data, capacity);
}

BulkBuffer BulkPool::Get(size_t n) {
  if (n == 0) return BulkBuffer();
  const size_t want = RoundUp(n);
  std::vector<std::pair<size_t, uint8_t*>> unmap;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = idle_.lower_bound(want);
    if (it != idle_.end() && it->first <= want + want / 4) {
      size_t capacity = it->first;
      uint8_t* data = it->second;
      idle_.erase(it);
      stats_.idle -= capacity;
      ++stats_.reuses;
      return BulkBuffer(std::make_shared<BulkBuffer::Block>(shared_from_this(), data, n, capacity));
    }
    // Idle buffers of other sizes make room for this one (the workload changed).
    while (stats_.owned + want > max_bytes_ && !idle_.empty()) {
      auto victim = std::prev(idle_.end());
      stats_.owned -= victim->first;
      stats_.idle -= victim->first;
      unmap.push_back(*victim);
      idle_.erase(victim);
    }
    stats_.owned += want;
    ++stats_.maps;
  }
  for (auto& [capacity, data] : unmap) ::munmap(data, capacity);
  uint8_t* data = MapBuffer(want);
  return BulkBuffer(std::make_shared<BulkBuffer::Block>(shared_from_this(), data, n, want));
}

void BulkPool::Put(uint8_t* data, size_t capacity) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stats_.owned <= max_bytes_) {
      idle_.emplace(capacity, data);
      stats_.idle += capacity;
      return;
    }
    stats_.owned -= capacity;
  }
  ::munmap(data, capacity);
}

BulkPool::Stats BulkPool::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace sfs::rpc
