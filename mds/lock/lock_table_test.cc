#include "mds/lock/lock_table.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <optional>
#include <vector>

namespace sfs::mds {
namespace {

using lock::kLockEof;
using lock::kRead;
using lock::kUnlock;
using lock::kWrite;

// A manual clock, so expiry and grace need no sleeps.
struct FakeClock {
  std::atomic<int64_t> now{1000};
  LockTable::Clock fn() {
    return [this] { return now.load(); };
  }
};

LockRequest Req(uint64_t client, uint64_t owner, int type, uint64_t start = 0,
                uint64_t end = kLockEof, bool wait = false) {
  LockRequest r;
  r.ino = 7;
  r.owner = {client, owner};
  r.pid = static_cast<uint32_t>(owner);
  r.range = {start, end, type};
  r.wait = wait;
  return r;
}

// Records the one completion of a Set (-1: none yet). Atomic: the table's
// timer thread may be the one that completes it.
struct Outcome {
  std::atomic<int> code{-1};
  LockTable::Done fn() {
    return [this](Status st) { code = st.code(); };
  }
};

TEST(LockTableTest, WriteLockExcludesOtherClientsAndNotTheOwner) {
  FakeClock clock;
  LockTable t({}, clock.fn());
  Outcome a, b, c;
  t.Set(Req(1, 10, kWrite), a.fn());
  t.Set(Req(2, 10, kWrite), b.fn());
  t.Set(Req(1, 10, kRead, 0, 99), c.fn());  // the owner converts part of its lock
  EXPECT_EQ(a.code, 0);
  EXPECT_EQ(b.code, EAGAIN);
  EXPECT_EQ(c.code, 0);
  std::optional<LockHolder> h = t.Test(Req(2, 1, kWrite, 50, 50));
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(h->owner.client, 1u);
  EXPECT_EQ(h->range.type, kRead);
  EXPECT_FALSE(t.Test(Req(2, 1, kRead, 50, 50)).has_value());
}

TEST(LockTableTest, FlockAndPosixLocksDoNotInteract) {
  LockTable t({});
  Outcome a, b;
  t.Set(Req(1, 10, kWrite), a.fn());
  LockRequest f = Req(2, 20, kWrite);
  f.flock = true;
  t.Set(f, b.fn());
  EXPECT_EQ(a.code, 0);
  EXPECT_EQ(b.code, 0);
}

TEST(LockTableTest, AWaiterIsGrantedByTheReleaseThatMakesRoom) {
  FakeClock clock;
  LockTable t({}, clock.fn());
  Outcome a, b, unlock;
  t.Set(Req(1, 10, kWrite, 0, 99), a.fn());
  t.Set(Req(2, 20, kWrite, 50, 60, /*wait=*/true), b.fn());
  EXPECT_EQ(b.code, -1);
  EXPECT_EQ(t.WaiterCount(), 1u);
  t.Set(Req(1, 10, kUnlock, 0, 9), unlock.fn());  // not the range b waits for
  EXPECT_EQ(b.code, -1);
  t.Set(Req(1, 10, kUnlock, 0, kLockEof), unlock.fn());
  EXPECT_EQ(b.code, 0);
  EXPECT_EQ(t.WaiterCount(), 0u);
}

TEST(LockTableTest, ACycleOfWaitsIsEdeadlk) {
  LockTable t({});
  Outcome a, b, wa, wb;
  t.Set(Req(1, 10, kWrite, 0, 9), a.fn());
  t.Set(Req(2, 20, kWrite, 10, 19), b.fn());
  t.Set(Req(1, 10, kWrite, 10, 19, true), wa.fn());  // 1 waits for 2
  t.Set(Req(2, 20, kWrite, 0, 9, true), wb.fn());    // 2 would wait for 1
  EXPECT_EQ(wa.code, -1);
  EXPECT_EQ(wb.code, EDEADLK);
}

TEST(LockTableTest, WaitsAnswerEinprogressAfterTheirTimeAndCancelIsEintr) {
  FakeClock clock;
  LockTable t({}, clock.fn());
  Outcome a, w1, w2;
  t.Set(Req(1, 10, kWrite), a.fn());
  LockRequest r = Req(2, 20, kWrite, 0, kLockEof, true);
  r.wait_ms = 500;
  t.Set(r, w1.fn());
  clock.now += 501;
  t.Housekeep();
  EXPECT_EQ(w1.code, EINPROGRESS);
  t.Set(r, w2.fn());
  t.Cancel(7, false, {2, 20});
  EXPECT_EQ(w2.code, EINTR);
}

TEST(LockTableTest, ASilentClientLosesItsLocksAndWakesWaiters) {
  FakeClock clock;
  LockOptions o;
  o.client_timeout_ms = 3000;
  LockTable t(o, clock.fn());
  Outcome a, w;
  t.Set(Req(1, 10, kWrite), a.fn());
  t.Set(Req(2, 20, kWrite, 0, kLockEof, true), w.fn());
  clock.now += 2000;
  t.Touch(2);  // client 2 keeps talking, client 1 does not
  clock.now += 1500;
  t.Housekeep();
  EXPECT_EQ(w.code, 0);
  EXPECT_EQ(t.LockCount(), 1u);
}

TEST(LockTableTest, DuringGraceOnlyReclaimsAreGranted) {
  FakeClock clock;
  LockOptions o;
  o.grace_ms = 5000;
  LockTable t(o, clock.fn());
  Outcome fresh, reclaim;
  t.Set(Req(2, 20, kWrite), fresh.fn());
  LockRequest r = Req(1, 10, kWrite);
  r.reclaim = true;
  t.Set(r, reclaim.fn());
  EXPECT_EQ(reclaim.code, 0);
  EXPECT_EQ(fresh.code, -1);
  clock.now += 5001;
  t.Housekeep();
  EXPECT_EQ(fresh.code, EAGAIN);  // the reclaimed lock still holds
}

TEST(LockTableTest, FirstGrantIsAnnouncedOnce) {
  int calls = 0;
  LockOptions o;
  o.on_first_grant = [&] { ++calls; };
  LockTable t(o);
  Outcome a, b;
  t.Set(Req(1, 10, kRead), a.fn());
  t.Set(Req(2, 20, kRead), b.fn());
  EXPECT_EQ(calls, 1);
}

// Cached locks: the hooks as sfs-mds wires them to the watches, recorded.
struct Recalls {
  std::vector<std::pair<uint64_t, LockOwner>> sent;
  bool watching = true;
  CacheHooks hooks() {
    return {.may_cache = [this](uint64_t) { return watching; },
            .recall = [this](uint64_t key, LockOwner h) { sent.emplace_back(key, h); }};
  }
};

LockRequest Cached(uint64_t client, uint64_t owner, uint64_t start, uint64_t end,
                   bool wait = false) {
  LockRequest r = Req(client, owner, kWrite, start, end, wait);
  r.cache = true;
  return r;
}

TEST(LockTableTest, ALoneCachedLockIsWidenedAndRecalledOnceByAConflict) {
  FakeClock clock;
  LockTable t({}, clock.fn());
  Recalls rec;
  t.SetCacheHooks(rec.hooks());
  Outcome a, b, again, unlock;
  t.Set(Cached(1, 10, 100, 199), a.fn());
  EXPECT_EQ(a.code, 0);
  EXPECT_TRUE(t.HoldsCached(7, {1, 10}));
  // Widened: a range far from the one asked for conflicts.
  ASSERT_TRUE(t.Test(Req(2, 20, kWrite, 5000, 5000)).has_value());
  t.Set(Cached(2, 20, 5000, 5000, /*wait=*/true), b.fn());
  EXPECT_EQ(b.code, -1);
  ASSERT_EQ(rec.sent.size(), 1u);
  EXPECT_EQ(rec.sent[0].first, 7u);
  EXPECT_EQ(rec.sent[0].second, (LockOwner{1, 10}));
  t.Set(Cached(2, 20, 5000, 5000, /*wait=*/true), again.fn());  // a re-sent wait
  EXPECT_EQ(rec.sent.size(), 1u) << "one recall per cached lock";
  t.Set(Req(1, 10, kUnlock), unlock.fn());  // the holder gives it back
  EXPECT_EQ(again.code, 0);
  EXPECT_FALSE(t.HoldsCached(7, {1, 10}));
  // Contended now: the waiter got its range alone, not the whole file.
  EXPECT_FALSE(t.HoldsCached(7, {2, 20}));
  EXPECT_FALSE(t.Test(Req(1, 11, kWrite, 0, 4999)).has_value());
}

TEST(LockTableTest, NoCachedLockWithoutAWatchOrSoonAfterARecall) {
  FakeClock clock;
  LockOptions o;
  o.cache_quiet_ms = 2000;
  LockTable t(o, clock.fn());
  Recalls rec;
  rec.watching = false;
  t.SetCacheHooks(rec.hooks());
  Outcome a, b, c, d, u;
  t.Set(Cached(1, 10, 0, 9), a.fn());
  EXPECT_EQ(a.code, 0);
  EXPECT_FALSE(t.HoldsCached(7, {1, 10})) << "a client that hears no recall";
  t.Set(Req(1, 10, kUnlock), u.fn());
  rec.watching = true;
  t.Set(Cached(1, 10, 0, 9), b.fn());
  EXPECT_TRUE(t.HoldsCached(7, {1, 10}));
  t.Set(Req(2, 20, kWrite, 50, 59), c.fn());  // no wait: EAGAIN, and a recall
  EXPECT_EQ(c.code, EAGAIN);
  EXPECT_EQ(rec.sent.size(), 1u);
  t.Set(Req(1, 10, kUnlock), u.fn());
  t.Set(Cached(2, 20, 50, 59), d.fn());
  EXPECT_EQ(d.code, 0);
  EXPECT_FALSE(t.HoldsCached(7, {2, 20})) << "widened within the quiet time after a recall";
  t.Set(Req(2, 20, kUnlock), u.fn());
  clock.now += 2001;
  Outcome e;
  t.Set(Cached(2, 20, 50, 59), e.fn());
  EXPECT_TRUE(t.HoldsCached(7, {2, 20}));
}

TEST(LockTableTest, DropCachedFreesTheFileForItsWaiters) {
  LockTable t({});
  Recalls rec;
  t.SetCacheHooks(rec.hooks());
  Outcome a, b, fcntl_lock;
  t.Set(Cached(1, 10, 0, 9), a.fn());
  LockRequest other_space = Req(1, 30, kWrite);
  other_space.ino = 8;
  t.Set(other_space, fcntl_lock.fn());  // an ordinary lock of the same client stays
  t.Set(Cached(2, 20, 0, 9, /*wait=*/true), b.fn());
  EXPECT_EQ(b.code, -1);
  t.DropCached(1);  // client 1 unmounted
  EXPECT_EQ(b.code, 0);
  EXPECT_EQ(t.LockCount(), 2u);
}

}  // namespace
}  // namespace sfs::mds
