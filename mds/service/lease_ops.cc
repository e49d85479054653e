// The lease side of MdsService (see mds_service.h and mds/lease/lease_table.h):
// Watch long polls, lease grants on replies, and revocation before a change
// is answered.
//
// Order for a request, and why:
//   1. tick = leases->Tick()           (before anything is read)
//   2. under the name stripes the op touches: look up the inodes the names
//      point to now, apply the op (Namespace takes its own lock inside)
//   3. drop the stripes; grant a lease on the reply's regular file or
//      directory, and on the directory the op named, unless that inode was
//      revoked after `tick` (a read that raced a change)
//   4. on success, Revoke() what changed; the reply goes out from Revoke's
//      callback, i.e. after every other holder acked or its lease expired.
// What is revoked: the attributes of inodes the op changed, the names an
// unlink/rmdir/rename removed (on the inodes they pointed to), and every
// name added or removed, on its directory (a directory's lease covers its
// names, so a negative entry cached under it is revoked by the create).
// Which names, directory and inodes each op touches is the table in
// common/mdsop/op_table.h (queried through mds/lease/op_effects.h); this
// file only orders the steps.
// Nothing waits in steps 1-3, and step 4 holds no lock and no worker, so a
// slow or stopped client can delay only the changes to files it leases.
#include <sys/stat.h>

#include <cerrno>
#include <functional>

#include "common/log.h"
#include "mds.pb.h"
#include "mds/lease/op_effects.h"
#include "mds/service/mds_service.h"

namespace sfs::mds {
namespace {

using proto::MdsRequest;
using proto::MdsResponse;

Cred CredOf(const MdsRequest& r) {
  Cred c;
  c.uid = r.cred().uid();
  c.gid = r.cred().gid();
  c.groups.assign(r.cred().groups().begin(), r.cred().groups().end());
  return c;
}

size_t Stripe(uint64_t parent, const std::string& name) {
  return std::hash<std::string>()(name) ^ (parent * 0x9E3779B97F4A7C15ull);
}

// Locks the stripes of a request's names in index order (no deadlock between
// a rename and anything else).
class StripeGuard {
 public:
  StripeGuard(std::array<std::mutex, 256>& locks, const MdsRequest& r) {
    for (auto& [parent, name] : NamesOf(r)) idx_.push_back(Stripe(parent, name) % locks.size());
    std::sort(idx_.begin(), idx_.end());
    idx_.erase(std::unique(idx_.begin(), idx_.end()), idx_.end());
    for (size_t i : idx_) {
      locks[i].lock();
      held_.push_back(&locks[i]);
    }
  }
  ~StripeGuard() {
    for (auto it = held_.rbegin(); it != held_.rend(); ++it) (*it)->unlock();
  }

