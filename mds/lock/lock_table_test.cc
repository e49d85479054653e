#include "mds/lock/lock_table.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <optional>

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

}  // namespace
}  // namespace sfs::mds
