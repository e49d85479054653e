// The RDMA RPC transport, for real, over a verbs device (run it inside
// ../shared/rdma-vm/run, which provides soft-RoCE rxe0 at $RDMA_VM_ADDR):
// the cases of rpc_test.cc over RDMA — many calls in flight with bulk both
// ways, pipelined reads straight into caller buffers, deadlines, reconnect
// after a server restart, garbage control messages — plus 0/1-byte and
// 64 MiB transfers, a wrong rkey, stale registrations, a peer that goes away
// mid-transfer, and no leaked registrations. Without a device the binary says
// so and fails: it is never part of the default suites.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>

#include "common/net/frame.h"
#include "common/net/rdma_transport.h"
#include "common/net/rdma_wire.h"
#include "common/rpc/admission.h"
#include "common/rpc/testing/echo_handler.h"
#include "common/rpc/testing/rdma_test_env.h"

namespace sfs::rpc {
namespace {

std::string g_host;  // the RDMA interface's address

using test_support::EchoHandler;

bool IsPattern(const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != static_cast<uint8_t>(i * 7 + 3)) return false;
  }
  return true;
}

class RdmaRpcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StartServer(0);
    auto c = RdmaContext::Create();
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    ctx_ = std::move(*c);
    chan_ = ctx_->MakeRdmaChannel(Address());
  }
  void TearDown() override {
    handler_.Release();
    chan_.reset();
    if (server_) server_->Stop();
    server_.reset();
    if (ctx_) {
      // Only the client cache may still hold registrations; none leak.
      EXPECT_EQ(LiveRdmaRegistrations(), static_cast<int64_t>(ctx_->CachedRegistrations()));
    }
    ctx_.reset();
    EXPECT_EQ(LiveRdmaRegistrations(), 0);
  }
  void StartServer(uint16_t port, ServerOptions opts = {}) {
    opts.host = g_host;
    opts.port = port;
    auto s = StartRdmaServer(opts, &handler_);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(*s);
    port_ = server_->port();
  }
  std::string Address() const { return g_host + ":" + std::to_string(port_); }

  EchoHandler handler_;
  std::unique_ptr<Server> server_;
  uint16_t port_ = 0;
  std::unique_ptr<RdmaContext> ctx_;
  std::unique_ptr<Channel> chan_;
};

TEST_F(RdmaRpcTest, ManyConcurrentCallsWithBulkAllMatchTheirReplies) {
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      for (int i = 0; i < 25; ++i) {
        std::vector<uint8_t> out(rng() % 300000);
        for (auto& b : out) b = rng();
        std::vector<uint8_t> in(out.size());
        std::string payload = "t" + std::to_string(t) + "i" + std::to_string(i);
        Response r;
        Status st = chan_->Call(kServiceMds, payload, out, in, &r);
        if (!st.ok() || r.payload != "re:" + payload || r.bulk_len != out.size() ||
            !std::equal(out.rbegin(), out.rend(), in.begin())) {
          bad++;
        }
        ctx_->Invalidate(out.data(), out.size());  // both vectors are freed now
        ctx_->Invalidate(in.data(), in.size());
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
}

TEST_F(RdmaRpcTest, PipelinedCallsOnOneChannelReceiveIntoTheirOwnBuffers) {
  std::vector<uint8_t> big(32 << 20);  // one registration, 32 slices
  ASSERT_TRUE(ctx_->Preregister(big.data(), big.size()).ok());
  std::vector<std::shared_ptr<PendingCall>> calls;
  for (int i = 0; i < 32; ++i) {
    std::span<uint8_t> slice(big.data() + (static_cast<size_t>(i) << 20), 1 << 20);
    calls.push_back(chan_->Start(kServiceOss, "read:" + std::to_string(1 << 20), {}, slice, {}));
  }
  for (auto& c : calls) {
    Response r;
    ASSERT_TRUE(chan_->Wait(c, &r).ok());
    ASSERT_EQ(r.bulk_len, 1u << 20);
    EXPECT_TRUE(r.bulk.empty());
  }
  for (int i = 0; i < 32; ++i) ASSERT_TRUE(IsPattern(big.data() + (static_cast<size_t>(i) << 20), 1 << 20)) << i;
  EXPECT_EQ(ctx_->CachedRegistrations(), 1u);
  ctx_->Invalidate(big.data(), big.size());
}

TEST_F(RdmaRpcTest, ZeroOneAndSixtyFourMibTransfersArriveIntact) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{64} << 20}) {
    std::vector<uint8_t> out(n), in(n);
    std::mt19937 rng(static_cast<unsigned>(n));
    for (auto& b : out) b = rng();
    Response r;
    ASSERT_TRUE(chan_->Call(kServiceOss, "w", out, in, &r, CallOptions{std::chrono::seconds(120)}).ok()) << n;
    EXPECT_EQ(r.bulk_len, n);
    EXPECT_TRUE(std::equal(out.rbegin(), out.rend(), in.begin())) << n;
    ctx_->Invalidate(out.data(), out.size());
    ctx_->Invalidate(in.data(), in.size());
  }
}

