// setattr: chmod, chown, truncate (size set exactly) and utimes, with Linux's
// rules. chmod: owner or root (EPERM); a non-root caller outside the file's
// group loses S_ISGID. chown: only root changes the uid; the owner may change
// the gid to a group it belongs to; any chown of a non-directory clears
// S_ISUID, and S_ISGID when group-exec is set (Linux does so for root too).
// Size: the owner, root or a caller with write access (EACCES); it sets
// mtime unless the same call sets it. Times: explicit values need owner or
// root (EPERM); "now" also passes with write access (EACCES). Any change
// sets ctime to now, or to the ctime given with SETATTR_CTIME.
// SETATTR_KILL_SUID is the set-id drop of a write (the kernel's
// file_remove_privs, which sfs-mount does for it: FUSE_CAP_HANDLE_KILLPRIV):
// S_ISUID, and S_ISGID when group-exec is set, from a regular file, by the
// owner, root or anyone with write access (EPERM otherwise) — ext4 lets any
// writer's write clear them, so a non-owner's write must not fail here.
#include <sys/stat.h>

#include "mds/namespace/namespace.h"

namespace sfs::mds {
namespace {

bool Has(const proto::SetAttrReq& req, uint32_t bit) { return (req.valid() & bit) != 0; }

Status CheckOwnership(const Cred& cred, const proto::Attr& a, const proto::SetAttrReq& req) {
  bool owner = cred.uid == a.uid();
  if (Has(req, proto::SETATTR_MODE) && !OwnerOrRoot(cred, a)) {
    return Status::Errno(EPERM, "only the owner may chmod");
  }
  if (Has(req, proto::SETATTR_UID) && !cred.root() && !(owner && req.uid() == a.uid())) {
    return Status::Errno(EPERM, "only root may change the owner");
  }
  if (Has(req, proto::SETATTR_GID) && !cred.root() &&
      !(owner && (req.gid() == a.gid() || cred.InGroup(req.gid())))) {
    return Status::Errno(EPERM, "not a member of the new group");
  }
  return Status::Ok();
}

Status CheckSizeAndTimes(const Cred& cred, const proto::Attr& a, const proto::SetAttrReq& req) {
  if (Has(req, proto::SETATTR_SIZE)) {
    if (S_ISDIR(a.mode())) return Status::Errno(EISDIR, "is a directory");
    if (!S_ISREG(a.mode())) return Status::Errno(EINVAL, "not a regular file");
    if (!OwnerOrRoot(cred, a)) SFS_RETURN_IF_ERROR(CheckAccess(cred, a, kMayWrite));
  }
  bool explicit_atime = Has(req, proto::SETATTR_ATIME) && !Has(req, proto::SETATTR_ATIME_NOW);
  bool explicit_mtime = Has(req, proto::SETATTR_MTIME) && !Has(req, proto::SETATTR_MTIME_NOW);
  bool now = Has(req, proto::SETATTR_ATIME_NOW) || Has(req, proto::SETATTR_MTIME_NOW);
  if ((explicit_atime || explicit_mtime) && !OwnerOrRoot(cred, a)) {
    return Status::Errno(EPERM, "only the owner may set explicit times");
  }
  if (now && !OwnerOrRoot(cred, a)) SFS_RETURN_IF_ERROR(CheckAccess(cred, a, kMayWrite));
  if (Has(req, proto::SETATTR_KILL_SUID) && !OwnerOrRoot(cred, a) &&
      !CheckAccess(cred, a, kMayWrite).ok()) {
    return Status::Errno(EPERM, "set-id bits dropped only by a writer");
  }
  return Status::Ok();
}

// The bits a write drops from mode (none from anything but a regular file).
uint32_t SetIdBitsOfWrite(uint32_t mode) {
  if (!S_ISREG(mode)) return 0;
  uint32_t bits = mode & S_ISUID;
  if ((mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP)) bits |= S_ISGID;
  return bits;
}

void ApplyOwnership(const Cred& cred, proto::Attr* a, const proto::SetAttrReq& req) {
  if (Has(req, proto::SETATTR_UID)) a->set_uid(req.uid());
  if (Has(req, proto::SETATTR_GID)) a->set_gid(req.gid());
  uint32_t mode = a->mode();
  if ((Has(req, proto::SETATTR_UID) || Has(req, proto::SETATTR_GID)) && !S_ISDIR(mode)) {
    mode &= ~S_ISUID;
    if (mode & S_IXGRP) mode &= ~S_ISGID;
  }
  if (Has(req, proto::SETATTR_MODE)) {
    mode = (mode & S_IFMT) | (req.mode() & 07777);
    if (!cred.root() && !cred.InGroup(a->gid())) mode &= ~S_ISGID;
  }
  if (Has(req, proto::SETATTR_KILL_SUID)) mode &= ~SetIdBitsOfWrite(mode);
  a->set_mode(mode);
}

void ApplySizeAndTimes(proto::Attr* a, const proto::SetAttrReq& req, int64_t now) {
  if (Has(req, proto::SETATTR_SIZE)) {
    a->set_size(req.size());
    a->set_data_version(a->data_version() + 1);  // cached blocks of the old size go stale
    if (req.size() == 0) a->set_blocks(0);
    a->set_mtime_ns(now);
  }
  if (Has(req, proto::SETATTR_ATIME_NOW)) {
    a->set_atime_ns(now);
  } else if (Has(req, proto::SETATTR_ATIME)) {
    a->set_atime_ns(req.atime_ns());
  }
  if (Has(req, proto::SETATTR_MTIME_NOW)) {
    a->set_mtime_ns(now);
  } else if (Has(req, proto::SETATTR_MTIME)) {
    a->set_mtime_ns(req.mtime_ns());
  }
  a->set_ctime_ns(Has(req, proto::SETATTR_CTIME) ? req.ctime_ns() : now);
}

}  // namespace

Status Namespace::SetAttr(const OpCtx& ctx, const proto::SetAttrReq& req, proto::Attr* out) {
  return Mutate(ctx, out, [&](Txn& txn) -> Status {
    SFS_ASSIGN_OR_RETURN(proto::InodeRec * node, txn.Inode(req.ino()));
    proto::Attr* a = node->mutable_attr();
    SFS_RETURN_IF_ERROR(CheckOwnership(ctx.cred, *a, req));
    SFS_RETURN_IF_ERROR(CheckSizeAndTimes(ctx.cred, *a, req));
    // A set-id drop alone that finds nothing to drop changes nothing (no ctime).
    const bool no_op = req.valid() == proto::SETATTR_KILL_SUID && SetIdBitsOfWrite(a->mode()) == 0;
    if (req.valid() != 0 && !no_op) {
      ApplyOwnership(ctx.cred, a, req);
      ApplySizeAndTimes(a, req, txn.now());
      txn.Dirty(req.ino());
    }
    *out = *a;
    return Status::Ok();
  });
}

}  // namespace sfs::mds
