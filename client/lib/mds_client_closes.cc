// MdsClient, deferred closes (mds.proto, "Deferred closes"; close_queue.h):
// which closes a request carries, what happens to them after its reply, and
// the flush of those no request took.
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>

#include "client/lib/mds_client.h"
#include "client/lib/open_cache.h"
#include "common/mdsop/open_id.h"
#include "common/log.h"
#include "mds.pb.h"

namespace sfs::client {

void MdsClient::EnableOpenCache(size_t capacity) {
  if (closes_ && capacity > 0) open_cache_ = std::make_unique<OpenCache>(capacity);
}

size_t MdsClient::kept_opens() const { return open_cache_ ? open_cache_->size() : 0; }

bool MdsClient::KeepOpen(const Cred& c, OpenResult r, std::chrono::steady_clock::time_point until) {
  if (!open_cache_ || !mds_applies_closes_.load(std::memory_order_relaxed) ||
      shutting_down_.load(std::memory_order_acquire) ||
      mdsop::OpenIdEpoch(r.open_id) != epoch_.load()) {
    return false;
  }
  std::vector<DeferredClose> released;
  const uint64_t gen = r.cache_gen;
  bool kept = open_cache_->Keep(c, std::move(r), gen, until, &released);
  for (const DeferredClose& d : released) closes_->Add(d.ino, d.open_id);
  return kept;
}

std::optional<OpenResult> MdsClient::TakeKeptOpen(const Cred& c, uint64_t ino) {
  if (!open_cache_) return std::nullopt;
  std::chrono::steady_clock::time_point until;
  std::optional<OpenResult> r = open_cache_->Take(c, ino, &until);
  // One of an MDS instance since gone (which kept no opens): not ours to hand out.
  if (!r || mdsop::OpenIdEpoch(r->open_id) != epoch_.load()) return std::nullopt;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      until - std::chrono::steady_clock::now());
  r->attr.lease_ms = static_cast<uint32_t>(std::max<int64_t>(0, left.count()));
  r->attr.dir_lease_ms = 0;
  r->attr.dir_attr.reset();
  return r;
}

bool MdsClient::HoldsKeptOpen(const Cred& c, uint64_t ino, std::chrono::milliseconds ahead) const {
  return open_cache_ && open_cache_->Holds(c, ino, ahead);
}

uint64_t MdsClient::lease_gen() const { return open_cache_ ? open_cache_->Gen() : 0; }

void MdsClient::ExtendKeptOpens(const Attr& a) {
  if (!open_cache_ || a.lease_ms == 0 || !S_ISREG(a.mode)) return;
  open_cache_->Extend(a.ino,
                      std::chrono::steady_clock::now() + std::chrono::milliseconds(a.lease_ms));
}

void MdsClient::ReleaseKeptOpens(bool all) {
  if (!open_cache_) return;
  for (const DeferredClose& d : all ? open_cache_->Changed() : open_cache_->Expired()) {
    closes_->Add(d.ino, d.open_id);
  }
}

void MdsClient::NoteInvalidation() {
  invalidations_.fetch_add(1);
  ReleaseKeptOpens(/*all=*/true);
}

void MdsClient::EnableDeferredCloses(std::chrono::milliseconds max_delay, size_t max_queued) {
  if (max_delay.count() > 0) closes_ = std::make_unique<CloseQueue>(max_delay, max_queued);
}

bool MdsClient::DeferClose(uint64_t ino, uint64_t open_id) {
  if (!closes_ || !mds_applies_closes_.load(std::memory_order_relaxed)) return false;
  closes_->Add(ino, open_id);
  return true;
}

std::vector<DeferredClose> MdsClient::AttachCloses(proto::MdsRequest* req) {
  if (open_cache_ && !req->has_watch()) ReleaseKeptOpens();  // those at their lease's end
  // A Watch may be held for seconds: its closes would wait as long.
  // Nor a lock request: the MDS answers those on a path of their own (lock_ops.cc).
  if (!closes_ || req->has_watch() || req->has_lock() ||
      !mds_applies_closes_.load(std::memory_order_relaxed)) {
    return {};
  }
  std::vector<DeferredClose> taken = closes_->Take(kMaxCarriedCloses);
  for (const DeferredClose& c : taken) {
    proto::CloseReq* out = req->add_closes();
    out->set_ino(c.ino);
    out->set_open_id(c.open_id);
  }
  return taken;
}

void MdsClient::SettleCloses(std::vector<DeferredClose> taken, const proto::MdsResponse* resp) {
  // Any real reply (boot epoch set) says what this MDS supports: an older
  // one, say after a downgrade, sends no features.
  if (resp != nullptr && resp->boot_epoch() != 0) {
    mds_applies_closes_.store((resp->features() & proto::MDS_FEATURE_CLOSES) != 0,
                              std::memory_order_relaxed);
  }
  size_t applied = resp == nullptr ? 0 : std::min<size_t>(resp->closes_applied(), taken.size());
  if (applied == taken.size()) return;
  taken.erase(taken.begin(), taken.begin() + static_cast<std::ptrdiff_t>(applied));
  closes_->PutBack(std::move(taken));
}

// One try per call, with a short deadline: the flusher must not sit in a
// retry loop while the client is being stopped (a dead MDS would hold an
// unmount for the whole recovery timeout). What fails stays queued; any
// later request carries it.
Status MdsClient::FlushCloses(bool final) {
  const std::chrono::milliseconds timeout =
      std::min(timeout_, std::chrono::milliseconds(final ? 2000 : 1000));
  while (queued_closes() > 0) {
    proto::MdsResponse resp;
    if (mds_applies_closes_.load(std::memory_order_relaxed)) {
      proto::MdsRequest req;
      req.mutable_ping();  // a carrier: CallRaw attaches the closes
      SFS_RETURN_IF_ERROR(CallRaw(nullptr, &req, &resp, timeout));
      continue;
    }
    std::vector<DeferredClose> one = closes_->Take(1);
    if (one.empty()) break;
    proto::MdsRequest req;
    req.mutable_close()->set_ino(one[0].ino);
    req.mutable_close()->set_open_id(one[0].open_id);
    Status st = CallRaw(nullptr, &req, &resp, timeout);
    if (!st.ok() && resp.status().code() == 0) {  // not delivered
      closes_->PutBack(std::move(one));
      return st;
    }
    if (!st.ok()) LOG_WARN("close of inode " << one[0].ino << ": " << st.ToString());
  }
  return Status::Ok();
}

bool MdsClient::WaitClosesDue() { return closes_ && closes_->WaitDue(); }

void MdsClient::StopCloses() {
  if (closes_) closes_->Stop();
}

}  // namespace sfs::client