TEST_F(RdmaRpcTest, ReplyBulkWithoutABufferArrivesInlineAndTooBigFailsWithEproto) {
  Response r;
  ASSERT_TRUE(chan_->Call(kServiceOss, "read:100000", {}, {}, &r).ok());
  ASSERT_EQ(r.bulk.size(), 100000u);
  EXPECT_TRUE(IsPattern(r.bulk.data(), r.bulk.size()));
  std::vector<uint8_t> small(10);
  EXPECT_EQ(chan_->Call(kServiceOss, "read:11", {}, small, &r).code(), EPROTO);
  ASSERT_TRUE(chan_->Call(kServiceOss, "read:10", {}, small, &r).ok());
  EXPECT_TRUE(IsPattern(small.data(), small.size()));
}

TEST_F(RdmaRpcTest, CallPastItsDeadlineFailsWithEtimedout) {
  Response r;
  Status st = chan_->Call(kServiceMds, "sleep", {}, {}, &r, CallOptions{std::chrono::milliseconds(200)});
  EXPECT_EQ(st.code(), ETIMEDOUT);
  handler_.Release();
  EXPECT_TRUE(chan_->Call(kServiceMds, "after", {}, {}, &r).ok());
  EXPECT_EQ(r.payload, "re:after");
}

TEST_F(RdmaRpcTest, TimedOutCallWithABufferIsNeverWrittenAfterWaitReturns) {
  std::vector<uint8_t> in(1 << 20, 0xee);
  Response r;
  Status st = chan_->Call(kServiceMds, "sleep", {}, in, &r, CallOptions{std::chrono::milliseconds(200)});
  EXPECT_EQ(st.code(), ETIMEDOUT);
  handler_.Release();  // the handler now replies with bulk; the old QP is gone
  ASSERT_TRUE(chan_->Call(kServiceMds, "after", {}, {}, &r).ok());
  EXPECT_TRUE(std::all_of(in.begin(), in.end(), [](uint8_t b) { return b == 0xee; }));
  ctx_->Invalidate(in.data(), in.size());
}

TEST_F(RdmaRpcTest, UnreachableServerFailsWithEconnrefused) {
  server_->Stop();
  server_.reset();
  auto ch = ctx_->MakeRdmaChannel(Address());
  Response r;
  Status st = ch->Call(kServiceMds, "x", {}, {}, &r, CallOptions{std::chrono::milliseconds(1000)});
  EXPECT_EQ(st.code(), ECONNREFUSED) << st.ToString();
}

TEST_F(RdmaRpcTest, ChannelReconnectsAfterServerRestartOnTheSamePort) {
  Response r;
  ASSERT_TRUE(chan_->Call(kServiceMds, "one", {}, {}, &r).ok());
  server_->Stop();
  server_.reset();
  StartServer(port_);
  ASSERT_TRUE(chan_->Call(kServiceMds, "two", {}, {}, &r).ok());
  EXPECT_EQ(r.payload, "re:two");
}

std::vector<uint8_t> Bytes(const std::string& s) { return {s.begin(), s.end()}; }

