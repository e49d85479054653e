// TCP client side of the RPC transport (Boost.Asio, C++20 coroutines).
//
// A channel is one connection to one server with many calls in flight,
// matched to replies by request id. The hot path runs on the callers' own
// threads; the channel's strand (an I/O thread) only connects (exponential
// backoff) and finishes writes the socket could not take at once.
//
// Sending: with the connection up and nobody sending, Start() writes its
// frame itself (one non-blocking sendmsg of header, payload and bulk), then
// what others queued meanwhile; otherwise it queues behind the sender. One
// sender at a time keeps frames whole and in order.
//
// Receiving (leader/follower): a caller in Wait() with nobody reading reads
// frames itself (non-blocking recvmsg, poll between) until its own reply is
// in, completing others' calls on the way, then wakes one waiting caller to
// read next. A lone caller's reply wakes it straight from the socket. A
// reader whose call asked for CallOptions::spin polls awake for up to
// kSpin before it sleeps (AwaitReadable).
//
// Zero copy: write bulk goes from the caller's buffer, reply bulk lands in
// its bulk_in; so a call that times out is first unhooked, and Wait() does
// not return while a sender or reader still touches them (a frame stuck
// half-way drops the connection). Sockets are shared_ptr-held and only shut
// down on errors, so an fd stays valid while a caller uses it.
//
// Lanes (LanedChannel, laned_channel.h): a channel may hold several such
// connections to one server and give each call a lane no other call uses, if there is one.
//
// Reconnect: when the connection breaks, every call still in flight is sent
// again on the next connection (same request id and payload). Servers treat
// repeats as the same request (MDS: by client id and xid; OSS: idempotent ops).
// The reply of a call whose frame had gone out before says so
// (Response::resent): its first copy may still reach the server later.
//
// Lock order: Core::mu_ is the only lock; never held across an await or a
// socket call.
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <condition_variable>
#include <deque>
#include <utility>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include "common/crc32c.h"
#include "common/log.h"
#include "common/net/core_channel.h"
#include "common/net/asio.h"
#include "common/net/frame.h"
#include "common/net/laned_channel.h"
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
  bool unhooked = false;  // Wait() gave up: I/O letting go of our buffers must notify
  bool waiting = false;   // a follower: its caller sleeps in Wait() on cv
  bool held = false;      // CallOptions::held: reads only while no other caller waits
  bool fail_fast = false;  // CallOptions::fail_fast: done at a failed connect
  bool spin = false;       // CallOptions::spin: its reader waits awake first
  size_t lane = 0;        // LanedChannel: the lane (Core) it went to; set by its caller
  bool went_out = false;  // some of its frame was handed to a socket
  bool resent = false;    // re-queued after went_out, for a new connection (Response::resent)
  Status status;
  Response resp;
  std::condition_variable cv;
};

namespace {

using Clock = std::chrono::steady_clock;
// A connected socket taken from asio (no reactor watches it: a reply wakes
// only the caller reading it), closed when its last user lets go.
struct Conn {
  Conn(int f, tcp p) : fd(f), proto(p) {}
  ~Conn() { ::close(fd); }
  const int fd;
  const tcp proto;
};
using Socket = std::shared_ptr<Conn>;
using CallPtr = std::shared_ptr<PendingCall>;
constexpr size_t kMaxBatch = 16;  // frames per write
// The longest a reader waits awake for a spin call's reply (Core::AwaitReadable).
constexpr std::chrono::microseconds kSpin{50};
constexpr std::chrono::milliseconds kMinDelay{20}, kMaxDelay{1000};  // reconnect backoff

// A call's frame as buffers (header, payload, bulk), less `skip` bytes already written.
template <typename Buf>
void AppendFrame(const PendingCall& p, std::vector<Buf>* out, size_t* skip) {
  const std::span<const uint8_t> payload(reinterpret_cast<const uint8_t*>(p.payload.data()),
                                         p.payload.size());
  net::AppendUnsent({std::span<const uint8_t>(p.header), payload, p.bulk_out}, skip, out);
}

size_t FrameSize(const PendingCall& p) { return sizeof(p.header) + p.payload.size() + p.bulk_out.size(); }

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
  // For LanedChannel (laned_channel.h): the lane a call went to.
  static void SetLane(PendingCall& p, size_t lane) { p.lane = lane; }
  static size_t LaneOf(const PendingCall& p) { return p.lane; }

