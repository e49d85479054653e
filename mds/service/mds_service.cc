// One thin handler per MDS RPC: unpack, one domain call, pack the reply.
#include "mds/service/mds_service.h"

#include <chrono>

#include "common/log.h"
#include "mds.pb.h"

namespace sfs::mds {
namespace {

using proto::MdsRequest;
using proto::MdsResponse;

void SetStatus(MdsResponse* out, const Status& st) {
  out->mutable_status()->set_code(st.code());
  out->mutable_status()->set_message(st.message());
}

OpCtx ContextOf(const MdsRequest& r) {
  OpCtx ctx;
  ctx.cred.uid = r.cred().uid();
  ctx.cred.gid = r.cred().gid();
  ctx.cred.groups.assign(r.cred().groups().begin(), r.cred().groups().end());
  ctx.client_id = r.client_id();
  ctx.xid = r.xid();
  if (r.has_replay_info()) ctx.replay = &r.replay_info();
  return ctx;
}

// Fills out's attr result from a Result<Attr>.
void ReplyAttr(const Result<proto::Attr>& attr, MdsResponse* out) {
  if (attr.ok()) *out->mutable_attr()->mutable_attr() = *attr;
  SetStatus(out, attr.status());
}

std::vector<OstReport> Reports(const google::protobuf::RepeatedPtrField<proto::OstInfo>& osts) {
  std::vector<OstReport> out;
  for (const proto::OstInfo& o : osts) {
    OstReport r;
    r.uuid = o.uuid();
    r.stats = {o.total_bytes(), o.free_bytes(), o.avail_bytes(), o.total_inodes(),
               o.free_inodes()};
    r.metrics_address = o.metrics_address();
    out.push_back(std::move(r));
  }
  return out;
}

void FillOstMap(const std::vector<OstState>& osts, proto::GetOstMapResp* out) {
  for (const OstState& o : osts) {
    proto::OstInfo* info = out->add_osts();
    info->set_index(o.index);
    info->set_uuid(o.uuid);
    info->set_address(o.address);
    info->set_up(o.up);
    info->set_total_bytes(o.stats.total_bytes);
    info->set_free_bytes(o.stats.free_bytes);
    info->set_avail_bytes(o.stats.avail_bytes);
    info->set_total_inodes(o.stats.total_inodes);
    info->set_free_inodes(o.stats.free_inodes);
    info->set_last_heartbeat_ms(o.last_heartbeat_ms);
    info->set_metrics_address(o.metrics_address);
    info->set_lost(o.lost);
  }
}

// Handlers for ops that read the namespace.
class Reads {
 public:
  Reads(Namespace* ns, const MdsRequest& r, MdsResponse* out) : ns_(ns), r_(r), out_(out) {}

  void Lookup() { ReplyAttr(ns_->Lookup(Cred(), r_.lookup().parent(), r_.lookup().name()), out_); }
  void GetAttr() { ReplyAttr(ns_->GetAttr(r_.getattr().ino()), out_); }
  void Readlink() {
    auto target = ns_->Readlink(r_.readlink().ino());
    if (target.ok()) out_->mutable_readlink()->set_target(*target);
    SetStatus(out_, target.status());
  }
  void Readdir() { SetStatus(out_, ns_->Readdir(Cred(), r_.readdir(), out_->mutable_readdir())); }
  void Statfs() { *out_->mutable_statfs() = ns_->Statfs(); }
  void GetXattr() {
    auto value = ns_->GetXattr(Cred(), r_.getxattr().ino(), r_.getxattr().name());
    if (value.ok()) out_->mutable_getxattr()->set_value(*value);
    SetStatus(out_, value.status());
  }
  void ListXattr() {
    auto names = ns_->ListXattr(Cred(), r_.listxattr().ino());
    if (names.ok()) {
      for (auto& n : *names) out_->mutable_listxattr()->add_names(n);
    }
    SetStatus(out_, names.status());
  }
  void GetLayout() {
    SetStatus(out_, ns_->GetLayout(r_.get_layout().ino(), out_->mutable_get_layout()));
  }
  // Changes nothing (it waits for a commit), so it lives with the reads.
  void Sync() { SetStatus(out_, ns_->Sync()); }

 private:
  sfs::mds::Cred Cred() const { return ContextOf(r_).cred; }
  Namespace* ns_;
  const MdsRequest& r_;
  MdsResponse* out_;
};

// Handlers for ops that change the namespace.
class Writes {
 public:
  Writes(Namespace* ns, const MdsRequest& r, MdsResponse* out)
      : ns_(ns), r_(r), ctx_(ContextOf(r)), out_(out) {}

