// The TCP RPC transport: many calls in flight, bulk both ways without loss
// (also when callers send for each other and the socket fills, and when the
// server answers on its I/O thread), deadlines
// (also for a frame stuck half-sent), reconnect after a server restart, and
// garbage input; each connection read by one I/O thread; lanes.
#include "common/rpc/rpc.h"
#include "common/rpc/testing/echo_handler.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>

#include "common/net/frame.h"

namespace sfs::rpc {
namespace {

using test_support::EchoHandler;

class RpcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = StartTcpServer(ServerOptions{}, &handler_);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(*s);
    io_ = IoContext::Create(2);
    chan_ = io_->MakeTcpChannel("127.0.0.1:" + std::to_string(server_->port()));
  }
  void TearDown() override {
    handler_.Release();
    chan_.reset();
    io_.reset();
    if (server_) server_->Stop();
  }
  EchoHandler handler_;
  std::unique_ptr<Server> server_;
  std::unique_ptr<IoContext> io_;
  std::unique_ptr<Channel> chan_;
};

TEST_F(RpcTest, ManyConcurrentCallsWithBulkAllMatchTheirReplies) {
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      for (int i = 0; i < 50; ++i) {
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
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
}

TEST_F(RpcTest, PipelinedCallsOnOneChannelReceiveIntoTheirOwnBuffers) {
  std::vector<std::vector<uint8_t>> bufs(32, std::vector<uint8_t>(1 << 20));
  std::vector<std::shared_ptr<PendingCall>> calls;
  for (auto& b : bufs) calls.push_back(chan_->Start(kServiceOss, "read:" + std::to_string(b.size()), {}, b, {}));
  for (size_t i = 0; i < calls.size(); ++i) {
    Response r;
    ASSERT_TRUE(chan_->Wait(calls[i], &r).ok());
    ASSERT_EQ(r.bulk_len, bufs[i].size());
    for (size_t k = 0; k < bufs[i].size(); k += 4099) ASSERT_EQ(bufs[i][k], static_cast<uint8_t>(k * 7 + 3));
  }
}

TEST_F(RpcTest, CallsStartedWhileOthersAreBeingSentAllArriveIntact) {
  // Each thread starts all its calls before waiting for any: most find another
  // caller or the I/O thread sending and queue behind it, some 1 MiB frames
  // fill the socket and are finished by the I/O thread.
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(100 + t);
      std::vector<std::vector<uint8_t>> outs, ins;
      std::vector<std::shared_ptr<PendingCall>> calls;
      for (int i = 0; i < 16; ++i) {
        outs.emplace_back(i % 2 == 0 ? (1u << 20) : rng() % 5000);
        for (auto& b : outs.back()) b = rng();
        ins.emplace_back(outs.back().size());
      }
      for (int i = 0; i < 16; ++i) {
        calls.push_back(chan_->Start(kServiceOss, "t" + std::to_string(t) + "i" + std::to_string(i),
                                     outs[i], ins[i], {}));
      }
      for (int i = 0; i < 16; ++i) {
        Response r;
        Status st = chan_->Wait(calls[i], &r);
        if (!st.ok() || r.payload != "re:t" + std::to_string(t) + "i" + std::to_string(i) ||
            r.bulk_len != outs[i].size() ||
            !std::equal(outs[i].rbegin(), outs[i].rend(), ins[i].begin())) {
          bad++;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
}

// A striped I/O waits on its calls one by one: while it waits on a slow
// server, another channel's reply comes in with nobody reading that socket.
TEST_F(RpcTest, AReplyThatArrivedWhileTheCallerWaitedElsewhereIsNotATimeout) {
  EchoHandler slow;
  auto s = StartTcpServer(ServerOptions{}, &slow);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto slow_chan = io_->MakeTcpChannel("127.0.0.1:" + std::to_string((*s)->port()));
  auto held = slow_chan->Start(kServiceOss, "hold", {}, {},
                               CallOptions{std::chrono::milliseconds(2500)});
  auto quick = chan_->Start(kServiceOss, "quick", {}, {}, CallOptions{std::chrono::milliseconds(1500)});
  Response r;
  EXPECT_EQ(slow_chan->Wait(held, &r).code(), ETIMEDOUT);  // past quick's deadline now
  Status st = chan_->Wait(quick, &r);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(r.payload, "re:quick");
  slow.DropHeld();
  slow_chan.reset();
  (*s)->Stop();
}

// A raw listening socket on a free loopback port, for peers that misbehave
// below the rpc layer; sets *addr to "127.0.0.1:PORT". Returns -1 on failure.
int ListenOnLoopback(int backlog, std::string* addr) {
  int lfd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (lfd < 0 || bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      listen(lfd, backlog) != 0 || getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (lfd >= 0) close(lfd);
    return -1;
  }
  *addr = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  return lfd;
}

// A peer that accepts connections (the kernel's backlog) but never reads.
TEST(RpcStalledPeerTest, ACallWhoseFrameCannotBeSentTimesOutAndReturnsItsBuffers) {
  std::string addr;
  int lfd = ListenOnLoopback(4, &addr);
  ASSERT_GE(lfd, 0);
  auto io = IoContext::Create(1);
  auto ch = io->MakeTcpChannel(addr);
  // Larger than loopback's socket buffers: the frame stops part-way.
  std::vector<uint8_t> big(32u << 20, 0x5a);
  Response r;
  const auto t0 = std::chrono::steady_clock::now();
  Status first = ch->Call(kServiceOss, "x", big, {}, &r, CallOptions{std::chrono::milliseconds(300)});
  // A second call queues behind the half-sent frame of the first connection
  // or goes out on a new one; either way it times out too.
  Status second = ch->Call(kServiceOss, "y", big, {}, &r, CallOptions{std::chrono::milliseconds(300)});
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(first.code(), ETIMEDOUT) << first.ToString();
  EXPECT_EQ(second.code(), ETIMEDOUT) << second.ToString();
  EXPECT_LT(took, std::chrono::seconds(5));
  big.assign(big.size(), 0);  // the channel no longer touches it
  ch.reset();
  close(lfd);
}

TEST_F(RpcTest, CallPastItsDeadlineFailsWithEtimedout) {
  Response r;
  Status st = chan_->Call(kServiceMds, "sleep", {}, {}, &r, CallOptions{std::chrono::milliseconds(200)});
  EXPECT_EQ(st.code(), ETIMEDOUT);
  handler_.Release();
  EXPECT_TRUE(chan_->Call(kServiceMds, "after", {}, {}, &r).ok());
  EXPECT_EQ(r.payload, "re:after");
}

TEST_F(RpcTest, UnreachableServerFailsWithEconnrefused) {
  uint16_t port = server_->port();
  server_->Stop();
  server_.reset();
  auto ch = io_->MakeTcpChannel("127.0.0.1:" + std::to_string(port));
  Response r;
  Status st = ch->Call(kServiceMds, "x", {}, {}, &r, CallOptions{std::chrono::milliseconds(300)});
  EXPECT_EQ(st.code(), ECONNREFUSED) << st.ToString();
}

TEST_F(RpcTest, FailFastCallEndsAtTheFirstRefusedConnect) {
  uint16_t port = server_->port();
  server_->Stop();
  server_.reset();
  auto ch = io_->MakeTcpChannel("127.0.0.1:" + std::to_string(port));
  Response r;
  CallOptions opts{std::chrono::milliseconds(20000)};
  opts.fail_fast = true;
  auto start = std::chrono::steady_clock::now();
  Status st = ch->Call(kServiceMds, "x", {}, {}, &r, opts);
  EXPECT_EQ(st.code(), ECONNREFUSED) << st.ToString();
  // Well before the 20 s deadline a plain call would wait out.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  // A server back on the port: the channel still connects and serves calls.
  ServerOptions sopts;
  sopts.port = port;
  auto s = StartTcpServer(sopts, &handler_);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  server_ = std::move(*s);
  ASSERT_TRUE(ch->Call(kServiceMds, "back", {}, {}, &r, opts).ok());
  EXPECT_EQ(r.payload, "re:back");
}

TEST_F(RpcTest, ChannelReconnectsAfterServerRestartOnTheSamePort) {
  Response r;
  ASSERT_TRUE(chan_->Call(kServiceMds, "one", {}, {}, &r).ok());
  uint16_t port = server_->port();
  server_->Stop();
  server_.reset();
  ServerOptions opts;
  opts.port = port;
  auto s = StartTcpServer(opts, &handler_);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  server_ = std::move(*s);
  ASSERT_TRUE(chan_->Call(kServiceMds, "two", {}, {}, &r).ok());
  EXPECT_EQ(r.payload, "re:two");
}

// Reads one request frame from fd; its id, or 0 if the peer went away.
uint64_t ReadRequest(int fd) {
  uint8_t hdr[net::kHeaderSize];
  if (recv(fd, hdr, sizeof(hdr), MSG_WAITALL) != static_cast<ssize_t>(sizeof(hdr))) return 0;
  auto h = net::DecodeHeader(hdr);
  if (!h.ok()) return 0;
  std::vector<uint8_t> body(h->payload_len + h->bulk_len);
  if (!body.empty() && recv(fd, body.data(), body.size(), MSG_WAITALL) != ssize_t(body.size())) {
    return 0;
  }
  return h->request_id;
}

// A server that takes the first copy of a call and drops the connection, and
// answers the copy the channel sends again on its next connection: the reply
// says the request was re-sent (an earlier copy may still be on its way).
TEST(RpcResendTest, AReplyToACallSentAgainOnANewConnectionSaysSo) {
  int lfd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  ASSERT_EQ(bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(listen(lfd, 4), 0);
  ASSERT_EQ(getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  std::thread server([lfd] {
    int first = accept(lfd, nullptr, nullptr);
    EXPECT_NE(ReadRequest(first), 0u);
    close(first);
    int second = accept(lfd, nullptr, nullptr);
    uint64_t id = ReadRequest(second);
    net::FrameHeader h{.kind = net::FrameKind::kResponse, .service = kServiceOss,
                       .request_id = id};
    const std::string payload = "ok";
    h.payload_len = static_cast<uint32_t>(payload.size());
    std::span<const uint8_t> p(reinterpret_cast<const uint8_t*>(payload.data()), payload.size());
    h.body_crc = net::BodyCrc(p, {});
    std::vector<uint8_t> frame = net::EncodeFrame(h, p, {});
    EXPECT_EQ(send(second, frame.data(), frame.size(), 0), ssize_t(frame.size()));
    ReadRequest(second);  // until the client goes
    close(second);
  });
  auto io = IoContext::Create(1);
  auto chan = io->MakeTcpChannel("127.0.0.1:" + std::to_string(ntohs(a.sin_port)));
  Response r;
  Status st = chan->Call(kServiceOss, "write", {}, {}, &r, CallOptions{std::chrono::seconds(20)});
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(r.payload, "ok");
  EXPECT_TRUE(r.resent);
  chan.reset();
  server.join();
  close(lfd);
}

TEST_F(RpcTest, AReplyToACallSentOnceIsNotMarkedResent) {
  Response r;
  ASSERT_TRUE(chan_->Call(kServiceMds, "one", {}, {}, &r).ok());
  EXPECT_FALSE(r.resent);
}

int ConnectRaw(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  return fd;
}

// Reads until the server closes the connection; true iff it did.
bool ServerCloses(int fd) {
  char buf[256];
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n == 0) return true;
    if (n < 0) return errno == ECONNRESET;
  }
}

TEST_F(RpcTest, GarbageAndCorruptFramesCloseOnlyThatConnection) {
  std::mt19937 rng(9);
  std::vector<std::vector<uint8_t>> bad;
  std::vector<uint8_t> junk(100);
  for (auto& b : junk) b = rng();
  bad.push_back(junk);
  net::FrameHeader h;
  std::string payload = "hello";
  auto good = net::EncodeFrame(h, {reinterpret_cast<const uint8_t*>(payload.data()), payload.size()}, {});
  auto corrupt = good;
  corrupt.back() ^= 1;
  bad.push_back(corrupt);
  h.payload_len = net::kMaxPayload + 1;
  std::vector<uint8_t> huge(net::kHeaderSize);
  net::EncodeHeader(h, huge.data());
  bad.push_back(huge);
  for (auto& frame : bad) {
    int fd = ConnectRaw(server_->port());
    ASSERT_EQ(write(fd, frame.data(), frame.size()), static_cast<ssize_t>(frame.size()));
    EXPECT_TRUE(ServerCloses(fd));
    close(fd);
  }
  Response r;
  ASSERT_TRUE(chan_->Call(kServiceMds, "still-serving", {}, {}, &r).ok());
  EXPECT_EQ(r.payload, "re:still-serving");
}

// A "server" that answers every connection with garbage and counts them.
TEST(RpcGarbagePeerTest, ClientBacksOffInsteadOfReconnectingInATightLoop) {
  std::string addr;
  int lfd = ListenOnLoopback(64, &addr);
  ASSERT_GE(lfd, 0);
  std::atomic<int> accepts{0};
  std::atomic<bool> stop{false};
  std::thread srv([&] {
    while (!stop) {
      int fd = accept(lfd, nullptr, nullptr);
      if (fd < 0) break;
      ++accepts;
      char junk[64];
      std::memset(junk, 0x5a, sizeof(junk));
      (void)!write(fd, junk, sizeof(junk));
      close(fd);
    }
  });
  auto io = IoContext::Create(1);
  auto ch = io->MakeTcpChannel(addr);
  Response r;
  Status st = ch->Call(kServiceMds, "x", {}, {}, &r, CallOptions{std::chrono::milliseconds(1000)});
  EXPECT_FALSE(st.ok());
  ch.reset();
  stop = true;
  shutdown(lfd, SHUT_RDWR);
  close(lfd);
  srv.join();
  // 20 ms doubling to 1 s allows about 6 attempts in a second, not thousands.
  EXPECT_LE(accepts.load(), 12);
  EXPECT_GE(accepts.load(), 2);
}

// EchoHandler that also answers every held call ("late") on "release".
class HoldingHandler : public EchoHandler {
 public:
  void HandleAsync(Request& req, ReplyFn done) override {
    if (req.payload == "release") AnswerHeld("late");
    EchoHandler::HandleAsync(req, std::move(done));
  }
};

class RpcHeldCallTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = StartTcpServer(ServerOptions{}, &handler_);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(*s);
    io_ = IoContext::Create(1);
    chan_ = io_->MakeTcpChannel("127.0.0.1:" + std::to_string(server_->port()));
  }
  // Starts n "hold" calls and returns once the handler holds all of them.
  std::vector<std::shared_ptr<PendingCall>> Hold(int n, int timeout_ms = 30000) {
    std::vector<std::shared_ptr<PendingCall>> calls;
    CallOptions opts{std::chrono::milliseconds(timeout_ms)};
    for (int i = 0; i < n; ++i) calls.push_back(chan_->Start(kServiceMds, "hold", {}, {}, opts));
    Response r;
    while (handler_.Held() < static_cast<size_t>(n)) EXPECT_TRUE(chan_->Call(kServiceMds, "x", {}, {}, &r).ok());
    return calls;
  }
  HoldingHandler handler_;
  std::unique_ptr<Server> server_;
  std::unique_ptr<IoContext> io_;
  std::unique_ptr<Channel> chan_;
};

TEST_F(RpcHeldCallTest, AHeldCallGetsItsDeferredReply) {
  auto calls = Hold(1);
  Response r;
  ASSERT_TRUE(chan_->Call(kServiceMds, "release", {}, {}, &r).ok());
  ASSERT_TRUE(chan_->Wait(calls[0], &r).ok());
  EXPECT_EQ(r.payload, "late");
}

TEST_F(RpcHeldCallTest, ManyHeldCallsDoNotStarveNormalCalls) {
  auto calls = Hold(64);  // 16x the 4 workers
  for (int i = 0; i < 20; ++i) {
    Response r;
    ASSERT_TRUE(chan_->Call(kServiceMds, "n" + std::to_string(i), {}, {}, &r,
                            CallOptions{std::chrono::milliseconds(5000)}).ok());
    EXPECT_EQ(r.payload, "re:n" + std::to_string(i));
  }
  handler_.AnswerHeld("late");
  for (auto& c : calls) {
    Response r;
    ASSERT_TRUE(chan_->Wait(c, &r).ok());
    EXPECT_EQ(r.payload, "late");
  }
}

TEST_F(RpcHeldCallTest, CallsMarkedHeldAndOthersAllGetTheirReplies) {
  // Callers of held calls read others' replies only while nobody else waits;
  // their own replies must still be read when only they wait.
  CallOptions held{std::chrono::milliseconds(30000)};
  held.held = true;
  std::vector<std::shared_ptr<PendingCall>> calls;
  for (int i = 0; i < 2; ++i) calls.push_back(chan_->Start(kServiceMds, "hold", {}, {}, held));
  std::atomic<int> late{0};
  std::vector<std::thread> waiters;
  for (auto& c : calls) {
    waiters.emplace_back([&, c] {
      Response r;
      if (chan_->Wait(c, &r).ok() && r.payload == "late") ++late;
    });
  }
  Response r;
  while (handler_.Held() < 2) ASSERT_TRUE(chan_->Call(kServiceMds, "x", {}, {}, &r).ok());
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(chan_->Call(kServiceMds, "n" + std::to_string(i), {}, {}, &r,
                            CallOptions{std::chrono::milliseconds(5000)}).ok());
    EXPECT_EQ(r.payload, "re:n" + std::to_string(i));
  }
  handler_.AnswerHeld("late");
  for (auto& t : waiters) t.join();
  EXPECT_EQ(late.load(), 2);
}

