// Revocations on the MDS (issue 17; common/auth/revocation.h,
// docs/security.md "Revocation"): which requests void capabilities already
// handed out, and how the OSSes learn of it (the heartbeat's answer, which
// the cluster key seals: oss_gate.h).
//
// Revoked: the capabilities of an inode whose mode, owner or group changed
// (any such change: whether it narrows someone's rights depends on who holds
// which capability, which the MDS does not track), and every capability of a
// tenant that was removed or had its key rotated. Not revoked: unlink. POSIX
// lets a process that has a file open go on reading and writing it after its
// last name is gone; its objects are destroyed once the last open is closed,
// which ends every capability for them.
#include "common/log.h"
#include "mds.pb.h"
#include "mds/service/mds_service.h"

namespace sfs::mds {
namespace {

// Revocations one heartbeat answer carries at most; the rest follow in the
// next heartbeats.
constexpr size_t kPerHeartbeat = 20000;

constexpr uint32_t kOwnerBits =
    proto::SETATTR_MODE | proto::SETATTR_UID | proto::SETATTR_GID;

}  // namespace

int64_t MdsService::MintTimeMs(uint64_t ino, const std::string& tenant) const {
  return std::max(auth::NowUnixMs(), revocations_.MintFloorMs(ino, tenant));
}

void MdsService::NoteRevocations(const proto::MdsRequest& req, proto::MdsResponse* resp) {
  using Scope = auth::Revocation::Scope;
  switch (req.op_case()) {
    case proto::MdsRequest::kSetattr:
      if ((req.setattr().valid() & kOwnerBits) != 0) {
        revocations_.Add({.scope = Scope::kInode, .ino = req.setattr().ino(),
                          .before_ms = auth::NowUnixMs()});
      }
      return;
    case proto::MdsRequest::kTenantAdmin:
      if (req.tenant_admin().op() == proto::TENANT_REMOVE ||
          req.tenant_admin().op() == proto::TENANT_ROTATE) {
        revocations_.Add({.scope = Scope::kTenant, .tenant = req.tenant_admin().name(),
                          .before_ms = auth::NowUnixMs()});
      }
      return;
    case proto::MdsRequest::kHeartbeat: {
      revocations_.Prune(auth::NowUnixMs());
      const proto::HeartbeatReq& hb = req.heartbeat();
      // Another run's numbers mean nothing here: all of this run's.
      const uint64_t seen =
          hb.revocations_epoch() == static_cast<uint64_t>(revocation_epoch_) ? hb.revocations_seen() : 0;
      proto::HeartbeatResp* out = resp->mutable_heartbeat();
      out->set_revocations_epoch(static_cast<uint64_t>(revocation_epoch_));
      for (const auth::Revocation& r : revocations_.Since(seen, kPerHeartbeat)) {
        proto::RevocationEntry* e = out->add_revocations();
        e->set_scope(static_cast<uint32_t>(r.scope));
        e->set_ino(r.ino);
        e->set_tenant(r.tenant);
        e->set_before_ms(r.before_ms);
        e->set_seq(r.seq);
      }
      return;
    }
    default:
      return;
  }
}

}  // namespace sfs::mds
