// LeaseTable alone, on a fake clock: grants, revocation waiting for acks or
// expiry, re-send of unacked invalidations, the grant/revoke race, grace.
#include "mds/lease/lease_table.h"

#include <gtest/gtest.h>

#include <optional>

namespace sfs::mds {
namespace {

constexpr uint64_t kA = 1, kB = 2;

struct Polled {
  std::vector<LeaseInval> items;
  uint64_t seq = 0;
};

class LeaseTableTest : public ::testing::Test {
 protected:
  LeaseTableTest() : table_(Options(0), [this] { return now_; }) {}
  static LeaseOptions Options(int64_t grace_ms) {
    LeaseOptions o;
    o.lease_ms = 5000;
    o.margin_ms = 500;
    o.grace_ms = grace_ms;
    return o;
  }
  // Starts a Watch whose answer lands in *slot.
  void Poll(LeaseTable& t, uint64_t client, uint64_t ack, std::optional<Polled>* slot) {
    slot->reset();
    t.Watch(client, ack, 1000, [slot](std::vector<LeaseInval> items, uint64_t seq) {
      *slot = Polled{std::move(items), seq};
    });
  }
  int64_t now_ = 1000000;
  LeaseTable table_;
};

TEST_F(LeaseTableTest, AClientWithoutAWatchGetsNoLease) {
  EXPECT_EQ(table_.Grant(kB, 10, table_.Tick()), 0u);
  EXPECT_EQ(table_.Holders(10), 0u);
}

TEST_F(LeaseTableTest, AWatchingClientGetsTheConfiguredLease) {
  std::optional<Polled> b;
  Poll(table_, kB, 0, &b);
  EXPECT_EQ(table_.Grant(kB, 10, table_.Tick()), 5000u);
  EXPECT_EQ(table_.Holders(10), 1u);
}

TEST_F(LeaseTableTest, ARevocationWaitsUntilTheHolderAcksItsInvalidation) {
  std::optional<Polled> b;
  Poll(table_, kB, 0, &b);
  ASSERT_GT(table_.Grant(kB, 10, table_.Tick()), 0u);
  bool done = false;
  table_.Revoke(kA, {{10, 1, "f"}}, [&] { done = true; });
  ASSERT_TRUE(b.has_value()) << "the held watch is answered at once";
  ASSERT_EQ(b->items.size(), 1u);
  EXPECT_EQ(b->items[0].ino, 10u);
  EXPECT_EQ(b->items[0].parent, 1u);
  EXPECT_EQ(b->items[0].name, "f");
  EXPECT_FALSE(done);
  EXPECT_EQ(table_.Holders(10), 0u);
  std::optional<Polled> b2;
  Poll(table_, kB, b->seq, &b2);
  EXPECT_TRUE(done);
  EXPECT_FALSE(b2.has_value()) << "nothing left to send: the poll is held";
}

// An append token's recall (append_ops.cc): sent to the holder even after
// its lease was revoked by someone else, and waited for until it acks.
TEST_F(LeaseTableTest, ARecallReachesAHolderWithoutALeaseAndWaitsForItsAck) {
  std::optional<Polled> b;
  Poll(table_, kB, 0, &b);
  ASSERT_GT(table_.Grant(kB, 10, table_.Tick()), 0u);
  bool revoked = false, recalled = false;
  table_.Revoke(kA, {{10}}, [&] { revoked = true; });  // B's lease is gone now
  ASSERT_TRUE(b.has_value());
  table_.Recall(kB, {10}, now_ + 5500, [&] { recalled = true; });
  EXPECT_FALSE(recalled);
  std::optional<Polled> b2;
  Poll(table_, kB, b->seq, &b2);  // acks the revocation only
  EXPECT_TRUE(revoked);
  ASSERT_TRUE(b2.has_value()) << "the recall is sent though B holds no lease";
  EXPECT_FALSE(recalled);
  std::optional<Polled> b3;
  Poll(table_, kB, b2->seq, &b3);
  EXPECT_TRUE(recalled);
}

TEST_F(LeaseTableTest, ARecallOfASilentHolderEndsAtItsDeadline) {
  bool recalled = false;
  table_.Recall(kB, {10}, now_ + 100, [&] { recalled = true; });
  EXPECT_FALSE(recalled);
  now_ += 101;
  table_.RunDue();
  EXPECT_TRUE(recalled);
}

TEST_F(LeaseTableTest, AClientThatLeavesStopsDelayingChangesAndGetsNoMoreLeases) {
  std::optional<Polled> b;
  Poll(table_, kB, 0, &b);
  ASSERT_GT(table_.Grant(kB, 10, table_.Tick()), 0u);
  ASSERT_GT(table_.Grant(kB, 11, table_.Tick()), 0u);
  bool done = false;
  table_.Revoke(kA, {{10, 0, ""}}, [&] { done = true; });
  ASSERT_TRUE(b.has_value());
  EXPECT_FALSE(done) << "B has not acked";
  table_.Leave(kB);  // B unmounts without acking
  EXPECT_TRUE(done) << "the change no longer waits out B's lease";
  EXPECT_EQ(table_.Holders(11), 0u);
  bool done11 = false;
  table_.Revoke(kA, {{11, 0, ""}}, [&] { done11 = true; });
  EXPECT_TRUE(done11);
  EXPECT_EQ(table_.Grant(kB, 12, table_.Tick()), 0u) << "no watch: no lease";
}

TEST_F(LeaseTableTest, TheRequestersOwnLeaseDoesNotDelayItsChange) {
  std::optional<Polled> a;
  Poll(table_, kA, 0, &a);
  ASSERT_GT(table_.Grant(kA, 10, table_.Tick()), 0u);
  bool done = false;
  table_.Revoke(kA, {{10, 0, ""}}, [&] { done = true; });
  EXPECT_TRUE(done);
  EXPECT_FALSE(a.has_value());
  EXPECT_EQ(table_.Holders(10), 1u);
}

TEST_F(LeaseTableTest, ASilentHolderDelaysARevocationOnlyUntilItsLeaseEnds) {
  std::optional<Polled> b;
  Poll(table_, kB, 0, &b);
  ASSERT_GT(table_.Grant(kB, 10, table_.Tick()), 0u);
  bool done = false;
  table_.Revoke(kA, {{10, 0, ""}}, [&] { done = true; });
  now_ += 5499;
  table_.RunDue();
  EXPECT_FALSE(done);
  now_ += 1;
  table_.RunDue();
  EXPECT_TRUE(done);
  EXPECT_EQ(table_.PendingRevocations(), 0u);
}

TEST_F(LeaseTableTest, TwoClientsRevokingEachOthersLeasesDoNotWaitOutTheLease) {
  // A and B each cache a file the other is about to unlink in one directory;
  // each holds that directory's lock in its kernel until its change returns,
  // so neither could ack the other's invalidation.
  std::optional<Polled> a, b;
  Poll(table_, kA, 0, &a);
  Poll(table_, kB, 0, &b);
  ASSERT_GT(table_.Grant(kA, 10, table_.Tick()), 0u);
  ASSERT_GT(table_.Grant(kB, 20, table_.Tick()), 0u);
  bool b_done = false, a_done = false;
  table_.Revoke(kB, {{10, 1, "x"}}, [&] { b_done = true; });  // B unlinks x, A caches it
  EXPECT_FALSE(b_done);
  table_.Revoke(kA, {{20, 1, "y"}}, [&] { a_done = true; });  // A unlinks y, B caches it
  EXPECT_TRUE(a_done) << "A must not wait on B, which waits on A";
  ASSERT_TRUE(b.has_value()) << "B is still told to forget y";
  ASSERT_EQ(b->items.size(), 1u);
  EXPECT_EQ(b->items[0].name, "y");
  EXPECT_FALSE(b_done) << "B still waits for A's ack";
  ASSERT_TRUE(a.has_value());
  std::optional<Polled> a2;
  Poll(table_, kA, a->seq, &a2);  // A's change returned, its kernel applied x
  EXPECT_TRUE(b_done);
}

TEST_F(LeaseTableTest, AHolderWaitingOnSomeoneElseIsStillWaitedFor) {
  constexpr uint64_t kC = 3;
  std::optional<Polled> a, b, c;
  Poll(table_, kA, 0, &a);
  Poll(table_, kB, 0, &b);
  Poll(table_, kC, 0, &c);
  ASSERT_GT(table_.Grant(kC, 10, table_.Tick()), 0u);
  ASSERT_GT(table_.Grant(kB, 20, table_.Tick()), 0u);
  table_.Revoke(kB, {{10, 0, ""}}, [] {});  // B waits on C (silent)
  bool a_done = false;
  table_.Revoke(kA, {{20, 0, ""}}, [&] { a_done = true; });
  EXPECT_FALSE(a_done) << "B does not wait on A: no cycle, so A waits for B's ack";
  ASSERT_TRUE(b.has_value());
  std::optional<Polled> b2;
  Poll(table_, kB, b->seq, &b2);
  EXPECT_TRUE(a_done);
}

TEST_F(LeaseTableTest, UnackedInvalidationsAreSentAgain) {
  std::optional<Polled> b;
  Poll(table_, kB, 0, &b);
  table_.Grant(kB, 10, table_.Tick());
  table_.Revoke(kA, {{10, 1, "f"}}, [] {});
  ASSERT_TRUE(b.has_value());
  std::optional<Polled> again;
  Poll(table_, kB, 0, &again);  // the reply was lost: ack still 0
  ASSERT_TRUE(again.has_value());
  ASSERT_EQ(again->items.size(), 1u);
  EXPECT_EQ(again->seq, b->seq);
}

TEST_F(LeaseTableTest, AReadThatRacedARevocationGetsNoLease) {
  std::optional<Polled> b;
  Poll(table_, kB, 0, &b);
  uint64_t tick = table_.Tick();  // B starts reading ino 10
  table_.Revoke(kA, {{10, 0, ""}}, [] {});  // A changes it; B held nothing yet
  EXPECT_EQ(table_.Grant(kB, 10, tick), 0u);
  EXPECT_GT(table_.Grant(kB, 10, table_.Tick()), 0u) << "a read after the change may cache";
}

TEST_F(LeaseTableTest, AnIdleWatchIsAnsweredEmptyAfterItsWait) {
  std::optional<Polled> b;
  Poll(table_, kB, 0, &b);
  now_ += 999;
  table_.RunDue();
  EXPECT_FALSE(b.has_value());
  now_ += 1;
  table_.RunDue();
  ASSERT_TRUE(b.has_value());
  EXPECT_TRUE(b->items.empty());
}

TEST_F(LeaseTableTest, AWatchSilentForLongerThanActiveGetsNoNewLeases) {
  std::optional<Polled> b;
  Poll(table_, kB, 0, &b);
  now_ += 1000;
  table_.RunDue();  // answered; B does not poll again (e.g. SIGSTOPped)
  now_ += 3001;
  EXPECT_EQ(table_.Grant(kB, 10, table_.Tick()), 0u);
}

TEST_F(LeaseTableTest, AfterARestartRevocationsWaitForTheGracePeriod) {
  LeaseTable fresh(Options(-1), [this] { return now_; });
  bool done = false;
  fresh.Revoke(kA, {{10, 0, ""}}, [&] { done = true; });
  now_ += 5499;
  fresh.RunDue();
  EXPECT_FALSE(done);
  now_ += 1;
  fresh.RunDue();
  EXPECT_TRUE(done);
}

TEST_F(LeaseTableTest, AnAckFromAPreviousInstanceDoesNotAckNewInvalidations) {
  std::optional<Polled> b;
  Poll(table_, kB, 57, &b);  // B acks a seq the old MDS gave it
  table_.Grant(kB, 10, table_.Tick());
  bool done = false;
  table_.Revoke(kA, {{10, 0, ""}}, [&] { done = true; });
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->seq, 1u);
  EXPECT_FALSE(done);
}

}  // namespace
}  // namespace sfs::mds
