// The lock side of MdsService (mds_service.h, mds/lock/lock_table.h): one
// LockReq op for fcntl and flock locks. A blocking request is answered from
// the LockTable's completion, on whichever thread frees the lock, so no
// worker waits for a lock.
#include <cerrno>
#include <optional>

#include "mds.pb.h"
#include "mds/service/mds_service.h"

namespace sfs::mds {
namespace {

using proto::MdsRequest;
using proto::MdsResponse;

// The most a client may ask the MDS to hold a wait before it answers
// EINPROGRESS (the client asks again): below any sane RPC deadline.
constexpr uint32_t kMaxWaitMs = 10000;

LockRequest RequestOf(const MdsRequest& r) {
  const proto::LockReq& l = r.lock();
  LockRequest q;
  q.ino = l.ec_rows() ? l.ino() | kEcRowSpace : l.ino();
  q.flock = l.flock();
  q.owner = {r.client_id(), l.owner()};
  q.pid = l.pid();
  q.range = {l.start(), l.end(), static_cast<int>(l.type())};
  q.wait = l.wait();
  q.reclaim = l.reclaim();
  q.wait_ms = l.wait_ms() == 0 ? kMaxWaitMs : std::min(l.wait_ms(), kMaxWaitMs);
  q.cache = l.cache() && l.ec_rows();
  return q;
}

Status Validate(const proto::LockReq& l) {
  if (l.type() > lock::kUnlock) return Status(EINVAL, "bad lock type");
  if (l.start() > l.end()) return Status(EINVAL, "lock range ends before it starts");
  if (l.ec_rows() && (l.flock() || l.ino() >= kEcRowSpace)) {
    return Status(EINVAL, "bad EC row lock");
  }
  if (l.flock() && (l.start() != 0 || l.end() != lock::kLockEof)) {
    return Status(EINVAL, "a flock lock covers the whole file");
  }
  return Status::Ok();
}

}  // namespace

void MdsService::Lock(const MdsRequest& r, rpc::ReplyFn done) {
  const uint64_t epoch = ns_->boot_epoch();
  auto reply = [done = std::move(done), epoch](const Status& st, const LockHolder* h,
                                              std::optional<uint64_t> size = std::nullopt,
                                              uint64_t copy_gen = 0, bool cached = false) {
    MdsResponse resp;
    resp.mutable_status()->set_code(st.code());
    resp.mutable_status()->set_message(st.message());
    resp.set_boot_epoch(epoch);
    resp.set_features(proto::MDS_FEATURE_CLOSES);
    proto::LockResp* out = resp.mutable_lock();
    out->set_type(h == nullptr ? lock::kUnlock : static_cast<uint32_t>(h->range.type));
    if (size) {
      out->set_size(*size);
      out->set_has_size(true);
    }
    out->set_copy_gen(copy_gen);
    out->set_cached(cached);
    if (h != nullptr) {
      out->set_start(h->range.start);
      out->set_end(h->range.end);
      out->set_pid(h->pid);
    }
    done(rpc::Reply{resp.SerializeAsString(), {}});
  };
  ns_->TouchClient(r.client_id());
  if (locks_ == nullptr) return reply(Status(ENOLCK, "this MDS grants no locks"), nullptr);
  locks_->Touch(r.client_id());
  const proto::LockReq& l = r.lock();
  if (Status st = Validate(l); !st.ok()) return reply(st, nullptr);
  LockRequest q = RequestOf(r);
  if (l.cancel()) {
    locks_->Cancel(q.ino, q.flock, q.owner);
    return reply(Status::Ok(), nullptr);
  }
  // A lock on an inode that is gone: ESTALE, as for any op on it. Unlocks
  // always go through (a removed file's locks must still be freed).
  if (q.range.type != lock::kUnlock) {
    if (auto a = ns_->GetAttr(l.ino()); !a.ok()) return reply(a.status(), nullptr);
  }
  if (l.test()) {
    std::optional<LockHolder> h = locks_->Test(q);
    return reply(Status::Ok(), h ? &*h : nullptr);
  }
  // A grant carries the size the file has now, read when it is granted (a
  // waiter's grant comes after the previous holder reported its writes).
  const bool grant = q.range.type != lock::kUnlock;
  // A mirror-range grant also says which copy states the file has now.
  // A cached grant says so (the client keeps it until recalled).
  locks_->Set(q, [reply = std::move(reply), ns = ns_, locks = locks_, ino = l.ino(), grant,
                  rows = l.ec_rows(), key = q.ino, owner = q.owner, cache = q.cache](Status st) {
    std::optional<uint64_t> size;
    uint64_t gen = 0;
    bool cached = false;
    if (st.ok() && grant) {
      if (auto a = ns->GetAttr(ino); a.ok()) size = a->size();
      if (rows) gen = ns->CopyGen(ino);
      cached = cache && locks->HoldsCached(key, owner);
    }
    reply(st, nullptr, size, gen, cached);
  });
}

}  // namespace sfs::mds
