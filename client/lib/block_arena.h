// BlockArena: the memory the client cache's blocks live in (issue 18;
// docs/cache.md "Memory").
//
// A cache that keeps what it fetches puts every fetched block in memory no
// one has touched yet; from the heap that is a page fault per 4 KiB (about
// 20 µs on a paravirtualised guest: 2 s of system time per 400 MB cold
// epoch, more than the fetches). The arena is one reservation, 2 MiB
// aligned and madvise(MADV_HUGEPAGE), carved into size classes (4 KiB steps
// to 64 KiB, then quarter steps of a power of two to kMaxClass) and reused:
// a block freed by an eviction goes back to its class's free list and the
// next block of that class takes it, already faulted in. Huge pages fault in
// 2 MiB at a time where the kernel gives them (THP "madvise" or "always"),
// 4 KiB otherwise; reuse holds either way.
//
// Bounded: the arena hands out at most the bytes it was created with
// (rounded up per class); past that, or above kMaxClass, Alloc takes the
// heap, as before the arena. Trim() gives the pages back once nothing is
// allocated (the cache was dropped). Thread-safe; a block may outlive the
// cache that allocated it (its deleter holds the arena).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace sfs::client {

class BlockArena : public std::enable_shared_from_this<BlockArena> {
 public:
  static constexpr size_t kMaxClass = 64u << 20;

  // Null if the reservation fails (the caller uses the heap).
  static std::shared_ptr<BlockArena> Create(uint64_t bytes);
  ~BlockArena();
  BlockArena(const BlockArena&) = delete;
  BlockArena& operator=(const BlockArena&) = delete;

  // n bytes (n > 0), never null: from the arena, else from the heap.
  std::shared_ptr<uint8_t> Alloc(size_t n);
  // Gives every page back if nothing is allocated; false otherwise.
  bool Trim();

  struct Stats {
    uint64_t limit = 0;        // bytes the arena may hand out
    uint64_t carved = 0;       // bytes carved into slots so far (touched at most)
    uint64_t live = 0;         // slots allocated now
    uint64_t reused = 0;       // allocations served from a free list
    uint64_t heap = 0;         // allocations that went to the heap
  };
  Stats GetStats();

  // The class size n rounds up to (for tests and accounting).
  static size_t ClassSize(size_t n);

 private:
  BlockArena(uint8_t* map, size_t map_len, uint8_t* base, size_t limit);
  static int ClassOf(size_t n);
  void Free(uint8_t* p, int c);

  uint8_t* const map_;  // the mapping (unaligned), for munmap
  const size_t map_len_;
  uint8_t* const base_;  // 2 MiB aligned
  const size_t limit_;

  std::mutex mu_;
  size_t bump_ = 0;                          // GUARDED_BY(mu_)
  std::vector<std::vector<uint8_t*>> free_;  // GUARDED_BY(mu_): per class
  Stats stats_;                              // GUARDED_BY(mu_)
};

}  // namespace sfs::client
