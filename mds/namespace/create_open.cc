// Create-or-open, open, close and size reports, plus the life cycle of open
// files: a file unlinked while open becomes an orphan (nlink 0, O key) and is
// freed at its last close, when its client times out, or — for orphans left
// by a previous run — once clients had client_timeout_ms to reopen them.
#include <fcntl.h>
#include <sys/stat.h>

#include <optional>
#include <set>

#include "common/log.h"
#include "mds/namespace/keys.h"
#include "mds/namespace/namespace.h"

namespace sfs::mds {
namespace {

// Access an open with these flags needs: O_RDONLY r, O_WRONLY w, O_RDWR both,
// O_TRUNC w. A directory opened for writing is EISDIR.
Status CheckOpenAccess(const Cred& cred, const proto::Attr& attr, uint32_t flags) {
  int mask = 0;
  switch (flags & O_ACCMODE) {
    case O_RDONLY: mask = kMayRead; break;
    case O_WRONLY: mask = kMayWrite; break;
    default: mask = kMayRead | kMayWrite; break;
  }
  if (flags & O_TRUNC) mask |= kMayWrite;
  if (S_ISDIR(attr.mode()) && (mask & kMayWrite)) return Status::Errno(EISDIR, "is a directory");
  if (S_ISLNK(attr.mode())) return Status::Errno(ELOOP, "is a symlink");
  return CheckAccess(cred, attr, mask);
}

// Applies a client's report of written size, mtime and block usage; true iff
// anything changed. The size only grows here.
bool ApplySizeReport(proto::Attr* a, bool has_size, uint64_t size, int64_t mtime_ns,
                     bool has_blocks, uint64_t blocks, int64_t now) {
  bool changed = false;
  if (has_size && size > a->size()) {
    a->set_size(size);
    if (mtime_ns == 0) mtime_ns = now;
    changed = true;
  }
  if (mtime_ns != 0 && mtime_ns != a->mtime_ns()) {
    a->set_mtime_ns(mtime_ns);
    a->set_ctime_ns(std::max(a->ctime_ns(), mtime_ns));
    changed = true;
  }
  if (has_blocks && blocks != a->blocks()) {
    a->set_blocks(blocks);
    changed = true;
  }
  return changed;
}

}  // namespace

Status Namespace::RegisterOpen(const OpCtx& ctx, Txn& txn, uint64_t ino, proto::InodeRec* rec,
                               uint32_t flags, proto::OpenResp* out) {
  bool write = (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC) != 0;
  if (write && S_ISREG(rec->attr().mode())) {
    // Data may change from now on: caches keyed by the old version stop
    // matching at the next open (close-to-open), and no open sees the
    // version a writer may still be changing without write_opens set.
    rec->mutable_attr()->set_data_version(rec->attr().data_version() + 1);
    txn.Dirty(ino);
  }
  *out->mutable_attr() = rec->attr();
  // An open is acknowledged before its commit (mdsop/op_table.h): a crash may
  // lose the bump, and a version given out before it would then name other
  // bytes after the restart. The boot epoch in the version given out makes
  // every version of a new boot new (client caches start cold after an MDS
  // restart, never stale).
  constexpr int kVersionBits = 40;
  out->mutable_attr()->set_data_version(
      (boot_epoch_.load() << kVersionBits) |
      (rec->attr().data_version() & ((uint64_t{1} << kVersionBits) - 1)));
  if (S_ISREG(rec->attr().mode())) *out->mutable_layout() = rec->layout();
  out->set_open_id(opens_.Add(ctx.client_id, ino, NowMs(), write));
  const auto write_opens = opens_.WriteOpenCount(ino);
  out->set_write_opens(write_opens > 0);
  out->set_first_write_open(write && write_opens == 1);
  out->set_data_versioned(true);
  return Status::Ok();
}

void Namespace::DropUncommittedOpen(proto::OpenResp* out) {
  // The body registered an open, then the commit failed (e.g. ENOSPC): the
  // id was never returned to anyone, so forget it.
  if (out->open_id() != 0) opens_.Remove(out->open_id());
  out->set_open_id(0);
}

void Namespace::RenewReplayedOpen(const OpCtx& ctx, uint32_t flags, proto::OpenResp* out) {
  if (out->open_id() == 0 || OpenTable::EpochOf(out->open_id()) == boot_epoch_.load()) return;
  if (opens_.Contains(out->open_id())) return;
  bool write = (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC) != 0;
  uint64_t id = opens_.Add(ctx.client_id, out->attr().ino(), NowMs(), write);
  LOG_INFO("replayed open of inode " << out->attr().ino() << " from an earlier boot: open id "
                                     << out->open_id() << " -> " << id);
  out->set_open_id(id);
}

Status Namespace::Create(const OpCtx& ctx, const proto::CreateReq& req, proto::OpenResp* out) {
  Status st = CreateOrReplay(ctx, req, out);
  if (st.ok()) RenewReplayedOpen(ctx, req.open_flags(), out);
  // A replay (mds.proto ReplayReq) re-creates the file; its client opens it
  // again itself once replay is over, as it does its other open files.
  if (!st.ok() || ctx.replay != nullptr) DropUncommittedOpen(out);
  return st;
}

Status Namespace::CreateOrReplay(const OpCtx& ctx, const proto::CreateReq& req,
                               proto::OpenResp* out) {
  return Mutate(ctx, out, [&](Txn& txn) -> Status {
    SFS_RETURN_IF_ERROR(ValidateName(req.name()));
    SFS_ASSIGN_OR_RETURN(proto::InodeRec * dir, txn.Dir(req.parent()));
    SFS_RETURN_IF_ERROR(CheckAccess(ctx.cred, dir->attr(), kMayExec));
    SFS_ASSIGN_OR_RETURN(auto existing, txn.Dentry(req.parent(), req.name()));
    if (existing && ctx.replay != nullptr) {
      return Status::Errno(EEXIST, "replayed create: the name was taken meanwhile");
    }
    if (existing) {
      if (req.excl()) return Status::Errno(EEXIST, "file exists");
      SFS_ASSIGN_OR_RETURN(proto::InodeRec * node, txn.Inode(existing->ino()));
      if (S_ISDIR(node->attr().mode())) return Status::Errno(EISDIR, "is a directory");
      SFS_RETURN_IF_ERROR(CheckOpenAccess(ctx.cred, node->attr(), req.open_flags()));
      out->set_created(false);
      return RegisterOpen(ctx, txn, existing->ino(), node, req.open_flags(), out);
    }
    SFS_RETURN_IF_ERROR(MayModifyDir(ctx.cred, *dir));
    bool inherited = false;
    SFS_ASSIGN_OR_RETURN(proto::Layout base, EffectiveDefault(req.parent(), &inherited));
    SFS_ASSIGN_OR_RETURN(proto::Layout layout, NewFileLayout(ctx, req.layout(), base));
    proto::InodeRec* node = nullptr;
    uint64_t ino = 0;
    SFS_RETURN_IF_ERROR(
        AddNode(txn, ctx, req.parent(), req.name(), S_IFREG | (req.mode() & 07777), &node, &ino));
    *node->mutable_layout() = std::move(layout);
    out->set_created(true);
    return RegisterOpen(ctx, txn, ino, node, req.open_flags(), out);
  });
}

Result<proto::Layout> Namespace::NewFileLayout(const OpCtx& ctx, const proto::Layout& want,
                                              const proto::Layout& base) {
  if (ctx.replay == nullptr || ctx.replay->layout().objects_size() == 0) {
    return AllocateLayout(want, base);
  }
  // A replay: the objects the client may already have written. Kept.
  proto::Layout layout = ctx.replay->layout();
  layout.clear_capability();
  for (const proto::StripeObject& o : layout.objects()) {
    if (o.oid() >= boot_oid_limit_) {
      return Status::Errno(EINVAL, "replayed layout names an object not handed out before");
    }
  }
  return layout;
}

Status Namespace::Open(const OpCtx& ctx, const proto::OpenReq& req, proto::OpenResp* out) {
  Status st = Mutate(ctx, out, [&](Txn& txn) -> Status {
    auto node = txn.Inode(req.ino());
    if (!node.ok() && node.status().code() == ENOENT) return Status::Errno(ESTALE, "inode is gone");
    if (!node.ok()) return node.status();
    SFS_RETURN_IF_ERROR(CheckOpenAccess(ctx.cred, (*node)->attr(), req.open_flags()));
    return RegisterOpen(ctx, txn, req.ino(), *node, req.open_flags(), out);
  });
  if (st.ok()) RenewReplayedOpen(ctx, req.open_flags(), out);
  if (!st.ok()) DropUncommittedOpen(out);
  return st;
}

// The walk runs inside the open's transaction, under the exclusive lock:
// what it finds is what is opened, with no rename or unlink in between, and
// each name gets exactly the checks a LookupReq of it would (LookupLocked).
// A tenant's requests reach here with ceiling = the fileset's directory,
// and the inode opened must lie inside it as an OpenReq of it would have to.
Status Namespace::OpenPath(const OpCtx& ctx, const proto::OpenPathReq& req,
                           proto::OpenResp* out) {
  constexpr int kMaxNames = 4096;
  if (req.names_size() > kMaxNames) return Status::Errno(ENAMETOOLONG, "more than 4096 names");
  const uint64_t ceiling = req.ceiling() == 0 ? kRootIno : req.ceiling();
  Status st = Mutate(ctx, out, [&](Txn& txn) -> Status {
    uint64_t ino = req.parent();
    for (const std::string& name : req.names()) {
      SFS_ASSIGN_OR_RETURN(proto::Attr a, LookupLocked(ctx.cred, ino, name, ceiling));
      ino = a.ino();
    }
    if (ceiling != kRootIno) SFS_RETURN_IF_ERROR(InSubtreeLocked(ino, ceiling));
    auto node = txn.Inode(ino);
    if (!node.ok() && node.status().code() == ENOENT) return Status::Errno(ESTALE, "inode is gone");
    if (!node.ok()) return node.status();
    SFS_RETURN_IF_ERROR(CheckOpenAccess(ctx.cred, (*node)->attr(), req.open_flags()));
    return RegisterOpen(ctx, txn, ino, *node, req.open_flags(), out);
  });
  if (st.ok()) RenewReplayedOpen(ctx, req.open_flags(), out);
  if (!st.ok()) DropUncommittedOpen(out);
  return st;
}

Status Namespace::Close(const OpCtx& ctx, const proto::CloseReq& req) {
  return Mutate(ctx, nullptr, [&](Txn& txn) -> Status {
    std::optional<uint64_t> removed = opens_.Remove(req.open_id());
    uint64_t ino = removed.value_or(req.ino());
    // An open from before a restart that its client did not re-open: other
    // clients may still re-open the file, so an orphan waits for the startup reap.
    bool stale = !removed && OpenTable::EpochOf(req.open_id()) != boot_epoch_.load();
    auto node = txn.Inode(ino);
    if (!node.ok()) return node.status().code() == ENOENT ? Status::Ok() : node.status();
    proto::Attr* a = (*node)->mutable_attr();
    if (S_ISREG(a->mode()) && ApplySizeReport(a, req.has_size(), req.size_hint(), req.mtime_ns(),
                                              req.has_blocks(), req.blocks(), txn.now())) {
      txn.Dirty(ino);
    }
    if (a->nlink() == 0 && opens_.OpenCount(ino) == 0 && !stale) return FreeInode(txn, ino);
    if (opens_.OpenCount(ino) == 0) return ReleaseStaleLayout(txn, ino);
    return Status::Ok();
  });
}

Status Namespace::SetSize(const OpCtx& ctx, const proto::SetSizeReq& req, proto::Attr* out) {
  return Mutate(ctx, out, [&](Txn& txn) -> Status {
    SFS_ASSIGN_OR_RETURN(proto::InodeRec * node, txn.Inode(req.ino()));
    proto::Attr* a = node->mutable_attr();
    if (S_ISDIR(a->mode())) return Status::Errno(EISDIR, "is a directory");
    if (!S_ISREG(a->mode())) return Status::Errno(EINVAL, "not a regular file");
    if (ApplySizeReport(a, true, req.size(), req.mtime_ns(), req.has_blocks(), req.blocks(),
                        txn.now())) {
      txn.Dirty(req.ino());
    }
    *out = *a;
    return Status::Ok();
  });
}

Status Namespace::Append(const OpCtx& ctx, const proto::AppendReq& req, proto::Attr* out) {
  constexpr uint64_t kMaxSize = static_cast<uint64_t>(INT64_MAX);
  return Mutate(ctx, out, [&](Txn& txn) -> Status {
    SFS_ASSIGN_OR_RETURN(proto::InodeRec * node, txn.Inode(req.ino()));
    proto::Attr* a = node->mutable_attr();
    if (S_ISDIR(a->mode())) return Status::Errno(EISDIR, "is a directory");
    if (!S_ISREG(a->mode())) return Status::Errno(EINVAL, "not a regular file");
    const uint64_t off = std::max(a->size(), req.min_offset());
    if (req.len() > kMaxSize || off > kMaxSize - req.len()) {
      return Status::Errno(EFBIG, "append past the largest file size");
    }
    if (ApplySizeReport(a, true, off + req.len(), req.mtime_ns(), false, 0, txn.now())) {
      txn.Dirty(req.ino());
    }
    *out = *a;
    return Status::Ok();
  });
}

Status Namespace::ReapIfOrphan(uint64_t ino) {
  return Mutate(OpCtx{}, nullptr, [&](Txn& txn) -> Status {
    if (opens_.OpenCount(ino) > 0) return Status::Ok();
    auto node = txn.Inode(ino);
    if (!node.ok() && node.status().code() == ENOENT) {
      txn.batch().Delete(keys::Orphan(ino));  // a stale orphan key
      return Status::Ok();
    }
    if (!node.ok()) return node.status();
    if ((*node)->attr().nlink() > 0) return Status::Ok();
    LOG_INFO("destroying orphan inode " << ino);
    return FreeInode(txn, ino);
  });
}

void Namespace::Housekeep(int64_t now_ms) {
  std::set<uint64_t> inos;
  for (uint64_t ino : opens_.ExpireClients(now_ms, opts_.client_timeout_ms)) inos.insert(ino);
  bool startup = false;
  {
    std::unique_lock lock(mu_);
    if (!startup_orphans_reaped_ && now_ms - started_ms_ >= opts_.client_timeout_ms) {
      startup_orphans_reaped_ = true;
      startup = true;
    }
  }
  if (startup) {
    std::string o(1, keys::kOrphan);
    Status st = store_->Scan(o, keys::PrefixEnd(o), [&](std::string_view k, std::string_view) {
      inos.insert(keys::IdOf(k));
      return true;
    });
    if (!st.ok()) LOG_WARN("scanning orphans: " << st.ToString());
  }
  for (uint64_t ino : inos) {
    Status st = ReapIfOrphan(ino);
    if (!st.ok()) LOG_WARN("reaping orphan " << ino << ": " << st.ToString());
  }
  HousekeepMigrations(inos, startup);
}

}  // namespace sfs::mds
