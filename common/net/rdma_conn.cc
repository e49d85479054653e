// One RC connection: receive pool, credits, the work FIFO, completions and
// the clean close. See rdma_conn.h for the protocol and threading rules.
#include "common/net/rdma_conn.h"

#include <arpa/inet.h>

#include <cstring>

#include "common/log.h"
#include "common/net/rdma_wire.h"
#include "common/rpc/bulk_copy_stats.h"

namespace sfs::net::rdma {
namespace {

// wr_id: low two bits say what completed, the rest is a slot or a BulkOp pointer.
enum Tag : uint64_t { kTagRecv = 0, kTagSend = 1, kTagBulk = 2 };
constexpr int kSendSlots = kRecvDepth + 1;  // credits bound the SENDs in flight
constexpr int kCqDepth = kSqDepth + kRecvDepth;

uint64_t WrId(Tag t, uint64_t v) { return (v << 2) | t; }

// A frame's inline bulk is memcpy'd into the send slots by PumpLocked.
void CountInlineBulk(const std::string& frame) {
  if (frame.size() < kHeaderSize) return;
  Result<FrameHeader> h = DecodeHeader(reinterpret_cast<const uint8_t*>(frame.data()));
  if (h.ok() && (h->flags & kFlagBulkRemote) == 0) rpc::BulkCopyStats::AddCopied(h->bulk_len);
}

}  // namespace

Result<std::shared_ptr<Conn>> Conn::Create(Poller* poller, rdma_cm_id* id, std::string peer,
                                           Hooks hooks) {
  std::shared_ptr<Conn> c(new Conn(poller, id, std::move(peer), std::move(hooks)));
  Status st = c->Init();
  if (!st.ok()) {
    c->hooks_ = Hooks{};  // the caller handles the failure
    c->Close("");         // frees what Init made, including the id
    return st;
  }
  return c;
}

Status Conn::Init() {
  SFS_ASSIGN_OR_RETURN(pd_, poller_->Pd(id_->verbs));
  SFS_ASSIGN_OR_RETURN(ibv_comp_channel * ch, poller_->CompChannel(id_->verbs));
  cq_ = ibv_create_cq(id_->verbs, kCqDepth, this, ch, 0);
  if (cq_ == nullptr) return Status::FromErrno("ibv_create_cq");
  if (ibv_req_notify_cq(cq_, 0) != 0) return Status::FromErrno("ibv_req_notify_cq");
  ibv_qp_init_attr qa{};
  qa.send_cq = cq_;
  qa.recv_cq = cq_;
  qa.qp_type = IBV_QPT_RC;
  qa.cap.max_send_wr = kSqDepth;
  qa.cap.max_recv_wr = kRecvDepth;
  qa.cap.max_send_sge = 1;
  qa.cap.max_recv_sge = 1;
  if (rdma_create_qp(id_, pd_, &qa) != 0) return Status::FromErrno("rdma_create_qp");
  recv_buf_.resize(kRecvDepth * kMsgSize);
  send_buf_.resize(kSendSlots * kMsgSize);
  recv_mr_ = ibv_reg_mr(pd_, recv_buf_.data(), recv_buf_.size(), IBV_ACCESS_LOCAL_WRITE);
  send_mr_ = ibv_reg_mr(pd_, send_buf_.data(), send_buf_.size(), 0);
  if (recv_mr_ == nullptr || send_mr_ == nullptr) return Status::FromErrno("ibv_reg_mr (message buffers)");
  for (int i = 0; i < kSendSlots; ++i) free_slots_.push_back(i);
  for (int i = 0; i < kRecvDepth; ++i) SFS_RETURN_IF_ERROR(PostRecv(i));
  return Status::Ok();
}

Conn::~Conn() {
  // Close() ran on the progress thread before the owner let go; this only
  // covers a Conn whose Create failed half way (also closed there).
}

Status Conn::PostRecv(int slot) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(recv_buf_.data() + slot * kMsgSize),
              static_cast<uint32_t>(kMsgSize), recv_mr_->lkey};
  ibv_recv_wr wr{};
  wr.wr_id = WrId(kTagRecv, slot);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  int rc = ibv_post_recv(id_->qp, &wr, &bad);
  if (rc != 0) return Status(rc, "ibv_post_recv failed");
  return Status::Ok();
}

