// TCP client side of the RPC transport (Boost.Asio, C++20 coroutines).
//
// A channel is one connection to one server with many calls in flight,
// matched to replies by request id. Callers run on their own threads:
// Start() queues a call and returns; Wait() blocks on the call's condition
// until the reply arrives or the deadline passes. All socket work runs on the
// channel's strand: a connect loop (with exponential backoff), a reader and a
// writer coroutine.
//
// Zero copy: a call's write bulk is sent straight from the caller's buffer
// (gathered after the header), and a reply's bulk is read straight into the
// caller's bulk_in buffer. Because those buffers belong to the caller, a call
// that times out is first unhooked from the channel, and Wait() does not
// return while the writer or reader is still touching its buffers.
//
// Reconnect: when the connection breaks, every call still in flight is sent
// again on the next connection (same request id and payload). Servers treat
// repeats as the same request (MDS: by client id and xid; OSS: idempotent ops).
//
// Lock order: Core::mu_ is the only lock; it is never held across an await.
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "common/log.h"
#include "common/net/core_channel.h"
#include "common/net/asio.h"
#include "common/net/frame.h"
#include "common/rpc/rpc.h"

namespace sfs::rpc {

using net::asio::redirect_error;
using net::asio::use_awaitable;
using net::awaitable;
using net::tcp;
namespace asio = net::asio;

// A call in flight. Fields after `id` are guarded by the owning Core's mu_.
class PendingCall {
 public:
  uint64_t id = 0;
  uint16_t service = 0;
  std::string payload;
  std::span<const uint8_t> bulk_out;
  std::span<uint8_t> bulk_in;
  std::chrono::steady_clock::time_point deadline;
  uint8_t header[net::kHeaderSize];

  bool in_map = true;   // still in Core::pending_
  int sending = 0;      // writes using our buffers right now
  bool receiving = false;
  bool done = false;
  Status status;
  Response resp;
  std::condition_variable cv;
};

namespace {

using Clock = std::chrono::steady_clock;

class Core : public std::enable_shared_from_this<Core> {
 public:
  Core(asio::io_context& io, std::string address)
      : strand_(asio::make_strand(io)), address_(std::move(address)) {
    addr_status_ = ParseAddress(address_, &host_, &port_);
  }

  std::shared_ptr<PendingCall> Start(uint16_t service, std::string payload,
                                     std::span<const uint8_t> bulk_out, std::span<uint8_t> bulk_in,
                                     const CallOptions& opts);
  Status Wait(const std::shared_ptr<PendingCall>& p, Response* out);
  void Shutdown();
  const std::string& address() const { return address_; }

 private:
  void Kick();  // on strand
  awaitable<void> ConnectLoop(std::shared_ptr<Core> self);
  awaitable<void> WriteLoop(std::shared_ptr<Core> self, uint64_t gen);
  awaitable<void> ReadLoop(std::shared_ptr<Core> self, uint64_t gen);
  void OnError(uint64_t gen, const std::string& why);  // on strand
  void GrowReconnectDelay() {  // on strand: 20 ms doubling to 1 s
    reconnect_delay_ = std::clamp(reconnect_delay_ * 2, std::chrono::milliseconds(20),
                                  std::chrono::milliseconds(1000));
  }
  void Complete(const std::shared_ptr<PendingCall>& p, Status st);  // REQUIRES: mu_ held

  asio::strand<asio::io_context::executor_type> strand_;
  std::string address_;
  std::string host_;
  uint16_t port_ = 0;
  Status addr_status_;

  std::mutex mu_;
  std::map<uint64_t, std::shared_ptr<PendingCall>> pending_;  // GUARDED_BY(mu_)
  std::deque<std::shared_ptr<PendingCall>> outq_;             // GUARDED_BY(mu_)
  uint64_t next_id_ = 1;                                      // GUARDED_BY(mu_)
  bool ever_connected_ = false;                               // GUARDED_BY(mu_)
  std::string last_error_;                                    // GUARDED_BY(mu_)