 private:
  std::vector<size_t> idx_;
  std::vector<std::mutex*> held_;
};

void ReplyLater(const MdsResponse& resp, const rpc::ReplyFn& done) {
  done(rpc::Reply{resp.SerializeAsString(), {}});
}

}  // namespace

bool MdsService::TryHandleInline(rpc::Request& req, rpc::ReplyFn& done) {
  if (!inline_ || req.service != rpc::kServiceMds) return false;
  MdsRequest r;
  if (!r.ParseFromString(req.payload) || r.op_case() == MdsRequest::kSync) return false;
  if (leases_ == nullptr && r.op_case() != MdsRequest::kLock && r.op_case() != MdsRequest::kReplay) {
    return false;
  }
  if (!GateOss(r, done) && !GateTenant(r, done)) HandleParsed(r, std::move(done));
  return true;
}

void MdsService::HandleAsync(rpc::Request& req, rpc::ReplyFn done) {
  MdsRequest r;
  if (req.service != rpc::kServiceMds || !r.ParseFromString(req.payload) ||
      (leases_ == nullptr && r.op_case() != MdsRequest::kLock &&
       r.op_case() != MdsRequest::kReplay)) {
    Handler::HandleAsync(req, std::move(done));
    return;
  }
  if (!GateOss(r, done) && !GateTenant(r, done)) HandleParsed(r, std::move(done));
}

void MdsService::HandleParsed(const MdsRequest& r, rpc::ReplyFn done) {
  if (metrics_ != nullptr) done = metrics_->Counted(r.op_case(), r.job_id(), std::move(done));
  if (r.op_case() == MdsRequest::kReplay) {
    Replay(r, std::move(done));
    return;
  }
  if (RefuseWhileRecovering(r, done)) return;
  if (r.op_case() == MdsRequest::kLock) {
    Lock(r, std::move(done));
    return;
  }
  if (r.op_case() == MdsRequest::kWatch) {
    Watch(r, std::move(done));
    return;
  }
  if (r.op_case() == MdsRequest::kAppend) {
    Append(r, std::move(done));
    return;
  }
  uint64_t tick = leases_->Tick();
  MdsResponse resp;
  uint64_t durable_seq = 0;
  std::vector<LeaseInval> changed = ApplyLocked(r, &resp, &durable_seq);
  Reply(r, tick, std::move(resp), std::move(changed), std::move(done), /*granted=*/false,
        durable_seq);
}

rpc::ReplyFn MdsService::Durably(const MdsRequest& r, MdsResponse* resp, uint64_t seq,
                                 rpc::ReplyFn done) {
  const bool waits = AckWaitsForCommit(r, *resp);
  if (!ns_->committer().sync_each_op()) {
    // Committed on the interval: answered now. With replay the client keeps
    // the request until a reply's last_committed reaches its transno.
    if (!replay_ || !waits || resp->status().code() != 0) return done;
    // An admin change (OST lost, tenants) is not replayed: it waits for its commit.
    if (Replayable(r.op_case())) {
      resp->set_transno(seq);
      AddReplayLayout(r, resp);
      if (ns_->ClientRecorded(r.client_id())) return done;
      // This client's first change: its record must be durable before any
      // reply it could need to replay, or a recovery would not wait for it.
      Status rec = ns_->RecordClient(r.client_id());
      if (!rec.ok()) LOG_WARN("recording client " << r.client_id() << ": " << rec.ToString());
      seq = ns_->committer().written();
    }
  } else if (!waits) {
    ns_->WhenDurable(seq, [](const Status&) {});
    return done;
  }
  return [this, seq, done = std::move(done)](rpc::Reply reply) mutable {
    ns_->WhenDurable(seq, [reply = std::move(reply), done = std::move(done)](const Status& st) mutable {
      if (!st.ok()) {  // applied but maybe not durable: the caller must not count on it
        MdsResponse err;
        err.mutable_status()->set_code(st.code() != 0 ? st.code() : EIO);
        err.mutable_status()->set_message(st.message());
        reply.payload = err.SerializeAsString();
      }
      done(std::move(reply));
    });
  };
}

void MdsService::Reply(const MdsRequest& r, uint64_t tick, MdsResponse resp,
                       std::vector<LeaseInval> changed, rpc::ReplyFn done, bool granted,
                       uint64_t durable_seq) {
  if (!granted) GrantLease(r, tick, &resp);
  if (durable_seq != 0) done = Durably(r, &resp, durable_seq, std::move(done));
  if (resp.status().code() != 0) changed.clear();
  if (changed.empty()) {
    ReplyLater(resp, done);
    return;
  }
  leases_->Revoke(r.client_id(), std::move(changed),
                  [resp = std::move(resp), done = std::move(done)] { ReplyLater(resp, done); });
}

std::vector<LeaseInval> MdsService::ApplyLocked(const MdsRequest& r, MdsResponse* resp,
                                                uint64_t* durable_seq) {
  StripeGuard guard(name_locks_, r);
  std::vector<LeaseInval> changed = NamesChanged(r);
  {
    // Commit before reply without holding this thread: the reply waits.
    Committer::DeferScope scope;
    Dispatch(r, resp);
    *durable_seq = scope.seq();
  }
  for (LeaseInval& i : InodesChanged(r)) changed.push_back(std::move(i));
  if (resp->status().code() == 0) {
    for (LeaseInval& i : DirsChanged(r, *resp)) changed.push_back(std::move(i));
    for (LeaseInval& i : InodesChangedByReply(r, *resp)) changed.push_back(std::move(i));
  }
  return changed;
}

// What the names an unlink, rmdir or rename removes or replaces point to now
// (before the op): regular files and directories, the inodes leases are
// granted on. REQUIRES: their stripes held.
std::vector<LeaseInval> MdsService::NamesChanged(const MdsRequest& r) {
  std::vector<LeaseInval> out;
  for (auto& [parent, name] : NamesUnbound(r)) {
    auto attr = ns_->Lookup(CredOf(r), parent, name);
    if (attr.ok() && (S_ISREG(attr->mode()) || S_ISDIR(attr->mode()))) {
      out.push_back({attr->ino(), parent, name});
    }
  }
  return out;
}

// Leases on the reply's regular file or directory, and on the directory the
// op named (also with a lookup's ENOENT: the holder may cache the absence).
void MdsService::GrantLease(const MdsRequest& r, uint64_t tick, MdsResponse* resp) {
  const int code = resp->status().code();
  const uint64_t dir = DirOf(r);
  if (dir != 0 && (code == 0 || (code == ENOENT && r.op_case() == MdsRequest::kLookup))) {
    resp->set_parent_lease_ms(leases_->Grant(r.client_id(), dir, tick));
    // Read after the grant: a later change by another client revokes it.
    if (resp->parent_lease_ms() > 0 && code == 0 && !DirsChanged(r, *resp).empty()) {
      auto a = ns_->GetAttr(dir);
      if (a.ok()) *resp->mutable_parent_attr() = *a;
    }
  }
  if (code != 0) return;
  auto leased = [](uint32_t mode) { return S_ISREG(mode) || S_ISDIR(mode); };
  if (resp->has_attr() && leased(resp->attr().attr().mode())) {
    resp->mutable_attr()->set_lease_ms(leases_->Grant(r.client_id(), resp->attr().attr().ino(), tick));
  } else if (resp->has_open() && S_ISREG(resp->open().attr().mode())) {
    resp->mutable_open()->set_lease_ms(leases_->Grant(r.client_id(), resp->open().attr().ino(), tick));
  } else if (resp->has_readdir() && resp->parent_lease_ms() > 0) {
    // A listing with attributes (sfs-mount's statahead): each entry's too.
    for (proto::DirEntry& e : *resp->mutable_readdir()->mutable_entries()) {
      if (e.has_attr() && leased(e.attr().mode())) {
        e.set_lease_ms(leases_->Grant(r.client_id(), e.ino(), tick));
      }
    }
  }
}

void MdsService::Watch(const MdsRequest& r, rpc::ReplyFn done) {
  ns_->TouchClient(r.client_id());
  if (locks_ != nullptr) locks_->Touch(r.client_id());
  uint64_t epoch = ns_->boot_epoch();
  uint32_t lease_ms = leases_->lease_ms();
  auto reply = [done = std::move(done), epoch, lease_ms](std::vector<LeaseInval> items,
                                                        uint64_t seq) {
    MdsResponse resp;
    resp.mutable_status()->set_code(0);
    resp.set_boot_epoch(epoch);
    resp.set_features(proto::MDS_FEATURE_CLOSES);
    proto::WatchResp* w = resp.mutable_watch();
    w->set_seq(seq);
    w->set_lease_ms(lease_ms);
    for (LeaseInval& i : items) {
      proto::Invalidation* out = w->add_items();
      out->set_ino(i.ino);
      out->set_parent(i.parent);
      out->set_name(std::move(i.name));
      out->set_lock_recall(i.lock_recall);
    }
    ReplyLater(resp, done);
  };
  if (r.watch().leaving()) {  // an unmount: nobody need wait on this client's leases
    leases_->Leave(r.client_id());
    if (locks_ != nullptr) locks_->DropCached(r.client_id());  // it hears no recall now
    reply({}, 0);
    return;
  }
  leases_->Watch(r.client_id(), r.watch().ack_seq(), r.watch().wait_ms(), std::move(reply));
}

}  // namespace sfs::mds
