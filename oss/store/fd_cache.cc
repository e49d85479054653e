// FdCache: sharded LRU of open object files (see fd_cache.h for the contract).
#include "oss/store/fd_cache.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "common/status.h"

namespace sfs::oss {

Fd::~Fd() {
  ::close(fd_);
  if (crc_fd_ >= 0) ::close(crc_fd_);
  if (int d = direct_fd_.load(); d >= 0) ::close(d);
}

int Fd::direct() const {
  int d = direct_fd_.load(std::memory_order_acquire);
  if (d != kNotOpened) return d;
  std::string self = "/proc/self/fd/" + std::to_string(fd_);
  int fresh = ::open(self.c_str(), O_RDWR | O_DIRECT | O_CLOEXEC);
  if (fresh < 0) fresh = -1;
  if (direct_fd_.compare_exchange_strong(d, fresh, std::memory_order_acq_rel)) return fresh;
  if (fresh >= 0) ::close(fresh);  // another thread opened it first
  return d;
}

FdCache::FdCache(size_t capacity)
    : per_shard_capacity_(capacity < kShards ? 1 : capacity / kShards), shards_(kShards) {
  SFS_CHECK(capacity > 0);
}

std::shared_ptr<Fd> FdCache::Lookup(uint64_t oid) {
  Shard& s = ShardOf(oid);
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.map.find(oid);
  if (it == s.map.end()) return nullptr;
  s.lru.splice(s.lru.begin(), s.lru, it->second);
  return it->second->second;
}

std::shared_ptr<Fd> FdCache::Insert(uint64_t oid, std::shared_ptr<Fd> fd, uint64_t epoch) {
  std::shared_ptr<Fd> evicted;  // closed after the lock is released
  Shard& s = ShardOf(oid);
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.map.find(oid);
  if (it != s.map.end()) {
    s.lru.splice(s.lru.begin(), s.lru, it->second);
    return it->second->second;
  }
  // Erase() bumps the epoch under a shard lock after unlinking, so checking it
  // under the lock is enough to never cache a file that was just destroyed.
  if (epoch_.load(std::memory_order_acquire) != epoch) return fd;
  s.lru.emplace_front(oid, fd);
  s.map.emplace(oid, s.lru.begin());
  if (s.lru.size() > per_shard_capacity_) {
    evicted = std::move(s.lru.back().second);
    s.map.erase(s.lru.back().first);
    s.lru.pop_back();
  }
  return fd;
}

void FdCache::Erase(uint64_t oid) {
  std::shared_ptr<Fd> dropped;
  Shard& s = ShardOf(oid);
  std::lock_guard<std::mutex> lock(s.mu);
  epoch_.fetch_add(1, std::memory_order_acq_rel);
  auto it = s.map.find(oid);
  if (it == s.map.end()) return;
  dropped = std::move(it->second->second);
  s.lru.erase(it->second);
  s.map.erase(it);
}

size_t FdCacheCapacityFor(uint64_t nofile, size_t osts) {
  SFS_CHECK(osts > 0);
  const uint64_t reserve = std::max(nofile / 4, std::min<uint64_t>(nofile / 2, 1024));
  const uint64_t each = (nofile - reserve) / osts;
  return static_cast<size_t>(std::clamp<uint64_t>(each, kMinFdCachePerOst, kMaxFdCachePerOst));
}

size_t FdCache::size() const {
  size_t n = 0;
  for (const Shard& s : shards_) {
    std::lock_guard<std::mutex> lock(s.mu);
    n += s.lru.size();
  }
  return n;
}

}  // namespace sfs::oss