  // Strand-only state.
  enum class State { kIdle, kConnecting, kConnected } state_ = State::kIdle;
  std::optional<tcp::socket> sock_;
  uint64_t gen_ = 0;
  bool writing_ = false;
  bool shutdown_ = false;
  // Wait before the next connect: grows while connections fail or die before
  // a good reply (a peer that answers garbage), back to 0 after one.
  std::chrono::milliseconds reconnect_delay_{0};
};

std::shared_ptr<PendingCall> Core::Start(uint16_t service, std::string payload,
                                         std::span<const uint8_t> bulk_out,
                                         std::span<uint8_t> bulk_in, const CallOptions& opts) {
  auto p = std::make_shared<PendingCall>();
  p->service = service;
  p->payload = std::move(payload);
  p->bulk_out = bulk_out;
  p->bulk_in = bulk_in;
  p->deadline = Clock::now() + opts.timeout;
  net::FrameHeader h;
  h.kind = net::FrameKind::kRequest;
  h.service = service;
  h.payload_len = static_cast<uint32_t>(p->payload.size());
  h.bulk_len = static_cast<uint32_t>(bulk_out.size());
  // The crc is computed here, on the caller's thread, so many callers checksum in parallel.
  h.body_crc = net::BodyCrc(
      {reinterpret_cast<const uint8_t*>(p->payload.data()), p->payload.size()}, bulk_out);
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!addr_status_.ok() || bulk_out.size() > net::kMaxBulk || p->payload.size() > net::kMaxPayload) {
      p->in_map = false;
      p->done = true;
      p->status = addr_status_.ok() ? Status(EMSGSIZE, "request too large") : addr_status_;
      return p;
    }
    p->id = next_id_++;
    h.request_id = p->id;
    net::EncodeHeader(h, p->header);
    pending_[p->id] = p;
    outq_.push_back(p);
  }
  asio::post(strand_, [self = shared_from_this()] { self->Kick(); });
  return p;
}

Status Core::Wait(const std::shared_ptr<PendingCall>& p, Response* out) {
  std::unique_lock<std::mutex> l(mu_);
  if (!p->cv.wait_until(l, p->deadline, [&] { return p->done; })) {
    // Timed out: unhook the call, then wait until no I/O uses its buffers.
    if (p->in_map) {
      pending_.erase(p->id);
      p->in_map = false;
    }
    if (p->sending > 0 || p->receiving) {
      // The peer stalls mid-frame: only dropping the connection frees our buffers.
      asio::post(strand_, [self = shared_from_this()] { self->OnError(self->gen_, "call timed out mid-transfer"); });
    }
    p->cv.wait(l, [&] { return p->done || (p->sending == 0 && !p->receiving); });
    if (!p->done) {
      if (!ever_connected_ && !last_error_.empty()) {
        return Status(ECONNREFUSED, "cannot connect to " + address_ + ": " + last_error_);
      }
      return Status(ETIMEDOUT, "no reply from " + address_ + " before the deadline");
    }
  }
  if (out != nullptr) *out = std::move(p->resp);
  return p->status;
}

void Core::Complete(const std::shared_ptr<PendingCall>& p, Status st) {
  p->done = true;
  p->status = std::move(st);
  p->cv.notify_all();
}

void Core::Kick() {
  if (shutdown_) return;
  if (state_ == State::kIdle) {
    state_ = State::kConnecting;
    asio::co_spawn(strand_, ConnectLoop(shared_from_this()), asio::detached);
  } else if (state_ == State::kConnected && !writing_) {
    writing_ = true;
    asio::co_spawn(strand_, WriteLoop(shared_from_this(), gen_), asio::detached);
  }
}