  void SetAttr() { Done(ns_->SetAttr(ctx_, r_.setattr(), Attr())); }
  void Create() { Done(ns_->Create(ctx_, r_.create(), out_->mutable_open())); }
  void Open() { Done(ns_->Open(ctx_, r_.open(), out_->mutable_open())); }
  void OpenPath() { Done(ns_->OpenPath(ctx_, r_.open_path(), out_->mutable_open())); }
  void Close() { Done(ns_->Close(ctx_, r_.close())); }
  void SetSize() { Done(ns_->SetSize(ctx_, r_.set_size(), Attr())); }
  void Append() { Done(ns_->Append(ctx_, r_.append(), Attr())); }
  void Mknod() { Done(ns_->Mknod(ctx_, r_.mknod(), Attr())); }
  void Mkdir() { Done(ns_->Mkdir(ctx_, r_.mkdir(), Attr())); }
  void Unlink() { Done(ns_->Unlink(ctx_, r_.unlink())); }
  void Rmdir() { Done(ns_->Rmdir(ctx_, r_.rmdir())); }
  void Rename() { Done(ns_->Rename(ctx_, r_.rename())); }
  void Link() { Done(ns_->Link(ctx_, r_.link(), Attr())); }
  void Symlink() { Done(ns_->Symlink(ctx_, r_.symlink(), Attr())); }
  void SetXattr() { Done(ns_->SetXattr(ctx_, r_.setxattr())); }
  void RemoveXattr() { Done(ns_->RemoveXattr(ctx_, r_.removexattr())); }
  void SetLayout() { Done(ns_->SetLayout(ctx_, r_.set_layout())); }
  void MirrorState() {
    Done(ns_->MirrorState(ctx_, r_.mirror_state(), out_->mutable_get_layout()));
  }
  void Pool() { Done(ns_->Pool(ctx_, r_.pool(), out_->mutable_pool())); }
  void Qos() { Done(ns_->Qos(ctx_, r_.qos(), out_->mutable_qos())); }
  void Tenant() { Done(ns_->Tenant(ctx_, r_.tenant_admin(), out_->mutable_tenant_admin())); }
  void MigrateBegin() {
    Done(ns_->MigrateBegin(ctx_, r_.migrate_begin(), out_->mutable_migrate_begin()));
  }
  void MigrateCommit() { Done(ns_->MigrateCommit(ctx_, r_.migrate_commit())); }
  void OstLost() {
    uint64_t files = 0;
    Status st = ns_->OstLost(ctx_, r_.ost_lost().index(), &files);
    if (st.ok()) out_->mutable_rebuild_status()->set_files_marked(files);
    Done(st);
  }

