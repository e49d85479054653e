// The replay side of MdsService (mds.proto ReplayReq; docs/durability.md
// "Metadata"), after Lustre's MDT recovery.
//
// Replies to changes go out before their commit, carrying a transno: the
// op's write number, which is its place in the apply order (the Namespace
// numbers writes under its exclusive lock). Each client keeps what it was
// told until a reply's last_committed passes it. After a start that was not
// clean, the MDS waits until every client it knows (a K key, made durable
// with the client's first change) has sent a ReplayReq — or the recovery
// window ends — refusing other client requests with EAGAIN meanwhile; then
// it applies every replayed request of every client in (epoch, transno)
// order, so that a create in a directory another client made goes after the
// mkdir, commits once, and answers them all. A request whose reply record
// survived the power cut is answered from it and not applied twice.
#include <sys/stat.h>

#include <algorithm>
#include <optional>
#include <tuple>

#include "common/log.h"
#include "mds.pb.h"
#include "mds/lease/op_effects.h"
#include "mds/service/mds_service.h"

namespace sfs::mds {
namespace {

using proto::MdsRequest;
using proto::MdsResponse;

}  // namespace

// The ops a client keeps for replay: those whose reply waits for a commit
// without replay (mdsop/op_table.h, acked_at_once) and that a replay can apply
// again: the namespace changes. Admin changes (OST lost, tenants) are
// committed before their reply instead.
bool MdsService::Replayable(int op) {
  switch (op) {
    case MdsRequest::kSetattr: case MdsRequest::kCreate: case MdsRequest::kMknod:
    case MdsRequest::kMkdir: case MdsRequest::kUnlink: case MdsRequest::kRmdir:
    case MdsRequest::kRename: case MdsRequest::kLink: case MdsRequest::kSymlink:
    case MdsRequest::kSetxattr: case MdsRequest::kRemovexattr: case MdsRequest::kSetLayout:
    case MdsRequest::kMirrorState: case MdsRequest::kPool: case MdsRequest::kQos:
    case MdsRequest::kMigrateBegin: case MdsRequest::kMigrateCommit:
      return true;
    default:
      return false;
  }
}

bool MdsService::ServedDuringRecovery(int op) {
  switch (op) {
    case MdsRequest::kPing: case MdsRequest::kRegisterOss: case MdsRequest::kHeartbeat:
    case MdsRequest::kGetOstMap: case MdsRequest::kReplay:
    // A tenant client authenticates again before it replays (sessions live
    // in memory): the handshake touches no namespace state.
    case MdsRequest::kTenantHello: case MdsRequest::kTenantAuth:
    // An OSS's challenge for its register or heartbeat (oss_gate.h).
    case MdsRequest::kOssHello:
      return true;
    default:
      return false;
  }
}

MdsService::~MdsService() {
  {
    std::lock_guard<std::mutex> l(rec_mu_);
    stopping_ = true;
  }
  rec_cv_.notify_all();
  if (rec_thread_.joinable()) rec_thread_.join();
}

void MdsService::BeginRecovery(std::vector<uint64_t> expected, std::chrono::milliseconds window) {
  std::lock_guard<std::mutex> l(rec_mu_);
  expected_.insert(expected.begin(), expected.end());
  recovering_.store(true, std::memory_order_release);
  LOG_INFO("recovery: waiting up to " << window.count() << " ms for the replays of "
                                      << expected_.size() << " client(s)");
  auto deadline = std::chrono::steady_clock::now() + window;
  rec_thread_ = std::thread([this, deadline] { RecoveryTimer(deadline); });
}

void MdsService::RecoveryTimer(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> l(rec_mu_);
  rec_cv_.wait_until(l, deadline, [&] { return stopping_ || !recovering(); });
  if (stopping_ || !recovering()) return;
  l.unlock();
  FinishRecovery("the recovery window ended");
}

std::string MdsService::RecoveringReply() const {
  MdsResponse resp;
  resp.mutable_status()->set_code(EAGAIN);
  resp.mutable_status()->set_message("MDS in recovery: waiting for replays");
  resp.set_recovering(true);
  resp.set_boot_epoch(ns_->boot_epoch());
  return resp.SerializeAsString();
}

bool MdsService::RefuseWhileRecovering(const MdsRequest& r, const rpc::ReplyFn& done) {
  if (!recovering() || ServedDuringRecovery(r.op_case())) return false;
  done(rpc::Reply{RecoveringReply(), {}});
  return true;
}

void MdsService::AddReplayLayout(const MdsRequest& r, MdsResponse* resp) {
  if (!r.has_mknod() || !resp->has_attr() || !S_ISREG(resp->attr().attr().mode())) return;
  proto::GetLayoutResp l;
  if (ns_->GetLayout(resp->attr().attr().ino(), &l).ok()) {
    *resp->mutable_replay_layout() = l.layout();
    resp->mutable_replay_layout()->clear_capability();
  }
}

void MdsService::StampTransno(const MdsRequest& r, MdsResponse* resp, uint64_t seq) {
  if (!replay_ || seq == 0 || resp->status().code() != 0 || !AckWaitsForCommit(r, *resp)) return;
  if (!Replayable(r.op_case()) || !ns_->ClientRecorded(r.client_id())) {
    // See Durably: the first change of a client waits for its record.
    Status st = Replayable(r.op_case()) ? ns_->RecordClient(r.client_id()) : Status::Ok();
    if (st.ok()) st = ns_->Sync();
    if (!st.ok()) {
      resp->clear_result();
      resp->mutable_status()->set_code(st.code() != 0 ? st.code() : EIO);
      resp->mutable_status()->set_message(st.message());
      return;
    }
    if (!Replayable(r.op_case())) return;  // committed: nothing to keep
  }
  resp->set_transno(seq);
  AddReplayLayout(r, resp);
}

void MdsService::Replay(const MdsRequest& r, rpc::ReplyFn done) {
  ns_->TouchClient(r.client_id());
  if (r.replay().leaving()) {
    ns_->ForgetClient(r.client_id());
    MdsResponse resp;
    resp.mutable_status()->set_code(0);
    resp.set_boot_epoch(ns_->boot_epoch());
    done(rpc::Reply{resp.SerializeAsString(), {}});
    return;
  }
  PendingReplay p{r.client_id(), r.replay(), std::move(done)};
  bool all_in = false;
  {
    std::lock_guard<std::mutex> l(rec_mu_);
    if (recovering()) {
      checked_in_.insert(p.client);
      pending_.push_back(std::move(p));
      all_in = !finishing_ && std::includes(checked_in_.begin(), checked_in_.end(),
                                            expected_.begin(), expected_.end());
      if (!all_in) return;
    }
  }
  if (all_in) {
    FinishRecovery("every client has reported");
    return;
  }
  // No recovery (a clean start, or it is over): a late replay, applied in
  // its own order; after a clean start all of it is found applied already.
  std::vector<PendingReplay> one;
  one.push_back(std::move(p));
  ApplyReplays(std::move(one));
}

void MdsService::FinishRecovery(const char* why) {
  std::vector<uint64_t> missing;
  size_t reported = 0;
  {
    std::lock_guard<std::mutex> l(rec_mu_);
    if (!recovering() || finishing_) return;
    finishing_ = true;
    reported = checked_in_.size();
    for (uint64_t c : expected_) {
      if (checked_in_.count(c) == 0) missing.push_back(c);
    }
  }
  LOG_INFO("recovery: " << why << "; " << reported << " client(s) reported, "
                        << missing.size() << " did not");
  // Those that did not come have lost what they kept; they are forgotten.
  for (uint64_t c : missing) ns_->ForgetClient(c);
  for (;;) {
    std::vector<PendingReplay> batch;
    {
      std::lock_guard<std::mutex> l(rec_mu_);
      if (pending_.empty()) {
        recovering_.store(false, std::memory_order_release);
        finishing_ = false;
        break;
      }
      batch.swap(pending_);
    }
    ApplyReplays(std::move(batch));
  }
  rec_cv_.notify_all();
  LOG_INFO("recovery: over; serving");
}

int MdsService::ApplyReplayed(uint64_t client, MdsRequest item, bool* applied) {
  *applied = false;
  if (!Replayable(item.op_case()) || !item.has_replay_info()) return EINVAL;
  item.set_client_id(client);  // a client replays its own requests only
  item.clear_closes();
  const proto::ReplayInfo& info = item.replay_info();
  if (TransId{info.epoch(), info.transno()} < ns_->oldest_reply()) return 0;  // survived, trimmed
  *applied = !ns_->HasReply(client, item.xid());
  MdsResponse resp;
  // A tenant's request names inodes of its view: checked and mapped as when
  // it first came (tenant_gate.h), never applied outside its fileset.
  std::optional<TenantGate::View> view;
  if (tenants_.Admit(&item, &resp, &view)) {
    *applied = false;
    return resp.status().code() != 0 ? resp.status().code() : EACCES;
  }
  uint64_t seq = 0;
  std::vector<LeaseInval> changed = ApplyLocked(item, &resp, &seq);
  // A late replay (recovery over) changes what other clients may lease.
  if (leases_ != nullptr && resp.status().code() == 0 && !changed.empty()) {
    leases_->Revoke(client, std::move(changed), [] {});
  }
  return resp.status().code();
}

void MdsService::ApplyReplays(std::vector<PendingReplay> batch) {
  struct Item {
    TransId id;
    size_t who, at;
    MdsRequest req;
  };
  std::vector<Item> items;
  std::vector<std::vector<int>> codes(batch.size());
  for (size_t w = 0; w < batch.size(); ++w) {
    codes[w].assign(batch[w].req.requests_size(), EINVAL);
    for (int i = 0; i < batch[w].req.requests_size(); ++i) {
      Item it{{0, 0}, w, static_cast<size_t>(i), {}};
      if (!it.req.ParseFromString(batch[w].req.requests(i))) continue;  // EINVAL stays
      it.id = {it.req.replay_info().epoch(), it.req.replay_info().transno()};
      items.push_back(std::move(it));
    }
  }
  std::stable_sort(items.begin(), items.end(),
                   [](const Item& a, const Item& b) { return a.id < b.id; });
  uint32_t applied = 0, failed = 0;
  for (Item& it : items) {
    bool again = false;
    int code = ApplyReplayed(batch[it.who].client, std::move(it.req), &again);
    codes[it.who][it.at] = code;
    if (again && code == 0) ++applied;
    if (code != 0) {
      ++failed;
      LOG_WARN("replay of request (epoch " << it.id.first << ", transno " << it.id.second
                                           << ") of client " << batch[it.who].client
                                           << " failed: errno " << code);
    }
  }
  // One commit for all of them: a client forgets its requests on this reply.
  Status st = ns_->Sync();
  if (!items.empty()) {
    LOG_INFO("replayed " << items.size() << " request(s) of " << batch.size() << " client(s): "
                         << applied << " applied again, " << failed << " failed");
  }
  for (size_t w = 0; w < batch.size(); ++w) {
    MdsResponse resp;
    resp.mutable_status()->set_code(st.code());
    resp.mutable_status()->set_message(st.message());
    resp.set_boot_epoch(ns_->boot_epoch());
    resp.set_last_committed(ns_->committer().committed());
    for (int c : codes[w]) resp.mutable_replay()->add_codes(c);
    resp.mutable_replay()->set_applied(applied);
    batch[w].done(rpc::Reply{resp.SerializeAsString(), {}});
  }
}

}  // namespace sfs::mds