 private:
  void Kick();  // on strand
  awaitable<void> ConnectLoop(std::shared_ptr<Core> self);
  awaitable<void> WriteLoop(std::shared_ptr<Core> self, Socket sock, uint64_t gen);
  // Reads until p's reply is in or its deadline, then wakes the next reader.
  void Lead(std::unique_lock<std::mutex>& l, const CallPtr& p);
  void WakeFollowerLocked();
  bool MayLeadLocked(const PendingCall& p) const {
    return !reading_ && conn_ != nullptr && !(p.held && quick_waiters_ > 0);
  }
  void ResetRxLocked(uint64_t gen);  // forgets the frame being read
  void DropConnLocked(uint64_t gen, const std::string& why);  // REQUIRES (all above): mu_
  // Read frames until the socket is empty or `own` is done. REQUIRES: reading_ ours.
  Status ReadAvailable(int fd, const PendingCall* own, bool* own_done);
  // True once fd is readable within kSpin, polled without sleeping; else
  // false. REQUIRES: reading_ ours.
  bool AwaitReadable(int fd);
  Status StartBody();
  // Folds the next n body bytes received (at body_got) into rx_.body_crc.
  void ExtendBodyCrc(size_t n);
  Status FinishFrame(const PendingCall* own, bool* own_done);
  // Sends `batch` (each call's sending already counted) and then the queue,
  // on the caller's thread. REQUIRES: the caller claimed send_busy_ for gen.
  void SendFromCaller(const Socket& sock, uint64_t gen, std::vector<CallPtr> batch);
  // Up to kMaxBatch queued calls, each counted as sending. REQUIRES: mu_ held.
  std::vector<CallPtr> TakeBatchLocked(size_t* skip);
  void DropSendQueueLocked();  // REQUIRES: mu_ held
  void OnError(uint64_t gen, const std::string& why);  // on strand
  void Disconnect();  // on strand
  void GrowReconnectDelay() {  // on strand: 20 ms doubling to 1 s
    reconnect_delay_ = std::clamp(reconnect_delay_ * 2, kMinDelay, kMaxDelay);
  }

  asio::strand<asio::io_context::executor_type> strand_;
  std::string address_;
  std::string host_;
  uint16_t port_ = 0;
  Status addr_status_;

  std::mutex mu_;
  std::map<uint64_t, CallPtr> pending_;  // GUARDED_BY(mu_)
  std::deque<CallPtr> outq_;             // GUARDED_BY(mu_)
  uint64_t next_id_ = 1;                 // GUARDED_BY(mu_)
  bool ever_connected_ = false;          // GUARDED_BY(mu_)
  std::string last_error_;               // GUARDED_BY(mu_)
  Socket conn_;                          // GUARDED_BY(mu_): the connection, null when down
  uint64_t gen_ = 0;  // GUARDED_BY(mu_); written on the strand only, which reads it unlocked
  bool send_busy_ = false;  // GUARDED_BY(mu_): someone writes frames; others queue
  // Bytes of outq_.front()'s frame written (its sending count still held).
  size_t head_sent_ = 0;                 // GUARDED_BY(mu_)
  bool reading_ = false;                 // GUARDED_BY(mu_): a caller reads replies
  std::atomic<int> quick_waiters_{0};    // followers not held (written under mu_)
  // The frame being read: the reader's (anyone's under mu_ while no one reads).
  struct Rx {
    uint64_t gen = 0;  // the connection it comes from
    uint8_t hdr[net::kHeaderSize];
    size_t hdr_got = 0;
    bool in_body = false;  // the header is in
    net::FrameHeader h;
    CallPtr call;  // the call it answers, or null (one that timed out)
    std::string payload;
    std::vector<uint8_t> scratch;
    std::span<uint8_t> dst;  // where the bulk goes: call->bulk_in or scratch
    size_t body_got = 0;
    // The body crc of the bytes in so far: each recvmsg's bytes are folded
    // in while the kernel's copy has left them in the cache, rather than a
    // whole (up to 4 MiB) bulk read back from memory at the end.
    uint32_t body_crc = 0;
    bool too_big = false;  // than bulk_in: EPROTO
  } rx_;
  std::atomic<bool> good_reply_{false};  // a good reply since the last connection error