bool Conn::SendFrame(std::string bytes) {
  CountInlineBulk(bytes);
  std::lock_guard<std::mutex> l(mu_);
  if (closed_) return false;
  queue_.push_back(Item{std::move(bytes), nullptr, 0});
  PumpLocked();
  return true;
}

bool Conn::PostBulk(std::shared_ptr<BulkOp> op) {
  std::lock_guard<std::mutex> l(mu_);
  if (closed_) return false;
  op->chunks_left = (op->len + kChunk - 1) / kChunk;
  rpc::BulkCopyStats::AddRdma(op->len);
  op->posted = 0;
  ops_.insert(op);
  queue_.push_back(Item{{}, std::move(op), 0});
  PumpLocked();
  return true;
}

void Conn::MarkReady() {
  std::lock_guard<std::mutex> l(mu_);
  ready_ = true;
  PumpLocked();
}

// Posts queued work while the send queue, send slots and credits allow.
void Conn::PumpLocked() {
  if (!ready_ || closed_ || !error_.empty()) return;
  while (!queue_.empty() && sq_used_ < kSqDepth) {
    Item& it = queue_.front();
    if (it.op) {
      if (!PostChunkLocked(it)) return;
      if (it.op->posted == it.op->len) queue_.pop_front();
      continue;
    }
    // The last credit is kept for a SEND that returns credits (see header).
    if (free_slots_.empty() || credits_ == 0 || (credits_ == 1 && owed_ == 0)) break;
    size_t n = std::min(kMsgSize, it.bytes.size() - it.off);
    int slot = free_slots_.back();
    std::memcpy(send_buf_.data() + slot * kMsgSize, it.bytes.data() + it.off, n);
    if (!PostSendLocked(n, slot)) return;
    it.off += n;
    if (it.off == it.bytes.size()) queue_.pop_front();
  }
  if (queue_.empty() && owed_ >= kRecvDepth / 2 && credits_ >= 1 && !free_slots_.empty() &&
      sq_used_ < kSqDepth) {
    PostSendLocked(0, free_slots_.back());  // credit-only NOOP
  }
}

bool Conn::PostSendLocked(size_t n, int slot) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(send_buf_.data() + slot * kMsgSize),
              static_cast<uint32_t>(n), send_mr_->lkey};
  ibv_send_wr wr{};
  wr.wr_id = WrId(kTagSend, slot);
  wr.opcode = IBV_WR_SEND_WITH_IMM;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.imm_data = htonl(static_cast<uint32_t>(owed_));
  wr.sg_list = &sge;
  wr.num_sge = n > 0 ? 1 : 0;
  ibv_send_wr* bad = nullptr;
  int rc = ibv_post_send(id_->qp, &wr, &bad);
  if (rc != 0) {
    error_ = "ibv_post_send (SEND) failed: " + ErrnoName(rc);
    CloseAsync(error_);
    return false;
  }
  free_slots_.pop_back();
  ++sq_used_;
  --credits_;
  owed_ = 0;
  return true;
}

bool Conn::PostChunkLocked(Item& it) {
  BulkOp& op = *it.op;
  size_t n = std::min(kChunk, op.len - op.posted);
  ibv_sge sge{reinterpret_cast<uintptr_t>(op.local + op.posted), static_cast<uint32_t>(n), op.lkey};
  ibv_send_wr wr{};
  wr.wr_id = WrId(kTagBulk, 0) | reinterpret_cast<uintptr_t>(it.op.get());
  wr.opcode = op.read ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.wr.rdma.remote_addr = op.remote + op.posted;
  wr.wr.rdma.rkey = op.rkey;
  ibv_send_wr* bad = nullptr;
  int rc = ibv_post_send(id_->qp, &wr, &bad);
  if (rc != 0) {
    error_ = std::string("ibv_post_send (") + (op.read ? "RDMA READ" : "RDMA WRITE") +
             ") failed: " + ErrnoName(rc);
    CloseAsync(error_);
    return false;
  }
  op.posted += n;
  ++sq_used_;
  return true;
}

