// The TCP server's memory budget (admission.h): requests beyond the budget
// wait (their connection is not read) and are all answered later, the bytes
// admitted at once never exceed the budget, a single request larger than the
// budget is still served, held calls cost bytes not slots, and Stop() with
// admissions waiting returns.
#include "common/rpc/admission.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "common/rpc/rpc.h"
#include "common/rpc/testing/echo_handler.h"

namespace sfs::rpc {
namespace {

using test_support::EchoHandler;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * 1024;

class AdmissionTest : public ::testing::Test {
 protected:
  void Start(uint64_t server_limit, uint64_t conn_limit, int workers = 32) {
    ServerOptions o;
    o.worker_threads = workers;
    o.max_inflight_bytes = server_limit;
    o.max_inflight_bytes_per_conn = conn_limit;
    auto s = StartTcpServer(o, &handler_);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(*s);
    io_ = IoContext::Create(2);
  }
  std::unique_ptr<Channel> Connect() {
    return io_->MakeTcpChannel("127.0.0.1:" + std::to_string(server_->port()));
  }
  // Polls the server's counters (the state we wait for has no event to block on).
  bool WaitFor(const std::function<bool(const AdmissionStats&)>& pred) {
    auto end = Clock::now() + std::chrono::seconds(20);
    while (Clock::now() < end) {
      if (pred(server_->admission_stats())) return true;
      std::this_thread::yield();
    }
    return false;
  }
  void TearDown() override {
    handler_.Release();
    if (server_) server_->Stop();
  }
  EchoHandler handler_;  // "sleep" and "hold" calls wait for the test
  std::unique_ptr<Server> server_;
  std::unique_ptr<IoContext> io_;
};

// Starts n "sleep" calls of `bulk` bytes each on `chan`.
std::vector<std::shared_ptr<PendingCall>> StartSleeps(Channel& chan, int n,
                                                      const std::vector<uint8_t>& bulk) {
  std::vector<std::shared_ptr<PendingCall>> calls;
  for (int i = 0; i < n; ++i) calls.push_back(chan.Start(kServiceMds, "sleep", bulk, {}, {}));
  return calls;
}

TEST_F(AdmissionTest, BulkBeyondTheBudgetWaitsAndIsAllAnsweredAfterRelease) {
  Start(4 * kMiB, 2 * kMiB);
  std::vector<uint8_t> bulk(512 * kKiB);
  for (size_t i = 0; i < bulk.size(); ++i) bulk[i] = static_cast<uint8_t>(i * 13);
  auto a = Connect(), b = Connect();
  auto calls_a = StartSleeps(*a, 16, bulk);  // 2 x 8 MiB: four times the server budget
  auto calls_b = StartSleeps(*b, 16, bulk);
  // Both connections fill their 2 MiB (3 calls each; the 4th would exceed it).
  ASSERT_TRUE(WaitFor([&](const AdmissionStats& s) { return s.waits >= 2 && handler_.calls == 6; }));
  uint64_t cost = AdmissionBudget::kCallOverhead + 5 + bulk.size();
  EXPECT_EQ(server_->admission_stats().in_flight, 6 * cost);
  handler_.Release();
  std::vector<std::pair<Channel*, std::shared_ptr<PendingCall>>> calls;
  for (auto& c : calls_a) calls.emplace_back(a.get(), c);
  for (auto& c : calls_b) calls.emplace_back(b.get(), c);
  for (auto& [chan, c] : calls) {
    Response r;
    ASSERT_TRUE(chan->Wait(c, &r).ok());
    ASSERT_EQ(r.payload, "re:sleep");
    ASSERT_EQ(r.bulk.size(), bulk.size());
    ASSERT_TRUE(std::equal(bulk.rbegin(), bulk.rend(), r.bulk.begin()));
  }
  AdmissionStats s = server_->admission_stats();
  EXPECT_EQ(handler_.calls.load(), 32);
  EXPECT_LE(s.peak, 4 * kMiB);
  EXPECT_GE(s.peak, 3 * cost);
  EXPECT_TRUE(WaitFor([](const AdmissionStats& s) { return s.in_flight == 0; }));
}

TEST_F(AdmissionTest, TheServerBudgetCapsManyConnectionsTogether) {
  Start(2 * kMiB, 64 * kMiB);
  std::vector<uint8_t> bulk(256 * kKiB, 7);
  std::vector<std::unique_ptr<Channel>> chans;
  std::vector<std::pair<Channel*, std::shared_ptr<PendingCall>>> calls;
  for (int c = 0; c < 8; ++c) {  // 8 clients x 4 x 256 KiB = 8 MiB
    chans.push_back(Connect());
    for (auto& call : StartSleeps(*chans.back(), 4, bulk)) calls.emplace_back(chans.back().get(), call);
  }
  ASSERT_TRUE(WaitFor([](const AdmissionStats& s) { return s.waits >= 1 && s.in_flight > kMiB; }));
  EXPECT_LE(handler_.calls.load(), 7);  // 7 x (256 KiB + overhead) <= 2 MiB
  handler_.Release();
  for (auto& [chan, call] : calls) {
    Response r;
    ASSERT_TRUE(chan->Wait(call, &r).ok());
    EXPECT_EQ(r.bulk.size(), bulk.size());
  }
  EXPECT_LE(server_->admission_stats().peak, 2 * kMiB);
}

TEST_F(AdmissionTest, ARequestLargerThanTheBudgetIsServedAlone) {
  Start(1 * kMiB, 1 * kMiB);
  std::vector<uint8_t> big(3 * kMiB);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i * 31 + 1);
  auto chan = Connect();
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 3; ++t) {  // three over-budget calls at once: served one at a time
    threads.emplace_back([&] {
      std::vector<uint8_t> in(big.size());
      Response r;
      if (chan->Call(kServiceMds, "big", big, in, &r).ok() &&
          std::equal(big.rbegin(), big.rend(), in.begin())) {
        ok++;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 3);
  uint64_t one = AdmissionBudget::kCallOverhead + 3 + big.size();
  // One at a time: the next is admitted only once the previous reply is written.
  EXPECT_LE(server_->admission_stats().peak, 2 * one);
  EXPECT_GE(server_->admission_stats().peak, one);
}

TEST_F(AdmissionTest, HeldCallsCostBytesNotSlotsAndReleaseWhenAnsweredOrDropped) {
  Start(1 * kMiB, 1 * kMiB);
  auto chan = Connect();
  std::vector<std::shared_ptr<PendingCall>> held;
  for (int i = 0; i < 200; ++i) held.push_back(chan->Start(kServiceMds, "hold", {}, {}, {}));
  Response r;
  // 200 held calls (~100 KiB) leave room for a 512 KiB call next to them.
  std::vector<uint8_t> bulk(512 * kKiB, 3), in(bulk.size());
  ASSERT_TRUE(chan->Call(kServiceMds, "x", bulk, in, &r).ok());
  ASSERT_TRUE(WaitFor([&](const AdmissionStats& s) {
    return handler_.Held() == 200 && s.in_flight == 200 * (AdmissionBudget::kCallOverhead + 4);
  }));
  handler_.AnswerHeld();  // the deferred replies release their bytes once written
  for (auto& c : held) {
    ASSERT_TRUE(chan->Wait(c, &r).ok());
    EXPECT_EQ(r.payload, "late");
  }
  EXPECT_TRUE(WaitFor([](const AdmissionStats& s) { return s.in_flight == 0; }));
  for (int i = 0; i < 10; ++i) held.push_back(chan->Start(kServiceMds, "hold", {}, {}, {}));
  ASSERT_TRUE(WaitFor([&](const AdmissionStats&) { return handler_.Held() == 10; }));
  handler_.DropHeld();  // never answered: the last ReplyFn copy gives the bytes back
  EXPECT_TRUE(WaitFor([](const AdmissionStats& s) { return s.in_flight == 0; }));
}

TEST_F(AdmissionTest, StopWithAdmissionsWaitingReturns) {
  Start(1 * kMiB, 1 * kMiB);
  auto chan = Connect();
  std::vector<uint8_t> bulk(400 * kKiB, 9);
  std::vector<std::shared_ptr<PendingCall>> calls;
  CallOptions opts{std::chrono::milliseconds(2000)};
  for (int i = 0; i < 3; ++i) calls.push_back(chan->Start(kServiceMds, "hold", bulk, {}, opts));
  for (int i = 0; i < 4; ++i) calls.push_back(chan->Start(kServiceMds, "x", bulk, {}, opts));
  // The third does not fit next to two.
  ASSERT_TRUE(WaitFor([&](const AdmissionStats& s) { return s.waits >= 1 && handler_.Held() == 2; }));
  auto stopped = std::async(std::launch::async, [&] { server_->Stop(); });
  ASSERT_EQ(stopped.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  handler_.AnswerHeld();  // after Stop: sends nothing, releases the bytes
  EXPECT_EQ(server_->admission_stats().in_flight, 0u);
}

}  // namespace
}  // namespace sfs::rpc
