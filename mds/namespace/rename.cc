// rename(2) and renameat2(2) with RENAME_NOREPLACE and RENAME_EXCHANGE, as
// one atomic batch. Rules, in Linux's order: both names valid; search on
// both parents; source exists (ENOENT); NOREPLACE with an existing target
// EEXIST; EXCHANGE without a target ENOENT; the same inode under both names
// is a successful no-op; write on both parents; sticky rule on each victim;
// type rules for replacing (dir over non-dir ENOTDIR, non-dir over dir
// EISDIR, dir over non-empty dir ENOTEMPTY); a directory may not move under
// itself (EINVAL); a directory changing parent needs write on itself ('..').
// Directories moved keep '..' (InodeRec.parent) and their parents' nlink right.
#include <sys/stat.h>

#include "mds/namespace/namespace.h"

namespace sfs::mds {
namespace {

constexpr uint32_t kNoReplace = 1;
constexpr uint32_t kExchange = 2;
constexpr int kMaxDepth = 4096;

void AddLinks(proto::InodeRec* dir, int delta) {
  dir->mutable_attr()->set_nlink(dir->attr().nlink() + delta);
}


Status CheckReplace(const RenameEnds& e) {
  if (e.src_dir && !e.dst_dir) return Status::Errno(ENOTDIR, "target is not a directory");
  if (!e.src_dir && e.dst_dir) return Status::Errno(EISDIR, "target is a directory");
  return Status::Ok();
}

}  // namespace

// EINVAL iff `dir` is `start` or one of its ancestors.
Status Namespace::CheckNotAncestor(Txn& txn, uint64_t dir, uint64_t start) {
  uint64_t cur = start;
  for (int depth = 0; depth < kMaxDepth; ++depth) {
    if (cur == dir) return Status::Errno(EINVAL, "directory would move under itself");
    if (cur == kRootIno) return Status::Ok();
    SFS_ASSIGN_OR_RETURN(proto::InodeRec * rec, txn.Inode(cur));
    cur = rec->parent();
  }
  return Status::Errno(ELOOP, "directory tree too deep");
}

Status Namespace::Rename(const OpCtx& ctx, const proto::RenameReq& req) {
  return Mutate(ctx, nullptr, [&](Txn& txn) { return RenameLocked(txn, ctx, req); });
}

Status Namespace::RenameLocked(Txn& txn, const OpCtx& ctx, const proto::RenameReq& req) {
  const Cred& cred = ctx.cred;
  uint32_t flags = req.flags();
  if ((flags & ~(kNoReplace | kExchange)) != 0 || flags == (kNoReplace | kExchange)) {
    return Status::Errno(EINVAL, "bad rename flags");
  }
  bool exchange = (flags & kExchange) != 0;
  SFS_RETURN_IF_ERROR(ValidateName(req.name()));
  SFS_RETURN_IF_ERROR(ValidateName(req.new_name()));
  RenameEnds e;
  SFS_ASSIGN_OR_RETURN(e.sdir, txn.Dir(req.parent()));
  SFS_ASSIGN_OR_RETURN(e.ddir, txn.Dir(req.new_parent()));
  SFS_RETURN_IF_ERROR(CheckAccess(cred, e.sdir->attr(), kMayExec));
  SFS_RETURN_IF_ERROR(CheckAccess(cred, e.ddir->attr(), kMayExec));
  SFS_ASSIGN_OR_RETURN(auto sent, txn.Dentry(req.parent(), req.name()));
  if (!sent) return Status::Errno(ENOENT, "no such entry");
  SFS_ASSIGN_OR_RETURN(auto dent, txn.Dentry(req.new_parent(), req.new_name()));
  if (dent && (flags & kNoReplace)) return Status::Errno(EEXIST, "target exists");
  if (!dent && exchange) return Status::Errno(ENOENT, "no target to exchange with");
  if (dent && dent->ino() == sent->ino()) return Status::Ok();
  SFS_RETURN_IF_ERROR(MayModifyDir(cred, *e.sdir));
  SFS_RETURN_IF_ERROR(MayModifyDir(cred, *e.ddir));
  e.src_ino = sent->ino();
  SFS_ASSIGN_OR_RETURN(e.src, txn.Inode(e.src_ino));
  SFS_RETURN_IF_ERROR(CheckSticky(cred, e.sdir->attr(), e.src->attr()));
  e.src_dir = S_ISDIR(e.src->attr().mode());
  if (dent) {
    e.dst_ino = dent->ino();
    SFS_ASSIGN_OR_RETURN(e.dst, txn.Inode(e.dst_ino));
    SFS_RETURN_IF_ERROR(CheckSticky(cred, e.ddir->attr(), e.dst->attr()));
    e.dst_dir = S_ISDIR(e.dst->attr().mode());
  }
  if (e.dst != nullptr && !exchange) SFS_RETURN_IF_ERROR(CheckReplace(e));
  bool moves = req.parent() != req.new_parent();
  if (e.src_dir) {
    SFS_RETURN_IF_ERROR(CheckNotAncestor(txn, e.src_ino, req.new_parent()));
    if (moves) SFS_RETURN_IF_ERROR(CheckAccess(cred, e.src->attr(), kMayWrite));
  }
  if (exchange && e.dst_dir) {
    SFS_RETURN_IF_ERROR(CheckNotAncestor(txn, e.dst_ino, req.parent()));
    if (moves) SFS_RETURN_IF_ERROR(CheckAccess(cred, e.dst->attr(), kMayWrite));
  }
  if (e.dst_dir && !exchange) {
    SFS_ASSIGN_OR_RETURN(bool empty, DirEmpty(e.dst_ino));
    if (!empty) return Status::Errno(ENOTEMPTY, "target directory not empty");
  }
  return exchange ? ApplyExchange(txn, req, e) : ApplyMove(txn, req, e);
}

// Swaps the two entries; directories keep '..' and their parents' nlink right.
Status Namespace::ApplyExchange(Txn& txn, const proto::RenameReq& req, RenameEnds& e) {
  bool moves = req.parent() != req.new_parent();
  txn.PutDentry(req.parent(), req.name(), e.dst_ino, DirentType(e.dst->attr().mode()));
  txn.PutDentry(req.new_parent(), req.new_name(), e.src_ino, DirentType(e.src->attr().mode()));
  // Files too: a directory holding them (tenant.cc InSubtree walks it).
  if (moves) e.dst->set_parent(req.parent());
  if (moves) e.src->set_parent(req.new_parent());
  if (moves && e.src_dir != e.dst_dir) {
    AddLinks(e.sdir, e.src_dir ? -1 : 1);
    AddLinks(e.ddir, e.src_dir ? 1 : -1);
  }
  for (auto [ino, node] : {std::pair{e.src_ino, e.src}, std::pair{e.dst_ino, e.dst}}) {
    node->mutable_attr()->set_ctime_ns(txn.now());
    txn.Dirty(ino);
  }
  SFS_RETURN_IF_ERROR(txn.TouchDir(req.parent()));
  return txn.TouchDir(req.new_parent());
}

// Moves the source to the target name, dropping whatever the target was.
Status Namespace::ApplyMove(Txn& txn, const proto::RenameReq& req, RenameEnds& e) {
  bool moves = req.parent() != req.new_parent();
  txn.DeleteDentry(req.parent(), req.name());
  if (e.dst_dir) {
    AddLinks(e.ddir, -1);
    SFS_RETURN_IF_ERROR(FreeInode(txn, e.dst_ino));
  } else if (e.dst != nullptr) {
    SFS_RETURN_IF_ERROR(DropLink(txn, e.dst_ino));
  }
  e.dst = nullptr;  // may be freed
  if (moves && e.src_dir) {
    AddLinks(e.sdir, -1);
    AddLinks(e.ddir, 1);
  }
  if (moves) e.src->set_parent(req.new_parent());  // files too (tenant.cc InSubtree)
  txn.PutDentry(req.new_parent(), req.new_name(), e.src_ino, DirentType(e.src->attr().mode()));
  e.src->mutable_attr()->set_ctime_ns(txn.now());
  txn.Dirty(e.src_ino);
  SFS_RETURN_IF_ERROR(txn.TouchDir(req.parent()));
  return txn.TouchDir(req.new_parent());
}

}  // namespace sfs::mds