  // Strand-only state.
  enum class State { kIdle, kConnecting, kConnected } state_ = State::kIdle;
  Socket sock_;
  bool shutdown_ = false;
  // Grows while connections fail or die before a good reply, 0 after one.
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
  p->held = opts.held;
  p->fail_fast = opts.fail_fast;
  p->spin = opts.spin;
  net::FrameHeader h{.kind = net::FrameKind::kRequest, .service = service,
                     .payload_len = static_cast<uint32_t>(p->payload.size()),
                     .bulk_len = static_cast<uint32_t>(bulk_out.size())};
  // The crc is computed here, on the caller's thread, so many callers checksum in parallel.
  h.body_crc = net::BodyCrc(
      {reinterpret_cast<const uint8_t*>(p->payload.data()), p->payload.size()}, bulk_out);
  Socket sock;  // set: ours to send from this thread
  uint64_t gen = 0;
  bool kick = false;
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
    if (conn_ != nullptr && !send_busy_ && outq_.empty()) {
      send_busy_ = true;
      ++p->sending;
      p->went_out = true;
      sock = conn_;
      gen = gen_;
    } else {
      outq_.push_back(p);
      kick = !send_busy_;  // a busy sender takes it from the queue
    }
  }
  if (sock != nullptr) {
    SendFromCaller(sock, gen, {p});
  } else if (kick) {
    asio::post(strand_, [self = shared_from_this()] { self->Kick(); });
  }
  return p;
}

std::vector<CallPtr> Core::TakeBatchLocked(size_t* skip) {
  std::vector<CallPtr> batch;
  *skip = head_sent_;
  while (!outq_.empty() && batch.size() < kMaxBatch) {
    CallPtr p = std::move(outq_.front());
    outq_.pop_front();
    if (head_sent_ > 0) {
      head_sent_ = 0;  // its frame is half on the wire: it goes on, its count is held
    } else if (!p->in_map) {
      continue;
    } else {
      ++p->sending;
      p->went_out = true;
    }
    batch.push_back(std::move(p));
  }
  return batch;
}

void Core::DropSendQueueLocked() {
  if (head_sent_ > 0 && !outq_.empty()) {
    CallPtr& p = outq_.front();
    --p->sending;
    if (p->unhooked) p->cv.notify_all();
  }
  head_sent_ = 0;
  outq_.clear();
}

void Core::SendFromCaller(const Socket& sock, uint64_t gen, std::vector<CallPtr> batch) {
  size_t skip = 0;
  std::vector<iovec> iov;
  for (;;) {
    iov.clear();
    size_t total = 0;
    size_t written = skip;  // bytes of the batch on the wire (a half-sent head's)
    for (const CallPtr& p : batch) {
      total += FrameSize(*p);
      AppendFrame(*p, &iov, &skip);
    }
    int err = 0;
    size_t first = 0;  // the first iovec not fully written
    while (written < total) {
      msghdr msg{};
      msg.msg_iov = iov.data() + first;
      msg.msg_iovlen = std::min<size_t>(iov.size() - first, IOV_MAX);
      ssize_t n = ::sendmsg(sock->fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EINTR) continue;
        err = errno;
        break;
      }
      written += static_cast<size_t>(n);
      for (size_t left = static_cast<size_t>(n); left > 0;) {
        size_t k = std::min(left, iov[first].iov_len);
        iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + k;
        iov[first].iov_len -= k;
        left -= k;
        if (iov[first].iov_len == 0) ++first;
      }
    }
    std::unique_lock<std::mutex> l(mu_);
    size_t done = 0, held = 0;
    while (held < batch.size() && done + FrameSize(*batch[held]) <= written) {
      done += FrameSize(*batch[held++]);
    }
    const bool stale = gen != gen_;
    const bool partial = held < batch.size() && !stale && (err == 0 || err == EAGAIN);
    for (size_t i = 0; i < batch.size(); ++i) {
      if (partial && i == held && written > done) continue;
      --batch[i]->sending;
      if (batch[i]->unhooked) batch[i]->cv.notify_all();
    }
    if (stale) return;  // the connection is gone: the reconnect re-sends what is pending
    if (err != 0 && err != EAGAIN) return DropConnLocked(gen, std::string("write failed: ") + std::strerror(err));
    if (partial) {
      // The socket is full: the strand's writer finishes this frame and the rest, in order.
      outq_.insert(outq_.begin(), batch.begin() + static_cast<std::ptrdiff_t>(held), batch.end());
      head_sent_ = written - done;
      l.unlock();
      asio::post(strand_, [self = shared_from_this(), sock, gen] {
        asio::co_spawn(self->strand_, self->WriteLoop(self, sock, gen), asio::detached);
      });
      return;
    }
    batch = TakeBatchLocked(&skip);
    if (batch.empty()) {
      send_busy_ = false;
      return;
    }
  }
}