void Conn::OnCqEvent() {
  auto self = shared_from_this();  // a hook may drop the owner's reference
  std::vector<StreamFrame> frames;
  std::vector<std::shared_ptr<BulkOp>> done;
  std::string err;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (closed_) return;
    ibv_req_notify_cq(cq_, 0);
    ibv_wc wcs[32];
    int n;
    while (err.empty() && (n = ibv_poll_cq(cq_, 32, wcs)) > 0) {
      for (int i = 0; i < n && err.empty(); ++i) OnWc(wcs[i], &frames, &done, &err);
    }
    if (err.empty()) PumpLocked();
  }
  for (auto& op : done) op->done(Status::Ok());
  if (!frames.empty() && err.empty()) hooks_.on_frames(frames);
  if (!err.empty()) Close(err);
}

// REQUIRES: mu_ held. Sets *err when the connection must close.
void Conn::OnWc(const ibv_wc& wc, std::vector<StreamFrame>* frames,
                std::vector<std::shared_ptr<BulkOp>>* done, std::string* err) {
  auto tag = static_cast<Tag>(wc.wr_id & 3);
  if (wc.status != IBV_WC_SUCCESS) {
    const char* what = tag == kTagRecv ? "RECV" : tag == kTagSend ? "SEND"
                       : reinterpret_cast<BulkOp*>(wc.wr_id & ~uint64_t{3})->read ? "RDMA READ"
                                                                                   : "RDMA WRITE";
    *err = std::string("completion error on ") + what +
           ": " + ibv_wc_status_str(wc.status) + " (vendor err " + std::to_string(wc.vendor_err) + ")";
    return;
  }
  if (tag == kTagRecv) {
    int slot = static_cast<int>(wc.wr_id >> 2);
    if (wc.wc_flags & IBV_WC_WITH_IMM) credits_ += static_cast<int>(ntohl(wc.imm_data));
    if (credits_ > kRecvDepth) {
      *err = "peer returned more credits than it was given";
      return;
    }
    Status st = assembler_.Append(recv_buf_.data() + slot * kMsgSize, wc.byte_len, frames);
    if (st.ok()) st = PostRecv(slot);
    if (!st.ok()) *err = "bad control stream: " + st.ToString();
    ++owed_;
  } else if (tag == kTagSend) {
    free_slots_.push_back(static_cast<int>(wc.wr_id >> 2));
    --sq_used_;
  } else {
    --sq_used_;
    auto* raw = reinterpret_cast<BulkOp*>(wc.wr_id & ~uint64_t{3});
    if (--raw->chunks_left > 0) return;
    for (auto it = ops_.begin(); it != ops_.end(); ++it) {
      if (it->get() != raw) continue;
      done->push_back(*it);
      ops_.erase(it);
      break;
    }
  }
}

void Conn::CloseAsync(const std::string& why) {
  std::weak_ptr<Conn> weak = weak_from_this();
  poller_->Post([weak, why] {
    if (auto c = weak.lock()) c->Close(why);
  });
}

void Conn::Close(const std::string& why) {
  auto self = weak_from_this().lock();  // null only while Create() fails
  std::set<std::shared_ptr<BulkOp>> ops;
  bool was_ready;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (closed_) return;
    closed_ = true;
    was_ready = ready_;
    ops.swap(ops_);
    queue_.clear();
  }
  // A connection that never came up is a connect failure: its owner reports it.
  if (!why.empty() && was_ready) LOG_WARN("rdma: closing connection with " << peer_ << ": " << why);
  if (!why.empty() && !was_ready) LOG_DEBUG("rdma: connection to " << peer_ << " failed: " << why);
  if (id_->qp != nullptr) {
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_ERR;
    ibv_modify_qp(id_->qp, &attr, IBV_QP_STATE);
    rdma_disconnect(id_);
    rdma_destroy_qp(id_);  // from here no remote access can touch our buffers
  }
  for (auto& op : ops) op->done(Status(EIO, "connection closed: " + why));
  if (recv_mr_ != nullptr) ibv_dereg_mr(recv_mr_);
  if (send_mr_ != nullptr) ibv_dereg_mr(send_mr_);
  recv_mr_ = send_mr_ = nullptr;
  if (cq_ != nullptr) ibv_destroy_cq(cq_);
  cq_ = nullptr;
  rdma_destroy_id(id_);
  id_ = nullptr;
  if (self && hooks_.on_closed) hooks_.on_closed(why);
}

}  // namespace sfs::net::rdma
