// Unit tests of the OSS's QoS policy (qos.h) over a simulated clock, and of
// its scheduler's threads.
#include "oss/service/qos.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <thread>
#include <string>

namespace sfs::oss {
namespace {

// Runs the queue as an OSS serving one request at a time, each taking `service`
// seconds, from t=0 until `until` (the items count themselves).
void Simulate(QosQueue& q, double until, double service) {
  double now = 0;
  while (now <= until && q.size() > 0) {
    double wake = 0;
    auto item = q.Pop(now, &wake);
    if (item) {
      (*item)();
      now += service;
    } else {
      if (wake > until) break;
      now = wake;
    }
  }
}

void Fill(QosQueue& q, const std::string& cls, int count, QosCost cost, std::map<std::string, int>* n,
          double at = 0) {
  for (int i = 0; i < count; ++i) q.Push(cls, cost, [n, cls] { ++(*n)[cls]; }, at);
}

TEST(QosQueueTest, AnIopsLimitHoldsTheRateAfterOneBurst) {
  QosQueue q;
  q.SetRules({{"job:a", QosRule{.iops = 10}}});
  std::map<std::string, int> n;
  Fill(q, "job:a", 100, {}, &n);
  Simulate(q, 0.95, 0);
  // At 0 (the bucket tolerates one request), then every 0.1 s.
  EXPECT_EQ(n["job:a"], 10);
  Simulate(q, 1.95, 0);
  EXPECT_EQ(n["job:a"], 20);
}

TEST(QosQueueTest, AWriteBandwidthLimitCountsBytes) {
  QosQueue q;
  q.SetRules({{"job:w", QosRule{.write_bps = 1 << 20}}});
  std::map<std::string, int> n;
  Fill(q, "job:w", 100, QosCost{.write_bytes = 256 << 10}, &n);
  Simulate(q, 4.0, 0);
  // Charged before they go: the first at 0.25 s - kBurst, then every 0.25 s.
  EXPECT_EQ(n["job:w"], 16);
}

TEST(QosQueueTest, OneBigRequestDoesNotSlipThroughAnIdleBucket) {
  QosQueue q;
  q.SetRules({{"job:w", QosRule{.write_bps = 1 << 20}}});
  std::map<std::string, int> n;
  Fill(q, "job:w", 1, QosCost{.write_bytes = 4 << 20}, &n);
  Simulate(q, 3.9, 0);
  EXPECT_EQ(n["job:w"], 0);  // 4 MiB at 1 MiB/s: not before 4 s - kBurst
  Simulate(q, 4.0, 0);
  EXPECT_EQ(n["job:w"], 1);
}

TEST(QosQueueTest, AReadLimitDoesNotSlowTheSameClassesWrites) {
  QosQueue q;
  q.SetRules({{"job:a", QosRule{.read_bps = 1 << 20}}});
  std::map<std::string, int> n;
  Fill(q, "job:a", 50, QosCost{.write_bytes = 1 << 20}, &n);
  Simulate(q, 0.0, 0);
  EXPECT_EQ(n["job:a"], 50);
}

TEST(QosQueueTest, WeightsShareABusyServerInProportion) {
  QosQueue q;
  q.SetRules({{"job:a", QosRule{.weight = 1}}, {"job:b", QosRule{.weight = 3}}});
  std::map<std::string, int> n;
  Fill(q, "job:a", 1000, {}, &n);
  Fill(q, "job:b", 1000, {}, &n);
  // 400 dispatches at 1 ms each.
  Simulate(q, 0.3995, 0.001);
  EXPECT_EQ(n["job:a"] + n["job:b"], 400);
  EXPECT_NEAR(n["job:b"], 300, 2);
}

TEST(QosQueueTest, UnruledJobsShareFairly) {
  QosQueue q;
  q.SetRules({{"job:limited", QosRule{.iops = 1}}});  // QoS on, but not for these two
  std::map<std::string, int> n;
  Fill(q, "job:x", 500, {}, &n);
  Fill(q, "job:y", 500, {}, &n);
  Simulate(q, 0.1995, 0.001);
  EXPECT_NEAR(n["job:x"], 100, 1);
  EXPECT_NEAR(n["job:y"], 100, 1);
}

TEST(QosQueueTest, BigRequestsCostMoreInTheFairShare) {
  QosQueue q;
  q.SetRules({{"job:big", QosRule{}}, {"job:small", QosRule{}}});
  std::map<std::string, int> n;
  Fill(q, "job:big", 1000, QosCost{.write_bytes = 1 << 20}, &n);  // 17 units each
  Fill(q, "job:small", 1000, QosCost{.read_bytes = 4096}, &n);    // ~1.06 units each
  Simulate(q, 0.1795, 0.001);
  ASSERT_EQ(n["job:big"] + n["job:small"], 180);
  EXPECT_NEAR(static_cast<double>(n["job:small"]) / n["job:big"], 17.0 / 1.0625, 2.0);
}

TEST(QosQueueTest, AReservationIsServedAheadOfABiggerWeight) {
  QosQueue q;
  q.SetRules({{"tenant:quiet", QosRule{.reserve_iops = 100, .weight = 1}},
              {"job:noisy", QosRule{.weight = 100}}});
  std::map<std::string, int> n;
  Fill(q, "tenant:quiet", 5000, {}, &n);
  Fill(q, "job:noisy", 5000, {}, &n);
  // 1000 dispatches in 1 s: the weights alone would give quiet ~10; its
  // reservation is a floor of 100/s (one every 10 ms from t=10 ms: 99 by 1 s).
  Simulate(q, 0.9995, 0.001);
  EXPECT_GE(n["tenant:quiet"], 99);
  EXPECT_LE(n["tenant:quiet"], 101);
}

TEST(QosQueueTest, ALimitCapsEvenAnOtherwiseIdleServer) {
  QosQueue q;
  q.SetRules({{"job:a", QosRule{.iops = 50, .reserve_iops = 1000}}});
  std::map<std::string, int> n;
  Fill(q, "job:a", 1000, {}, &n);
  Simulate(q, 1.0, 0);
  EXPECT_LE(n["job:a"], 53);  // 3 at once (kBurst), then 50/s
  EXPECT_GE(n["job:a"], 50);
}

TEST(QosQueueTest, StatsCountDelaysPerRuledClassAndOthersTogether) {
  QosQueue q;
  q.SetRules({{"job:a", QosRule{.iops = 10}}});
  std::map<std::string, int> n;
  Fill(q, "job:a", 3, {}, &n);
  Fill(q, "job:u1", 2, QosCost{.read_bytes = 100}, &n);
  Fill(q, "job:u2", 2, {}, &n);
  Simulate(q, 10, 0);
  ASSERT_EQ(n["job:a"], 3);
  const auto& st = q.stats();
  ASSERT_EQ(st.count("job:a"), 1u);
  EXPECT_EQ(st.at("job:a").dispatched, 3u);
  EXPECT_EQ(st.at("job:a").delayed, 2u);  // the first went at once
  EXPECT_GT(st.at("job:a").wait_seconds, 0.1);
  ASSERT_EQ(st.count("other"), 1u);
  EXPECT_EQ(st.at("other").dispatched, 4u);
  EXPECT_EQ(st.at("other").read_bytes, 200u);
  EXPECT_EQ(st.count("job:u1"), 0u);
}

TEST(QosQueueTest, TakeNowDispatchesOnlyWhatPopWouldDispatchAtOnce) {
  QosQueue q;
  q.SetRules({{"job:noisy", QosRule{.write_bps = 1 << 20}},
              {"job:a", QosRule{.weight = 1}},
              {"job:b", QosRule{.weight = 1}}});
  std::map<std::string, int> n;
  // Nothing queued: taken, charged and counted as Pop would.
  EXPECT_TRUE(q.TakeNow("job:b", QosCost{.read_bytes = 4096}, 0));
  EXPECT_EQ(q.stats().at("job:b").dispatched, 1u);
  EXPECT_EQ(q.size(), 0u);
  // A class its limit holds back (1 MiB at 1 MiB/s) does not stand in the way.
  Fill(q, "job:noisy", 2, QosCost{.write_bytes = 1 << 20}, &n);
  Simulate(q, 0.0, 0);
  ASSERT_EQ(q.size(), 2u);
  EXPECT_TRUE(q.TakeNow("job:b", {}, 0.001));
  EXPECT_FALSE(q.TakeNow("job:noisy", {}, 0.001)) << "its own class has requests queued";
  // b has had its share (its finish tag is ahead); a, queued now, starts
  // earlier, so Pop would take a first: b is refused, and nothing changes.
  Fill(q, "job:a", 1, {}, &n, 0.002);
  EXPECT_FALSE(q.TakeNow("job:b", {}, 0.002));
  EXPECT_EQ(q.stats().at("job:b").dispatched, 2u);
  EXPECT_EQ(q.size(), 3u);
  Simulate(q, 0.002, 0);
  EXPECT_EQ(n["job:a"], 1);
  EXPECT_EQ(n["job:noisy"], 0);
  EXPECT_TRUE(q.TakeNow("job:b", {}, 0.003)) << "a is served: b is next";
}

TEST(QosClassOfTest, JobRuleThenTenantRuleThenTheJobItself) {
  QosRules rules{{"job:train", {}}, {"tenant:default", {}}};
  EXPECT_EQ(QosClassOf(rules, "train", "default"), "job:train");
  EXPECT_EQ(QosClassOf(rules, "eval", "default"), "tenant:default");
  EXPECT_EQ(QosClassOf(rules, "eval", "other"), "job:eval");
  EXPECT_EQ(QosClassOf(rules, "", "other"), "job:");
  EXPECT_EQ(QosClassOf(rules, "sfs:resync", "default"), "resync");
}

// A tenant's rule binds all of its requests, whatever job id they claim (the
// client's word): naming a job that has a rule does not lift a tenant's limit.
TEST(QosClassOfTest, AnAuthenticatedTenantsRuleWinsOverAJobRule) {
  QosRules rules{{"job:train", {}}, {"tenant:team-a", {}}};
  EXPECT_EQ(QosClassOf(rules, "train", "team-a"), "tenant:team-a");
  EXPECT_EQ(QosClassOf(rules, "eval", "team-a"), "tenant:team-a");
  EXPECT_EQ(QosClassOf(rules, "train", "team-b"), "job:train");
  EXPECT_EQ(QosClassOf(rules, "eval", "team-b"), "job:eval");
}

TEST(QosSchedulerTest, RunsEverythingAndStopDrainsWhatALimitHeldBack) {
  std::atomic<int> ran{0};
  {
    QosScheduler s(3);
    s.SetRules({{"job:slow", QosRule{.iops = 0.5}}});
    EXPECT_TRUE(s.enabled());
    for (int i = 0; i < 20; ++i) s.Submit("job:fast", {}, [&] { ++ran; });
    for (int i = 0; i < 5; ++i) s.Submit("job:slow", {}, [&] { ++ran; });
    s.Stop();  // the held-back slow ones run now, not after 8 s
  }
  EXPECT_EQ(ran.load(), 25);
}

TEST(QosSchedulerTest, RunNowRunsOnTheCallerOnlyWithAFreeSlot) {
  QosScheduler s(1);
  s.SetRules({{"job:a", QosRule{.weight = 2}}});
  int here = 0;
  EXPECT_TRUE(s.RunNow("job:a", {}, [&] { ++here; }));
  EXPECT_EQ(here, 1);
  // The one executor busy: RunNow declines, the request is Submitted.
  std::mutex gate;
  std::unique_lock hold(gate);
  std::atomic<bool> started{false};
  s.Submit("job:b", {}, [&] {
    started = true;
    std::lock_guard wait_for_test(gate);
  });
  while (!started.load()) std::this_thread::yield();
  EXPECT_FALSE(s.RunNow("job:a", {}, [&] { ++here; }));
  EXPECT_EQ(here, 1);
  hold.unlock();
  s.Stop();
}

TEST(QosSchedulerTest, NoRulesMeansDisabled) {
  QosScheduler s(1);
  EXPECT_FALSE(s.enabled());
  s.SetRules({{"job:a", {}}});
  EXPECT_TRUE(s.enabled());
  s.SetRules({});
  EXPECT_FALSE(s.enabled());
}

}  // namespace
}  // namespace sfs::oss