Status Core::Wait(const std::shared_ptr<PendingCall>& p, Response* out) {
  std::unique_lock<std::mutex> l(mu_);
  bool led = false;
  // The first pass runs even past the deadline: a caller that waited on other
  // calls first (a striped read, one OSS slow) finds its reply, if it came in
  // meanwhile, still unread in the socket (nobody reads for an idle channel).
  bool first = true;
  while (!p->done && (std::exchange(first, false) || Clock::now() < p->deadline)) {
    led = MayLeadLocked(*p);
    if (led) {
      Lead(l, p);  // returns with mu_ held, having woken the next reader
      continue;
    }
    // A follower: wake when our reply is in or we may read.
    p->waiting = true;
    quick_waiters_ += p->held ? 0 : 1;
    p->cv.wait_until(l, p->deadline, [&] { return p->done || MayLeadLocked(*p); });
    quick_waiters_ -= p->held ? 0 : 1;
    p->waiting = false;
  }
  // Woken to read next but leaving: pass it on.
  if (!led && !reading_ && conn_ != nullptr) WakeFollowerLocked();
  if (!p->done) {
    // Timed out: unhook the call, then wait until no I/O uses its buffers.
    if (p->in_map) {
      pending_.erase(p->id);
      p->in_map = false;
    }
    p->unhooked = true;
    if (p->sending > 0 || p->receiving) {
      // The peer stalls mid-frame: only dropping the connection frees our buffers.
      if (p->receiving && !reading_) ResetRxLocked(0);  // nobody reads: drop the half-read frame
      DropConnLocked(gen_, "call timed out mid-transfer");
    }
    p->cv.wait(l, [&] { return p->done || (p->sending == 0 && !p->receiving); });
    if (!p->done) {
      if (!ever_connected_ && !last_error_.empty()) {
        return Status(ECONNREFUSED, "cannot connect to " + address_ + ": " + last_error_);
      }
      return Status(ETIMEDOUT, "no reply from " + address_ + " before the deadline");
    }
  }
  if (out != nullptr) {
    *out = std::move(p->resp);
    out->resent = p->resent;
  }
  return p->status;
}

void Core::DropConnLocked(uint64_t gen, const std::string& why) {
  if (gen != gen_) return;
  conn_.reset();  // nobody sends or reads on it any more; the strand closes it
  asio::post(strand_, [self = shared_from_this(), gen, why] { self->OnError(gen, why); });
}

void Core::ResetRxLocked(uint64_t gen) {
  if (rx_.call != nullptr) {
    rx_.call->receiving = false;
    if (rx_.call->unhooked) rx_.call->cv.notify_all();
  }
  rx_ = Rx{gen};
}

void Core::WakeFollowerLocked() {
  PendingCall* held = nullptr;  // the newest caller not held reads best
  for (auto it = pending_.rbegin(); it != pending_.rend(); ++it) {
    PendingCall& c = *it->second;
    if (!c.waiting || c.done) continue;
    if (!c.held) return c.cv.notify_all();
    if (held == nullptr) held = &c;
  }
  if (held != nullptr) held->cv.notify_all();
}

