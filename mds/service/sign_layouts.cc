// The capabilities the MDS attaches to the file layouts it hands out
// (docs/protocol.md "Capabilities"). The one place they are minted for
// clients: every reply passes through MdsService::Dispatch, which calls this.
// Each carries the requester's tenant: by the time a request is dispatched,
// TenantGate::Admit has refused it unless its client id holds a live session
// of MdsRequest.tenant, so that field is the authenticated tenant here ("" =
// the default tenant), and the OSSes believe the capability's tenant alone.
#include <fcntl.h>

#include "common.pb.h"
#include "common/log.h"
#include "mds.pb.h"
#include "mds/namespace/perm.h"
#include "mds/service/mds_service.h"

namespace sfs::mds {
namespace {

void Attach(const auth::ClusterKey& key, int64_t lifetime_s, int64_t issued_ms,
            const std::string& tenant, uint64_t ino, uint32_t rights, proto::Layout* l) {
  if (l->objects_size() == 0) return;  // a directory's default layout: nothing to reach
  auth::Capability cap;
  cap.ino = ino;
  cap.tenant = tenant;
  cap.rights = rights;
  cap.key_id = key.id;
  cap.expiry = auth::NowUnix() + lifetime_s;
  cap.issued_ms = issued_ms;
  cap.objects.reserve(l->objects_size());
  for (const proto::StripeObject& o : l->objects()) cap.objects.emplace_back(o.ost(), o.oid());
  l->set_capability(auth::Sign(cap, key));
}

uint32_t OpenRights(uint32_t open_flags) {
  return (open_flags & O_ACCMODE) == O_RDONLY ? auth::kRead : auth::kRead | auth::kWrite;
}

}  // namespace

void MdsService::SignLayouts(const proto::MdsRequest& req, proto::MdsResponse* resp) const {
  // The key that signs now (signing_keys.h): named by key_id in the token.
  auto current = [this] { return signing_->Current(auth::NowUnixMs()); };
  switch (req.op_case()) {
    case proto::MdsRequest::kOpen:
    case proto::MdsRequest::kOpenPath:
    case proto::MdsRequest::kCreate: {
      if (!resp->has_open()) return;
      uint32_t flags = req.has_open()        ? req.open().open_flags()
                       : req.has_open_path() ? req.open_path().open_flags()
                                             : req.create().open_flags();
      proto::OpenResp* o = resp->mutable_open();
      // Write only if this open may write: the OSSes then refuse writes
      // through a read-only open even from a client that ignores its mode.
      const uint64_t ino = o->attr().ino();
      Attach(current(), capability_lifetime_s_, MintTimeMs(ino, req.tenant()), req.tenant(), ino,
             OpenRights(flags), o->mutable_layout());
      return;
    }
    case proto::MdsRequest::kGetLayout:
    case proto::MdsRequest::kMirrorState: {
      if (!resp->has_get_layout()) return;
      uint64_t ino = req.has_get_layout() ? req.get_layout().ino() : req.mirror_state().ino();
      // No open mode here (a client renewing or refreshing a layout): the
      // caller's write permission on the file decides.
      Result<proto::Attr> attr = ns_->GetAttr(ino);
      if (!attr.ok()) return;
      Cred cred;
      cred.uid = req.cred().uid();
      cred.gid = req.cred().gid();
      cred.groups.assign(req.cred().groups().begin(), req.cred().groups().end());
      // Read too: a reader whose capability a chmod revoked renews here, and
      // must not get back what the new mode no longer gives it.
      uint32_t rights = 0;
      if (CheckAccess(cred, *attr, kMayRead).ok()) rights |= auth::kRead;
      if (CheckAccess(cred, *attr, kMayWrite).ok()) rights |= auth::kWrite;
      if (rights == 0) return;  // no capability: the OSSes refuse its requests
      Attach(current(), capability_lifetime_s_, MintTimeMs(ino, req.tenant()), req.tenant(), ino,
             rights, resp->mutable_get_layout()->mutable_layout());
      return;
    }
    case proto::MdsRequest::kMigrateBegin: {
      if (!resp->has_migrate_begin()) return;
      // Migration copies old to new; the MDS let it begin, so it may write.
      proto::MigrateBeginResp* m = resp->mutable_migrate_begin();
      uint64_t ino = req.migrate_begin().ino();
      const int64_t issued = MintTimeMs(ino, req.tenant());
      const auth::ClusterKey key = current();
      Attach(key, capability_lifetime_s_, issued, req.tenant(), ino, auth::kRead | auth::kWrite,
             m->mutable_old_layout());
      Attach(key, capability_lifetime_s_, issued, req.tenant(), ino, auth::kRead | auth::kWrite,
             m->mutable_new_layout());
      return;
    }
    default:
      return;
  }
}

Status MdsService::GrantKv(const proto::MdsRequest& req, proto::KvGrantResp* out) const {
  if (signing_ == nullptr) return Status::Ok();  // the OSSes check nothing: no token needed
  uint32_t kv_id = 0;                          // the default tenant's
  if (!req.tenant().empty()) {
    SFS_ASSIGN_OR_RETURN(proto::TenantRec rec, ns_->GetTenant(req.tenant()));
    if (rec.kv_id() == 0) {
      return Status::Errno(EACCES, "tenant '" + req.tenant() +
                                       "' has no KV number (made before the KV tier knew "
                                       "tenants): re-create it to use the KV tier");
    }
    kv_id = rec.kv_id();
  }
  auth::Capability cap;
  cap.tenant = req.tenant();
  cap.kv_tenant = kv_id;
  cap.rights = auth::kKv;
  const auth::ClusterKey key = signing_->Current(auth::NowUnixMs());
  cap.key_id = key.id;
  cap.expiry = auth::NowUnix() + capability_lifetime_s_;
  cap.issued_ms = MintTimeMs(0, req.tenant());
  out->set_capability(auth::Sign(cap, key));
  out->set_expiry(cap.expiry);
  return Status::Ok();
}

Status MdsService::CapKey(const proto::MdsRequest& req, proto::CapKeyResp* out) {
  if (req.cred().uid() != 0) return Status::Errno(EPERM, "only root may see or rotate keys");
  if (signing_ == nullptr) {
    return Status::Errno(ENOTSUP, "this MDS has no cluster key: capabilities are off, no key signs");
  }
  const int64_t now = auth::NowUnixMs();
  if (req.cap_key().rotate()) {
    auth::KeyRotator::Rotation r = signing_->RotateNow(now);
    out->set_new_id(r.new_id);
    out->set_signs_from_ms(r.signs_from_ms);
    std::string retiring;
    for (uint32_t id : r.retiring) {
      out->add_retiring_ids(id);
      retiring += " " + std::to_string(id);
    }
    LOG_WARN("capability signing keys: forced rotation (client " << req.client_id()
             << "): key " << r.new_id << " signs in " << r.signs_from_ms - now
             << " ms; then retired:" << retiring);
  }
  for (const auth::PublishedKey& k : signing_->Published(now)) {
    out->add_published_ids(k.key.id);
    if (k.current) out->set_current_id(k.key.id);
  }
  out->set_period_s(signing_->period_ms() / 1000);
  return Status::Ok();
}

}  // namespace sfs::mds