awaitable<void> Core::ConnectLoop(std::shared_ptr<Core> self) {
  for (;;) {
    if (reconnect_delay_.count() > 0) {
      boost::system::error_code tec;
      asio::steady_timer timer(strand_, reconnect_delay_);
      co_await timer.async_wait(redirect_error(use_awaitable, tec));
    }
    {
      std::lock_guard<std::mutex> l(mu_);
      if (shutdown_ || pending_.empty()) {
        state_ = State::kIdle;
        co_return;
      }
    }
    boost::system::error_code ec;
    tcp::resolver resolver(strand_);
    auto eps = co_await resolver.async_resolve(host_, std::to_string(port_), redirect_error(use_awaitable, ec));
    tcp::socket sock(strand_);
    if (!ec) co_await asio::async_connect(sock, eps, redirect_error(use_awaitable, ec));
    if (!ec && !shutdown_) {
      sock.set_option(tcp::no_delay(true), ec);
      sock_.emplace(std::move(sock));
      state_ = State::kConnected;
      ++gen_;
      {
        std::lock_guard<std::mutex> l(mu_);
        if (ever_connected_) LOG_INFO("reconnected to " << address_);
        ever_connected_ = true;
        last_error_.clear();
        outq_.clear();  // re-queue every call in flight, oldest first
        for (auto& [id, p] : pending_) outq_.push_back(p);
      }
      asio::co_spawn(strand_, ReadLoop(self, gen_), asio::detached);
      writing_ = true;
      asio::co_spawn(strand_, WriteLoop(self, gen_), asio::detached);
      co_return;
    }
    {
      std::lock_guard<std::mutex> l(mu_);
      last_error_ = ec ? ec.message() : "shut down";
    }
    GrowReconnectDelay();
  }
}

awaitable<void> Core::WriteLoop(std::shared_ptr<Core> self, uint64_t gen) {
  constexpr size_t kMaxBatch = 16;
  for (;;) {
    std::vector<std::shared_ptr<PendingCall>> batch;
    std::vector<asio::const_buffer> bufs;
    {
      std::lock_guard<std::mutex> l(mu_);
      while (!outq_.empty() && batch.size() < kMaxBatch && gen == gen_) {
        auto p = std::move(outq_.front());
        outq_.pop_front();
        if (!p->in_map) continue;
        ++p->sending;
        bufs.push_back(asio::buffer(p->header));
        if (!p->payload.empty()) bufs.push_back(asio::buffer(p->payload));
        if (!p->bulk_out.empty()) bufs.push_back(asio::buffer(p->bulk_out.data(), p->bulk_out.size()));
        batch.push_back(std::move(p));
      }
      if (batch.empty()) {
        if (gen == gen_) writing_ = false;
        co_return;
      }
    }
    boost::system::error_code ec;
    co_await asio::async_write(*sock_, bufs, redirect_error(use_awaitable, ec));
    {
      std::lock_guard<std::mutex> l(mu_);
      for (auto& p : batch) {
        --p->sending;
        p->cv.notify_all();
      }
    }
    if (ec) {
      OnError(gen, "write failed: " + ec.message());
      co_return;
    }
  }
}