 private:
  proto::Attr* Attr() { return out_->mutable_attr()->mutable_attr(); }
  // On failure, drop any half-filled result so the reply carries only status.
  void Done(const Status& st) {
    if (!st.ok()) out_->clear_result();
    SetStatus(out_, st);
  }
  Namespace* ns_;
  const MdsRequest& r_;
  OpCtx ctx_;
  MdsResponse* out_;
};

void RegisterOss(OstRegistry* osts, const MdsRequest& r, MdsResponse* out) {
  auto indices = osts->Register(r.register_oss().address(), Reports(r.register_oss().osts()),
                                NowMs());
  if (indices.ok()) {
    for (uint32_t i : *indices) out->mutable_register_oss()->add_indices(i);
  }
  SetStatus(out, indices.status());
}

// A heartbeat's reply carries the QoS table (qos.cc), so that every OSS
// applies a rule within one heartbeat interval of its change.
void Heartbeat(Namespace* ns, OstRegistry* osts, const MdsRequest& r, MdsResponse* out) {
  Status st = osts->Heartbeat(r.heartbeat().address(), Reports(r.heartbeat().osts()), NowMs());
  if (st.ok()) {
    Status q = ns->QosTable(out->mutable_heartbeat()->mutable_qos());
    if (!q.ok()) LOG_WARN("QoS table for a heartbeat: " << q.ToString());
    // The stale-copy fence of its OSTs, when the OSS's is of another run or version.
    proto::HeartbeatResp* hb = out->mutable_heartbeat();
    const proto::HeartbeatReq& in = r.heartbeat();
    hb->set_fences_epoch(ns->boot_epoch());
    if (in.fences_epoch() == ns->boot_epoch() && in.fences_version() == ns->fence_version()) {
      hb->set_fences_version(in.fences_version());
    } else {
      std::vector<uint32_t> mine;
      for (const proto::OstInfo& o : in.osts()) mine.push_back(o.index());
      std::vector<std::pair<uint32_t, uint64_t>> fenced;
      hb->set_fences_version(ns->FencedOn(mine, &fenced));
      hb->set_fences_sent(true);
      for (const auto& [ost, oid] : fenced) {
        proto::FencedObject* f = hb->add_fences();
        f->set_ost(ost);
        f->set_oid(oid);
      }
    }
  }
  SetStatus(out, st);
}

bool DispatchRead(Namespace* ns, const MdsRequest& r, MdsResponse* out) {
  Reads h(ns, r, out);
  switch (r.op_case()) {
    case MdsRequest::kLookup: h.Lookup(); return true;
    case MdsRequest::kGetattr: h.GetAttr(); return true;
    case MdsRequest::kReadlink: h.Readlink(); return true;
    case MdsRequest::kReaddir: h.Readdir(); return true;
    case MdsRequest::kStatfs: h.Statfs(); return true;
    case MdsRequest::kGetxattr: h.GetXattr(); return true;
    case MdsRequest::kListxattr: h.ListXattr(); return true;
    case MdsRequest::kGetLayout: h.GetLayout(); return true;
    case MdsRequest::kSync: h.Sync(); return true;
    default: return false;
  }
}

bool DispatchWrite(Namespace* ns, const MdsRequest& r, MdsResponse* out) {
  Writes h(ns, r, out);
  switch (r.op_case()) {
    case MdsRequest::kSetattr: h.SetAttr(); return true;
    case MdsRequest::kCreate: h.Create(); return true;
    case MdsRequest::kOpen: h.Open(); return true;
    case MdsRequest::kOpenPath: h.OpenPath(); return true;
    case MdsRequest::kClose: h.Close(); return true;
    case MdsRequest::kSetSize: h.SetSize(); return true;
    case MdsRequest::kAppend: h.Append(); return true;
    case MdsRequest::kMknod: h.Mknod(); return true;
    case MdsRequest::kMkdir: h.Mkdir(); return true;
    case MdsRequest::kUnlink: h.Unlink(); return true;
    case MdsRequest::kRmdir: h.Rmdir(); return true;
    case MdsRequest::kRename: h.Rename(); return true;
    case MdsRequest::kLink: h.Link(); return true;
    case MdsRequest::kSymlink: h.Symlink(); return true;
    case MdsRequest::kSetxattr: h.SetXattr(); return true;
    case MdsRequest::kRemovexattr: h.RemoveXattr(); return true;
    case MdsRequest::kSetLayout: h.SetLayout(); return true;
    case MdsRequest::kMirrorState: h.MirrorState(); return true;
    case MdsRequest::kPool: h.Pool(); return true;
    case MdsRequest::kQos: h.Qos(); return true;
    case MdsRequest::kTenantAdmin: h.Tenant(); return true;
    case MdsRequest::kMigrateBegin: h.MigrateBegin(); return true;
    case MdsRequest::kMigrateCommit: h.MigrateCommit(); return true;
    case MdsRequest::kOstLost: h.OstLost(); return true;
    default: return false;
  }
}

bool DispatchRegistry(Namespace* ns, OstRegistry* osts, const MdsRequest& r, MdsResponse* out) {
  switch (r.op_case()) {
    case MdsRequest::kRegisterOss: RegisterOss(osts, r, out); return true;
    case MdsRequest::kHeartbeat: Heartbeat(ns, osts, r, out); return true;
    case MdsRequest::kGetOstMap: FillOstMap(osts->Snapshot(), out->mutable_get_ost_map()); return true;
    case MdsRequest::kPing: SetStatus(out, Status::Ok()); return true;
    default: return false;
  }
}

// Applies the closes a client deferred and sent along with req (mds.proto,
// "Deferred closes"), before req's op: its own unlink or rename of the file
// then finds the open gone. Only the open is released; a report is ignored
// (the client sends those as CloseReqs of their own, so that the lease
// revocation they need goes with them). A close the Namespace refuses is
// logged: the client cannot do better with the error than with a close(2)'s.
void ApplyDeferredCloses(Namespace* ns, const MdsRequest& r, MdsResponse* out) {
  if (r.closes_size() == 0) return;
  OpCtx ctx;
  ctx.client_id = r.client_id();  // no xid: a re-sent request applies them again, harmlessly
  for (const proto::CloseReq& c : r.closes()) {
    proto::CloseReq release;
    release.set_ino(c.ino());
    release.set_open_id(c.open_id());
    Status st = ns->Close(ctx, release);
    if (!st.ok()) LOG_WARN("deferred close of inode " << c.ino() << ": " << st.ToString());
  }
  out->set_closes_applied(static_cast<uint32_t>(r.closes_size()));
}

}  // namespace

void MdsService::Dispatch(const MdsRequest& req, MdsResponse* resp) {
  ns_->TouchClient(req.client_id());
  if (locks_ != nullptr) locks_->Touch(req.client_id());
  ApplyDeferredCloses(ns_, req, resp);
  if (req.op_case() == MdsRequest::kKvGrant) {
    Status st = GrantKv(req, resp->mutable_kv_grant());
    if (!st.ok()) resp->clear_result();
    SetStatus(resp, st);
  } else if (req.op_case() == MdsRequest::kCapKey) {
    Status st = CapKey(req, resp->mutable_cap_key());
    if (!st.ok()) resp->clear_result();
    SetStatus(resp, st);
  } else if (req.op_case() == MdsRequest::kRebuildStatus) {
    if (rebuild_status_) {
      rebuild_status_(resp->mutable_rebuild_status());
      SetStatus(resp, Status::Ok());
    } else {
      SetStatus(resp, Status::Errno(ENOSYS, "this MDS runs no rebuild"));
    }
  } else if (req.op_case() == MdsRequest::kScrub) {
    if (!ContextOf(req).cred.root()) {
      SetStatus(resp, Status::Errno(EPERM, "only root may scrub"));
    } else if (!scrub_) {
      SetStatus(resp, Status::Errno(ENOSYS, "this MDS runs no scrub"));
    } else {
      Status st = scrub_(req.scrub(), resp->mutable_scrub());
      if (!st.ok()) resp->clear_result();
      SetStatus(resp, st);
      if (st.ok() && resp->scrub().repairs_queued() > 0 && rebuild_kick_) rebuild_kick_();
    }
  } else if (!DispatchRead(ns_, req, resp) && !DispatchWrite(ns_, req, resp) &&
             !DispatchRegistry(ns_, osts_, req, resp)) {
    SetStatus(resp, Status::Errno(EPROTO, "unknown MDS op"));
  }
  if (req.op_case() == MdsRequest::kOstLost && resp->status().code() == 0 && rebuild_kick_) {
    rebuild_kick_();
  }
  if (req.op_case() == MdsRequest::kGetOstMap && !metrics_address_.empty()) {
    resp->mutable_get_ost_map()->set_mds_metrics_address(metrics_address_);
  }
  if (signing_ != nullptr && resp->status().code() == 0) {
    NoteRevocations(req, resp);
    SignLayouts(req, resp);
  }
  resp->set_boot_epoch(ns_->boot_epoch());
  resp->set_features(proto::MDS_FEATURE_CLOSES);
  if (replay_) resp->set_last_committed(ns_->committer().committed());
}

std::string MdsService::HandlePayload(const std::string& payload) {
  MdsRequest req;
  MdsResponse resp;
  if (!req.ParseFromString(payload)) {
    SetStatus(&resp, Status::Errno(EPROTO, "malformed MdsRequest"));
    if (metrics_ != nullptr) metrics_->Record(0, EPROTO, 0, {});
    return resp.SerializeAsString();
  }
  // Only the lease-less path gets here while recovering (HandleParsed
  // refuses the others itself).
  if (recovering() && !ServedDuringRecovery(req.op_case())) return RecoveringReply();
  auto start = std::chrono::steady_clock::now();
  std::optional<OssGate::Seal> seal;  // oss_gate.h
  if (oss_gate_.Admit(req, &resp, &seal)) return resp.SerializeAsString();
  std::optional<TenantGate::View> tenant;  // tenant_gate.h
  if (tenants_.Admit(&req, &resp, &tenant)) return resp.SerializeAsString();
  if (replay_ && !ns_->committer().sync_each_op()) {
    // Note the op's write for its transno instead of waiting on it.
    Committer::DeferScope scope;
    Dispatch(req, &resp);
    StampTransno(req, &resp, scope.seq());
  } else {
    Dispatch(req, &resp);
  }
  if (tenant.has_value()) TenantGate::Outbound(*tenant, &resp);
  if (seal.has_value()) oss_gate_.Sign(*seal, req, &resp);
  if (metrics_ != nullptr) {
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::steady_clock::now() - start);
    metrics_->Record(req.op_case(), resp.status().code(), static_cast<uint64_t>(ns.count()),
                     req.job_id());
  }
  return resp.SerializeAsString();
}

void MdsService::Handle(rpc::Request& req, rpc::Reply* reply) {
  if (req.service != rpc::kServiceMds) {
    proto::MdsResponse resp;
    SetStatus(&resp, Status::Errno(EPROTO, "not the MDS service"));
    reply->payload = resp.SerializeAsString();
    return;
  }
  reply->payload = HandlePayload(req.payload);
}

}  // namespace sfs::mds
