// HoldProxy: accept loop, one pump thread per connection, and the
// hold / cut / release steps (hold_proxy.h).
#include "tests/integration/hold_proxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <map>

#include "common/net/frame.h"
#include "common/rpc/rpc.h"

namespace sfs::testing {

// One proxied connection. Fields after the fds are GUARDED_BY(HoldProxy::mu_).
struct HoldProxy::Conn {
  int cfd = -1;  // client side; -1 once closed (only the pump closes it)
  int sfd = -1;  // server side
  bool held = false;        // client bytes are kept, not forwarded
  bool cut_wanted = false;  // CutHeld() asks the pump to reset the client side
  bool cut = false;
  bool released = false;    // replies are parsed from here on
  std::string kept;         // client bytes held
  std::string from_server;  // after release: bytes not yet parsed into replies
  std::map<uint64_t, std::string> replies;  // by request id
  std::thread pump;
};

namespace {

bool WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// Takes every whole frame off the front of buf: (request id, payload) each.
std::vector<std::pair<uint64_t, std::string>> TakeFrames(std::string& buf) {
  std::vector<std::pair<uint64_t, std::string>> out;
  size_t at = 0;
  while (buf.size() - at >= net::kHeaderSize) {
    auto h = net::DecodeHeader(reinterpret_cast<const uint8_t*>(buf.data() + at));
    if (!h.ok()) break;  // the test then times out waiting and says so
    const size_t len = net::kHeaderSize + h->payload_len + h->bulk_len;
    if (buf.size() - at < len) break;
    out.emplace_back(h->request_id, buf.substr(at + net::kHeaderSize, h->payload_len));
    at += len;
  }
  buf.erase(0, at);
  return out;
}

}  // namespace

HoldProxy::HoldProxy() = default;

HoldProxy::~HoldProxy() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (listen_fd_ >= 0) ::shutdown(listen_fd_, SHUT_RDWR);
  if (acceptor_.joinable()) acceptor_.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  for (auto& c : conns_) {
    if (c->pump.joinable()) c->pump.join();
    if (c->cfd >= 0) ::close(c->cfd);
    if (c->sfd >= 0) ::close(c->sfd);
  }
}

Status HoldProxy::Start() {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return Status::FromErrno("socket");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      ::listen(listen_fd_, 64) != 0 ||
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    return Status::FromErrno("proxy listen");
  }
  port_ = ntohs(a.sin_port);
  acceptor_ = std::thread([this] { AcceptLoop(); });
  return Status::Ok();
}

void HoldProxy::SetUpstream(const std::string& address) {
  {
    std::lock_guard<std::mutex> l(mu_);
    upstream_ = address;
  }
  cv_.notify_all();
}

