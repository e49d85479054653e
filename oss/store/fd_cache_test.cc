// FdCacheCapacityFor: the OSS's fd caches take what RLIMIT_NOFILE leaves.
#include "oss/store/fd_cache.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace sfs::oss