TEST_F(RdmaRpcTest, GarbageCorruptAndWrongRkeyFramesCloseOnlyThatConnection) {
  std::mt19937 rng(9);
  std::vector<std::vector<uint8_t>> bad;
  std::vector<uint8_t> junk(100);
  for (auto& b : junk) b = rng();
  bad.push_back(junk);
  net::FrameHeader h;
  std::string payload = "hello";
  auto good = net::EncodeFrame(h, Bytes(payload), {});
  auto corrupt = good;
  corrupt.back() ^= 1;
  bad.push_back(corrupt);
  net::FrameHeader huge;
  huge.payload_len = net::kMaxPayload + 1;
  std::vector<uint8_t> hh(net::kHeaderSize);
  net::EncodeHeader(huge, hh.data());
  bad.push_back(hh);
  net::FrameHeader flags;
  flags.flags = 1u << 20;
  bad.push_back(Bytes(net::rdma::EncodeStreamFrame(flags, payload, {}, nullptr)));
  // A remote bulk whose rkey names no registration: the server's RDMA READ fails.
  net::FrameHeader rk;
  rk.flags = net::rdma::kFlagDesc | net::rdma::kFlagBulkRemote;
  rk.bulk_len = 4096;
  net::rdma::BulkDesc d;
  d.out_addr = 0x10000;
  d.out_rkey = 0xdeadbeef;
  d.out_len = 4096;
  bad.push_back(Bytes(net::rdma::EncodeStreamFrame(rk, payload, {}, &d)));
  int i = 0;
  for (auto& frame : bad) {
    auto closed = ctx_->SendRawForTest(Address(), frame, std::chrono::seconds(20));
    ASSERT_TRUE(closed.ok()) << closed.status().ToString();
    EXPECT_TRUE(*closed) << "case " << i++;
  }
  Response r;
  ASSERT_TRUE(chan_->Call(kServiceMds, "still-serving", {}, {}, &r).ok());
  EXPECT_EQ(r.payload, "re:still-serving");
  EXPECT_EQ(handler_.calls.load(), 1);
}

