// BlockArena: class sizes, reuse without new page faults, the bound, blocks
// that outlive the arena's owner, Trim.
#include "client/lib/block_arena.h"

#include <sys/resource.h>

#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <vector>

#include "client/lib/data_cache.h"

namespace sfs::client {
namespace {

long MinorFaults() {
  rusage ru{};
  getrusage(RUSAGE_THREAD, &ru);
  return ru.ru_minflt;
}

TEST(BlockArenaTest, ClassesWasteAtMostAQuarter) {
  EXPECT_EQ(BlockArena::ClassSize(1), 4096u);
  EXPECT_EQ(BlockArena::ClassSize(4097), 8192u);
  EXPECT_EQ(BlockArena::ClassSize(65536), 65536u);
  EXPECT_EQ(BlockArena::ClassSize(65537), 81920u);
  EXPECT_EQ(BlockArena::ClassSize(1u << 20), 1u << 20);
  for (size_t n = 4096; n <= BlockArena::kMaxClass; n = n * 9 / 8 + 1) {
    size_t c = BlockArena::ClassSize(n);
    EXPECT_GE(c, n);
    EXPECT_LE(c, n <= 65536 ? n + 4095 : n + n / 4) << n;
    EXPECT_EQ(c % 4096, 0u) << n;
  }
}

TEST(BlockArenaTest, AFreedSlotIsReusedWithoutNewPageFaults) {
  auto a = BlockArena::Create(64u << 20);
  ASSERT_NE(a, nullptr);
  std::set<uint8_t*> first;
  {
    std::vector<std::shared_ptr<uint8_t>> v;
    for (int i = 0; i < 64; ++i) {
      v.push_back(a->Alloc(220 << 10));
      std::memset(v.back().get(), i, 220 << 10);
      first.insert(v.back().get());
    }
  }
  EXPECT_EQ(a->GetStats().live, 0u);
  const long before = MinorFaults();
  std::vector<std::shared_ptr<uint8_t>> v;
  for (int i = 0; i < 64; ++i) {
    v.push_back(a->Alloc(200 << 10));  // the same class (224 KiB)
    std::memset(v.back().get(), i, 200 << 10);
    EXPECT_TRUE(first.contains(v.back().get()));
  }
  // 64 × 200 KiB of fresh heap would fault ~3200 pages in; reused slots
  // none (a few for the vector and the control blocks).
  EXPECT_LT(MinorFaults() - before, 64);
  BlockArena::Stats s = a->GetStats();
  EXPECT_EQ(s.reused, 64u);
  EXPECT_EQ(s.heap, 0u);
  EXPECT_EQ(s.live, 64u);
}

TEST(BlockArenaTest, PastItsBoundAndAboveTheLargestClassItTakesTheHeap) {
  auto a = BlockArena::Create(1u << 20);  // rounded to one huge page: 2 MiB
  ASSERT_NE(a, nullptr);
  auto x = a->Alloc(1u << 20), y = a->Alloc(1u << 20), z = a->Alloc(1u << 20);
  auto big = a->Alloc(BlockArena::kMaxClass + 1);
  std::memset(z.get(), 7, 1u << 20);
  std::memset(big.get(), 7, 4096);
  BlockArena::Stats s = a->GetStats();
  EXPECT_EQ(s.limit, 2u << 20);
  EXPECT_EQ(s.carved, 2u << 20);
  EXPECT_EQ(s.live, 2u);
  EXPECT_EQ(s.heap, 2u);
}

TEST(BlockArenaTest, ABlockOutlivesTheArenasOwnerAndTrimWaitsForIt) {
  auto a = BlockArena::Create(8u << 20);
  ASSERT_NE(a, nullptr);
  auto b = a->Alloc(1000);
  std::memset(b.get(), 1, 1000);
  EXPECT_FALSE(a->Trim());
  std::weak_ptr<BlockArena> w = a;
  a.reset();
  EXPECT_FALSE(w.expired());  // the block's deleter holds it
  std::memset(b.get(), 2, 1000);
  b.reset();
  EXPECT_TRUE(w.expired());

  auto c = BlockArena::Create(8u << 20);
  ASSERT_NE(c, nullptr);
  c->Alloc(5000).reset();
  EXPECT_EQ(c->GetStats().carved, 8192u);
  EXPECT_TRUE(c->Trim());
  EXPECT_EQ(c->GetStats().carved, 0u);
  auto d = c->Alloc(5000);
  EXPECT_EQ(c->GetStats().reused, 0u);  // Trim emptied the free lists
}

TEST(BlockArenaTest, TheCacheReusesTheMemoryOfEvictedBlocks) {
  auto c = DataCache::Open({.ram_bytes = 4u << 20});
  ASSERT_NE(c, nullptr);
  for (uint64_t i = 0; i < 16; ++i) {
    std::shared_ptr<uint8_t> p = c->Alloc(1u << 20);
    std::memset(p.get(), static_cast<int>(i), 1u << 20);
    c->Put({.ino = 3, .version = 1, .index = i}, Block{.data = p, .len = 1u << 20});
  }
  CacheStats s = c->Stats();
  EXPECT_EQ(s.blocks, 4u);
  EXPECT_EQ(s.evictions, 12u);
  EXPECT_GE(s.ram_reused, 11u);  // each block after the fifth took an evicted one's slot
  EXPECT_LE(s.ram_carved, 6u << 20);
  Block b = c->Get({.ino = 3, .version = 1, .index = 15}, 1u << 20);
  ASSERT_TRUE(b.data);
  EXPECT_EQ(b.data.get()[12345], 15);
  b = {};
  c->Drop();
  EXPECT_EQ(c->Stats().ram_carved, 0u);
}

}  // namespace
}  // namespace sfs::client
