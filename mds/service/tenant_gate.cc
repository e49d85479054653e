#include "mds/service/tenant_gate.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include "common/auth/tenant_auth.h"
#include "common/log.h"
#include "mds/service/mds_service.h"

namespace sfs::mds {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using proto::MdsRequest;
using proto::MdsResponse;

constexpr uint32_t kNobody = 65534;
// Bounds the handshakes waiting for their answer (one per client id).
constexpr size_t kMaxPending = 4096;

Status Refuse(int code, const std::string& why) { return Status::Errno(code, why); }

uint32_t MapId(uint32_t id, bool squash,
               const google::protobuf::RepeatedPtrField<proto::TenantIdMap>& maps) {
  if (id == 0 && squash) return kNobody;
  for (const proto::TenantIdMap& m : maps) {
    if (m.from() == id) return m.to();
  }
  return id;
}

uint32_t UnmapId(uint32_t id, const google::protobuf::RepeatedPtrField<proto::TenantIdMap>& maps) {
  for (const proto::TenantIdMap& m : maps) {
    if (m.to() == id) return m.from();
  }
  return id;
}

bool IsInodeField(const FieldDescriptor* f) {
  return f->cpp_type() == FieldDescriptor::CPPTYPE_UINT64 && !f->is_repeated() &&
         (f->name() == "ino" || f->name() == "parent" || f->name() == "new_parent");
}

// Every inode field of m (one level: the ops name inodes at their top): 1 is
// the fileset's directory; each must lie inside it.
Status MapInodes(Namespace* ns, uint64_t root, Message* m) {
  const google::protobuf::Descriptor* d = m->GetDescriptor();
  const google::protobuf::Reflection* refl = m->GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    if (!IsInodeField(f)) continue;
    uint64_t ino = refl->GetUInt64(*m, f);
    if (ino == 0) continue;  // unset (e.g. a rename's new_parent is always set)
    if (ino == kRootIno) {
      ino = root;
      refl->SetUInt64(m, f, ino);
    }
    SFS_RETURN_IF_ERROR(ns->InSubtree(ino, root));
  }
  return Status::Ok();
}

// The reply, in the tenant's view: every inode field holding the fileset's
// inode reads 1, every Attr's ids are the client's.
void Unmap(const proto::TenantRec& rec, Message* m) {
  const google::protobuf::Descriptor* d = m->GetDescriptor();
  const google::protobuf::Reflection* refl = m->GetReflection();
  bool is_attr = d == proto::Attr::descriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (f->is_repeated()) {
        for (int j = 0; j < refl->FieldSize(*m, f); ++j) Unmap(rec, refl->MutableRepeatedMessage(m, f, j));
      } else if (refl->HasField(*m, f)) {
        Unmap(rec, refl->MutableMessage(m, f));
      }
      continue;
    }
    if (f->is_repeated()) continue;
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_UINT64 &&
        (f->name() == "ino" || f->name() == "parent") &&
        refl->GetUInt64(*m, f) == rec.fileset_ino()) {
      refl->SetUInt64(m, f, kRootIno);
    }
    if (is_attr && f->cpp_type() == FieldDescriptor::CPPTYPE_UINT32) {
      if (f->name() == "uid") refl->SetUInt32(m, f, UnmapId(refl->GetUInt32(*m, f), rec.uid_map()));
      if (f->name() == "gid") refl->SetUInt32(m, f, UnmapId(refl->GetUInt32(*m, f), rec.gid_map()));
    }
  }
}

// Ops a tenant may not send: they change or reveal the whole file system.
bool AdminOp(MdsRequest::OpCase op) {
  switch (op) {
    case MdsRequest::kRegisterOss:
    case MdsRequest::kHeartbeat:
    case MdsRequest::kPool:
    case MdsRequest::kQos:
    case MdsRequest::kTenantAdmin:
    case MdsRequest::kCapKey:
    case MdsRequest::kMigrateBegin:
    case MdsRequest::kMigrateCommit:
      return true;
    default:
      return false;
  }
}

// What the default tenant may still send when tenants are required: what an
// OSS sends (OSS↔MDS authentication is not built).
bool OpenToDefault(MdsRequest::OpCase op) {
  switch (op) {
    case MdsRequest::kRegisterOss:
    case MdsRequest::kHeartbeat:
    case MdsRequest::kPing:
    case MdsRequest::kGetOstMap:
      return true;
    default:
      return false;
  }
}

}  // namespace

