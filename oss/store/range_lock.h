// RangeLocks: exclusive locks on ranges of checksum chunks of an object.
//
// A checksummed mutation updates a chunk's data and its crc in several steps,
// so two mutations of one chunk must not interleave. Ranges that do not
// overlap (or belong to different objects) proceed in parallel. Reads take no
// lock: they verify optimistically and re-check under a lock only when a
// chunk seems not to match (it may be mid-update).
//
// Thread safety: all methods are safe to call concurrently. Locks are not
// reentrant: a thread must not lock a range overlapping one it holds.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

namespace sfs::oss {

class RangeLocks {
 public:
  struct Range {
    uint64_t oid;
    uint64_t first;  // first chunk
    uint64_t last;   // last chunk, inclusive
  };

  // Holds a range until destroyed.
  class Guard {
   public:
    Guard(RangeLocks* locks, Range r) : locks_(locks), range_(r) {}
    ~Guard() { locks_->Unlock(range_); }
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

   private:
    RangeLocks* const locks_;
    const Range range_;
  };

  RangeLocks() : shards_(kShards) {}

  // Blocks until no held range of oid overlaps [first, last]. REQUIRES: first <= last.
  [[nodiscard]] Guard Lock(uint64_t oid, uint64_t first, uint64_t last);

 private:
  struct Shard {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<Range> held;  // guarded by mu
  };
  static constexpr size_t kShards = 16;

  Shard& ShardOf(uint64_t oid) { return shards_[oid % kShards]; }
  void Unlock(const Range& r);

  std::vector<Shard> shards_;
};

}  // namespace sfs::oss