awaitable<void> Core::ReadLoop(std::shared_ptr<Core> self, uint64_t gen) {
  uint8_t hdr[net::kHeaderSize];
  for (;;) {
    boost::system::error_code ec;
    co_await asio::async_read(*sock_, asio::buffer(hdr), redirect_error(use_awaitable, ec));
    if (ec || gen != gen_) {
      OnError(gen, ec ? ec.message() : "stale connection");
      co_return;
    }
    auto h = net::DecodeHeader(hdr);
    if (!h.ok() || h->kind != net::FrameKind::kResponse) {
      OnError(gen, h.ok() ? "request frame sent to a client" : h.status().ToString());
      co_return;
    }
    std::shared_ptr<PendingCall> p;
    {
      std::lock_guard<std::mutex> l(mu_);
      auto it = pending_.find(h->request_id);
      if (it != pending_.end()) {
        p = it->second;
        p->receiving = true;
      }
    }
    std::string payload(h->payload_len, '\0');
    std::vector<uint8_t> scratch;
    std::span<uint8_t> dst;
    bool too_big = p && !p->bulk_in.empty() && h->bulk_len > p->bulk_in.size();
    if (p && !p->bulk_in.empty() && !too_big) {
      dst = p->bulk_in.first(h->bulk_len);
    } else {
      scratch.resize(h->bulk_len);
      dst = scratch;
    }
    std::array<asio::mutable_buffer, 2> body = {asio::buffer(payload), asio::buffer(dst.data(), dst.size())};
    co_await asio::async_read(*sock_, body, redirect_error(use_awaitable, ec));
    Status st = ec ? Status(EIO, ec.message())
                   : net::VerifyBody(*h, {reinterpret_cast<const uint8_t*>(payload.data()), payload.size()}, dst);
    if (!st.ok()) {
      {
        std::lock_guard<std::mutex> l(mu_);
        if (p) {
          p->receiving = false;
          p->cv.notify_all();
        }
      }
      // A broken reply: drop the connection; the call is re-sent on the next one.
      OnError(gen, "bad reply: " + st.ToString());
      co_return;
    }
    reconnect_delay_ = std::chrono::milliseconds(0);  // a good reply: the peer speaks our protocol
    std::lock_guard<std::mutex> l(mu_);
    if (!p) continue;
    p->receiving = false;
    p->cv.notify_all();
    if (!p->in_map) continue;
    pending_.erase(p->id);
    p->in_map = false;
    p->resp.payload = std::move(payload);
    p->resp.bulk = std::move(scratch);
    p->resp.bulk_len = h->bulk_len;
    Complete(p, too_big ? Status(EPROTO, "reply bulk larger than the receive buffer") : Status::Ok());
  }
}

void Core::OnError(uint64_t gen, const std::string& why) {
  if (gen != gen_ || state_ != State::kConnected) return;
  LOG_WARN("connection to " << address_ << " lost: " << why);
  boost::system::error_code ec;
  sock_->shutdown(tcp::socket::shutdown_both, ec);
  sock_->close(ec);
  state_ = State::kIdle;
  writing_ = false;
  ++gen_;  // stale loops see the change and stop
  GrowReconnectDelay();
  Kick();  // reconnects if calls are still in flight
}

void Core::Shutdown() {
  std::promise<void> done;
  auto fut = done.get_future();
  asio::post(strand_, [self = shared_from_this(), &done] {
    self->shutdown_ = true;
    if (self->sock_) {
      boost::system::error_code ec;
      self->sock_->close(ec);
    }
    self->state_ = State::kIdle;
    ++self->gen_;
    done.set_value();
  });
  fut.wait();
  std::lock_guard<std::mutex> l(mu_);
  for (auto& [id, p] : pending_) {
    p->in_map = false;
    Complete(p, Status(ECANCELED, "channel closed"));
  }
  pending_.clear();
  outq_.clear();
}

class AsioIoContext final : public IoContext {
 public:
  explicit AsioIoContext(int threads) : guard_(asio::make_work_guard(io_)) {
    for (int i = 0; i < std::max(1, threads); ++i) threads_.emplace_back([this] { io_.run(); });
  }
  ~AsioIoContext() override {
    guard_.reset();
    io_.stop();
    for (auto& t : threads_) t.join();
  }
  std::unique_ptr<Channel> MakeTcpChannel(const std::string& address) override {
    return std::make_unique<CoreChannel<Core>>(std::make_shared<Core>(io_, address));
  }

 private:
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> guard_;
  std::vector<std::thread> threads_;
};

}  // namespace

std::unique_ptr<IoContext> IoContext::Create(int threads) {
  return std::make_unique<AsioIoContext>(threads);
}

}  // namespace sfs::rpc
