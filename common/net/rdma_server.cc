// RDMA server side of the RPC transport (see rdma_transport.h).
//
// Threads: the Poller's progress thread accepts connections, reassembles
// request frames, and pulls each request's remote bulk with RDMA READ into
// the Request's own vector (registered for that transfer only); once the
// frame's crc checks out the request goes to the worker pool, where
// Handler::HandleAsync may block or keep its ReplyFn to answer later. A worker pushes the reply bulk straight from the
// Reply's vector into the caller's buffer with RDMA WRITE, queued ahead of the
// reply SEND on the same QP. A request whose remote bulk fails its crc gets a
// kFlagBulkBad reply (the client re-registers and re-sends); any other bad
// frame closes that connection with a logged reason.
//
// Memory: the pre-posted receive buffers bound only the frames being
// reassembled; each request's remote bulk is RDMA-READ into a vector of its
// own size, so that alone would let a client make the server allocate as
// much as it posts. Each request therefore takes the same byte budget as on
// TCP (common/rpc/admission.h) before its bulk is pulled: a frame that does
// not fit waits, with the frames behind it, in its connection's queue (its
// payload only; the bulk stays at the client) until a reply frees budget. The
// ticket is released once the reply is handed to the connection (a reply
// bulk going by RDMA WRITE lives until the WRITE completes). Receive credits
// keep flowing, so the queued payloads (small) are not bounded by the budget.
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>

#include "common/log.h"
#include "common/net/rdma_conn.h"
#include "common/net/rdma_mr_cache.h"
#include "common/net/rdma_transport.h"
#include "common/rpc/admission.h"
#include "common/rpc/reply_gate.h"

namespace sfs::rpc {
namespace {

using net::rdma::BulkDesc;
using net::rdma::BulkOp;
using net::rdma::CmEvent;
using net::rdma::Conn;
using net::rdma::Poller;
using net::rdma::Registration;
using net::rdma::StreamFrame;

// A fixed set of threads running queued jobs; Join() finishes the queue.
class WorkerPool {
 public:
  explicit WorkerPool(int n) {
    for (int i = 0; i < n; ++i) threads_.emplace_back([this] { Loop(); });
  }
  ~WorkerPool() { Join(); }
  void Submit(std::function<void()> job) {
    std::lock_guard<std::mutex> l(mu_);
    jobs_.push_back(std::move(job));
    cv_.notify_one();
  }
  void Join() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
      cv_.notify_all();
    }
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

 private:
  void Loop() {
    for (;;) {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [&] { return stop_ || !jobs_.empty(); });
      if (jobs_.empty()) return;
      auto job = std::move(jobs_.front());
      jobs_.pop_front();
      l.unlock();
      job();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;  // GUARDED_BY(mu_)
  bool stop_ = false;                       // GUARDED_BY(mu_)
  std::vector<std::thread> threads_;
};

class RdmaServer final : public Server {
 public:
  RdmaServer(const ServerOptions& opts, Handler* handler)
      : opts_(opts), handler_(handler), workers_(std::max(1, opts.worker_threads)) {}
  ~RdmaServer() override { Stop(); }

  Status Listen();
  uint16_t port() const override { return port_; }
  void Stop() override;
  AdmissionStats admission_stats() const override {
    auto s = budget_->stats();
    return {s.in_flight, s.peak, s.waits};
  }

 private:
  using TicketPtr = std::shared_ptr<AdmissionBudget::Ticket>;
  // Requests of one connection waiting for budget, in arrival order.
  struct Admission {
    std::shared_ptr<AdmissionBudget::Account> account = std::make_shared<AdmissionBudget::Account>();
    std::deque<std::shared_ptr<StreamFrame>> pending;
    std::shared_ptr<AdmissionBudget::Waiter> waiter;  // for pending.front(), if waiting
  };
  void Admit(rdma_cm_id* id);  // progress thread
  void Start(const std::shared_ptr<Conn>& c, std::shared_ptr<StreamFrame> f, TicketPtr t);
  void OnCm(const CmEvent& e);  // progress thread
  void Accept(const CmEvent& e);
  void OnFrame(rdma_cm_id* id, const std::shared_ptr<Conn>& c, StreamFrame& f);
  void PullBulk(const std::shared_ptr<Conn>& c, std::shared_ptr<StreamFrame> f, TicketPtr t);
  void Dispatch(const std::shared_ptr<Conn>& c, std::shared_ptr<StreamFrame> f,
                std::vector<uint8_t> bulk, TicketPtr t);
  static void SendReply(const std::shared_ptr<Conn>& c, const StreamFrame& req, Reply reply);
  static void SendBulkBad(const std::shared_ptr<Conn>& c, const net::FrameHeader& req);

