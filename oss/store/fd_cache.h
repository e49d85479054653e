// FdCache: a bounded LRU of open object files, keyed by object id.
//
// Opening a file per request costs a path walk and an inode lookup; the cache
// keeps the most recently used descriptors open instead. Entries are handed out
// as shared_ptr<Fd>, so evicting an entry never closes a descriptor that another
// thread is still using: the file closes when its last user lets go.
//
// Thread safety: all methods are safe to call concurrently. The map is split
// into shards, each with its own mutex, so I/O threads on different objects
// rarely contend; no lock is held across a system call (an evicted descriptor
// is closed after its shard's lock is released).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace sfs::oss {

// An open object file and, if the object is checksummed, its crc sidecar
// (crc_fd -1 otherwise), and once used its O_DIRECT twin (direct_io.h).
// Closes the descriptors on destruction.
class Fd {
 public:
  Fd(int fd, bool created, int crc_fd = -1) : fd_(fd), crc_fd_(crc_fd), dir_dirty_(created) {}
  ~Fd();
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;

  int get() const { return fd_; }
  int crc() const { return crc_fd_; }
  bool checked() const { return crc_fd_ >= 0; }
  // A second descriptor of the same file opened with O_DIRECT, opened on
  // first use (by reopening /proc/self/fd/N, so it is the same inode even if
  // the name was renamed meanwhile); -1 if the file system refuses O_DIRECT.
  int direct() const;
  // True iff this descriptor created the file and no one has yet made the
  // directory entry durable; clears the flag (the caller must fsync the dir,
  // and call MarkDirDirty() again if that fails).
  bool TakeDirDirty() { return dir_dirty_.exchange(false); }
  void MarkDirDirty() { dir_dirty_.store(true); }

 private:
  static constexpr int kNotOpened = -2;

  const int fd_;
  const int crc_fd_;
  std::atomic<bool> dir_dirty_;
  mutable std::atomic<int> direct_fd_{kNotOpened};
};

class FdCache {
 public:
  // REQUIRES: capacity > 0.
  explicit FdCache(size_t capacity);

  // The cached file of oid, or null. Marks it most recently used.
  std::shared_ptr<Fd> Lookup(uint64_t oid);

  // Caches fd for oid unless `epoch` differs from the current epoch (an Erase
  // happened since the caller read it). If oid is already cached, returns that
  // entry instead of fd, so all threads share one descriptor per object.
  std::shared_ptr<Fd> Insert(uint64_t oid, std::shared_ptr<Fd> fd, uint64_t epoch);

  // Drops oid's entry and advances the epoch (so racing opens do not re-cache
  // a file that is being removed).
  void Erase(uint64_t oid);

  // Read before opening a file that will be passed to Insert.
  uint64_t epoch() const { return epoch_.load(std::memory_order_acquire); }

  size_t size() const;

 private:
  using LruList = std::list<std::pair<uint64_t, std::shared_ptr<Fd>>>;
  struct Shard {
    mutable std::mutex mu;
    LruList lru;  // front = most recently used; guarded by mu
    std::unordered_map<uint64_t, LruList::iterator> map;  // guarded by mu
  };
  static constexpr size_t kShards = 16;  // ShardOf takes the hash's top 4 bits

  // Hashed: the MDS hands out oids in sequence and stripes files over OSTs
  // round robin, so an OST's oids can share a residue (every other oid on 2
  // OSTs), and oid % kShards left shards, and their capacity, unused.
  Shard& ShardOf(uint64_t oid) { return shards_[(oid * 0x9E3779B97F4A7C15ull) >> 60]; }

  std::atomic<uint64_t> epoch_{0};
  size_t per_shard_capacity_;
  std::vector<Shard> shards_;
};

// The fd cache capacity (descriptors) for each of `osts` stores in a process
// allowed `nofile` open descriptors: what is left after a reserve for sockets,
// logs and the kv tier (a quarter, at least half of a small limit up to 1024),
// shared evenly, within [kMinFdCachePerOst, kMaxFdCachePerOst]. REQUIRES: osts > 0.
inline constexpr size_t kMinFdCachePerOst = 64;
inline constexpr size_t kMaxFdCachePerOst = 65536;
size_t FdCacheCapacityFor(uint64_t nofile, size_t osts);

}  // namespace sfs::oss
