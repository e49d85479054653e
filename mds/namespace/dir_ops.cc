// Ops that add or remove one name: mknod, mkdir, unlink, rmdir. Link counts:
// a new directory has nlink 2 and adds one to its parent (its '..').
#include <sys/stat.h>

#include "mds/namespace/keys.h"
#include "mds/namespace/namespace.h"

namespace sfs::mds {
namespace {

// Resolves parent/name for removal: the directory, its entry and the victim,
// after the search, existence, write and sticky checks, in Linux's order.
struct Victim {
  proto::InodeRec* dir = nullptr;
  proto::InodeRec* node = nullptr;
  uint64_t ino = 0;
};

Result<Victim> FindVictim(Txn& txn, const Cred& cred, uint64_t parent, const std::string& name) {
  SFS_RETURN_IF_ERROR(ValidateName(name));
  Victim v;
  SFS_ASSIGN_OR_RETURN(v.dir, txn.Dir(parent));
  SFS_RETURN_IF_ERROR(CheckAccess(cred, v.dir->attr(), kMayExec));
  SFS_ASSIGN_OR_RETURN(auto entry, txn.Dentry(parent, name));
  if (!entry) return Status::Errno(ENOENT, "no such entry");
  SFS_RETURN_IF_ERROR(CheckAccess(cred, v.dir->attr(), kMayWrite | kMayExec));
  v.ino = entry->ino();
  SFS_ASSIGN_OR_RETURN(v.node, txn.Inode(v.ino));
  SFS_RETURN_IF_ERROR(CheckSticky(cred, v.dir->attr(), v.node->attr()));
  return v;
}

}  // namespace

Result<bool> Namespace::DirEmpty(uint64_t ino) {
  bool empty = true;
  std::string prefix = keys::DentryPrefix(ino);
  SFS_RETURN_IF_ERROR(store_->Scan(prefix, keys::PrefixEnd(prefix),
                                   [&](std::string_view, std::string_view) {
                                     empty = false;
                                     return false;
                                   }));
  return empty;
}

Status Namespace::Mknod(const OpCtx& ctx, const proto::MknodReq& req, proto::Attr* out) {
  uint32_t type = req.mode() & S_IFMT;
  if (type == 0) type = S_IFREG;
  if (type == S_IFDIR) return Status::Errno(EPERM, "mknod of a directory");
  if (type != S_IFREG && type != S_IFIFO && type != S_IFSOCK && type != S_IFCHR &&
      type != S_IFBLK) {
    return Status::Errno(EINVAL, "bad file type");
  }
  if ((type == S_IFCHR || type == S_IFBLK) && !ctx.cred.root()) {
    return Status::Errno(EPERM, "device nodes need root");
  }
  return Mutate(ctx, out, [&](Txn& txn) -> Status {
    proto::Layout layout;
    if (type == S_IFREG) {
      SFS_RETURN_IF_ERROR(ValidateName(req.name()));
      bool inherited = false;
      SFS_ASSIGN_OR_RETURN(proto::Layout base, EffectiveDefault(req.parent(), &inherited));
      SFS_ASSIGN_OR_RETURN(layout, NewFileLayout(ctx, proto::Layout(), base));
    }
    proto::InodeRec* node = nullptr;
    uint64_t ino = 0;
    SFS_RETURN_IF_ERROR(
        AddNode(txn, ctx, req.parent(), req.name(), type | (req.mode() & 07777), &node, &ino));
    if (type == S_IFREG) *node->mutable_layout() = std::move(layout);
    if (type == S_IFCHR || type == S_IFBLK) node->mutable_attr()->set_rdev(req.rdev());
    *out = node->attr();
    return Status::Ok();
  });
}

Status Namespace::Mkdir(const OpCtx& ctx, const proto::MkdirReq& req, proto::Attr* out) {
  return Mutate(ctx, out, [&](Txn& txn) -> Status {
    proto::InodeRec* node = nullptr;
    uint64_t ino = 0;
    SFS_RETURN_IF_ERROR(AddNode(txn, ctx, req.parent(), req.name(),
                                S_IFDIR | (req.mode() & 07777), &node, &ino));
    node->set_parent(req.parent());
    SFS_ASSIGN_OR_RETURN(proto::InodeRec * dir, txn.Inode(req.parent()));
    dir->mutable_attr()->set_nlink(dir->attr().nlink() + 1);
    txn.Dirty(req.parent());
    *out = node->attr();
    return Status::Ok();
  });
}

Status Namespace::Unlink(const OpCtx& ctx, const proto::UnlinkReq& req) {
  return Mutate(ctx, nullptr, [&](Txn& txn) -> Status {
    SFS_ASSIGN_OR_RETURN(Victim v, FindVictim(txn, ctx.cred, req.parent(), req.name()));
    if (S_ISDIR(v.node->attr().mode())) return Status::Errno(EISDIR, "is a directory");
    txn.DeleteDentry(req.parent(), req.name());
    SFS_RETURN_IF_ERROR(txn.TouchDir(req.parent()));
    return DropLink(txn, v.ino);
  });
}

Status Namespace::Rmdir(const OpCtx& ctx, const proto::RmdirReq& req) {
  return Mutate(ctx, nullptr, [&](Txn& txn) -> Status {
    SFS_ASSIGN_OR_RETURN(Victim v, FindVictim(txn, ctx.cred, req.parent(), req.name()));
    if (!S_ISDIR(v.node->attr().mode())) return Status::Errno(ENOTDIR, "not a directory");
    SFS_ASSIGN_OR_RETURN(bool empty, DirEmpty(v.ino));
    if (!empty) return Status::Errno(ENOTEMPTY, "directory not empty");
    txn.DeleteDentry(req.parent(), req.name());
    v.dir->mutable_attr()->set_nlink(v.dir->attr().nlink() - 1);
    SFS_RETURN_IF_ERROR(txn.TouchDir(req.parent()));
    return FreeInode(txn, v.ino);
  });
}

}  // namespace sfs::mds
