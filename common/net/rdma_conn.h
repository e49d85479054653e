// Verbs plumbing shared by the RDMA server and client: the progress thread
// and one RC connection. Internal to common/net/rdma_*; not a public API.
//
// Poller: one thread per endpoint blocks in epoll on the rdma_cm event
// channel, the completion channels of its devices and an eventfd for posted
// tasks and timers. No spinning while idle: a CQ wakes it through
// ibv_get_cq_event and is re-armed with ibv_req_notify_cq before it is polled
// dry. CM events are copied and acked before they are handled, so a handler
// may destroy ids.
//
// Conn: an RC QP with one CQ, kRecvDepth pre-posted kMsgSize receive buffers
// and a FIFO of work: control-stream bytes (sent as SENDs of up to kMsgSize)
// and one-sided bulk ops (RDMA READ/WRITE in kChunk pieces, several in
// flight). One FIFO keeps a reply's RDMA WRITE ahead of its SEND.
// Flow control is by credits: a sender starts with kRecvDepth credits, spends
// one per SEND, and gets them back in the immediate data of the peer's
// SENDs; the last credit is kept for a message that returns credits, and a
// credit-only NOOP goes out when half the window is owed, so neither side
// ever overruns the other's receive queue and the two cannot deadlock.
//
// Threads: SendFrame/PostBulk from any thread (Conn::mu_); everything else on
// the progress thread. A connection ends only through Close() on the progress
// thread, which moves the QP to the error state and destroys it before any
// buffer an op used is released, so no remote access can land afterwards.
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/net/rdma_wire.h"
#include "common/status.h"

namespace sfs::net::rdma {

inline constexpr int kRecvDepth = 64;
inline constexpr size_t kMsgSize = 16 * 1024;
inline constexpr int kSqDepth = 256;
inline constexpr size_t kChunk = 1 << 20;
inline constexpr uint8_t kRdDepth = 16;  // RDMA READs in flight per QP

struct CmEvent {
  rdma_cm_event_type type;
  int status = 0;
  rdma_cm_id* id = nullptr;
  uint8_t responder_resources = 0;
  uint8_t initiator_depth = 0;
};

// "a.b.c.d:port" of a sockaddr.
std::string SockaddrString(const sockaddr* sa);
// Resolves "host" and port for rdma_cm (numeric or via getaddrinfo).
Status MakeSockaddr(const std::string& host, uint16_t port, sockaddr_storage* out);

class Poller {
 public:
  using CmHandler = std::function<void(const CmEvent&)>;
  static Result<std::unique_ptr<Poller>> Create(CmHandler handler);
  ~Poller();

  rdma_event_channel* cm_channel() const { return cm_; }
  // The protection domain and completion channel of a device, created once. Thread-safe.
  Result<ibv_pd*> Pd(ibv_context* ctx);
  Result<ibv_comp_channel*> CompChannel(ibv_context* ctx);
  // Runs fn on the progress thread (after `delay`). Thread-safe.
  void Post(std::function<void()> fn, std::chrono::milliseconds delay = {});
  // Runs fn on the progress thread and waits for it. REQUIRES: not on it.
  void RunSync(std::function<void()> fn);
  bool InThread() const { return std::this_thread::get_id() == thread_.get_id(); }
  // Joins the thread. Posted tasks not yet run are dropped.
  void Stop();

 private:
  explicit Poller(CmHandler h) : handler_(std::move(h)) {}
  void Run();
  void DrainCm();
  void DrainComp(ibv_comp_channel* ch);
  void RunDueTasks();

