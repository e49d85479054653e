// TCP server side of the RPC transport (Boost.Asio, C++20 coroutines).
//
// Threads: `io_threads` each run their own io_context (accept on the first;
// each connection's frame reads and reply writes on one of them, round-robin);
// `worker_threads` run Handler::HandleAsync, which may block (LevelDB
// syncs, disk I/O) or keep its ReplyFn and answer later from any thread. Each connection's socket is used only from its strand: a
// read-loop coroutine decodes frames and posts each request to the worker
// pool; a worker posts its reply back to the strand, where one writer
// coroutine drains the reply queue with gathered writes (header, payload and
// bulk as separate buffers: bulk is never copied). A reply given inline on the
// I/O thread (Handler::TryHandleInline) is written there at once with one
// non-blocking gathered write when nothing is queued before it; what the
// socket does not take goes to the writer. A handler that uses a bulk
// pool (Handler::UsesBulkPool) gets request bulk received straight into a
// pooled, 4 KiB-aligned buffer and may reply from one (bulk_pool.h). A reply
// may instead carry a range of a file (Reply::file_bulk): its header and
// payload go with the gathered write, its bulk by sendfile(2) from the page
// cache, so the server never copies it (on loopback the only copy left is the
// client's receive); a writer that meets such a frame ends its batch there.
//
// Memory: each request is admitted against the server's byte budget
// (common/rpc/admission.h) after its header and payload are read and before
// its bulk is allocated; while it does not fit, the connection's read loop
// waits (the socket is not read, so TCP slows the client). The admission
// ticket rides with the ReplyFn and then the reply frame, and is released once
// the reply has been written (or the call is dropped). A server therefore
// holds at most the budget in requests and replies, plus one payload
// (<= kMaxPayload, in practice < 1 KiB) per connection waiting for admission.
//
// A frame that fails validation (magic, version, crc, sizes, kind) closes that
// connection with a logged reason; every other connection keeps being served.
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <mutex>
#include <set>
#include <thread>

#include "common/log.h"
#include "common/net/asio.h"
#include "common/net/frame.h"
#include "common/rpc/admission.h"
#include "common/rpc/bulk_crc.h"
#include "common/rpc/reply_gate.h"
#include "common/rpc/rpc.h"

namespace sfs::rpc {
namespace {

using net::asio::redirect_error;
using net::asio::use_awaitable;
using net::awaitable;
using net::tcp;
namespace asio = net::asio;

class TcpServer;

// One outgoing reply frame. Owns its buffers until written.
struct OutFrame {
  uint8_t header[net::kHeaderSize];
  std::string payload;
  std::vector<uint8_t> bulk;
  BulkBuffer pooled_bulk;  // sent instead of bulk when not empty
  std::shared_ptr<const FileBulk> file;  // sent by sendfile after the rest, when set
  std::shared_ptr<AdmissionBudget::Ticket> ticket;  // released once written
  size_t sent = 0;  // bytes of the frame already written (a direct send's part)