bool TenantGate::Required() {
  int v = required_.load(std::memory_order_acquire);
  if (v >= 0) return v == 1;
  auto r = ns_->TenantsRequired();
  if (!r.ok()) return true;  // unreadable: refuse rather than open the tree
  int expected = -1;
  required_.compare_exchange_strong(expected, *r ? 1 : 0);
  return required_.load(std::memory_order_acquire) == 1;
}

Status TenantGate::Require(const MdsRequest& r, MdsResponse* resp) {
  OpCtx ctx;
  ctx.cred.uid = r.cred().uid();
  ctx.cred.gid = r.cred().gid();
  ctx.client_id = r.client_id();
  ctx.xid = r.xid();
  SFS_RETURN_IF_ERROR(ns_->Tenant(ctx, r.tenant_admin(), resp->mutable_tenant_admin()));
  required_.store(r.tenant_admin().require() ? 1 : 0, std::memory_order_release);
  return Status::Ok();
}

Status TenantGate::Hello(const MdsRequest& r, MdsResponse* resp) {
  const std::string& name = r.tenant_hello().tenant();
  SFS_RETURN_IF_ERROR(ns_->GetTenant(name).status());
  SFS_ASSIGN_OR_RETURN(std::string nonce, auth::RandomBytes(auth::kTenantNonceBytes));
  int64_t now = NowMs();
  std::lock_guard lock(mu_);
  if (pending_.size() >= kMaxPending) {
    std::erase_if(pending_, [&](const auto& kv) { return kv.second.expires_ms <= now; });
    if (pending_.size() >= kMaxPending) return Refuse(EBUSY, "too many handshakes in progress");
  }
  pending_[r.client_id()] = Pending{name, nonce, now + kNonceLifetimeMs};
  resp->mutable_tenant_hello()->set_nonce(nonce);
  return Status::Ok();
}

Status TenantGate::Auth(const MdsRequest& r, MdsResponse* resp) {
  const proto::TenantAuthReq& a = r.tenant_auth();
  Pending p;
  {
    std::lock_guard lock(mu_);
    auto it = pending_.find(r.client_id());
    if (it == pending_.end()) {
      return Refuse(EACCES, "handshake refused: no challenge outstanding for this client "
                            "(a replayed or late answer)");
    }
    p = std::move(it->second);
    pending_.erase(it);  // one answer per nonce, right or wrong
  }
  if (p.expires_ms <= NowMs() || p.tenant != a.tenant() || !auth::MacEqual(p.nonce, a.nonce())) {
    return Refuse(EACCES, "handshake refused: the answer is not to this client's challenge");
  }
  SFS_ASSIGN_OR_RETURN(proto::TenantRec rec, ns_->GetTenant(a.tenant()));
  if (!auth::MacEqual(auth::TenantMac(rec.key(), p.nonce, r.client_id(), a.tenant()), a.mac())) {
    LOG_WARN("tenant " << a.tenant() << ": handshake with a wrong key from client "
                       << r.client_id());
    return Refuse(EACCES, "tenant '" + a.tenant() + "': wrong key (or a key rotated away)");
  }
  {
    std::lock_guard lock(mu_);
    sessions_[r.client_id()] = Session{a.tenant(), rec.key_generation()};
  }
  resp->mutable_tenant_auth()->set_fileset_ino(rec.fileset_ino());
  resp->mutable_tenant_auth()->set_key_generation(rec.key_generation());
  return Status::Ok();
}

