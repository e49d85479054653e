// ReadBuffers: READ reply buffers are reused, and the pool keeps few idle.
#include "client/fuse/read_buffers.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace sfs::fuse
