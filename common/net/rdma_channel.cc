// RDMA client side of the RPC transport (see rdma_transport.h).
//
// A channel (Core) is one RC connection to one server with many calls in
// flight, matched to replies by request id. Callers run on their own
// threads: Start() registers the call's buffers (through the context's
// registration cache), queues the call and sends its request if connected;
// Wait() blocks until the reply, checks the frame crc over the bulk wherever
// it landed, and re-sends once with fresh registrations if it does not match.
// Connection set-up (resolve address, route, connect) and teardown run on the
// context's progress thread, driven by rdma_cm events; retries back off
// exponentially up to 1 s.
//
// A call's request goes at most once per connection (sent_gen): the server
// RDMA-WRITEs into bulk_in, so a duplicate could land after the caller has
// moved on. On reconnect every call in flight is sent again on the new
// connection; servers treat repeats as the same request. A call that times
// out while its bulk_in descriptor is out on a live connection closes that
// connection before Wait() returns (see rdma_transport.h).
//
// rpc::PendingCall is opaque and defined by the TCP transport; to keep one
// definition per program, a call here is an RdmaCall handed out through an
// aliasing shared_ptr<PendingCall> and cast back in Wait().
//
// Lock order: Core::mu_, then Conn::mu_ (SendFrame is called without mu_).
#include <condition_variable>
#include <cstring>
#include <map>

#include "common/log.h"
#include "common/net/core_channel.h"
#include "common/net/rdma_conn.h"
#include "common/net/rdma_mr_cache.h"
#include "common/net/rdma_transport.h"
#include "common/rpc/bulk_copy_stats.h"

namespace sfs::rpc {
namespace {

using Clock = std::chrono::steady_clock;
using net::rdma::BulkDesc;
using net::rdma::CmEvent;
using net::rdma::Conn;
using net::rdma::MrCache;
using net::rdma::Poller;
using net::rdma::Registration;
using net::rdma::StreamFrame;

constexpr int kResolveTimeoutMs = 2000;
constexpr size_t kCacheBytes = size_t{1} << 30;

// Fields after `deadline` are guarded by the owning Core's mu_.
struct RdmaCall {
  uint64_t id = 0;
  uint16_t service = 0;
  std::string payload;
  std::span<const uint8_t> bulk_out;
  std::span<uint8_t> bulk_in;
  uint32_t body_crc = 0;
  Clock::time_point deadline;

  std::shared_ptr<Registration> reg_out, reg_in;
  bool in_map = false;
  uint64_t sent_gen = 0;  // connection the request last went out on
  bool retried = false;   // re-sent once after a crc mismatch
  bool resent = false;    // sent again on a new connection (Response::resent)
  bool done = false;
  Status status;
  net::FrameHeader reply;
  Response resp;
  std::condition_variable cv;
};

std::shared_ptr<PendingCall> ToOpaque(const std::shared_ptr<RdmaCall>& c) {
  return std::shared_ptr<PendingCall>(c, reinterpret_cast<PendingCall*>(c.get()));
}
std::shared_ptr<RdmaCall> FromOpaque(const std::shared_ptr<PendingCall>& p) {
  return std::shared_ptr<RdmaCall>(p, reinterpret_cast<RdmaCall*>(p.get()));
}

class ContextImpl;

class Core : public std::enable_shared_from_this<Core> {
 public:
  Core(ContextImpl* ctx, std::string address);

  std::shared_ptr<PendingCall> Start(uint16_t service, std::string payload,
                                     std::span<const uint8_t> bulk_out, std::span<uint8_t> bulk_in,
                                     const CallOptions& opts);
  Status Wait(const std::shared_ptr<PendingCall>& call, Response* out);
  void Shutdown();
  void OnCm(const CmEvent& e);  // progress thread
  Result<bool> SendRaw(std::span<const uint8_t> bytes, std::chrono::milliseconds timeout);
  const std::string& address() const { return address_; }