Status TenantGate::Enter(MdsRequest* r, View* view, bool* reauth) {
  Session s;
  {
    std::lock_guard lock(mu_);
    auto it = sessions_.find(r->client_id());
    if (it == sessions_.end() || it->second.tenant != r->tenant()) {
      *reauth = true;
      return Refuse(EACCES, "not authenticated as tenant '" + r->tenant() +
                                "' (the MDS restarted, or no handshake): mount again");
    }
    s = it->second;
  }
  auto rec = ns_->GetTenant(s.tenant);
  if (!rec.ok() || rec->key_generation() != s.key_generation) {
    std::lock_guard lock(mu_);
    sessions_.erase(r->client_id());
    if (!rec.ok() && rec.status().code() != ENOENT) return rec.status();
    *reauth = rec.ok();  // rotated, not removed
    return Refuse(EACCES, !rec.ok() ? "tenant '" + s.tenant + "' was removed"
                                    : "tenant '" + s.tenant + "': its key was rotated; mount "
                                      "again with the new key");
  }
  bool admin = rec->fileset_ino() == kRootIno && !rec->squash_root();
  if (AdminOp(r->op_case()) && !admin) {
    return Refuse(EPERM, "a tenant may not do admin operations");
  }
  rec->clear_key();
  view->rec = std::move(*rec);
  const proto::TenantRec& t = view->rec;
  // Credentials: squashed and mapped, the groups as well.
  proto::Cred* c = r->mutable_cred();
  c->set_uid(MapId(c->uid(), t.squash_root(), t.uid_map()));
  c->set_gid(MapId(c->gid(), t.squash_root(), t.gid_map()));
  for (int i = 0; i < c->groups_size(); ++i) {
    c->set_groups(i, MapId(c->groups(i), t.squash_root(), t.gid_map()));
  }
  if (r->op_case() == MdsRequest::kSetattr) {  // chown names the client's ids
    proto::SetAttrReq* sa = r->mutable_setattr();
    sa->set_uid(MapId(sa->uid(), false, t.uid_map()));
    sa->set_gid(MapId(sa->gid(), false, t.gid_map()));
  }
  // ".." of the fileset's directory is itself (the kernel asks it of /).
  if (r->op_case() == MdsRequest::kLookup &&
      (r->lookup().parent() == kRootIno || r->lookup().parent() == t.fileset_ino()) &&
      r->lookup().name() == "..") {
    r->mutable_lookup()->set_name(".");
  }
  // Deferred closes outside the fileset are dropped (they name no open of ours).
  for (int i = r->closes_size() - 1; i >= 0; --i) {
    if (!MapInodes(ns_, t.fileset_ino(), r->mutable_closes(i)).ok()) {
      r->mutable_closes()->DeleteSubrange(i, 1);
    }
  }
  const google::protobuf::Reflection* refl = r->GetReflection();
  const google::protobuf::OneofDescriptor* oneof = MdsRequest::descriptor()->FindOneofByName("op");
  const FieldDescriptor* op = refl->GetOneofFieldDescriptor(*r, oneof);
  if (op == nullptr) return Status::Ok();
  return MapInodes(ns_, t.fileset_ino(), refl->MutableMessage(r, op));
}

bool TenantGate::Admit(MdsRequest* r, MdsResponse* resp, std::optional<View>* view) {
  Status st;
  bool reauth = false;
  switch (r->op_case()) {
    case MdsRequest::kTenantHello: st = Hello(*r, resp); break;
    case MdsRequest::kTenantAuth: st = Auth(*r, resp); break;
    default:
      if (r->tenant().empty()) {
        if (Required() && !OpenToDefault(r->op_case())) {
          st = Refuse(EACCES, "this MDS serves tenants only: mount with -o tenant=NAME,keyfile=FILE "
                              "(sfs: SFS_TENANT and SFS_KEYFILE)");
          break;
        }
      } else {
        view->emplace();
        st = Enter(r, &**view, &reauth);
        if (!st.ok()) {
          view->reset();
          break;
        }
      }
      if (r->op_case() == MdsRequest::kOpenPath) {  // its ".." stops at the tenant's root
        r->mutable_open_path()->set_ceiling(view->has_value() ? (*view)->rec.fileset_ino()
                                                              : kRootIno);
      }
      if (r->op_case() == MdsRequest::kTenantAdmin &&
          r->tenant_admin().op() == proto::TENANT_REQUIRE) {
        view->reset();
        st = Require(*r, resp);
        break;
      }
      return false;  // the default tenant: as without tenants; or a tenant's, rewritten
  }
  if (!st.ok()) resp->clear_result();
  if (reauth) resp->set_tenant_reauth(true);
  resp->mutable_status()->set_code(st.code());
  resp->mutable_status()->set_message(st.message());
  resp->set_boot_epoch(ns_->boot_epoch());
  resp->set_features(proto::MDS_FEATURE_CLOSES);
  return true;
}

void TenantGate::Outbound(const View& view, MdsResponse* resp) { Unmap(view.rec, resp); }

// ---- MdsService's use of it (mds_service.h) ----

bool MdsService::GateTenant(MdsRequest& r, rpc::ReplyFn& done) {
  MdsResponse resp;
  std::optional<TenantGate::View> view;
  if (tenants_.Admit(&r, &resp, &view)) {
    done(rpc::Reply{resp.SerializeAsString(), {}});
    return true;
  }
  if (view.has_value()) {
    done = [view = std::move(*view), done = std::move(done)](rpc::Reply reply) mutable {
      MdsResponse out;
      if (out.ParseFromString(reply.payload)) {
        TenantGate::Outbound(view, &out);
        reply.payload = out.SerializeAsString();
      }
      done(std::move(reply));
    };
  }
  return false;
}

}  // namespace sfs::mds