void Core::Lead(std::unique_lock<std::mutex>& l, const CallPtr& p) {
  reading_ = true;
  Socket sock = conn_;
  const uint64_t gen = gen_;
  if (rx_.gen != gen) ResetRxLocked(gen);  // a frame half-read on an older connection is void
  l.unlock();
  Status err;
  bool own_done = false;
  for (;;) {
    err = ReadAvailable(sock->fd, p.get(), &own_done);
    if (!err.ok() || own_done || (p->held && quick_waiters_ > 0)) break;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(p->deadline - Clock::now());
    if (left.count() <= 0) break;
    if (p->spin && AwaitReadable(sock->fd)) continue;
    pollfd pfd{sock->fd, POLLIN, 0};
    (void)::poll(&pfd, 1, static_cast<int>(std::min<int64_t>(left.count() + 1, 60000)));
  }
  l.lock();
  reading_ = false;
  const bool mine_half_read = rx_.call == p && !p->done;
  if (!err.ok() || mine_half_read) {
    // A broken or unreadable connection, or we leave (deadline) with our own
    // buffer half filled: drop it; the reconnect re-sends what is pending.
    ResetRxLocked(0);
    DropConnLocked(gen, err.ok() ? std::string("call timed out mid-transfer") : err.ToString());
  }
  WakeFollowerLocked();  // the next reader, if anyone waits
}

Status Core::ReadAvailable(int fd, const PendingCall* own, bool* own_done) {
  for (;;) {
    iovec iov[2];
    int niov = 0;
    if (!rx_.in_body) {
      iov[niov++] = {rx_.hdr + rx_.hdr_got, net::kHeaderSize - rx_.hdr_got};
    } else {
      size_t off = rx_.body_got;
      if (off < rx_.payload.size()) {
        iov[niov++] = {rx_.payload.data() + off, rx_.payload.size() - off};
        off = 0;
      } else {
        off -= rx_.payload.size();
      }
      if (off < rx_.dst.size()) iov[niov++] = {rx_.dst.data() + off, rx_.dst.size() - off};
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(niov);
    ssize_t n = ::recvmsg(fd, &msg, MSG_DONTWAIT);
    if (n == 0) return Status(ECONNRESET, "connection closed by the server");
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return Status::Ok();
      return Status(errno, std::string("read failed: ") + std::strerror(errno));
    }
    if (!rx_.in_body) {
      rx_.hdr_got += static_cast<size_t>(n);
      if (rx_.hdr_got < net::kHeaderSize) continue;
      SFS_RETURN_IF_ERROR(StartBody());
    } else {
      ExtendBodyCrc(static_cast<size_t>(n));
      rx_.body_got += static_cast<size_t>(n);
    }
    if (rx_.body_got < rx_.payload.size() + rx_.dst.size()) continue;
    SFS_RETURN_IF_ERROR(FinishFrame(own, own_done));
    if (*own_done) return Status::Ok();  // leave the rest to the next reader
  }
}

void Core::ExtendBodyCrc(size_t n) {
  size_t off = rx_.body_got;
  if (off < rx_.payload.size()) {
    const size_t k = std::min(n, rx_.payload.size() - off);
    rx_.body_crc = crc32c::Extend(rx_.body_crc, rx_.payload.data() + off, k);
    off += k;
    n -= k;
  }
  if (n > 0) {
    rx_.body_crc = crc32c::Extend(rx_.body_crc, rx_.dst.data() + (off - rx_.payload.size()), n);
  }
}

// A spin call is answered from the server's memory within tens of
// microseconds and its bulk comes in pieces with short gaps; sleeping in poll
// for each costs more on a virtual machine (a halted vCPU woken by an IPI),
// so its reader first waits awake, for at most kSpin per wait.
bool Core::AwaitReadable(int fd) {
  const auto until = Clock::now() + kSpin;
  do {
    pollfd pfd{fd, POLLIN, 0};
    if (::poll(&pfd, 1, 0) != 0) return true;  // readable, or an error the read reports
  } while (Clock::now() < until);
  return false;
}