 private:
  using Lock = std::unique_lock<std::mutex>;
  // Sends c's request if connected (once per connection), else starts connecting.
  void SendOrKick(const std::shared_ptr<RdmaCall>& c, Lock& l);
  Result<std::string> BuildFrame(RdmaCall& c);  // REQUIRES: mu_ held
  void Complete(RdmaCall& c, Status st);        // REQUIRES: mu_ held
  Status OnTimeout(const std::shared_ptr<RdmaCall>& c, Lock& l);
  bool VerifyReply(RdmaCall& c);                // caller's thread, call done
  void Retry(const std::shared_ptr<RdmaCall>& c, Lock& l);
  // Progress thread.
  void Connect();
  void CreateConn();
  void Established();
  void AttemptFailed(const std::string& why);
  void OnClosed(uint64_t gen, const std::string& why);
  void OnFrames(uint64_t gen, std::vector<StreamFrame>& frames);

  ContextImpl* const ctx_;
  const std::string address_;
  sockaddr_storage dst_{};
  Status addr_status_;

  std::mutex mu_;
  std::map<uint64_t, std::shared_ptr<RdmaCall>> pending_;  // GUARDED_BY(mu_)
  uint64_t next_id_ = 1;                                    // GUARDED_BY(mu_)
  enum class State { kIdle, kConnecting, kConnected } state_ = State::kIdle;  // GUARDED_BY(mu_)
  std::shared_ptr<Conn> conn_;                              // GUARDED_BY(mu_)
  uint64_t gen_ = 0;                                        // GUARDED_BY(mu_)
  bool ever_connected_ = false;                             // GUARDED_BY(mu_)
  std::string last_error_;                                  // GUARDED_BY(mu_)
  bool shutdown_ = false;                                   // GUARDED_BY(mu_)
  bool raw_ = false;                                        // GUARDED_BY(mu_): test hook mode
  int closes_ = 0;                                          // GUARDED_BY(mu_)
  std::condition_variable state_cv_;

  rdma_cm_id* id_ = nullptr;  // progress thread: an id still resolving (no Conn yet)
  std::chrono::milliseconds backoff_{20};  // progress thread
};

class ContextImpl final : public RdmaContext {
 public:
  static Result<std::unique_ptr<RdmaContext>> Make();
  ~ContextImpl() override {
    if (poller_) poller_->Stop();
    cache_.reset();
    poller_.reset();
  }
  std::unique_ptr<Channel> MakeRdmaChannel(const std::string& address) override;
  Status Preregister(const void* addr, size_t len) override {
    return cache_->Acquire(addr, len, true).status();
  }
  void Invalidate(const void* addr, size_t len) override { cache_->Invalidate(addr, len); }
  size_t CachedRegistrations() const override { return cache_->size(); }
  Result<bool> SendRawForTest(const std::string& address, std::span<const uint8_t> bytes,
                              std::chrono::milliseconds timeout) override;

  Poller* poller() const { return poller_.get(); }
  MrCache* cache() const { return cache_.get(); }
  ibv_context* verbs() const { return verbs_; }

