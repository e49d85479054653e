// Unit tests of OpenCache (client/lib/open_cache.h): which opens are kept and
// handed out, and which are released, and when. No servers.
#include "client/lib/open_cache.h"

#include <gtest/gtest.h>

#include <thread>

namespace sfs::client {
namespace {

using Clock = OpenCache::Clock;
using std::chrono::milliseconds;

OpenResult OpenOf(uint64_t ino, uint64_t open_id, uint64_t gen) {
  OpenResult r;
  r.attr.ino = ino;
  r.open_id = open_id;
  r.cache_gen = gen;
  return r;
}

Cred User(uint32_t uid, std::vector<uint32_t> groups = {}) {
  return Cred{.uid = uid, .gid = uid, .groups = std::move(groups)};
}

std::vector<uint64_t> Ids(const std::vector<DeferredClose>& v) {
  std::vector<uint64_t> out;
  for (const DeferredClose& c : v) out.push_back(c.open_id);
  return out;
}

const Clock::time_point kLong = Clock::now() + std::chrono::hours(1);

TEST(OpenCacheTest, AKeptOpenIsHandedOnceToTheSameCredentialsOnly) {
  OpenCache cache(8);
  std::vector<DeferredClose> released;
  ASSERT_TRUE(
      cache.Keep(User(1000, {5}), OpenOf(7, 70, cache.Gen()), cache.Gen(), kLong, &released));
  Clock::time_point until;
  EXPECT_FALSE(cache.Take(User(1001, {5}), 7, &until)) << "another user";
  EXPECT_FALSE(cache.Take(User(1000, {5, 6}), 7, &until)) << "other groups";
  EXPECT_FALSE(cache.Take(User(1000, {5}), 8, &until)) << "another file";
  std::optional<OpenResult> r = cache.Take(User(1000, {5}), 7, &until);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->open_id, 70u);
  EXPECT_EQ(until, kLong);
  EXPECT_FALSE(cache.Take(User(1000, {5}), 7, &until)) << "handed out once";
  EXPECT_TRUE(released.empty());
  EXPECT_EQ(cache.size(), 0u);
}

TEST(OpenCacheTest, HoldsSaysWhetherTakeWouldStillHandTheOpenOutThatFarAhead) {
  OpenCache cache(8);
  std::vector<DeferredClose> released;
  const uint64_t g = cache.Gen();
  const Clock::time_point mid = Clock::now() + OpenCache::kMinLeft + milliseconds(2000);
  ASSERT_TRUE(cache.Keep(User(1000, {5}), OpenOf(7, 70, g), g, mid, &released));
  EXPECT_TRUE(cache.Holds(User(1000, {5}), 7, milliseconds(0)));
  EXPECT_FALSE(cache.Holds(User(1000, {5}), 7, milliseconds(60000))) << "its lease ends before";
  EXPECT_FALSE(cache.Holds(User(1001, {5}), 7, milliseconds(0))) << "another user";
  EXPECT_FALSE(cache.Holds(User(1000, {5}), 8, milliseconds(0))) << "another file";
  EXPECT_EQ(cache.size(), 1u) << "a look takes nothing";
  Clock::time_point until;
  ASSERT_TRUE(cache.Take(User(1000, {5}), 7, &until));
  EXPECT_FALSE(cache.Holds(User(1000, {5}), 7, milliseconds(0))) << "taken";
}

TEST(OpenCacheTest, AnOpenTakenBeforeAChangeIsNotKeptAfterIt) {
  OpenCache cache(8);
  std::vector<DeferredClose> released;
  const uint64_t before = cache.Gen();
  ASSERT_TRUE(cache.Keep(User(0), OpenOf(1, 10, before), before, kLong, &released));
  EXPECT_EQ(Ids(cache.Changed()), (std::vector<uint64_t>{10})) << "kept opens are released";
  EXPECT_NE(cache.Gen(), before);
  EXPECT_FALSE(cache.Keep(User(0), OpenOf(2, 20, before), before, kLong, &released))
      << "its open request was sent before the change: it may have been answered before it";
  Clock::time_point until;
  EXPECT_FALSE(cache.Take(User(0), 1, &until));
  EXPECT_TRUE(cache.Keep(User(0), OpenOf(2, 21, cache.Gen()), cache.Gen(), kLong, &released));
  EXPECT_EQ(cache.size(), 1u);
}

TEST(OpenCacheTest, NoOpenIsKeptOrHandedOutNearItsLeasesEnd) {
  OpenCache cache(8);
  std::vector<DeferredClose> released;
  const uint64_t g = cache.Gen();
  EXPECT_FALSE(
      cache.Keep(User(0), OpenOf(1, 10, g), g, Clock::now() + milliseconds(100), &released));
  // Kept with just over the minimum: Expired releases it once under it.
  const Clock::time_point soon = Clock::now() + OpenCache::kMinLeft + milliseconds(50);
  ASSERT_TRUE(cache.Keep(User(0), OpenOf(2, 20, g), g, soon, &released));
  ASSERT_TRUE(cache.Keep(User(0), OpenOf(3, 30, g), g, kLong, &released));
  while (Clock::now() + OpenCache::kMinLeft < soon) std::this_thread::sleep_for(milliseconds(10));
  Clock::time_point until;
  EXPECT_FALSE(cache.Take(User(0), 2, &until)) << "too little lease left to hand out";
  EXPECT_EQ(Ids(cache.Expired()), (std::vector<uint64_t>{20}));
  EXPECT_TRUE(cache.Expired().empty());
  EXPECT_TRUE(cache.Take(User(0), 3, &until));
}

TEST(OpenCacheTest, AFullCacheReleasesTheOpenNearestItsEnd) {
  OpenCache cache(2);
  std::vector<DeferredClose> released;
  const uint64_t g = cache.Gen();
  ASSERT_TRUE(cache.Keep(User(0), OpenOf(1, 10, g), g, kLong + milliseconds(2), &released));
  ASSERT_TRUE(cache.Keep(User(0), OpenOf(1, 11, g), g, kLong + milliseconds(1), &released));
  ASSERT_TRUE(cache.Keep(User(0), OpenOf(2, 20, g), g, kLong + milliseconds(3), &released));
  EXPECT_EQ(Ids(released), (std::vector<uint64_t>{11}));
  EXPECT_EQ(cache.size(), 2u);
  Clock::time_point until;
  std::optional<OpenResult> r = cache.Take(User(0), 1, &until);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->open_id, 10u) << "two opens of one file are kept side by side";
}