  ServerOptions opts_;
  Handler* handler_;
  std::unique_ptr<Poller> poller_;
  rdma_cm_id* listen_ = nullptr;
  uint16_t port_ = 0;
  std::atomic<bool> stopped_{false};
  // Connections by id; progress thread only.
  std::map<rdma_cm_id*, std::shared_ptr<Conn>> conns_;
  std::map<rdma_cm_id*, Admission> admissions_;  // progress thread only
  std::shared_ptr<AdmissionBudget> budget_ = std::make_shared<AdmissionBudget>(
      opts_.max_inflight_bytes, opts_.max_inflight_bytes_per_conn);
  WorkerPool workers_;
  std::shared_ptr<ReplyGate> gate_ = std::make_shared<ReplyGate>();
};

Status RdmaServer::Listen() {
  if (!RdmaDeviceAvailable()) return Status(ENODEV, "no RDMA device");
  SFS_ASSIGN_OR_RETURN(poller_, Poller::Create([this](const CmEvent& e) { OnCm(e); }));
  sockaddr_storage sa;
  SFS_RETURN_IF_ERROR(net::rdma::MakeSockaddr(opts_.host, opts_.port, &sa));
  Status st;
  poller_->RunSync([&] {
    if (rdma_create_id(poller_->cm_channel(), &listen_, this, RDMA_PS_TCP) != 0) {
      st = Status::FromErrno("rdma_create_id");
    } else if (rdma_bind_addr(listen_, reinterpret_cast<sockaddr*>(&sa)) != 0) {
      st = Status::FromErrno("cannot bind RDMA listener to " + opts_.host + ":" + std::to_string(opts_.port));
    } else if (rdma_listen(listen_, 128) != 0) {
      st = Status::FromErrno("rdma_listen");
    } else {
      port_ = ntohs(rdma_get_src_port(listen_));
    }
  });
  return st;
}

void RdmaServer::OnCm(const CmEvent& e) {
  switch (e.type) {
    case RDMA_CM_EVENT_CONNECT_REQUEST:
      Accept(e);
      return;
    case RDMA_CM_EVENT_ESTABLISHED:
      return;
    case RDMA_CM_EVENT_DISCONNECTED:
    case RDMA_CM_EVENT_CONNECT_ERROR:
    case RDMA_CM_EVENT_UNREACHABLE:
    case RDMA_CM_EVENT_REJECTED:
    case RDMA_CM_EVENT_TIMEWAIT_EXIT: {
      auto it = conns_.find(e.id);
      if (it != conns_.end()) it->second->Close(std::string("peer ") + rdma_event_str(e.type));
      return;
    }
    default:
      LOG_DEBUG("rdma server: cm event " << rdma_event_str(e.type));
  }
}

void RdmaServer::Accept(const CmEvent& e) {
  rdma_cm_id* id = e.id;
  std::string peer = net::rdma::SockaddrString(rdma_get_peer_addr(id));
  if (stopped_) {
    rdma_reject(id, nullptr, 0);
    rdma_destroy_id(id);
    return;
  }
  Conn::Hooks hooks;
  hooks.on_frames = [this, id](std::vector<StreamFrame>& frames) {
    auto it = conns_.find(id);
    if (it == conns_.end()) return;
    auto c = it->second;
    for (auto& f : frames) OnFrame(id, c, f);
  };
  hooks.on_closed = [this, id](const std::string&) {
    conns_.erase(id);
    auto it = admissions_.find(id);
    if (it == admissions_.end()) return;
    if (it->second.waiter) budget_->Cancel(it->second.waiter);
    admissions_.erase(it);
  };
  auto conn = Conn::Create(poller_.get(), id, peer, std::move(hooks));
  if (!conn.ok()) {
    LOG_WARN("rdma: cannot accept " << peer << ": " << conn.status().ToString());
    return;  // Create closed the id, which rejects the peer
  }
  conns_[id] = *conn;
  rdma_conn_param p{};
  p.responder_resources = std::min(e.initiator_depth, net::rdma::kRdDepth);
  p.initiator_depth = std::min(e.responder_resources, net::rdma::kRdDepth);
  if (rdma_accept(id, &p) != 0) {
    (*conn)->Close("rdma_accept failed: " + ErrnoName(errno));
    return;
  }
  (*conn)->MarkReady();
}

void RdmaServer::OnFrame(rdma_cm_id* id, const std::shared_ptr<Conn>& c, StreamFrame& f) {
  using net::rdma::kFlagBulkRemote;
  if (f.header.kind != net::FrameKind::kRequest) {
    c->Close("response frame sent to a server");
    return;
  }
  auto sf = std::make_shared<StreamFrame>(std::move(f));
  if ((sf->header.flags & kFlagBulkRemote) &&
      (sf->desc->out_len != sf->header.bulk_len || sf->header.bulk_len == 0)) {
    c->Close("bulk descriptor does not match the frame's bulk length");
    return;
  }
  admissions_[id].pending.push_back(std::move(sf));
  Admit(id);
}

// Starts the connection's pending requests in order while they fit the
// budget; the first that does not waits, and a grant calls Admit again.
void RdmaServer::Admit(rdma_cm_id* id) {
  auto it = admissions_.find(id);
  auto cit = conns_.find(id);
  if (it == admissions_.end() || cit == conns_.end()) return;
  Admission& a = it->second;
  while (!a.pending.empty()) {
    TicketPtr t;
    if (a.waiter) {
      t = budget_->TakeGrant(a.waiter);
      if (!t) return;  // still waiting
      a.waiter.reset();
    } else {
      const StreamFrame& f = *a.pending.front();
      auto w = std::make_shared<AdmissionBudget::Waiter>();
      w->account = a.account;
      w->cost = AdmissionBudget::kCallOverhead + f.payload.size() + f.header.bulk_len +
                handler_->ReplyBulkHint(f.payload);
      w->wake = [this, id] { poller_->Post([this, id] { Admit(id); }); };
      t = budget_->TryAcquire(w);
      if (!t) {
        a.waiter = std::move(w);
        return;
      }
    }
    auto f = std::move(a.pending.front());
    a.pending.pop_front();
    Start(cit->second, std::move(f), std::move(t));
  }
}

void RdmaServer::Start(const std::shared_ptr<Conn>& c, std::shared_ptr<StreamFrame> f, TicketPtr t) {
  if (f->header.flags & net::rdma::kFlagBulkRemote) {
    PullBulk(c, std::move(f), std::move(t));
    return;
  }
  std::vector<uint8_t> bulk = std::move(f->inline_bulk);
  Dispatch(c, std::move(f), std::move(bulk), std::move(t));
}

// RDMA-READs the request's bulk into a vector registered for this transfer.
void RdmaServer::PullBulk(const std::shared_ptr<Conn>& c, std::shared_ptr<StreamFrame> f,
                          TicketPtr t) {
  auto bulk = std::make_shared<std::vector<uint8_t>>(f->header.bulk_len);
  auto reg = Registration::Create(c->pd(), bulk->data(), bulk->size());
  if (!reg.ok()) {
    c->Close("cannot register request bulk: " + reg.status().ToString());
    return;
  }
  auto op = std::make_shared<BulkOp>();
  op->read = true;
  op->local = bulk->data();
  op->lkey = (*reg)->lkey();
  op->remote = f->desc->out_addr;
  op->rkey = f->desc->out_rkey;
  op->len = bulk->size();
  std::weak_ptr<Conn> weak = c;
  op->done = [this, weak, f, bulk, reg = *reg, t = std::move(t)](Status st) mutable {
    reg.reset();  // deregister before the handler sees the data
    auto c = weak.lock();
    if (!st.ok() || !c) return;  // the connection is gone; the client re-sends
    Dispatch(c, std::move(f), std::move(*bulk), std::move(t));
  };
  c->PostBulk(std::move(op));
}

// Checks the crc and runs the handler, both on a worker (a 64 MiB crc must
// not stall the progress thread).
void RdmaServer::Dispatch(const std::shared_ptr<Conn>& c, std::shared_ptr<StreamFrame> f,
                          std::vector<uint8_t> bulk, TicketPtr t) {
  auto req = std::make_shared<Request>();
  req->service = f->header.service;
  req->payload = std::move(f->payload);
  req->bulk = std::move(bulk);
  req->peer = c->peer();
  workers_.Submit([this, c, f, req, t = std::move(t)]() mutable {
    const auto* payload = reinterpret_cast<const uint8_t*>(req->payload.data());
    Status st = net::VerifyBody(f->header, {payload, req->payload.size()}, req->bulk);
    if (!st.ok() && !(f->header.flags & net::rdma::kFlagBulkRemote)) {
      c->CloseAsync(st.ToString());
    } else if (!st.ok()) {
      LOG_WARN("rdma: request bulk from " << c->peer() << " failed its crc; asking for a re-send");
      SendBulkBad(c, f->header);
    } else {
      std::weak_ptr<Conn> weak = c;  // a held call must not keep a closed connection
      // The ticket goes with the ReplyFn; the send (or dropping it) releases it.
      handler_->HandleAsync(*req, [weak, f, gate = gate_, t = std::move(t)](Reply reply) mutable {
        auto ticket = std::move(t);
        gate->RunIfOpen([&] {
          if (auto conn = weak.lock()) SendReply(conn, *f, std::move(reply));
        });
      });
    }
  });
}

void RdmaServer::SendBulkBad(const std::shared_ptr<Conn>& c, const net::FrameHeader& req) {
  net::FrameHeader h;
  h.kind = net::FrameKind::kResponse;
  h.service = req.service;
  h.request_id = req.request_id;
  h.flags = net::rdma::kFlagBulkBad;
  h.body_crc = net::BodyCrc({}, {});
  c->SendFrame(net::rdma::EncodeStreamFrame(h, {}, {}, nullptr));
}

// Worker thread. The reply bulk goes by RDMA WRITE into the caller's bulk_in
// when it gave one, else inline in the control stream.
void RdmaServer::SendReply(const std::shared_ptr<Conn>& c, const StreamFrame& req, Reply reply) {
  net::FrameHeader h;
  h.kind = net::FrameKind::kResponse;
  h.service = req.header.service;
  h.request_id = req.header.request_id;
  h.bulk_len = static_cast<uint32_t>(reply.bulk.size());
  h.body_crc = net::BodyCrc(
      {reinterpret_cast<const uint8_t*>(reply.payload.data()), reply.payload.size()}, reply.bulk);
  bool remote = !reply.bulk.empty() && req.desc && req.desc->in_cap > 0;
  if (!remote) {
    c->SendFrame(net::rdma::EncodeStreamFrame(h, reply.payload, reply.bulk, nullptr));
    return;
  }
  h.flags = net::rdma::kFlagBulkRemote;
  std::string frame = net::rdma::EncodeStreamFrame(h, reply.payload, {}, nullptr);
  if (reply.bulk.size() <= req.desc->in_cap) {  // else the caller fails the call with EPROTO
    auto bulk = std::make_shared<std::vector<uint8_t>>(std::move(reply.bulk));
    auto reg = Registration::Create(c->pd(), bulk->data(), bulk->size());
    if (!reg.ok()) {
      c->CloseAsync("cannot register reply bulk: " + reg.status().ToString());
      return;
    }
    auto op = std::make_shared<BulkOp>();
    op->local = bulk->data();
    op->lkey = (*reg)->lkey();
    op->remote = req.desc->in_addr;
    op->rkey = req.desc->in_rkey;
    op->len = bulk->size();
    op->done = [bulk, reg = *reg](Status) {};  // keeps both until the WRITE completes
    c->PostBulk(std::move(op));
  }
  c->SendFrame(std::move(frame));
}

void RdmaServer::Stop() {
  if (stopped_.exchange(true) || !poller_) return;
  gate_->Close();  // held ReplyFns go quiet; Stop does not wait for them
  poller_->RunSync([this] {
    if (listen_ != nullptr) rdma_destroy_id(listen_);
    listen_ = nullptr;
    auto conns = conns_;
    for (auto& [id, c] : conns) c->Close("");
  });
  workers_.Join();  // running handlers finish; their replies go to closed connections
  budget_->Shutdown();  // no grant posts to the poller from now on
  poller_->Stop();
  conns_.clear();
  admissions_.clear();
}

}  // namespace

bool RdmaDeviceAvailable() {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list != nullptr) ibv_free_device_list(list);
  return n > 0;
}

Result<std::unique_ptr<Server>> StartRdmaServer(const ServerOptions& opts, Handler* handler) {
  auto s = std::make_unique<RdmaServer>(opts, handler);
  SFS_RETURN_IF_ERROR(s->Listen());
  return std::unique_ptr<Server>(std::move(s));
}

int64_t LiveRdmaRegistrations() { return net::rdma::LiveRegistrations(); }

}  // namespace sfs::rpc