Status Core::StartBody() {
  auto h = net::DecodeHeader(rx_.hdr);
  if (!h.ok()) return h.status();
  if (h->kind != net::FrameKind::kResponse) return Status(EBADMSG, "request frame sent to a client");
  rx_.h = *h;
  rx_.in_body = true;
  rx_.body_got = 0;
  {
    std::lock_guard<std::mutex> g(mu_);
    auto it = pending_.find(h->request_id);
    if (it != pending_.end()) {
      rx_.call = it->second;
      rx_.call->receiving = true;
    }
  }
  rx_.payload.assign(h->payload_len, '\0');
  const CallPtr& p = rx_.call;
  rx_.too_big = p && !p->bulk_in.empty() && h->bulk_len > p->bulk_in.size();
  if (p && !p->bulk_in.empty() && !rx_.too_big) {
    rx_.dst = p->bulk_in.first(h->bulk_len);
  } else {
    rx_.scratch.resize(h->bulk_len);
    rx_.dst = rx_.scratch;
  }
  return Status::Ok();
}

Status Core::FinishFrame(const PendingCall* own, bool* own_done) {
  Status st = net::VerifyBodyCrc(rx_.h, rx_.payload.size(), rx_.dst.size(), rx_.body_crc);
  // A reply with bulk whose body fails its crc fails its call (EBADMSG), and
  // only it: the header's own crc held, so the stream is intact. Its bulk may
  // be file data the server sent without reading it (an OSS read with
  // client_checks): the caller asks again rather than the reconnect re-send,
  // which would fetch the same bad bytes forever.
  const bool bad_bulk = !st.ok() && rx_.h.bulk_len > 0;
  if (!st.ok() && !bad_bulk) return Status(EBADMSG, "bad reply: " + st.ToString());
  good_reply_ = true;  // the peer speaks our protocol
  CallPtr p = std::move(rx_.call);
  Rx next{rx_.gen};
  std::swap(rx_, next);  // `next` now holds the finished frame
  if (!p) return Status::Ok();
  bool wake = false;
  {
    std::lock_guard<std::mutex> g(mu_);
    p->receiving = false;
    wake = p->unhooked;
    if (p->in_map) {
      pending_.erase(p->id);
      p->in_map = false;
      p->resp.payload = std::move(next.payload);
      p->resp.bulk = std::move(next.scratch);
      p->resp.bulk_len = next.h.bulk_len;
      p->status = next.too_big ? Status(EPROTO, "reply bulk larger than the receive buffer")
                  : bad_bulk   ? Status(EBADMSG, "reply from " + address_ +
                                                   " failed its crc check (bulk of " +
                                                   std::to_string(next.h.bulk_len) + " bytes)")
                               : Status::Ok();
      p->done = true;
      wake = p.get() != own;
      if (p.get() == own) *own_done = true;
    }
  }
  // Notified outside mu_, so the waiter does not wake only to block on it.
  if (wake) p->cv.notify_all();
  return Status::Ok();
}

void Core::Kick() {
  if (shutdown_) return;
  if (state_ == State::kIdle) {
    state_ = State::kConnecting;
    asio::co_spawn(strand_, ConnectLoop(shared_from_this()), asio::detached);
    return;
  }
  if (state_ != State::kConnected) return;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (send_busy_ || outq_.empty()) return;
    send_busy_ = true;
  }
  asio::co_spawn(strand_, WriteLoop(shared_from_this(), sock_, gen_), asio::detached);
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
    tcp::socket s(strand_);
    if (!ec) co_await asio::async_connect(s, eps, redirect_error(use_awaitable, ec));
    if (!ec && !shutdown_) {
      s.set_option(tcp::no_delay(true), ec);
      tcp proto = s.local_endpoint(ec).protocol();
      auto sock = std::make_shared<Conn>(s.release(ec), proto);
      sock_ = sock;
      state_ = State::kConnected;
      {
        std::lock_guard<std::mutex> l(mu_);
        if (ever_connected_) LOG_INFO("reconnected to " << address_);
        ever_connected_ = true;
        last_error_.clear();
        DropSendQueueLocked();  // re-queue every call in flight, oldest first
        for (auto& [id, p] : pending_) {
          p->resent |= p->went_out;
          outq_.push_back(p);
        }
        ++gen_;
        conn_ = sock;
        send_busy_ = true;  // the writer below sends the queue
        WakeFollowerLocked();  // a waiting caller reads the replies
      }
      asio::co_spawn(strand_, WriteLoop(self, sock, gen_), asio::detached);
      co_return;
    }
    std::vector<CallPtr> refused;
    {
      std::lock_guard<std::mutex> l(mu_);
      last_error_ = ec ? ec.message() : "shut down";
      // CallOptions::fail_fast: done now. Out of pending_, they are not
      // re-queued at the next connect (outq_ is rebuilt from pending_ then).
      for (auto it = pending_.begin(); it != pending_.end();) {
        CallPtr p = it->second;
        if (!p->fail_fast || p->sending > 0 || p->receiving) {
          ++it;
          continue;
        }
        it = pending_.erase(it);
        p->in_map = false;
        p->status = Status(ECONNREFUSED, "cannot connect to " + address_ + ": " + last_error_);
        p->done = true;
        refused.push_back(std::move(p));
      }
    }
    for (const CallPtr& p : refused) p->cv.notify_all();
    GrowReconnectDelay();
  }
}

