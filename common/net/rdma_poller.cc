// The RDMA progress thread and address helpers; see rdma_conn.h.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstring>
#include <future>

#include "common/log.h"
#include "common/net/rdma_conn.h"

namespace sfs::net::rdma {
namespace {

using Clock = std::chrono::steady_clock;

Status SetNonBlocking(int fd) {
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) return Status::FromErrno("fcntl");
  return Status::Ok();
}

Status EpollAdd(int epfd, int fd, void* tag) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = tag;
  if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0) return Status::FromErrno("epoll_ctl");
  return Status::Ok();
}

}  // namespace

std::string SockaddrString(const sockaddr* sa) {
  char buf[INET6_ADDRSTRLEN] = "?";
  uint16_t port = 0;
  if (sa != nullptr && sa->sa_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    inet_ntop(AF_INET, &in->sin_addr, buf, sizeof(buf));
    port = ntohs(in->sin_port);
  } else if (sa != nullptr && sa->sa_family == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof(buf));
    port = ntohs(in6->sin6_port);
  }
  return std::string(buf) + ":" + std::to_string(port);
}

Status MakeSockaddr(const std::string& host, uint16_t port, sockaddr_storage* out) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (rc != 0 || res == nullptr) return Status(EINVAL, "cannot resolve " + host + ": " + gai_strerror(rc));
  std::memset(out, 0, sizeof(*out));
  std::memcpy(out, res->ai_addr, res->ai_addrlen);
  freeaddrinfo(res);
  return Status::Ok();
}

Result<std::unique_ptr<Poller>> Poller::Create(CmHandler handler) {
  std::unique_ptr<Poller> p(new Poller(std::move(handler)));
  p->cm_ = rdma_create_event_channel();
  if (p->cm_ == nullptr) return Status::FromErrno("rdma_create_event_channel");
  p->epfd_ = epoll_create1(EPOLL_CLOEXEC);
  p->evfd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (p->epfd_ < 0 || p->evfd_ < 0) return Status::FromErrno("epoll/eventfd");
  SFS_RETURN_IF_ERROR(SetNonBlocking(p->cm_->fd));
  SFS_RETURN_IF_ERROR(EpollAdd(p->epfd_, p->cm_->fd, p->cm_));
  SFS_RETURN_IF_ERROR(EpollAdd(p->epfd_, p->evfd_, nullptr));
  p->thread_ = std::thread([raw = p.get()] { raw->Run(); });
  return p;
}

Poller::~Poller() {
  Stop();
  for (auto& [ctx, ch] : comps_) ibv_destroy_comp_channel(ch);
  for (auto& [ctx, pd] : pds_) ibv_dealloc_pd(pd);
  if (cm_ != nullptr) rdma_destroy_event_channel(cm_);
  if (epfd_ >= 0) close(epfd_);
  if (evfd_ >= 0) close(evfd_);
}

Result<ibv_pd*> Poller::Pd(ibv_context* ctx) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = pds_.find(ctx);
  if (it != pds_.end()) return it->second;
  ibv_pd* pd = ibv_alloc_pd(ctx);
  if (pd == nullptr) return Status::FromErrno("ibv_alloc_pd");
  pds_[ctx] = pd;
  return pd;
}

Result<ibv_comp_channel*> Poller::CompChannel(ibv_context* ctx) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = comps_.find(ctx);
  if (it != comps_.end()) return it->second;
  ibv_comp_channel* ch = ibv_create_comp_channel(ctx);
  if (ch == nullptr) return Status::FromErrno("ibv_create_comp_channel");
  Status st = SetNonBlocking(ch->fd);
  if (st.ok()) st = EpollAdd(epfd_, ch->fd, ch);
  if (!st.ok()) {
    ibv_destroy_comp_channel(ch);
    return st;
  }
  comps_[ctx] = ch;
  return ch;
}

void Poller::Post(std::function<void()> fn, std::chrono::milliseconds delay) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stop_) return;
    tasks_.emplace(Clock::now() + delay, std::move(fn));
  }
  uint64_t one = 1;
  (void)!write(evfd_, &one, sizeof(one));
}

void Poller::RunSync(std::function<void()> fn) {
  auto done = std::make_shared<std::promise<void>>();
  auto fut = done->get_future();
  Post([fn = std::move(fn), done] {
    fn();
    done->set_value();
  });
  // A stopped poller drops the task (and its promise): that also ends the wait.
  try {
    fut.get();
  } catch (const std::future_error&) {
  }
}

void Poller::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stop_) return;
    stop_ = true;
  }
  uint64_t one = 1;
  (void)!write(evfd_, &one, sizeof(one));
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> l(mu_);
  tasks_.clear();
}

void Poller::Run() {
  for (;;) {
    int timeout_ms = -1;
    {
      std::lock_guard<std::mutex> l(mu_);
      if (stop_) return;
      if (!tasks_.empty()) {
        auto wait = std::chrono::ceil<std::chrono::milliseconds>(tasks_.begin()->first - Clock::now());
        timeout_ms = static_cast<int>(std::max<int64_t>(0, wait.count()));
      }
    }
    epoll_event evs[16];
    int n = epoll_wait(epfd_, evs, 16, timeout_ms);
    for (int i = 0; i < n; ++i) {
      void* tag = evs[i].data.ptr;
      if (tag == cm_) {
        DrainCm();
      } else if (tag == nullptr) {
        uint64_t v;
        (void)!read(evfd_, &v, sizeof(v));
      } else {
        DrainComp(static_cast<ibv_comp_channel*>(tag));
      }
    }
    RunDueTasks();
  }
}

void Poller::DrainCm() {
  rdma_cm_event* ev = nullptr;
  while (rdma_get_cm_event(cm_, &ev) == 0) {
    CmEvent e;
    e.type = ev->event;
    e.status = ev->status;
    e.id = ev->id;
    e.responder_resources = ev->param.conn.responder_resources;
    e.initiator_depth = ev->param.conn.initiator_depth;
    rdma_ack_cm_event(ev);
    handler_(e);
  }
}

void Poller::DrainComp(ibv_comp_channel* ch) {
  ibv_cq* cq = nullptr;
  void* ctx = nullptr;
  while (ibv_get_cq_event(ch, &cq, &ctx) == 0) {
    ibv_ack_cq_events(cq, 1);
    static_cast<Conn*>(ctx)->OnCqEvent();
  }
}

void Poller::RunDueTasks() {
  for (;;) {
    std::function<void()> fn;
    {
      std::lock_guard<std::mutex> l(mu_);
      if (stop_ || tasks_.empty() || tasks_.begin()->first > Clock::now()) return;
      fn = std::move(tasks_.begin()->second);
      tasks_.erase(tasks_.begin());
    }
    fn();
  }
}

}  // namespace sfs::net::rdma
