// FdCacheCapacityFor: the OSS's fd caches take what RLIMIT_NOFILE leaves.
#include "oss/store/fd_cache.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <memory>

namespace sfs::oss {
namespace {

// The hard limit of a stock systemd service (and of the test machine) leaves
// room for a training set's objects: 1024 descriptors (341 objects with
// checksums) made every pass over 4000 files reopen most of them.
TEST(FdCacheCapacityTest, ATypicalLimitHoldsThousandsOfObjects) {
  EXPECT_EQ(FdCacheCapacityFor(20000, 1), 15000u);
  EXPECT_EQ(FdCacheCapacityFor(20000, 2), 7500u);
  EXPECT_GE(FdCacheCapacityFor(524288, 1) / 3, 16384u);
}

TEST(FdCacheCapacityTest, ASmallLimitKeepsHalfForSocketsAndTheKvTier) {
  EXPECT_EQ(FdCacheCapacityFor(1024, 1), 512u);
  EXPECT_EQ(FdCacheCapacityFor(1024, 4), 128u);
  EXPECT_EQ(FdCacheCapacityFor(4096, 1), 3072u);
}

TEST(FdCacheCapacityTest, StaysWithinItsBounds) {
  EXPECT_EQ(FdCacheCapacityFor(100, 8), kMinFdCachePerOst);
  EXPECT_EQ(FdCacheCapacityFor(UINT64_MAX, 1), kMaxFdCachePerOst);
}

// With 2 OSTs an OST gets every other oid; all of them must fit in a cache
// of their number (oid % 16 put them in half of the shards).
TEST(FdCacheTest, OidsOfOneResidueUseTheWholeCapacity) {
  FdCache cache(64);
  for (uint64_t oid = 0; oid < 2 * 64; oid += 2) {
    int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    cache.Insert(oid, std::make_shared<Fd>(fd, false), cache.epoch());
  }
  EXPECT_GE(cache.size(), 48u);  // a hash spreads 64 keys over 16 shards of 4 unevenly
}

}  // namespace
}  // namespace sfs::oss