awaitable<void> Core::WriteLoop(std::shared_ptr<Core> self, Socket sock, uint64_t gen) {
  tcp::socket ws(strand_);  // a dup of the fd, watched only while this runs
  boost::system::error_code aec;
  int dup_fd = ::dup(sock->fd);
  if (dup_fd >= 0) ws.assign(sock->proto, dup_fd, aec);
  for (;;) {
    std::vector<CallPtr> batch;
    std::vector<asio::const_buffer> bufs;
    {
      std::lock_guard<std::mutex> l(mu_);
      size_t skip = 0;
      if (gen == gen_) batch = TakeBatchLocked(&skip);
      if (batch.empty()) {
        if (gen == gen_) send_busy_ = false;
        co_return;
      }
      for (const CallPtr& p : batch) AppendFrame(*p, &bufs, &skip);
    }
    boost::system::error_code ec = dup_fd < 0 ? asio::error::no_descriptors : aec;
    if (!ec) co_await asio::async_write(ws, bufs, redirect_error(use_awaitable, ec));
    {
      std::lock_guard<std::mutex> l(mu_);
      for (auto& p : batch) {
        --p->sending;
        if (p->unhooked) p->cv.notify_all();
      }
    }
    if (ec) {
      OnError(gen, "write failed: " + ec.message());
      co_return;
    }
  }
}

void Core::Disconnect() {
  if (sock_ != nullptr) {
    // Shut down, not closed: the fd closes when its last user (a caller) lets go.
    ::shutdown(sock_->fd, SHUT_RDWR);
    sock_.reset();
  }
  std::lock_guard<std::mutex> l(mu_);
  conn_.reset();
  ++gen_;  // stale loops and callers see the change and stop
  send_busy_ = false;
  DropSendQueueLocked();
}

void Core::OnError(uint64_t gen, const std::string& why) {
  if (gen != gen_ || state_ != State::kConnected) return;
  LOG_WARN("connection to " << address_ << " lost: " << why);
  Disconnect();
  state_ = State::kIdle;
  if (good_reply_.exchange(false)) reconnect_delay_ = std::chrono::milliseconds(0);
  GrowReconnectDelay();
  Kick();  // reconnects if calls are still in flight
}

void Core::Shutdown() {
  std::promise<void> done;
  auto fut = done.get_future();
  asio::post(strand_, [self = shared_from_this(), &done] {
    self->shutdown_ = true;
    self->Disconnect();
    self->state_ = State::kIdle;
    done.set_value();
  });
  fut.wait();
  std::lock_guard<std::mutex> l(mu_);
  for (auto& [id, p] : pending_) {
    p->in_map = false;
    p->done = true;
    p->status = Status(ECANCELED, "channel closed");
    p->cv.notify_all();
  }
  pending_.clear();
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
  std::unique_ptr<Channel> MakeTcpChannel(const std::string& address, int lanes = 1) override {
    if (lanes > 1) {
      return std::make_unique<LanedChannel<Core>>(lanes, [&] { return std::make_shared<Core>(io_, address); });
    }
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