int HoldProxy::ConnectUpstream() {
  std::string address;
  {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return stop_ || !upstream_.empty(); });
    if (stop_) return -1;
    address = upstream_;
  }
  std::string host;
  uint16_t port = 0;
  if (!rpc::ParseAddress(address, &host, &port).ok()) return -1;
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  ::inet_pton(AF_INET, host.c_str(), &a.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    ::close(fd);
    return -1;
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

void HoldProxy::AcceptLoop() {
  for (;;) {
    int cfd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (cfd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;  // shut down
    }
    int sfd = ConnectUpstream();
    if (sfd < 0) {
      ::close(cfd);
      continue;
    }
    int one = 1;
    ::setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    std::lock_guard<std::mutex> l(mu_);
    if (stop_) {
      ::close(cfd);
      ::close(sfd);
      return;
    }
    auto c = std::make_unique<Conn>();
    c->cfd = cfd;
    c->sfd = sfd;
    c->held = holding_;
    Conn* raw = c.get();
    conns_.push_back(std::move(c));
    raw->pump = std::thread([this, raw] { Pump(raw); });
  }
}

// Moves bytes until the server side closes or the proxy stops. Polls with a
// short timeout only to notice CutHeld() and the destructor.
void HoldProxy::Pump(Conn* c) {
  char buf[64 * 1024];
  for (;;) {
    int cfd;
    {
      std::lock_guard<std::mutex> l(mu_);
      if (stop_) return;
      if (c->cut_wanted && !c->cut) {
        // Keep whatever else the client sent, then reset its side (RST).
        for (ssize_t n; (n = ::recv(c->cfd, buf, sizeof(buf), MSG_DONTWAIT)) > 0;) {
          c->kept.append(buf, static_cast<size_t>(n));
        }
        linger lg{1, 0};
        ::setsockopt(c->cfd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
        ::close(c->cfd);
        c->cfd = -1;
        c->cut = true;
        cv_.notify_all();
      }
      cfd = c->cfd;
    }
    pollfd fds[2] = {{c->sfd, POLLIN, 0}, {cfd, POLLIN, 0}};
    if (::poll(fds, cfd >= 0 ? 2 : 1, 20) < 0 && errno != EINTR) return;
    if (cfd >= 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) {
      ssize_t n = ::recv(cfd, buf, sizeof(buf), 0);
      std::unique_lock<std::mutex> l(mu_);
      if (n <= 0) {
        ::close(c->cfd);
        c->cfd = -1;
        if (!c->held) ::shutdown(c->sfd, SHUT_WR);
      } else if (c->held) {
        c->kept.append(buf, static_cast<size_t>(n));
        cv_.notify_all();
      } else {
        l.unlock();
        WriteAll(c->sfd, buf, static_cast<size_t>(n));
      }
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t n = ::recv(c->sfd, buf, sizeof(buf), 0);
      if (n <= 0) return;
      std::unique_lock<std::mutex> l(mu_);
      if (c->released) {
        c->from_server.append(buf, static_cast<size_t>(n));
        for (auto& [id, payload] : TakeFrames(c->from_server)) c->replies[id] = payload;
        cv_.notify_all();
      }
      const int to = c->cfd;
      l.unlock();
      if (to >= 0) WriteAll(to, buf, static_cast<size_t>(n));
    }
  }
}

void HoldProxy::Hold() {
  std::lock_guard<std::mutex> l(mu_);
  holding_ = true;
  for (auto& c : conns_) c->held = true;
}

Status HoldProxy::WaitKept(size_t frames, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> l(mu_);
  bool enough = cv_.wait_for(l, timeout, [&] {
    size_t n = 0;
    for (auto& c : conns_) {
      std::string copy = c->kept;
      if (c->held) n += TakeFrames(copy).size();
    }
    return n >= frames;
  });
  return enough ? Status::Ok()
                : Status::Errno(ETIMEDOUT, "fewer than " + std::to_string(frames) + " frames held");
}

void HoldProxy::CutHeld() {
  std::unique_lock<std::mutex> l(mu_);
  holding_ = false;
  for (auto& c : conns_) {
    if (c->held && c->cfd >= 0) c->cut_wanted = true;
  }
  cv_.wait(l, [&] {
    for (auto& c : conns_) {
      if (c->cut_wanted && !c->cut) return false;
    }
    return true;
  });
}

Result<std::vector<HoldProxy::Exchange>> HoldProxy::Release(std::chrono::milliseconds timeout,
                                                           Pick pick) {
  std::vector<std::pair<Conn*, std::vector<std::pair<uint64_t, std::string>>>> sent;
  std::unique_lock<std::mutex> l(mu_);
  for (auto& c : conns_) {
    if (!c->held) continue;
    std::string parse = c->kept;
    std::vector<std::pair<uint64_t, std::string>> frames = TakeFrames(parse);
    bool picked = pick == nullptr;
    for (auto& f : frames) picked = picked || pick(f.second);
    if (!picked) continue;
    // Under mu_, so the pump (which forwards once held is false) writes
    // nothing to the server before these bytes.
    c->released = true;
    c->held = false;
    if (!WriteAll(c->sfd, c->kept.data(), c->kept.size())) return Status::FromErrno("release");
    c->kept.clear();
    sent.emplace_back(c.get(), std::move(frames));
  }
  std::vector<Exchange> out;
  for (auto& [c, requests] : sent) {
    for (auto& [id, payload] : requests) {
      if (!cv_.wait_for(l, timeout, [&, id = id] { return c->replies.count(id) > 0; })) {
        return Status::Errno(ETIMEDOUT, "no reply to released request " + std::to_string(id));
      }
      out.push_back({payload, c->replies[id]});
    }
  }
  return out;
}

}  // namespace sfs::testing
