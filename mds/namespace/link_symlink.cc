// Hard links and symbolic links. Hard links to directories are EPERM, and an
// inode already unlinked (an open orphan) cannot gain a new name (ENOENT), as
// in Linux. A symlink's target is stored in its inode; its size is the
// target's length.
#include <sys/stat.h>

#include "mds/namespace/namespace.h"

namespace sfs::mds {

inline constexpr size_t kMaxSymlinkTarget = 4095;

Status Namespace::Link(const OpCtx& ctx, const proto::LinkReq& req, proto::Attr* out) {
  return Mutate(ctx, out, [&](Txn& txn) -> Status {
    SFS_ASSIGN_OR_RETURN(proto::InodeRec * node, txn.Inode(req.ino()));
    if (S_ISDIR(node->attr().mode())) return Status::Errno(EPERM, "hard link to a directory");
    if (node->attr().nlink() == 0) return Status::Errno(ENOENT, "file was unlinked");
    SFS_RETURN_IF_ERROR(ValidateName(req.new_name()));
    SFS_ASSIGN_OR_RETURN(proto::InodeRec * dir, txn.Dir(req.new_parent()));
    SFS_RETURN_IF_ERROR(CheckAccess(ctx.cred, dir->attr(), kMayExec));
    SFS_ASSIGN_OR_RETURN(auto existing, txn.Dentry(req.new_parent(), req.new_name()));
    if (existing) return Status::Errno(EEXIST, "name exists");
    SFS_RETURN_IF_ERROR(MayModifyDir(ctx.cred, *dir));
    txn.PutDentry(req.new_parent(), req.new_name(), req.ino(), DirentType(node->attr().mode()));
    node->mutable_attr()->set_nlink(node->attr().nlink() + 1);
    node->mutable_attr()->set_ctime_ns(txn.now());
    txn.Dirty(req.ino());
    SFS_RETURN_IF_ERROR(txn.TouchDir(req.new_parent()));
    *out = node->attr();
    return Status::Ok();
  });
}

Status Namespace::Symlink(const OpCtx& ctx, const proto::SymlinkReq& req, proto::Attr* out) {
  if (req.target().empty()) return Status::Errno(ENOENT, "empty symlink target");
  if (req.target().size() > kMaxSymlinkTarget) {
    return Status::Errno(ENAMETOOLONG, "symlink target too long");
  }
  if (req.target().find('\0') != std::string::npos) {
    return Status::Errno(EINVAL, "symlink target contains NUL");
  }
  return Mutate(ctx, out, [&](Txn& txn) -> Status {
    proto::InodeRec* node = nullptr;
    uint64_t ino = 0;
    SFS_RETURN_IF_ERROR(AddNode(txn, ctx, req.parent(), req.name(), S_IFLNK | 0777, &node, &ino));
    node->set_symlink(req.target());
    node->mutable_attr()->set_size(req.target().size());
    *out = node->attr();
    return Status::Ok();
  });
}

}  // namespace sfs::mds