TEST(OpenCacheTest, ANewLeaseLengthensOnlyKeptOpensWhoseLeaseStillRuns) {
  OpenCache cache(8);
  std::vector<DeferredClose> released;
  const uint64_t g = cache.Gen();
  const Clock::time_point soon = Clock::now() + OpenCache::kMinLeft + milliseconds(30);
  ASSERT_TRUE(cache.Keep(User(0), OpenOf(1, 10, g), g, soon, &released));
  ASSERT_TRUE(cache.Keep(User(0), OpenOf(2, 20, g), g, soon, &released));
  cache.Extend(1, kLong);
  while (Clock::now() + OpenCache::kMinLeft < soon) std::this_thread::sleep_for(milliseconds(10));
  EXPECT_EQ(Ids(cache.Expired()), (std::vector<uint64_t>{20}))
      << "only inode 1's lease was renewed";
  Clock::time_point until;
  ASSERT_TRUE(cache.Take(User(0), 1, &until));
  EXPECT_EQ(until, kLong);
  // A lease that ran out is not renewed: a change in the gap went unannounced.
  const Clock::time_point past = Clock::now() + milliseconds(600);
  ASSERT_TRUE(cache.Keep(User(0), OpenOf(3, 30, g), g, past, &released));
  while (Clock::now() < past) std::this_thread::sleep_for(milliseconds(10));
  cache.Extend(3, kLong);
  EXPECT_FALSE(cache.Take(User(0), 3, &until));
}

TEST(OpenCacheTest, CapacityZeroKeepsNothing) {
  OpenCache cache(0);
  std::vector<DeferredClose> released;
  EXPECT_FALSE(cache.Keep(User(0), OpenOf(1, 10, 0), 0, kLong, &released));
  EXPECT_TRUE(released.empty());
}

}  // namespace
}  // namespace sfs::client