// Maps fresh pages over [p, p+n) with content `fill`, as a free + reuse would.
void Remap(uint8_t* p, size_t n, uint8_t fill) {
  void* q = mmap(p, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  ASSERT_EQ(q, p);
  std::memset(p, fill, n);
}

TEST_F(RdmaRpcTest, StaleRegistrationsAreDetectedAndReRegisteredNeverWrongData) {
  const size_t n = 1 << 20;
  auto* out = static_cast<uint8_t*>(mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  auto* in = static_cast<uint8_t*>(mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  std::memset(out, 1, n);
  Response r;
  ASSERT_TRUE(chan_->Call(kServiceOss, "w", {out, n}, {in, n}, &r).ok());
  Remap(out, n, 2);  // the cache still holds the old pages' registrations
  Remap(in, n, 0);
  ASSERT_TRUE(chan_->Call(kServiceOss, "w", {out, n}, {in, n}, &r).ok());
  EXPECT_TRUE(std::all_of(in, in + n, [](uint8_t b) { return b == 2; }));
  ctx_->Invalidate(out, n);
  ctx_->Invalidate(in, n);
  munmap(out, n);
  munmap(in, n);
}

TEST_F(RdmaRpcTest, ServerGoingAwayMidTransferFailsOrCompletesCallsNeverWithWrongData) {
  const size_t n = 8 << 20;
  std::vector<std::vector<uint8_t>> bufs(6, std::vector<uint8_t>(n));
  std::vector<std::shared_ptr<PendingCall>> calls;
  CallOptions opts{std::chrono::seconds(30)};
  for (auto& b : bufs) calls.push_back(chan_->Start(kServiceOss, "read:" + std::to_string(n), {}, b, opts));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // some transfers are under way
  server_->Stop();
  server_.reset();
  StartServer(port_);  // calls still in flight are re-sent to the new server
  int ok = 0;
  for (size_t i = 0; i < calls.size(); ++i) {
    Response r;
    Status st = chan_->Wait(calls[i], &r);
    if (st.ok()) {
      ok++;
      EXPECT_TRUE(IsPattern(bufs[i].data(), n)) << i;
    } else {
      EXPECT_TRUE(st.code() == ETIMEDOUT || st.code() == EIO) << st.ToString();
    }
  }
  std::printf("%d of %zu calls completed across the restart\n", ok, calls.size());
  Response r;
  ASSERT_TRUE(chan_->Call(kServiceMds, "after", {}, {}, &r).ok());
  for (auto& b : bufs) ctx_->Invalidate(b.data(), b.size());
}

TEST_F(RdmaRpcTest, ClientGoingAwayMidTransferLeavesTheServerServingOthers) {
  std::vector<uint8_t> out(32 << 20, 5);
  {
    auto doomed = ctx_->MakeRdmaChannel(Address());
    auto call = doomed->Start(kServiceOss, "w", out, {}, {});
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the server is pulling the bulk
  }  // the channel closes its connection under the transfer
  Response r;
  ASSERT_TRUE(chan_->Call(kServiceMds, "still-serving", {}, {}, &r).ok());
  EXPECT_EQ(r.payload, "re:still-serving");
  ctx_->Invalidate(out.data(), out.size());
}

// The memory budget (common/rpc/admission.h) as on TCP: bulk beyond the
// connection's budget waits before it is pulled, and all is answered later.
TEST_F(RdmaRpcTest, BulkBeyondTheBudgetWaitsAndIsAllAnsweredAfterRelease) {
  server_->Stop();
  ServerOptions opts;
  opts.worker_threads = 32;
  opts.max_inflight_bytes = 4 << 20;
  opts.max_inflight_bytes_per_conn = 2 << 20;
  StartServer(0, opts);
  chan_ = ctx_->MakeRdmaChannel(Address());
  std::vector<uint8_t> bulk(512 << 10);
  for (size_t i = 0; i < bulk.size(); ++i) bulk[i] = static_cast<uint8_t>(i * 13);
  std::vector<std::vector<uint8_t>> in(16, std::vector<uint8_t>(bulk.size()));
  std::vector<std::shared_ptr<PendingCall>> calls;
  for (auto& b : in) calls.push_back(chan_->Start(kServiceMds, "sleep", bulk, b, {}));
  const uint64_t cost = AdmissionBudget::kCallOverhead + 5 + bulk.size();
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < end &&
         !(server_->admission_stats().waits >= 1 && handler_.calls == 3)) {
    std::this_thread::yield();
  }
  EXPECT_EQ(handler_.calls.load(), 3);  // 3 x 512 KiB fit 2 MiB, a 4th does not
  EXPECT_EQ(server_->admission_stats().in_flight, 3 * cost);
  handler_.Release();
  for (size_t i = 0; i < calls.size(); ++i) {
    Response r;
    ASSERT_TRUE(chan_->Wait(calls[i], &r).ok());
    ASSERT_EQ(r.bulk_len, bulk.size());
    ASSERT_TRUE(std::equal(bulk.rbegin(), bulk.rend(), in[i].begin()));
  }
  EXPECT_LE(server_->admission_stats().peak, 2u << 20);
}

TEST(RdmaWireTest, AssemblerSplitsAStreamCutAtEveryByteIntoTheSameFrames) {
  net::FrameHeader h;
  h.flags = net::rdma::kFlagDesc;
  h.bulk_len = 3;
  std::vector<uint8_t> bulk = {1, 2, 3};
  h.body_crc = net::BodyCrc(Bytes("pay"), bulk);
  net::rdma::BulkDesc d;
  d.in_addr = 42;
  d.in_rkey = 7;
  d.in_cap = 99;
  std::string stream = net::rdma::EncodeStreamFrame(h, "pay", bulk, &d);
  stream += stream;
  net::rdma::FrameAssembler a;
  std::vector<net::rdma::StreamFrame> frames;
  for (char ch : stream) {
    auto b = static_cast<uint8_t>(ch);
    ASSERT_TRUE(a.Append(&b, 1, &frames).ok());
  }
  ASSERT_EQ(frames.size(), 2u);
  for (auto& f : frames) {
    EXPECT_EQ(f.payload, "pay");
    EXPECT_EQ(f.inline_bulk, bulk);
    ASSERT_TRUE(f.desc.has_value());
    EXPECT_EQ(f.desc->in_addr, 42u);
    EXPECT_EQ(f.desc->in_rkey, 7u);
    EXPECT_EQ(f.desc->in_cap, 99u);
  }
}

}  // namespace
}  // namespace sfs::rpc

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const char* addr = sfs::rpc::test_support::RdmaTestAddress("rdma_test");
  if (addr == nullptr) return 1;
  sfs::rpc::g_host = addr;
  return RUN_ALL_TESTS();
}
