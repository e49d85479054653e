// ReadBuffers: READ reply buffers are reused, and the pool keeps few idle.
#include "client/fuse/read_buffers.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace sfs::fuse {
namespace {

TEST(ReadBuffersTest, AReturnedBufferIsHandedOutAgain) {
  ReadBuffers pool(4096, 4);
  uint8_t* first = nullptr;
  {
    ReadBuffers::Lease a = pool.Get();
    first = a.data();
    ASSERT_NE(first, nullptr);
    a.data()[4095] = 7;  // the whole size is usable
    EXPECT_EQ(pool.idle(), 0u);
  }
  EXPECT_EQ(pool.idle(), 1u);
  ReadBuffers::Lease b = pool.Get();
  EXPECT_EQ(b.data(), first);
  EXPECT_EQ(pool.idle(), 0u);
}

TEST(ReadBuffersTest, BuffersInUseAtOnceAreDistinct) {
  ReadBuffers pool(64, 4);
  ReadBuffers::Lease a = pool.Get();
  ReadBuffers::Lease b = pool.Get();
  EXPECT_NE(a.data(), b.data());
}

TEST(ReadBuffersTest, NoMoreThanMaxIdleAreKeptAfterABurst) {
  ReadBuffers pool(1024, 3);
  {
    std::vector<ReadBuffers::Lease> burst;
    for (int i = 0; i < 10; ++i) burst.push_back(pool.Get());
  }
  EXPECT_EQ(pool.idle(), 3u);
}

TEST(ReadBuffersTest, AMovedLeaseReturnsItsBufferOnce) {
  ReadBuffers pool(128, 4);
  {
    ReadBuffers::Lease a = pool.Get();
    ReadBuffers::Lease b = std::move(a);
    EXPECT_NE(b.data(), nullptr);
  }
  EXPECT_EQ(pool.idle(), 1u);
}

TEST(ReadBuffersTest, AGetBeyondMaxLeasedWaitsForALeaseToEndAndGetsItsBuffer) {
  ReadBuffers pool(256, 4, /*max_leased=*/2);
  ReadBuffers::Lease a = pool.Get();
  ReadBuffers::Lease b = pool.Get();
  uint8_t* freed = b.data();
  std::atomic<uint8_t*> got{nullptr};
  std::thread third([&] { got = pool.Get().data(); });
  // Polls the condition (the third caller is inside Get), up to 5 s.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (pool.waiting() != 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(pool.waiting(), 1u);
  EXPECT_EQ(got.load(), nullptr) << "two leases are out";
  b = ReadBuffers::Lease();  // assigning over a lease returns its buffer
  third.join();
  EXPECT_EQ(got.load(), freed);
  EXPECT_EQ(pool.waiting(), 0u);
}

}  // namespace
}  // namespace sfs::fuse