  std::span<const uint8_t> bulk_bytes() const {
    if (!pooled_bulk.empty()) return pooled_bulk.span();
    return bulk;
  }
  size_t bulk_len() const { return file ? file->length : bulk_bytes().size(); }
  // Header, payload and bulk in memory: what a gathered write sends.
  size_t buffered_size() const { return sizeof(header) + payload.size() + bulk_bytes().size(); }
  size_t size() const { return buffered_size() + (file ? file->length : 0); }
  // Appends the frame's unsent bytes in memory to `bufs`; returns how many.
  size_t AppendUnsent(std::vector<asio::const_buffer>* bufs) const {
    size_t skip = sent;
    const std::span<const uint8_t> p(reinterpret_cast<const uint8_t*>(payload.data()),
                                     payload.size());
    return net::AppendUnsent({std::span<const uint8_t>(header), p, bulk_bytes()}, &skip, bufs);
  }
};

// Writes up to n zero bytes to sock; what send(2) returns.
ssize_t SendZeros(int sock, size_t n) {
  static const uint8_t kZeros[4096] = {};
  return ::send(sock, kZeros, std::min(n, sizeof(kZeros)), MSG_NOSIGNAL);
}

// Sends what the socket takes now of f's file bulk (all of its buffered part
// is written). Returns the error, would_block when the socket is full, or
// success once the whole frame went.
boost::system::error_code SendFilePart(int sock, OutFrame& f) {
  using boost::system::error_code;
  while (f.sent < f.size()) {
    const size_t done = f.sent - f.buffered_size();
    off_t off = static_cast<off_t>(f.file->offset + done);
    ssize_t n = ::sendfile(sock, f.file->fd, &off, f.file->length - done);
    // The file is shorter than the frame says (truncated since): the frame is
    // finished with zeros, which fail the client's crc check of it.
    if (n == 0) n = SendZeros(sock, f.file->length - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return asio::error::would_block;
    if (n < 0) return error_code(errno, boost::system::system_category());
    f.sent += static_cast<size_t>(n);
  }
  return {};
}

// The connection whose request this thread is answering inline (on that
// connection's strand, inside Handler::TryHandleInline), or null.
thread_local const void* t_inline_conn = nullptr;

class ServerConn : public std::enable_shared_from_this<ServerConn> {
 public:
  ServerConn(TcpServer* server, tcp::socket sock, std::string peer)
      : server_(server), sock_(std::move(sock)), peer_(std::move(peer)),
        wake_(sock_.get_executor()) {}

  void Start() {
    asio::co_spawn(sock_.get_executor(), ReadLoop(shared_from_this()), asio::detached);
  }
  // Thread-safe: may be called from any thread.
  void SendReply(uint16_t service, uint64_t request_id, Reply reply,
                 std::shared_ptr<AdmissionBudget::Ticket> ticket);
  void CloseAsync() {
    asio::post(sock_.get_executor(), [self = shared_from_this()] { self->Close("server stopping"); });
  }

 private:
  awaitable<void> ReadLoop(std::shared_ptr<ServerConn> self);
  awaitable<void> WriteLoop(std::shared_ptr<ServerConn> self);
  // On the strand: queues `f` and starts the writer if it is idle.
  void Enqueue(std::shared_ptr<OutFrame> f);
  // On the strand, nothing queued: writes what the socket takes now; true if
  // all of `f` went.
  bool SendNow(OutFrame& f);
  // Sends the rest of f's file bulk (its buffers all written), waiting for
  // room in the socket as needed.
  awaitable<boost::system::error_code> FinishFile(OutFrame& f);
  // Waits until `cost` bytes fit the budget; null if the connection closed.
  awaitable<std::shared_ptr<AdmissionBudget::Ticket>> Admit(uint64_t cost);
  void Close(const std::string& why);  // on strand

  TcpServer* server_;
  tcp::socket sock_;
  std::string peer_;
  std::deque<std::shared_ptr<OutFrame>> outq_;  // strand only
  bool writing_ = false;                          // strand only
  bool closed_ = false;                           // strand only
  asio::steady_timer wake_;  // strand only: Admit waits on it, a grant cancels it
  std::shared_ptr<AdmissionBudget::Account> account_ = std::make_shared<AdmissionBudget::Account>();
};

class TcpServer final : public Server {
 public:
  TcpServer(const ServerOptions& opts, Handler* handler)
      : opts_(opts), handler_(handler), ios_(MakeContexts(opts.io_threads)), acceptor_(*ios_[0]),
        workers_(std::max(1, opts.worker_threads)) {}
  ~TcpServer() override { Stop(); }

  Status Listen();
  uint16_t port() const override { return port_; }
  void Stop() override;

  Handler* handler() const { return handler_; }
  // The pool request and reply bulk lives in, iff the handler uses one.
  BulkPool* pool() const { return pool_.get(); }
  asio::thread_pool& workers() { return workers_; }
  const std::shared_ptr<ReplyGate>& gate() const { return gate_; }
  AdmissionBudget& budget() { return *budget_; }
  AdmissionStats admission_stats() const override {
    auto s = budget_->stats();
    return {s.in_flight, s.peak, s.waits};
  }
  void Forget(ServerConn* c) {
    std::lock_guard<std::mutex> l(mu_);
    for (auto it = conns_.begin(); it != conns_.end(); ++it) {
      if (it->get() == c) {
        conns_.erase(it);
        return;
      }
    }
  }

 private:
  awaitable<void> AcceptLoop();
  static std::vector<std::unique_ptr<asio::io_context>> MakeContexts(int n);

  ServerOptions opts_;
  Handler* handler_;
  // One io_context per I/O thread; each connection lives on one of them
  // (round-robin), so its reads and replies stay on one thread. With several
  // threads on one context asio woke an idle one for the completions it
  // posted: an OSS serving 4 KiB reads switched 6.6 times per read, against
  // 2.9 with one thread (docs/benchmarks.md, performance pass 4).
  std::vector<std::unique_ptr<asio::io_context>> ios_;
  size_t next_io_ = 0;  // the context the next connection goes to (accept loop only)
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards_;
  tcp::acceptor acceptor_;
  asio::thread_pool workers_;
  std::shared_ptr<ReplyGate> gate_ = std::make_shared<ReplyGate>();
  std::shared_ptr<AdmissionBudget> budget_ = std::make_shared<AdmissionBudget>(
      opts_.max_inflight_bytes, opts_.max_inflight_bytes_per_conn);
  // Idle buffers are bounded by the same budget (bulk_pool.h).
  std::shared_ptr<BulkPool> pool_ =
      handler_->UsesBulkPool() ? std::make_shared<BulkPool>(opts_.max_inflight_bytes) : nullptr;
  std::vector<std::thread> io_threads_;
  uint16_t port_ = 0;
  std::atomic<bool> stopped_{false};
  std::mutex mu_;
  std::set<std::shared_ptr<ServerConn>> conns_;  // GUARDED_BY(mu_)
};

awaitable<void> ServerConn::ReadLoop(std::shared_ptr<ServerConn> self) {
  uint8_t hdr[net::kHeaderSize];
  for (;;) {
    boost::system::error_code ec;
    co_await asio::async_read(sock_, asio::buffer(hdr), redirect_error(use_awaitable, ec));
    if (ec) {
      Close(ec == asio::error::eof ? "" : ec.message());
      co_return;
    }
    auto h = net::DecodeHeader(hdr);
    if (!h.ok() || h->kind != net::FrameKind::kRequest) {
      Close(h.ok() ? "response frame sent to a server" : h.status().ToString());
      co_return;
    }
    auto req = std::make_shared<Request>();
    req->service = h->service;
    req->peer = peer_;
    req->file_bulk_ok = true;
    req->payload.resize(h->payload_len);
    co_await asio::async_read(sock_, asio::buffer(req->payload), redirect_error(use_awaitable, ec));
    if (ec) {
      Close("truncated frame: " + ec.message());
      co_return;
    }
    uint64_t cost = AdmissionBudget::kCallOverhead + h->payload_len + h->bulk_len +
                    server_->handler()->ReplyBulkHint(req->payload);
    std::shared_ptr<AdmissionBudget::Ticket> ticket = co_await Admit(cost);
    if (!ticket) co_return;  // closed while waiting
    std::span<uint8_t> bulk;
    if (BulkPool* pool = server_->pool()) {  // uninitialised, aligned: the socket fills it
      req->pool = pool;
      req->pooled_bulk = pool->Get(h->bulk_len);
      bulk = req->pooled_bulk.span();
    } else {
      req->bulk.resize(h->bulk_len);
      bulk = req->bulk;
    }
    co_await asio::async_read(sock_, asio::buffer(bulk.data(), bulk.size()),
                              redirect_error(use_awaitable, ec));
    if (ec) {
      Close("truncated frame: " + ec.message());
      co_return;
    }
    const std::span<const uint8_t> payload(reinterpret_cast<const uint8_t*>(req->payload.data()),
                                           req->payload.size());
    if (req->pool != nullptr) {  // one pass: the piece crcs, folded into the body crc
      req->bulk_piece_crcs = PieceCrcs(bulk);
      if (BodyCrcByPieces(payload, req->bulk_piece_crcs, bulk.size()) != h->body_crc) {
        Close("body crc mismatch");
        co_return;
      }
    } else if (Status st = net::VerifyBody(*h, payload, bulk); !st.ok()) {
      Close(st.ToString());
      co_return;
    }
    // The ReplyFn holds the connection weakly: a held call must not keep a
    // closed connection (and its socket) alive past the server.
    std::weak_ptr<ServerConn> weak = self;
    // It moves the ticket on to the reply frame; dropped unanswered, the
    // ReplyFn's last copy releases it.
    ReplyFn done = [weak, gate = server_->gate(), service = req->service, id = h->request_id,
                    ticket = std::move(ticket)](Reply reply) mutable {
      auto t = std::move(ticket);
      gate->RunIfOpen([&] {
        if (auto conn = weak.lock()) conn->SendReply(service, id, std::move(reply), std::move(t));
      });
    };
    t_inline_conn = this;  // a reply given inline is written at once (SendReply)
    bool answered = server_->handler()->TryHandleInline(*req, done);
    t_inline_conn = nullptr;
    if (answered) continue;
    asio::post(server_->workers(), [self, req, done = std::move(done)]() mutable {
      self->server_->handler()->HandleAsync(*req, std::move(done));
    });
  }
}

awaitable<std::shared_ptr<AdmissionBudget::Ticket>> ServerConn::Admit(uint64_t cost) {
  auto w = std::make_shared<AdmissionBudget::Waiter>();
  w->account = account_;
  w->cost = cost;
  std::weak_ptr<ServerConn> weak = shared_from_this();
  w->wake = [weak] {
    if (auto c = weak.lock()) asio::post(c->sock_.get_executor(), [c] { c->wake_.cancel(); });
  };
  AdmissionBudget& budget = server_->budget();
  if (auto t = budget.TryAcquire(w)) co_return t;
  // A grant posts wake_.cancel() to this strand, which runs only once this
  // coroutine is suspended in async_wait; a stale cancel only wakes us early.
  while (!closed_) {
    wake_.expires_at(asio::steady_timer::time_point::max());
    boost::system::error_code ec;
    co_await wake_.async_wait(redirect_error(use_awaitable, ec));
    if (auto t = budget.TakeGrant(w)) co_return t;
  }
  budget.Cancel(w);
  co_return nullptr;
}

void ServerConn::SendReply(uint16_t service, uint64_t request_id, Reply reply,
                           std::shared_ptr<AdmissionBudget::Ticket> ticket) {
  auto f = std::make_shared<OutFrame>();
  f->payload = std::move(reply.payload);
  f->bulk = std::move(reply.bulk);
  f->pooled_bulk = std::move(reply.pooled_bulk);
  f->file = std::move(reply.file_bulk);
  SFS_CHECK(!f->file || f->bulk_bytes().empty());  // file bulk or bulk in memory, not both
  const std::span<const uint8_t> bulk = f->bulk_bytes();
  const std::span<const uint8_t> payload(reinterpret_cast<const uint8_t*>(f->payload.data()),
                                         f->payload.size());
  // A reply larger than announced (no ReplyBulkHint) is charged now, so the
  // read loop admits less until it is written.
  uint64_t bytes = AdmissionBudget::kCallOverhead + f->payload.size() + f->bulk_len();
  if (ticket && bytes > ticket->bytes()) ticket->Grow(bytes - ticket->bytes());
  f->ticket = std::move(ticket);
  net::FrameHeader h;
  h.kind = net::FrameKind::kResponse;
  h.service = service;
  h.request_id = request_id;
  h.payload_len = static_cast<uint32_t>(f->payload.size());
  h.bulk_len = static_cast<uint32_t>(f->bulk_len());
  if (f->file) {  // the bytes are never in our memory: the crc the handler vouches for
    h.body_crc = ExtendByValue(net::BodyCrc(payload, {}), f->file->crc, f->file->length);
  } else if (!f->pooled_bulk.empty() && reply.bulk_value.has_value()) {  // no pass over the bytes
    h.body_crc = ExtendByValue(net::BodyCrc(payload, {}), *reply.bulk_value, bulk.size());
  } else if (!f->pooled_bulk.empty() &&
             reply.bulk_piece_crcs.size() == BulkCrcPieces(bulk.size())) {
    h.body_crc = BodyCrcByPieces(payload, reply.bulk_piece_crcs, bulk.size());
  } else {
    h.body_crc = net::BodyCrc(payload, bulk);
  }
  net::EncodeHeader(h, f->header);
  if (t_inline_conn == this) {  // on the strand already: no post, no writer hand-off
    if (closed_ || SendNow(*f)) return;
    Enqueue(std::move(f));
    return;
  }
  asio::post(sock_.get_executor(), [self = shared_from_this(), f = std::move(f)] {
    if (!self->closed_) self->Enqueue(f);
  });
}

void ServerConn::Enqueue(std::shared_ptr<OutFrame> f) {
  outq_.push_back(std::move(f));
  if (!writing_) {
    writing_ = true;
    asio::co_spawn(sock_.get_executor(), WriteLoop(shared_from_this()), asio::detached);
  }
}

bool ServerConn::SendNow(OutFrame& f) {
  if (writing_ || !outq_.empty()) return false;  // keep the order of replies
  std::vector<asio::const_buffer> bufs;
  size_t left = f.AppendUnsent(&bufs);
  boost::system::error_code ec;
  if (!sock_.non_blocking()) sock_.non_blocking(true, ec);
  if (ec) return false;
  size_t n = left == 0 ? 0 : sock_.write_some(bufs, ec);
  if (ec && ec != asio::error::would_block && ec != asio::error::try_again) {
    Close("write failed: " + ec.message());
    return true;  // dropped with the connection
  }
  f.sent += n;
  if (n < left || !f.file) return n == left;
  ec = SendFilePart(sock_.native_handle(), f);
  if (ec && ec != asio::error::would_block) {
    Close("sendfile failed: " + ec.message());
    return true;
  }
  return !ec;
}

awaitable<boost::system::error_code> ServerConn::FinishFile(OutFrame& f) {
  boost::system::error_code ec;
  if (!sock_.non_blocking()) sock_.non_blocking(true, ec);
  while (!ec) {
    ec = SendFilePart(sock_.native_handle(), f);
    if (ec != asio::error::would_block) break;
    ec = {};
    co_await sock_.async_wait(tcp::socket::wait_write, redirect_error(use_awaitable, ec));
  }
  co_return ec;
}

awaitable<void> ServerConn::WriteLoop(std::shared_ptr<ServerConn> self) {
  // Gather several queued replies into one writev.
  constexpr size_t kMaxBatch = 16;
  while (!outq_.empty() && !closed_) {
    std::vector<std::shared_ptr<OutFrame>> batch;
    std::vector<asio::const_buffer> bufs;
    // A frame with file bulk ends the batch: its bulk follows its buffers.
    while (!outq_.empty() && batch.size() < kMaxBatch && !(!batch.empty() && batch.back()->file)) {
      batch.push_back(std::move(outq_.front()));
      outq_.pop_front();
      batch.back()->AppendUnsent(&bufs);
    }
    boost::system::error_code ec;
    co_await asio::async_write(sock_, bufs, redirect_error(use_awaitable, ec));
    if (ec) {
      Close("write failed: " + ec.message());
      break;
    }
    if (OutFrame& last = *batch.back(); last.file) {
      last.sent = std::max(last.sent, last.buffered_size());
      ec = co_await FinishFile(last);
      if (ec) {
        Close("sendfile failed: " + ec.message());
        break;
      }
    }
  }
  writing_ = false;
}

void ServerConn::Close(const std::string& why) {
  if (closed_) return;
  closed_ = true;
  if (!why.empty()) LOG_WARN("closing connection from " << peer_ << ": " << why);
  boost::system::error_code ec;
  sock_.shutdown(tcp::socket::shutdown_both, ec);
  sock_.close(ec);
  wake_.cancel();  // an Admit waiting for budget gives up
  outq_.clear();
  server_->Forget(this);
}

std::vector<std::unique_ptr<asio::io_context>> TcpServer::MakeContexts(int n) {
  std::vector<std::unique_ptr<asio::io_context>> ios;
  // Hint 1: one thread runs each, so a handler's own posts go to that
  // thread's private queue (no lock, no wake-up).
  for (int i = 0; i < std::max(1, n); ++i) ios.push_back(std::make_unique<asio::io_context>(1));
  return ios;
}

Status TcpServer::Listen() {
  boost::system::error_code ec;
  auto addr = asio::ip::make_address(opts_.host, ec);
  if (ec) return Status(EINVAL, "bad listen address " + opts_.host + ": " + ec.message());
  tcp::endpoint ep(addr, opts_.port);
  acceptor_.open(ep.protocol(), ec);
  if (!ec) acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor_.bind(ep, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status(ec.value() ? ec.value() : EIO,
                  "cannot listen on " + opts_.host + ":" + std::to_string(opts_.port) + ": " + ec.message());
  }
  port_ = acceptor_.local_endpoint().port();
  asio::co_spawn(*ios_[0], AcceptLoop(), asio::detached);
  for (auto& io : ios_) {
    // A context without connections yet has no work: run() would return at once.
    guards_.push_back(asio::make_work_guard(*io));
    io_threads_.emplace_back([io = io.get()] { io->run(); });
  }
  return Status::Ok();
}

awaitable<void> TcpServer::AcceptLoop() {
  for (;;) {
    boost::system::error_code ec;
    // Accepted into the next thread's context (asio registers the socket with
    // that context's reactor).
    tcp::socket sock(asio::make_strand(*ios_[next_io_++ % ios_.size()]));
    co_await acceptor_.async_accept(sock, redirect_error(use_awaitable, ec));
    if (stopped_) co_return;
    if (ec) {
      LOG_WARN("accept failed: " << ec.message());
      continue;
    }
    sock.set_option(tcp::no_delay(true), ec);
    std::string peer = "?";
    auto rep = sock.remote_endpoint(ec);
    if (!ec) peer = rep.address().to_string() + ":" + std::to_string(rep.port());
    auto conn = std::make_shared<ServerConn>(this, std::move(sock), peer);
    {
      std::lock_guard<std::mutex> l(mu_);
      conns_.insert(conn);
    }
    conn->Start();
  }
}

void TcpServer::Stop() {
  if (stopped_.exchange(true)) return;
  gate_->Close();  // held ReplyFns go quiet; Stop does not wait for them
  asio::post(*ios_[0], [this] {
    boost::system::error_code ec;
    acceptor_.close(ec);
  });
  std::vector<std::shared_ptr<ServerConn>> conns;
  {
    std::lock_guard<std::mutex> l(mu_);
    conns.assign(conns_.begin(), conns_.end());
  }
  for (auto& c : conns) c->CloseAsync();
  workers_.join();  // running handlers finish; their replies go to closed connections
  for (auto& io : ios_) io->stop();
  for (auto& t : io_threads_) t.join();
  io_threads_.clear();
  budget_->Shutdown();  // no grant wakes a connection of a stopped io_context
  std::lock_guard<std::mutex> l(mu_);
  conns_.clear();
}

}  // namespace

FileBulk::~FileBulk() {
  if (fd >= 0 && owner == nullptr) ::close(fd);
}

Result<std::unique_ptr<Server>> StartTcpServer(const ServerOptions& opts, Handler* handler) {
  auto s = std::make_unique<TcpServer>(opts, handler);
  SFS_RETURN_IF_ERROR(s->Listen());
  return std::unique_ptr<Server>(std::move(s));
}

Status ParseAddress(const std::string& address, std::string* host, uint16_t* port) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size()) {
    return Status(EINVAL, "address must be HOST:PORT, got '" + address + "'");
  }
  std::string h = address.substr(0, colon);
  if (h.size() > 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  unsigned long p = 0;
  for (char c : address.substr(colon + 1)) {
    if (c < '0' || c > '9') return Status(EINVAL, "bad port in '" + address + "'");
    p = p * 10 + (c - '0');
    if (p > 65535) return Status(EINVAL, "port out of range in '" + address + "'");
  }
  *host = h;
  *port = static_cast<uint16_t>(p);
  return Status::Ok();
}

}  // namespace sfs::rpc