 private:
  std::unique_ptr<Poller> poller_;
  ibv_context* verbs_ = nullptr;
  std::unique_ptr<MrCache> cache_;
};

Core::Core(ContextImpl* ctx, std::string address) : ctx_(ctx), address_(std::move(address)) {
  std::string host;
  uint16_t port = 0;
  addr_status_ = ParseAddress(address_, &host, &port);
  if (addr_status_.ok()) addr_status_ = net::rdma::MakeSockaddr(host, port, &dst_);
}

std::shared_ptr<PendingCall> Core::Start(uint16_t service, std::string payload,
                                         std::span<const uint8_t> bulk_out,
                                         std::span<uint8_t> bulk_in, const CallOptions& opts) {
  auto c = std::make_shared<RdmaCall>();
  c->service = service;
  c->payload = std::move(payload);
  c->bulk_out = bulk_out;
  c->bulk_in = bulk_in;
  c->deadline = Clock::now() + opts.timeout;
  c->body_crc = net::BodyCrc(
      {reinterpret_cast<const uint8_t*>(c->payload.data()), c->payload.size()}, bulk_out);
  Status st = addr_status_;
  if (st.ok() && (bulk_out.size() > net::kMaxBulk || c->payload.size() > net::kMaxPayload)) {
    st = Status(EMSGSIZE, "request too large");
  }
  // Registered here, on the caller's thread, so callers register in parallel.
  if (st.ok() && !bulk_out.empty()) {
    auto r = ctx_->cache()->Acquire(bulk_out.data(), bulk_out.size(), false);
    if (r.ok()) c->reg_out = *r; else st = r.status();
  }
  if (st.ok() && !bulk_in.empty()) {
    auto r = ctx_->cache()->Acquire(bulk_in.data(), bulk_in.size(), true);
    if (r.ok()) c->reg_in = *r; else st = r.status();
  }
  Lock l(mu_);
  if (!st.ok() || shutdown_) {
    Complete(*c, st.ok() ? Status(ECANCELED, "channel closed") : st);
    return ToOpaque(c);
  }
  c->id = next_id_++;
  c->in_map = true;
  pending_[c->id] = c;
  SendOrKick(c, l);
  return ToOpaque(c);
}

void Core::SendOrKick(const std::shared_ptr<RdmaCall>& c, Lock& l) {
  if (state_ == State::kIdle && !shutdown_) {
    state_ = State::kConnecting;
    ctx_->poller()->Post([self = shared_from_this()] { self->Connect(); });
    return;
  }
  if (state_ != State::kConnected || c->sent_gen == gen_) return;
  auto frame = BuildFrame(*c);
  if (!frame.ok()) {
    Complete(*c, frame.status());
    return;
  }
  c->sent_gen = gen_;
  auto conn = conn_;
  l.unlock();
  conn->SendFrame(std::move(*frame));  // a closed conn drops it; the next one re-sends
  l.lock();
}

Result<std::string> Core::BuildFrame(RdmaCall& c) {
  net::FrameHeader h;
  h.kind = net::FrameKind::kRequest;
  h.service = c.service;
  h.request_id = c.id;
  h.bulk_len = static_cast<uint32_t>(c.bulk_out.size());
  h.body_crc = c.body_crc;
  BulkDesc d;
  if (!c.bulk_out.empty()) {
    if (!c.reg_out) {
      SFS_ASSIGN_OR_RETURN(c.reg_out, ctx_->cache()->Acquire(c.bulk_out.data(), c.bulk_out.size(), false));
    }
    h.flags |= net::rdma::kFlagDesc | net::rdma::kFlagBulkRemote;
    d.out_addr = reinterpret_cast<uintptr_t>(c.bulk_out.data());
    d.out_rkey = c.reg_out->rkey();
    d.out_len = static_cast<uint32_t>(c.bulk_out.size());
  }
  if (!c.bulk_in.empty()) {
    if (!c.reg_in) {
      SFS_ASSIGN_OR_RETURN(c.reg_in, ctx_->cache()->Acquire(c.bulk_in.data(), c.bulk_in.size(), true));
    }
    h.flags |= net::rdma::kFlagDesc;
    d.in_addr = reinterpret_cast<uintptr_t>(c.bulk_in.data());
    d.in_rkey = c.reg_in->rkey();
    d.in_cap = static_cast<uint32_t>(std::min<size_t>(c.bulk_in.size(), UINT32_MAX));
  }
  bool desc = (h.flags & net::rdma::kFlagDesc) != 0;
  return net::rdma::EncodeStreamFrame(h, c.payload, {}, desc ? &d : nullptr);
}

void Core::Complete(RdmaCall& c, Status st) {
  if (c.in_map) pending_.erase(c.id);
  c.in_map = false;
  c.done = true;
  c.status = std::move(st);
  c.cv.notify_all();
}

Status Core::Wait(const std::shared_ptr<PendingCall>& call, Response* out) {
  auto c = FromOpaque(call);
  Lock l(mu_);
  for (;;) {
    if (!c->cv.wait_until(l, c->deadline, [&] { return c->done; })) return OnTimeout(c, l);
    if (!c->status.ok()) break;
    l.unlock();
    bool good = VerifyReply(*c);
    l.lock();
    if (good) break;
    if (c->retried) {
      c->status = Status(EIO, "reply from " + address_ + " failed its crc twice");
      break;
    }
    LOG_WARN("rdma: bulk crc mismatch on a call to " << address_ << "; re-registering and re-sending");
    Retry(c, l);
  }
  c->reg_out.reset();
  c->reg_in.reset();
  if (out != nullptr) {
    *out = std::move(c->resp);
    out->resent = c->resent;
  }
  return c->status;
}

// The reply's crc covers the bulk wherever it landed (caller's buffer or inline).
bool Core::VerifyReply(RdmaCall& c) {
  const net::FrameHeader& h = c.reply;
  if (h.flags & net::rdma::kFlagBulkBad) return false;
  std::span<const uint8_t> payload{reinterpret_cast<const uint8_t*>(c.resp.payload.data()),
                                   c.resp.payload.size()};
  bool remote = (h.flags & net::rdma::kFlagBulkRemote) != 0;
  std::span<const uint8_t> bulk = remote ? std::span<const uint8_t>(c.bulk_in.first(h.bulk_len))
                                         : std::span<const uint8_t>(c.resp.bulk);
  if (!net::VerifyBody(h, payload, bulk).ok()) return false;
  if (!remote && !c.bulk_in.empty()) {  // an inline bulk for a caller that gave a buffer
    std::memcpy(c.bulk_in.data(), c.resp.bulk.data(), c.resp.bulk.size());
    rpc::BulkCopyStats::AddCopied(c.resp.bulk.size());
    c.resp.bulk.clear();
  }
  c.resp.bulk_len = h.bulk_len;
  return true;
}

// A stale registration is the likely cause of a crc mismatch on RDMA bulk.
void Core::Retry(const std::shared_ptr<RdmaCall>& c, Lock& l) {
  c->retried = true;
  if (!c->bulk_out.empty()) ctx_->cache()->Invalidate(c->bulk_out.data(), c->bulk_out.size());
  if (!c->bulk_in.empty()) ctx_->cache()->Invalidate(c->bulk_in.data(), c->bulk_in.size());
  c->reg_out.reset();
  c->reg_in.reset();
  c->done = false;
  c->status = Status::Ok();
  c->resp = Response{};
  c->sent_gen = 0;
  c->in_map = true;
  pending_[c->id] = c;
  SendOrKick(c, l);
}

Status Core::OnTimeout(const std::shared_ptr<RdmaCall>& c, Lock& l) {
  if (c->in_map) pending_.erase(c->id);
  c->in_map = false;
  if (!c->bulk_in.empty() && state_ == State::kConnected && c->sent_gen == gen_ && conn_) {
    // The server may still RDMA-WRITE into bulk_in: take the QP down first.
    auto conn = conn_;
    l.unlock();
    ctx_->poller()->RunSync([conn] { conn->Close("a call timed out with its bulk_in exposed"); });
    l.lock();
  }
  c->reg_out.reset();
  c->reg_in.reset();
  if (!ever_connected_ && !last_error_.empty()) {
    return Status(ECONNREFUSED, "cannot connect to " + address_ + ": " + last_error_);
  }
  return Status(ETIMEDOUT, "no reply from " + address_ + " before the deadline");
}

void Core::Connect() {
  {
    Lock l(mu_);
    if (shutdown_ || (pending_.empty() && !raw_)) {
      state_ = State::kIdle;
      return;
    }
  }
  if (rdma_create_id(ctx_->poller()->cm_channel(), &id_, this, RDMA_PS_TCP) != 0) {
    id_ = nullptr;
    AttemptFailed("rdma_create_id: " + ErrnoName(errno));
    return;
  }
  if (rdma_resolve_addr(id_, nullptr, reinterpret_cast<sockaddr*>(&dst_), kResolveTimeoutMs) != 0) {
    AttemptFailed("rdma_resolve_addr: " + ErrnoName(errno));
  }
}

void Core::OnCm(const CmEvent& e) {
  Lock l(mu_);
  auto conn = conn_;
  l.unlock();
  bool current_conn = conn && conn->id() == e.id;
  if (!current_conn && e.id != id_) return;  // a stale id
  std::string why = std::string(rdma_event_str(e.type)) + " (status " + std::to_string(e.status) + ")";
  switch (e.type) {
    case RDMA_CM_EVENT_ADDR_RESOLVED:
      if (rdma_resolve_route(id_, kResolveTimeoutMs) != 0) AttemptFailed("rdma_resolve_route: " + ErrnoName(errno));
      return;
    case RDMA_CM_EVENT_ROUTE_RESOLVED:
      CreateConn();
      return;
    case RDMA_CM_EVENT_ESTABLISHED:
      if (current_conn) Established();
      return;
    case RDMA_CM_EVENT_DISCONNECTED:
      why = "peer disconnected";
      [[fallthrough]];
    default:
      if (current_conn) conn->Close(why); else AttemptFailed(why);
  }
}

void Core::CreateConn() {
  if (id_->verbs != ctx_->verbs()) {
    AttemptFailed("route to " + address_ + " uses another RDMA device than the context's");
    return;
  }
  uint64_t gen;
  {
    Lock l(mu_);
    gen = ++gen_;
  }
  std::weak_ptr<Core> weak = shared_from_this();
  Conn::Hooks hooks;
  hooks.on_frames = [weak, gen](std::vector<StreamFrame>& f) {
    if (auto self = weak.lock()) self->OnFrames(gen, f);
  };
  hooks.on_closed = [weak, gen](const std::string& why) {
    if (auto self = weak.lock()) self->OnClosed(gen, why);
  };
  rdma_cm_id* id = id_;
  id_ = nullptr;  // the Conn owns it now, or Create destroyed it
  auto conn = Conn::Create(ctx_->poller(), id, address_, std::move(hooks));
  if (!conn.ok()) {
    AttemptFailed(conn.status().ToString());
    return;
  }
  {
    Lock l(mu_);
    conn_ = *conn;
  }
  rdma_conn_param p{};
  p.responder_resources = net::rdma::kRdDepth;
  p.initiator_depth = net::rdma::kRdDepth;
  p.retry_count = 7;
  p.rnr_retry_count = 0;  // credits make RNR impossible: one means a protocol bug, so fail
  if (rdma_connect(id, &p) != 0) (*conn)->Close("rdma_connect: " + ErrnoName(errno));
}

void Core::Established() {
  std::vector<std::string> frames;
  std::shared_ptr<Conn> conn;
  {
    Lock l(mu_);
    conn = conn_;
    state_ = State::kConnected;
    if (ever_connected_) LOG_INFO("rdma: reconnected to " << address_);
    ever_connected_ = true;
    last_error_.clear();
    for (auto& [id, c] : pending_) {  // oldest first
      auto frame = BuildFrame(*c);
      if (!frame.ok()) continue;  // completed below
      c->resent |= c->sent_gen != 0;
      c->sent_gen = gen_;
      frames.push_back(std::move(*frame));
    }
    for (auto it = pending_.begin(); it != pending_.end();) {
      auto c = (it++)->second;
      if (c->sent_gen != gen_) Complete(*c, Status(EIO, "cannot register bulk buffers"));
    }
    state_cv_.notify_all();
  }
  backoff_ = std::chrono::milliseconds(20);
  conn->MarkReady();
  for (auto& f : frames) conn->SendFrame(std::move(f));
}

void Core::AttemptFailed(const std::string& why) {
  if (id_ != nullptr) rdma_destroy_id(id_);
  id_ = nullptr;
  Lock l(mu_);
  last_error_ = why;
  if (shutdown_ || raw_ || pending_.empty()) {
    state_ = State::kIdle;
    return;
  }
  LOG_DEBUG("rdma: connect to " << address_ << " failed: " << why);
  state_ = State::kConnecting;
  ctx_->poller()->Post([self = shared_from_this()] { self->Connect(); }, backoff_);
  backoff_ = std::min(backoff_ * 2, std::chrono::milliseconds(1000));
}

void Core::OnClosed(uint64_t gen, const std::string& why) {
  Lock l(mu_);
  if (gen != gen_) return;
  bool was_connected = state_ == State::kConnected;
  conn_.reset();
  ++gen_;  // calls sent on the dead connection go out again on the next one
  ++closes_;
  state_cv_.notify_all();
  if (shutdown_) {
    state_ = State::kIdle;
    return;
  }
  if (!was_connected) {
    l.unlock();
    AttemptFailed(why);
    return;
  }
  LOG_WARN("rdma: connection to " << address_ << " lost: " << why);
  state_ = State::kIdle;
  if (!shutdown_ && !raw_ && !pending_.empty()) {
    state_ = State::kConnecting;
    ctx_->poller()->Post([self = shared_from_this()] { self->Connect(); });
  }
}

void Core::OnFrames(uint64_t gen, std::vector<StreamFrame>& frames) {
  Lock l(mu_);
  if (gen != gen_) return;
  for (auto& f : frames) {
    if (f.header.kind != net::FrameKind::kResponse) {
      auto conn = conn_;
      l.unlock();
      conn->Close("request frame sent to a client");
      return;
    }
    auto it = pending_.find(f.header.request_id);
    if (it == pending_.end()) continue;  // timed out, or a duplicate
    RdmaCall& c = *it->second;
    c.reply = f.header;
    c.resp.payload = std::move(f.payload);
    c.resp.bulk = std::move(f.inline_bulk);
    bool remote = (f.header.flags & net::rdma::kFlagBulkRemote) != 0;
    bool too_big = f.header.bulk_len > 0 && !c.bulk_in.empty() && f.header.bulk_len > c.bulk_in.size();
    if (remote && c.bulk_in.empty()) {
      Complete(c, Status(EPROTO, "server placed a bulk the call had no buffer for"));
    } else {
      Complete(c, too_big ? Status(EPROTO, "reply bulk larger than the receive buffer") : Status::Ok());
    }
  }
}

void Core::Shutdown() {
  ctx_->poller()->RunSync([this] {
    std::shared_ptr<Conn> conn;
    {
      Lock l(mu_);
      shutdown_ = true;
      conn = conn_;
    }
    if (conn) conn->Close("");
    if (id_ != nullptr) rdma_destroy_id(id_);
    id_ = nullptr;
  });
  Lock l(mu_);
  shutdown_ = true;
  for (auto it = pending_.begin(); it != pending_.end();) {
    auto c = (it++)->second;
    Complete(*c, Status(ECANCELED, "channel closed"));
  }
}

Result<bool> Core::SendRaw(std::span<const uint8_t> bytes, std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  Lock l(mu_);
  raw_ = true;
  state_ = State::kConnecting;
  ctx_->poller()->Post([self = shared_from_this()] { self->Connect(); });
  if (!state_cv_.wait_until(l, deadline, [&] { return state_ == State::kConnected || closes_ > 0; }) ||
      state_ != State::kConnected) {
    return Status(ECONNREFUSED, "cannot connect to " + address_ + ": " + last_error_);
  }
  auto conn = conn_;
  int closes = closes_;
  l.unlock();
  conn->SendFrame(std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  l.lock();
  return state_cv_.wait_until(l, deadline, [&] { return closes_ > closes; });
}

Result<std::unique_ptr<RdmaContext>> ContextImpl::Make() {
  if (!RdmaDeviceAvailable()) return Status(ENODEV, "no RDMA device");
  std::unique_ptr<ContextImpl> ctx(new ContextImpl());
  SFS_ASSIGN_OR_RETURN(ctx->poller_, Poller::Create([](const CmEvent& e) {
    static_cast<Core*>(e.id->context)->OnCm(e);
  }));
  int n = 0;
  ibv_context** devs = rdma_get_devices(&n);
  if (devs == nullptr || n == 0) {
    if (devs != nullptr) rdma_free_devices(devs);
    return Status(ENODEV, "rdma_cm sees no RDMA device");
  }
  ctx->verbs_ = devs[0];  // one device for now: registrations belong to its PD
  rdma_free_devices(devs);
  SFS_ASSIGN_OR_RETURN(ibv_pd * pd, ctx->poller_->Pd(ctx->verbs_));
  ctx->cache_ = std::make_unique<MrCache>(pd, kCacheBytes);
  return std::unique_ptr<RdmaContext>(std::move(ctx));
}

std::unique_ptr<Channel> ContextImpl::MakeRdmaChannel(const std::string& address) {
  return std::make_unique<CoreChannel<Core>>(std::make_shared<Core>(this, address));
}

Result<bool> ContextImpl::SendRawForTest(const std::string& address, std::span<const uint8_t> bytes,
                                         std::chrono::milliseconds timeout) {
  auto core = std::make_shared<Core>(this, address);
  auto r = core->SendRaw(bytes, timeout);
  core->Shutdown();
  return r;
}

}  // namespace

Result<std::unique_ptr<RdmaContext>> RdmaContext::Create() { return ContextImpl::Make(); }

}  // namespace sfs::rpc
