#include "client/lib/block_arena.h"

#include <sys/mman.h>

#include <algorithm>
#include <array>

namespace sfs::client {
namespace {

constexpr size_t kHuge = 2u << 20;

// 4 KiB steps to 64 KiB, then four steps per doubling up to kMaxClass: a
// block wastes at most a quarter of its size (the dataset's 4-256 KiB
// samples about a tenth on average).
constexpr auto MakeClasses() {
  std::array<size_t, 16 + 4 * 10> t{};
  size_t i = 0;
  for (size_t s = 4096; s <= 65536; s += 4096) t[i++] = s;
  for (size_t p = 65536; p < BlockArena::kMaxClass; p *= 2) {
    for (size_t q = 1; q <= 4; ++q) t[i++] = p + p / 4 * q;
  }
  return t;
}
constexpr auto kClasses = MakeClasses();
static_assert(kClasses.back() == BlockArena::kMaxClass);

}  // namespace

int BlockArena::ClassOf(size_t n) {
  if (n > kMaxClass) return -1;
  return static_cast<int>(std::lower_bound(kClasses.begin(), kClasses.end(), n) -
                          kClasses.begin());
}

size_t BlockArena::ClassSize(size_t n) {
  int c = ClassOf(n);
  return c < 0 ? n : kClasses[c];
}

std::shared_ptr<BlockArena> BlockArena::Create(uint64_t bytes) {
  if (bytes == 0) return nullptr;
  // What may be handed out: the bound, rounded to huge pages. The mapping
  // is address space only (MAP_NORESERVE); pages come as slots are touched.
  const size_t limit = (bytes + kHuge - 1) / kHuge * kHuge;
  const size_t len = limit + kHuge;
  void* m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (m == MAP_FAILED) return nullptr;
  auto* map = static_cast<uint8_t*>(m);
  auto* base = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(map) + kHuge - 1) &
                                          ~static_cast<uintptr_t>(kHuge - 1));
  madvise(base, limit, MADV_HUGEPAGE);  // a hint: EINVAL where THP is not built in
  return std::shared_ptr<BlockArena>(new BlockArena(map, len, base, limit));
}

BlockArena::BlockArena(uint8_t* map, size_t map_len, uint8_t* base, size_t limit)
    : map_(map), map_len_(map_len), base_(base), limit_(limit), free_(kClasses.size()) {
  stats_.limit = limit;
}

BlockArena::~BlockArena() { munmap(map_, map_len_); }

std::shared_ptr<uint8_t> BlockArena::Alloc(size_t n) {
  const int c = ClassOf(n);
  uint8_t* p = nullptr;
  if (c >= 0) {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<uint8_t*>& fl = free_[c];
    if (!fl.empty()) {
      p = fl.back();
      fl.pop_back();
      ++stats_.reused;
    } else if (bump_ + kClasses[c] <= limit_) {
      p = base_ + bump_;
      bump_ += kClasses[c];
      stats_.carved = bump_;
    }
    if (p != nullptr) ++stats_.live;
    else ++stats_.heap;
  } else {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.heap;
  }
  if (p == nullptr) return std::shared_ptr<uint8_t>(new uint8_t[n], std::default_delete<uint8_t[]>());
  return std::shared_ptr<uint8_t>(p, [self = shared_from_this(), c](uint8_t* q) { self->Free(q, c); });
}

void BlockArena::Free(uint8_t* p, int c) {
  std::lock_guard<std::mutex> lock(mu_);
  free_[c].push_back(p);
  --stats_.live;
}

bool BlockArena::Trim() {
  std::lock_guard<std::mutex> lock(mu_);
  if (stats_.live != 0) return false;
  if (bump_ > 0) madvise(base_, bump_, MADV_DONTNEED);
  for (std::vector<uint8_t*>& fl : free_) fl.clear();
  bump_ = 0;
  stats_.carved = 0;
  return true;
}

BlockArena::Stats BlockArena::GetStats() {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace sfs::client
