// Extended attributes, stored as X<ino><name> keys beside the inode.
// Names: 1..255 bytes (else ERANGE, as Linux). Values: up to 64 KiB (E2BIG).
// Permissions as Linux: "user." needs read/write access and exists only on
// regular files and directories; "trusted." is root's (others see nothing);
// "security." changes need root; "system." (POSIX ACLs) is not supported
// for writing (EOPNOTSUPP). Setting or removing one updates ctime.
#include <sys/stat.h>

#include "mds/namespace/keys.h"
#include "mds/namespace/namespace.h"

namespace sfs::mds {
namespace {

constexpr uint32_t kXattrCreate = 1;
constexpr uint32_t kXattrReplace = 2;

bool StartsWith(const std::string& s, std::string_view prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

Status CheckName(const std::string& name) {
  if (name.empty() || name.size() > 255) return Status::Errno(ERANGE, "bad xattr name length");
  return Status::Ok();
}

Status MayRead(const Cred& cred, const proto::Attr& a, const std::string& name) {
  if (StartsWith(name, "trusted.") && !cred.root()) return Status::Errno(ENODATA);
  if (StartsWith(name, "user.")) return CheckAccess(cred, a, kMayRead);
  return Status::Ok();
}

Status MayWrite(const Cred& cred, const proto::Attr& a, const std::string& name) {
  if (StartsWith(name, "system.")) return Status::Errno(EOPNOTSUPP, "ACLs not supported");
  if (StartsWith(name, "trusted.") || StartsWith(name, "security.")) {
    return cred.root() ? Status::Ok() : Status::Errno(EPERM, "needs root");
  }
  if (StartsWith(name, "user.")) {
    if (!S_ISREG(a.mode()) && !S_ISDIR(a.mode())) return Status::Errno(EPERM, "user xattr type");
    return CheckAccess(cred, a, kMayWrite);
  }
  return OwnerOrRoot(cred, a) ? Status::Ok() : Status::Errno(EPERM, "not the owner");
}

}  // namespace

Result<std::string> Namespace::GetXattr(const Cred& cred, uint64_t ino, const std::string& name) {
  SFS_RETURN_IF_ERROR(CheckName(name));
  std::shared_lock lock(mu_);
  SFS_ASSIGN_OR_RETURN(proto::InodeRec rec, LoadInodeRec(store_, ino));
  SFS_RETURN_IF_ERROR(MayRead(cred, rec.attr(), name));
  auto value = store_->Get(keys::Xattr(ino, name));
  if (!value.ok() && value.status().code() == ENOENT) return Status::Errno(ENODATA);
  return value;
}

Result<std::vector<std::string>> Namespace::ListXattr(const Cred& cred, uint64_t ino) {
  std::shared_lock lock(mu_);
  SFS_ASSIGN_OR_RETURN(proto::InodeRec rec, LoadInodeRec(store_, ino));
  std::vector<std::string> names;
  std::string prefix = keys::XattrPrefix(ino);
  SFS_RETURN_IF_ERROR(store_->Scan(prefix, keys::PrefixEnd(prefix),
                                   [&](std::string_view k, std::string_view) {
                                     std::string name(keys::NameOf(k));
                                     if (cred.root() || !StartsWith(name, "trusted.")) {
                                       names.push_back(std::move(name));
                                     }
                                     return true;
                                   }));
  return names;
}

Status Namespace::SetXattr(const OpCtx& ctx, const proto::SetXattrReq& req) {
  SFS_RETURN_IF_ERROR(CheckName(req.name()));
  if (req.value().size() > kMaxXattrValue) return Status::Errno(E2BIG, "xattr value too large");
  if ((req.flags() & ~(kXattrCreate | kXattrReplace)) != 0) {
    return Status::Errno(EINVAL, "bad xattr flags");
  }
  return Mutate(ctx, nullptr, [&](Txn& txn) -> Status {
    SFS_ASSIGN_OR_RETURN(proto::InodeRec * node, txn.Inode(req.ino()));
    SFS_RETURN_IF_ERROR(MayWrite(ctx.cred, node->attr(), req.name()));
    std::string key = keys::Xattr(req.ino(), req.name());
    auto old = store_->Get(key);
    if (!old.ok() && old.status().code() != ENOENT) return old.status();
    if (old.ok() && (req.flags() & kXattrCreate)) return Status::Errno(EEXIST, "xattr exists");
    if (!old.ok() && (req.flags() & kXattrReplace)) return Status::Errno(ENODATA, "no such xattr");
    txn.batch().Put(std::move(key), req.value());
    node->mutable_attr()->set_ctime_ns(txn.now());
    txn.Dirty(req.ino());
    return Status::Ok();
  });
}

Status Namespace::RemoveXattr(const OpCtx& ctx, const proto::RemoveXattrReq& req) {
  SFS_RETURN_IF_ERROR(CheckName(req.name()));
  return Mutate(ctx, nullptr, [&](Txn& txn) -> Status {
    SFS_ASSIGN_OR_RETURN(proto::InodeRec * node, txn.Inode(req.ino()));
    SFS_RETURN_IF_ERROR(MayWrite(ctx.cred, node->attr(), req.name()));
    std::string key = keys::Xattr(req.ino(), req.name());
    auto old = store_->Get(key);
    if (!old.ok() && old.status().code() == ENOENT) return Status::Errno(ENODATA, "no such xattr");
    if (!old.ok()) return old.status();
    txn.batch().Delete(std::move(key));
    node->mutable_attr()->set_ctime_ns(txn.now());
    txn.Dirty(req.ino());
    return Status::Ok();
  });
}

}  // namespace sfs::mds