TEST_F(RpcHeldCallTest, ASpinCallWaitsAwakeOnlyBrieflyAndStillGetsALateReply) {
  // CallOptions::spin: the reader polls awake for up to 50 us per wait, then
  // sleeps in poll as any other; a reply 300 ms late still arrives, and the
  // wait costs the waiter little CPU (waiting awake throughout: ~300 ms).
  CallOptions spin{std::chrono::milliseconds(30000)};
  spin.spin = true;
  Status st;
  Response got;
  double cpu_ms = 0;
  auto call = chan_->Start(kServiceMds, "hold", {}, {}, spin);
  Response r;
  while (handler_.Held() < 1) ASSERT_TRUE(chan_->Call(kServiceMds, "x", {}, {}, &r).ok());
  std::thread waiter([&] {
    timespec a{}, b{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    st = chan_->Wait(call, &got);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    cpu_ms = (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the reply's lateness
  handler_.AnswerHeld("late");
  waiter.join();
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(got.payload, "late");
  EXPECT_LT(cpu_ms, 100.0);
  // And a spin read gets its bulk whole.
  std::vector<uint8_t> in(1 << 20);
  ASSERT_TRUE(chan_->Call(kServiceOss, "read:" + std::to_string(in.size()), {}, in, &r, spin).ok());
  ASSERT_EQ(r.bulk_len, in.size());
  for (size_t k = 0; k < in.size(); k += 4099) ASSERT_EQ(in[k], static_cast<uint8_t>(k * 7 + 3));
}

TEST_F(RpcHeldCallTest, StopWithHeldCallsReturnsAndLateRepliesAreDropped) {
  auto calls = Hold(8, 1500);
  server_->Stop();
  handler_.AnswerHeld("after-stop");  // must neither crash nor send
  for (auto& c : calls) {
    Response r;
    EXPECT_FALSE(chan_->Wait(c, &r).ok() && r.payload == "after-stop");
  }
  server_.reset();
}

TEST_F(RpcHeldCallTest, ReplyFnsOutliveTheServerSafely) {
  Hold(4);
  server_.reset();  // destroyed with four ReplyFns still held
  handler_.AnswerHeld("after-destroy");
  EXPECT_EQ(handler_.Held(), 0u);
}

// Answers calls whose payload starts with "in" on the I/O thread (as sfs-mds
// does), the others on a worker.
class InlineHandler : public EchoHandler {
 public:
  bool TryHandleInline(Request& req, ReplyFn& done) override {
    if (req.payload.rfind("in", 0) != 0) return false;
    Reply reply;
    Handle(req, &reply);
    done(std::move(reply));
    return true;
  }
};

TEST(RpcInlineTest, RepliesGivenOnTheIoThreadAndByWorkersAllArriveIntact) {
  // 1 MiB replies do not fit the socket: the inline writer's rest goes to the
  // strand's writer, and inline replies given meanwhile queue behind it.
  InlineHandler handler;
  ServerOptions opts;
  opts.io_threads = 1;
  auto server = StartTcpServer(opts, &handler);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto io = IoContext::Create(2);
  auto chan = io->MakeTcpChannel("127.0.0.1:" + std::to_string((*server)->port()));
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(200 + t);
      std::vector<std::vector<uint8_t>> outs, ins;
      std::vector<std::string> payloads;
      std::vector<std::shared_ptr<PendingCall>> calls;
      for (int i = 0; i < 16; ++i) {
        outs.emplace_back(i % 3 == 0 ? (1u << 20) : rng() % 5000);
        for (auto& b : outs.back()) b = rng();
        ins.emplace_back(outs.back().size());
        std::string name = std::to_string(t) + "." + std::to_string(i);
        payloads.push_back((i % 4 == 3 ? "worker" : "in") + name);
      }
      for (int i = 0; i < 16; ++i) {
        calls.push_back(chan->Start(kServiceMds, payloads[i], outs[i], ins[i], {}));
      }
      for (int i = 0; i < 16; ++i) {
        Response r;
        Status st = chan->Wait(calls[i], &r);
        if (!st.ok() || r.payload != "re:" + payloads[i] || r.bulk_len != outs[i].size() ||
            !std::equal(outs[i].rbegin(), outs[i].rend(), ins[i].begin())) {
          bad++;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(handler.calls.load(), 64);
  chan.reset();
  io.reset();
  (*server)->Stop();
}

// Notes which I/O thread reads each connection's requests (TryHandleInline
// runs there) and leaves every request to a worker.
class ThreadNotingHandler : public EchoHandler {
 public:
  bool TryHandleInline(Request& req, ReplyFn& /*done*/) override {
    std::lock_guard<std::mutex> l(mu);
    threads[req.peer].insert(std::this_thread::get_id());
    return false;
  }
  std::mutex mu;
  std::map<std::string, std::set<std::thread::id>> threads;  // GUARDED_BY(mu)
};

TEST(RpcIoThreadTest, EachConnectionIsReadByOneIoThreadAndTwoConnectionsByTwo) {
  ThreadNotingHandler handler;
  ServerOptions opts;
  opts.io_threads = 2;
  auto server = StartTcpServer(opts, &handler);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const std::string addr = "127.0.0.1:" + std::to_string((*server)->port());
  auto io = IoContext::Create(1);
  std::vector<std::unique_ptr<Channel>> chans;
  for (int c = 0; c < 2; ++c) chans.push_back(io->MakeTcpChannel(addr));
  std::vector<std::thread> callers;
  std::atomic<int> bad{0};
  for (int c = 0; c < 2; ++c) {
    callers.emplace_back([&, c] {
      for (int i = 0; i < 200; ++i) {
        std::string payload = std::to_string(c) + "." + std::to_string(i);
        Response r;
        Status st = chans[c]->Call(kServiceMds, payload, {}, {}, &r);
        if (!st.ok() || r.payload != "re:" + payload) bad++;
      }
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(bad.load(), 0);
  std::lock_guard<std::mutex> l(handler.mu);
  ASSERT_EQ(handler.threads.size(), 2u);
  std::set<std::thread::id> all;
  for (const auto& [peer, ids] : handler.threads) {
    EXPECT_EQ(ids.size(), 1u) << peer << " was read by " << ids.size() << " I/O threads";
    all.insert(ids.begin(), ids.end());
  }
  EXPECT_EQ(all.size(), 2u);
  chans.clear();
  io.reset();
  (*server)->Stop();
}

TEST(RpcLaneTest, OneThreadsCallsShareALaneAndConcurrentThreadsEachTakeTheirOwn) {
  ThreadNotingHandler handler;  // its map's keys: the connections calls came on
  auto server = StartTcpServer(ServerOptions{}, &handler);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto io = IoContext::Create(1);
  auto chan = io->MakeTcpChannel("127.0.0.1:" + std::to_string((*server)->port()), 4);
  auto connections = [&] {
    std::lock_guard<std::mutex> l(handler.mu);
    return handler.threads.size();
  };
  auto answer_and_wait = [&](std::vector<std::shared_ptr<PendingCall>>& held) {
    handler.AnswerHeld("late");
    for (auto& c : held) {
      Response r;
      ASSERT_TRUE(chan->Wait(c, &r).ok());
      EXPECT_EQ(r.payload, "late");
    }
    held.clear();
  };
  Response r;
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(chan->Call(kServiceMds, "x", {}, {}, &r).ok());
  EXPECT_EQ(connections(), 1u);
  // One thread's calls in flight together stay on its lane, so waiting for any
  // of them reads the replies of all (a striped read's pieces).
  std::vector<std::shared_ptr<PendingCall>> held;
  for (int i = 0; i < 3; ++i) held.push_back(chan->Start(kServiceMds, "hold", {}, {}, {}));
  while (handler.Held() < 3) ASSERT_TRUE(chan->Call(kServiceMds, "x", {}, {}, &r).ok());
  EXPECT_EQ(connections(), 1u);
  answer_and_wait(held);
  // Three threads' calls held at once take lanes 0-2; this thread's go to lane 3.
  for (int t = 0; t < 3; ++t) {
    std::thread([&] { held.push_back(chan->Start(kServiceMds, "hold", {}, {}, {})); }).join();
  }
  // At least one call of this thread's (the held ones may all be in before
  // the first check): lanes 0-2 each carry a call not yet waited for.
  do {
    ASSERT_TRUE(chan->Call(kServiceMds, "x", {}, {}, &r).ok());
  } while (handler.Held() < 3);
  EXPECT_EQ(connections(), 4u);
  answer_and_wait(held);
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(chan->Call(kServiceMds, "x", {}, {}, &r).ok());
  EXPECT_EQ(connections(), 4u);
  chan.reset();
  io.reset();
  (*server)->Stop();
}

TEST(RpcLaneTest, ConcurrentCallsWithBulkOnALanedChannelAllMatchTheirReplies) {
  EchoHandler handler;
  ServerOptions opts;
  opts.io_threads = 2;
  auto server = StartTcpServer(opts, &handler);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto io = IoContext::Create(1);
  auto chan = io->MakeTcpChannel("127.0.0.1:" + std::to_string((*server)->port()), 3);
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(300 + t);
      for (int i = 0; i < 50; ++i) {
        std::vector<uint8_t> out(rng() % 70000), in(out.size());
        for (auto& b : out) b = static_cast<uint8_t>(rng());
        std::string payload = std::to_string(t) + "." + std::to_string(i);
        Response r;
        Status st = chan->Call(kServiceMds, payload, out, in, &r);
        if (!st.ok() || r.payload != "re:" + payload || r.bulk_len != out.size() ||
            !std::equal(out.rbegin(), out.rend(), in.begin())) {
          bad++;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(handler.calls.load(), 300);
  chan.reset();
  io.reset();
  (*server)->Stop();
}

TEST(RpcAddressTest, ParseAddressRejectsMalformedAddresses) {
  std::string host;
  uint16_t port;
  EXPECT_TRUE(ParseAddress("127.0.0.1:7700", &host, &port).ok());
  EXPECT_EQ(port, 7700);
  for (const char* bad : {"", "nohost", ":1", "h:", "h:99999", "h:12a"}) {
    EXPECT_EQ(ParseAddress(bad, &host, &port).code(), EINVAL) << bad;
  }
}

}  // namespace
}  // namespace sfs::rpc
