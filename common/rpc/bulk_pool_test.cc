// BulkPool: buffers are aligned, reused, and the pool keeps no more idle
// bytes than its bound.
#include "common/rpc/bulk_pool.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

namespace sfs::rpc {
namespace {

constexpr size_t kMiB = 1 << 20;

TEST(BulkPoolTest, BuffersAreAlignedToFourKiBAndSizedAsAsked) {
  auto pool = std::make_shared<BulkPool>(64 * kMiB);
  for (size_t n : {size_t{1}, size_t{4096}, size_t{47008}, kMiB, kMiB + 1}) {
    BulkBuffer b = pool->Get(n);
    EXPECT_EQ(b.size(), n);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % BulkPool::kAlign, 0u) << n;
    std::memset(b.data(), 0xab, n);  // every byte is writable
  }
  EXPECT_TRUE(pool->Get(0).empty());
}

TEST(BulkPoolTest, AReleasedBufferIsReusedForTheSameSize) {
  auto pool = std::make_shared<BulkPool>(64 * kMiB);
  uint8_t* first = nullptr;
  {
    BulkBuffer b = pool->Get(kMiB);
    first = b.data();
  }
  BulkBuffer again = pool->Get(kMiB);
  EXPECT_EQ(again.data(), first);
  EXPECT_EQ(pool->stats().maps, 1u);
  EXPECT_EQ(pool->stats().reuses, 1u);
}

TEST(BulkPoolTest, CopiesShareTheBufferUntilTheLastGoes) {
  auto pool = std::make_shared<BulkPool>(64 * kMiB);
  BulkBuffer a = pool->Get(kMiB);
  BulkBuffer b = a;
  a.Reset();
  EXPECT_EQ(pool->stats().idle, 0u);  // b still holds it
  b.Reset();
  EXPECT_EQ(pool->stats().idle, kMiB);
}

TEST(BulkPoolTest, IdleBytesStayWithinTheBound) {
  auto pool = std::make_shared<BulkPool>(4 * kMiB);
  {
    std::vector<BulkBuffer> held;
    for (int i = 0; i < 10; ++i) held.push_back(pool->Get(kMiB));  // over the bound while in use
    EXPECT_EQ(pool->stats().owned, 10 * kMiB);
  }
  EXPECT_LE(pool->stats().idle, 4 * kMiB);
  EXPECT_LE(pool->stats().owned, 4 * kMiB);
}

TEST(BulkPoolTest, IdleBuffersOfAnotherSizeMakeRoomForANewSize) {
  auto pool = std::make_shared<BulkPool>(4 * kMiB);
  {
    std::vector<BulkBuffer> held;
    for (int i = 0; i < 4; ++i) held.push_back(pool->Get(kMiB));
  }
  EXPECT_EQ(pool->stats().idle, 4 * kMiB);
  { BulkBuffer big = pool->Get(3 * kMiB); }  // 1 MiB buffers do not fit 3 MiB
  EXPECT_LE(pool->stats().owned, 4 * kMiB);
  BulkBuffer again = pool->Get(3 * kMiB);
  EXPECT_EQ(pool->stats().reuses, 1u);
}

TEST(BulkPoolTest, ABufferMayOutliveItsPoolHandle) {
  auto pool = std::make_shared<BulkPool>(kMiB);
  BulkBuffer b = pool->Get(4096);
  pool.reset();
  b.data()[0] = 1;  // the buffer keeps the pool alive
  b.Reset();
}

}  // namespace
}  // namespace sfs::rpc
