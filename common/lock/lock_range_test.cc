#include "common/lock/lock_range.h"

#include <gtest/gtest.h>

namespace sfs::lock {
namespace {

TEST(LockRangeTest, UnlockInTheMiddleSplitsARange) {
  std::vector<Range> held;
  Apply(&held, {0, 99, kWrite});
  Apply(&held, {10, 19, kUnlock});
  ASSERT_EQ(held.size(), 2u);
  EXPECT_EQ(held[0], (Range{0, 9, kWrite}));
  EXPECT_EQ(held[1], (Range{20, 99, kWrite}));
}

TEST(LockRangeTest, AdjacentRangesOfOneTypeMergeAndOtherTypesSplit) {
  std::vector<Range> held;
  Apply(&held, {0, 9, kRead});
  Apply(&held, {10, 19, kRead});
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0], (Range{0, 19, kRead}));
  Apply(&held, {5, 14, kWrite});
  ASSERT_EQ(held.size(), 3u);
  EXPECT_EQ(held[1], (Range{5, 14, kWrite}));
  Apply(&held, {0, kLockEof, kUnlock});
  EXPECT_TRUE(held.empty());
}

TEST(LockRangeTest, ToEofRangeMergesWithWhatFollows) {
  std::vector<Range> held;
  Apply(&held, {100, kLockEof, kWrite});
  Apply(&held, {50, 150, kWrite});
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0], (Range{50, kLockEof, kWrite}));
}

TEST(LockRangeTest, ConflictNeedsOverlapAndAWriter) {
  EXPECT_FALSE(Conflict({0, 9, kRead}, {5, 20, kRead}));
  EXPECT_TRUE(Conflict({0, 9, kRead}, {5, 20, kWrite}));
  EXPECT_FALSE(Conflict({0, 9, kWrite}, {10, 20, kWrite}));
}

TEST(LockRangeTest, StartLenFollowsStructFlock) {
  Range r;
  ASSERT_TRUE(FromStartLen(10, 0, &r));
  EXPECT_EQ(r.end, kLockEof);
  ASSERT_TRUE(FromStartLen(10, -5, &r));
  EXPECT_EQ(r.start, 5u);
  EXPECT_EQ(r.end, 9u);
  EXPECT_FALSE(FromStartLen(3, -5, &r));
  EXPECT_FALSE(FromStartLen(-1, 5, &r));
  EXPECT_FALSE(FromStartLen(INT64_MAX, 2, &r));
}

}  // namespace
}  // namespace sfs::lock
