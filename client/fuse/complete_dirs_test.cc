// CompleteDirs: which names sfs-mount may answer as absent without the MDS.
#include "client/fuse/complete_dirs.h"

#include <gtest/gtest.h>

namespace sfs::fuse {
namespace {

using Clock = CompleteDirs::Clock;
using std::chrono::milliseconds;

TEST(CompleteDirsTest, ADirectoryMadeHereKnowsEveryNameUntilItsLeaseRunsOut) {
  CompleteDirs d;
  d.Made(7, 5000, Clock::now(), d.Epoch());
  double left = d.AbsentFor(7, "x");
  EXPECT_GT(left, 4.0);
  EXPECT_LE(left, 5.0);
  d.Added(7, "x");
  EXPECT_EQ(d.AbsentFor(7, "x"), 0) << "x exists now";
  d.Removed(7, "x");
  EXPECT_GT(d.AbsentFor(7, "x"), 0);
  EXPECT_EQ(d.AbsentFor(8, "x"), 0) << "another directory is not complete";
  d.Made(9, 5000, Clock::now() - milliseconds(6000), d.Epoch());
  EXPECT_EQ(d.AbsentFor(9, "x"), 0) << "its lease ran out before the reply came";
}

TEST(CompleteDirsTest, AnInvalidationWhileTheMkdirWasInFlightLeavesItIncomplete) {
  CompleteDirs d;
  uint64_t epoch = d.Epoch();
  d.Forget(12345);  // any directory: the new one's may be among the changes
  d.Made(7, 5000, Clock::now(), epoch);
  EXPECT_EQ(d.AbsentFor(7, "x"), 0);
  EXPECT_EQ(d.size(), 0u);
}

TEST(CompleteDirsTest, ForgetEndsCompletenessAndALaterCreateDoesNotRestoreIt) {
  CompleteDirs d;
  d.Made(7, 5000, Clock::now(), d.Epoch());
  d.Forget(7);
  d.Added(7, "y", 5000, Clock::now());
  EXPECT_EQ(d.AbsentFor(7, "x"), 0);
}

TEST(CompleteDirsTest, AReplyWithALeaseRenewsALiveOneOnly) {
  CompleteDirs d;
  d.Made(7, 100, Clock::now(), d.Epoch());
  d.Added(7, "a", 5000, Clock::now());
  EXPECT_GT(d.AbsentFor(7, "x"), 1.0) << "renewed to about 5 s";
  d.Made(8, 1, Clock::now() - milliseconds(1), d.Epoch());  // already run out
  d.Added(8, "a", 5000, Clock::now());
  EXPECT_EQ(d.AbsentFor(8, "x"), 0) << "a lapsed lease is not renewed";
}

TEST(CompleteDirsTest, AListingReadWholeUnderOneLeaseWithNothingChangingMakesItComplete) {
  CompleteDirs d;
  auto t0 = Clock::now();
  d.Listed(7, {"a", "b"}, t0, 5000, t0, 5000, d.Epoch(), d.NamesEpoch());
  EXPECT_GT(d.AbsentFor(7, "c"), 0);
  EXPECT_EQ(d.AbsentFor(7, "a"), 0);
  uint64_t epoch = d.Epoch(), names = d.NamesEpoch();
  d.Added(9, "n");  // a name op of this mount while listing 8
  d.Listed(8, {"a"}, t0, 5000, t0, 5000, epoch, names);
  EXPECT_EQ(d.AbsentFor(8, "c"), 0);
  d.Listed(8, {"a"}, t0 - milliseconds(6000), 5000, t0, 5000, d.Epoch(), d.NamesEpoch());
  EXPECT_EQ(d.AbsentFor(8, "c"), 0) << "the pages came further apart than the lease";
}

TEST(CompleteDirsTest, ADirectorysAttributesAreKeptForTheLeaseUnlessDroppedOrRaced) {
  CompleteDirs d;
  client::Attr a;
  a.ino = 7;
  a.mode = 040755;
  a.lease_ms = 5000;
  d.SetAttr(a, Clock::now(), d.Epoch());
  client::Attr got;
  EXPECT_GT(d.CachedAttr(7, &got), 4.0);
  EXPECT_EQ(got.mode, 040755u);
  d.DropAttr(7);
  EXPECT_EQ(d.CachedAttr(7, &got), 0);
  uint64_t epoch = d.Epoch();
  d.Forget(99);  // an invalidation while the reply was in flight
  d.SetAttr(a, Clock::now(), epoch);
  EXPECT_EQ(d.CachedAttr(7, &got), 0);
  d.SetAttr(a, Clock::now(), d.Epoch());
  d.DropAllAttrs();
  EXPECT_EQ(d.CachedAttr(7, &got), 0);
  d.SetAttr(a, Clock::now(), d.Epoch());
  d.Forget(7);
  EXPECT_EQ(d.CachedAttr(7, &got), 0);
}

}  // namespace
}  // namespace sfs::fuse