  CmHandler handler_;
  rdma_event_channel* cm_ = nullptr;
  int epfd_ = -1;
  int evfd_ = -1;
  std::thread thread_;
  std::mutex mu_;
  bool stop_ = false;                                                      // GUARDED_BY(mu_)
  std::multimap<std::chrono::steady_clock::time_point, std::function<void()>> tasks_;  // GUARDED_BY(mu_)
  std::map<ibv_context*, ibv_pd*> pds_;                                    // GUARDED_BY(mu_)
  std::map<ibv_context*, ibv_comp_channel*> comps_;                        // GUARDED_BY(mu_)
};

// A one-sided transfer between a local registered buffer and a peer's.
struct BulkOp {
  bool read = false;  // RDMA READ (peer -> local) or RDMA WRITE (local -> peer)
  uint8_t* local = nullptr;
  uint32_t lkey = 0;
  uint64_t remote = 0;
  uint32_t rkey = 0;
  size_t len = 0;  // > 0
  // Runs once on the progress thread: OK, or EIO when the connection failed.
  std::function<void(Status)> done;
  size_t chunks_left = 0;  // Conn-internal
  size_t posted = 0;       // Conn-internal: bytes posted so far
};

class Conn : public std::enable_shared_from_this<Conn> {
 public:
  struct Hooks {
    std::function<void(std::vector<StreamFrame>&)> on_frames;  // progress thread
    std::function<void(const std::string& why)> on_closed;     // progress thread, once
  };
  // Creates the CQ and QP on `id` (which has a verbs context) and posts the
  // receives; takes ownership of id. The QP is used once MarkReady() is called.
  static Result<std::shared_ptr<Conn>> Create(Poller* poller, rdma_cm_id* id, std::string peer,
                                              Hooks hooks);
  ~Conn();

  // Thread-safe. false iff the connection is closed (the item is dropped).
  bool SendFrame(std::string bytes);
  bool PostBulk(std::shared_ptr<BulkOp> op);

  // Progress thread only.
  void MarkReady();
  void OnCqEvent();
  void Close(const std::string& why);  // idempotent; logs why when non-empty
  // Any thread: asks the progress thread to close.
  void CloseAsync(const std::string& why);

  rdma_cm_id* id() const { return id_; }
  ibv_pd* pd() const { return pd_; }
  const std::string& peer() const { return peer_; }

 private:
  struct Item {
    std::string bytes;  // control stream bytes, or
    std::shared_ptr<BulkOp> op;
    size_t off = 0;
  };
  Conn(Poller* p, rdma_cm_id* id, std::string peer, Hooks h)
      : poller_(p), id_(id), peer_(std::move(peer)), hooks_(std::move(h)) {}
  Status Init();
  Status PostRecv(int slot);
  void PumpLocked();                   // REQUIRES: mu_ held
  bool PostSendLocked(size_t n, int slot);  // REQUIRES: mu_ held
  bool PostChunkLocked(Item& it);      // REQUIRES: mu_ held
  void OnWc(const ibv_wc& wc, std::vector<StreamFrame>* frames,
            std::vector<std::shared_ptr<BulkOp>>* done, std::string* err);

  Poller* const poller_;
  rdma_cm_id* id_;
  const std::string peer_;
  Hooks hooks_;
  ibv_pd* pd_ = nullptr;
  ibv_cq* cq_ = nullptr;
  std::vector<uint8_t> recv_buf_, send_buf_;
  ibv_mr* recv_mr_ = nullptr;
  ibv_mr* send_mr_ = nullptr;
  FrameAssembler assembler_;  // progress thread only

  std::mutex mu_;
  bool ready_ = false;                        // GUARDED_BY(mu_)
  bool closed_ = false;                       // GUARDED_BY(mu_)
  std::string error_;                         // GUARDED_BY(mu_): set when a post failed
  std::deque<Item> queue_;                    // GUARDED_BY(mu_)
  std::vector<int> free_slots_;               // GUARDED_BY(mu_)
  std::set<std::shared_ptr<BulkOp>> ops_;     // GUARDED_BY(mu_): posted, not completed
  int sq_used_ = 0;                           // GUARDED_BY(mu_)
  int credits_ = kRecvDepth;                  // GUARDED_BY(mu_)
  int owed_ = 0;                              // GUARDED_BY(mu_)
};

}  // namespace sfs::net::rdma
