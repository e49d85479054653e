// FuseOps, part one: session set-up, the operation table, and the operations
// on names, attributes and extended attributes. Each OnX is one libsfs call
// and one reply; the caching and lookup-count rules are in fuse_ops.h.
#include "client/fuse/fuse_ops.h"

#include "client/fuse/cache_ctl.h"

#include <sys/statvfs.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "common/log.h"

namespace sfs::fuse {
namespace {

FuseOps* Self(fuse_req_t req) { return static_cast<FuseOps*>(fuse_req_userdata(req)); }

// Around every callback of Table(): the caller's job, and the op's metrics.
FuseOpScope Track(fuse_req_t r, FuseOp op, uint64_t read_bytes = 0, uint64_t write_bytes = 0) {
  return FuseOpScope(fuse_req_ctx(r)->pid, Self(r)->metrics(), op, read_bytes, write_bytes);
}

int64_t Nanos(const struct timespec& ts) {
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

client::SetAttrArgs ToSetAttrArgs(const struct stat& st, int to_set) {
  client::SetAttrArgs a;
  auto take = [&](int fuse_bit, uint32_t sfs_bit) {
    if (to_set & fuse_bit) a.valid |= sfs_bit;
  };
  take(FUSE_SET_ATTR_MODE, client::kSetMode);
  take(FUSE_SET_ATTR_UID, client::kSetUid);
  take(FUSE_SET_ATTR_GID, client::kSetGid);
  take(FUSE_SET_ATTR_SIZE, client::kSetSize);
  take(FUSE_SET_ATTR_ATIME, client::kSetAtime);
  take(FUSE_SET_ATTR_MTIME, client::kSetMtime);
  take(FUSE_SET_ATTR_ATIME_NOW, client::kSetAtimeNow);
  take(FUSE_SET_ATTR_MTIME_NOW, client::kSetMtimeNow);
  take(FUSE_SET_ATTR_CTIME, client::kSetCtime);
  a.mode = st.st_mode;
  a.uid = st.st_uid;
  a.gid = st.st_gid;
  a.size = static_cast<uint64_t>(st.st_size);
  a.atime_ns = Nanos(st.st_atim);
  a.mtime_ns = Nanos(st.st_mtim);
  a.ctime_ns = Nanos(st.st_ctim);
  return a;
}

// Answers a getxattr/listxattr: the size for a size-0 probe, ERANGE when the
// caller's buffer is too small, else the bytes.
void ReplyXattrValue(fuse_req_t req, const std::string& value, size_t size) {
  if (size == 0) {
    fuse_reply_xattr(req, value.size());
  } else if (value.size() > size) {
    fuse_reply_err(req, ERANGE);
  } else {
    fuse_reply_buf(req, value.data(), value.size());
  }
}

// POSIX ACLs are not supported (FUSE_CAP_POSIX_ACL is off, so the kernel
// would not enforce them): their xattrs get EOPNOTSUPP, as on a file system
// mounted without ACLs, and `ls -l` probing them costs no MDS call.
bool IsAclXattr(const char* name) {
  return std::strncmp(name, "system.posix_acl_", 17) == 0;
}

// What the kernel asks for before each write(2) (file capabilities).
constexpr char kCapsXattr[] = "security.capability";

}  // namespace

void ReplyStatus(fuse_req_t req, const Status& st) {
  // Status::code() is the errno; an error without one would read as success.
  fuse_reply_err(req, st.ok() ? 0 : (st.code() > 0 ? st.code() : EIO));
}

client::Cred CredOf(fuse_req_t req) {
  const fuse_ctx* ctx = fuse_req_ctx(req);
  client::Cred c;
  c.uid = ctx->uid;
  c.gid = ctx->gid;
  // Root passes every check, so its groups (a /proc read each) are not needed.
  if (c.uid == 0) return c;
  std::vector<gid_t> groups(32);
  int n = fuse_req_getgroups(req, static_cast<int>(groups.size()), groups.data());
  if (n > static_cast<int>(groups.size())) {
    groups.resize(n);
    n = fuse_req_getgroups(req, n, groups.data());
  }
  // A failure (the caller already exited, or no /proc) leaves the primary
  // group only, which can only narrow what the MDS allows.
  if (n > 0) {
    c.groups.assign(groups.begin(), groups.begin() + std::min<size_t>(n, groups.size()));
  }
  return c;
}

FuseOps::FuseOps(std::unique_ptr<client::Client> client, FuseOptions opts)
    : client_(std::move(client)), opts_(opts) {
  if (opts_.leases && opts_.statahead) {
    statahead_ = std::make_unique<StatAhead>(
        [this](const client::Cred& c, uint64_t dir, std::string_view after) {
          return client_->Readdir(c, dir, after, StatAhead::kPageEntries, /*with_attrs=*/true);
        });
  }
}

void FuseOps::LocalChange() {
  local_epoch_.fetch_add(1, std::memory_order_acq_rel);
  if (statahead_ != nullptr) statahead_->Clear();
}

void FuseOps::LocalChange(const fuse_file_info* fi) {
  if (fi == nullptr || fi->fh == 0) return;
  if ((FileOfHandle(fi)->flags_ & O_ACCMODE) != O_RDONLY) LocalChange();
}

// With leases on, a directory's reply without a lease (the watch is not
// active yet or again, or the reply raced a change) is cached no longer than
// a file's: nobody would tell us of a change to it.
double FuseOps::AttrTimeout(const client::Attr& a) const {
  if (a.lease_ms > 0) return a.lease_ms / 1000.0;
  if (S_ISDIR(a.mode) && !opts_.leases) return opts_.attr_timeout;
  return opts_.file_attr_timeout;
}

double FuseOps::EntryTimeout(const client::Attr& a) const {
  if (a.lease_ms > 0) return a.lease_ms / 1000.0;
  if (S_ISDIR(a.mode) && !opts_.leases) return opts_.entry_timeout;
  return opts_.file_entry_timeout;
}

void FuseOps::StartLeases(fuse_session* se) {
  data_se_ = se;
  if (!opts_.leases) return;
  {
    std::lock_guard<std::mutex> l(notify_mu_);
    notify_se_ = se;
  }
  client_->WatchInvalidations([this](const client::Invalidation& i) { Invalidate(i); });
}

void FuseOps::StopLeases() {
  data_se_ = nullptr;
  std::lock_guard<std::mutex> l(notify_mu_);
  notify_se_ = nullptr;
}

// ENOENT (the kernel has nothing cached under that name or inode) is fine.
// A directory named by the item stops being complete before the kernel
// hears of it, so no LOOKUP answered here afterwards misses the change.
void FuseOps::Invalidate(const client::Invalidation& i) {
  if (statahead_ != nullptr) statahead_->Clear();
  dirs_.Forget(i.ino);
  if (i.parent != 0) dirs_.Forget(i.parent);
  std::lock_guard<std::mutex> l(notify_mu_);
  if (notify_se_ == nullptr) return;
  if (i.parent != 0) {
    fuse_lowlevel_notify_inval_entry(notify_se_, i.parent, i.name.data(), i.name.size());
  }
  fuse_lowlevel_notify_inval_inode(notify_se_, i.ino, -1, 0);
}

fuse_entry_param FuseOps::EntryParam(const client::Attr& a) const {
  fuse_entry_param e{};
  e.ino = a.ino;
  e.generation = a.generation;
  e.attr = a.ToStat();
  e.attr_timeout = AttrTimeout(a);
  e.entry_timeout = EntryTimeout(a);
  return e;
}

void FuseOps::ReplyEntry(fuse_req_t req, const client::Attr& a) {
  fuse_entry_param e = EntryParam(a);
  nodes_.Ref(a.ino);
  nodes_.NoteMode(a.ino, a.mode);
  if (fuse_reply_entry(req, &e) != 0) nodes_.Forget(a.ino, 1);
}

void FuseOps::ReplyAbsent(fuse_req_t req, double seconds) {
  fuse_entry_param e{};  // ino 0: a negative entry, valid for entry_timeout
  e.entry_timeout = seconds;
  fuse_reply_entry(req, &e);
}

void FuseOps::NoteAdded(uint64_t dir, const char* name, const Status& st, const client::Attr* a,
                        const OpStart& start) {
  if (!st.ok()) return dirs_.Forget(dir);
  dirs_.Added(dir, name, a != nullptr ? a->dir_lease_ms : 0, start.sent);
  if (a != nullptr && a->dir_attr != nullptr && a->dir_attr->ino == dir) {
    dirs_.SetAttr(*a->dir_attr, start.sent, start.epoch);
  } else {
    dirs_.DropAttr(dir);
  }
}

void FuseOps::NoteRemoved(uint64_t dir, const char* name, const Status& st,
                          const client::Attr& dir_attr, const OpStart& start) {
  if (!st.ok()) return dirs_.Forget(dir);
  dirs_.Removed(dir, name);
  if (dir_attr.ino == dir) {
    dirs_.SetAttr(dir_attr, start.sent, start.epoch);
  } else {
    dirs_.DropAttr(dir);
  }
}

void FuseOps::ReplyAttr(fuse_req_t req, const client::Attr& a) {
  struct stat st = a.ToStat();
  nodes_.NoteMode(a.ino, a.mode);
  fuse_reply_attr(req, &st, AttrTimeout(a));
}

void FuseOps::OnInit(fuse_conn_info* conn) {
  conn->max_write = opts_.max_write;
  // Deep enough for parallel readahead and async direct I/O over many OSSes.
  conn->max_background = 64;
  conn->congestion_threshold = 48;
  conn->time_gran = 1;
  // The kernel takes the smaller of this and the mount's read_ahead_kb,
  // which main() has raised to the same value (see bdi.h).
  if (opts_.max_readahead != 0) conn->max_readahead = opts_.max_readahead;
  auto want = [conn](unsigned cap) {
    if (conn->capable & cap) conn->want |= cap;
  };
  want(FUSE_CAP_ASYNC_READ);
  want(FUSE_CAP_PARALLEL_DIROPS);
  want(FUSE_CAP_ATOMIC_O_TRUNC);
  want(FUSE_CAP_CACHE_SYMLINKS);  // a symlink never changes; a new one is a new inode
  // Set-id bits are dropped here on write, truncate and O_TRUNC (the MDS
  // does it on chown; fuse_file_ops.cc RemovePrivs). Linux 6.18 takes the
  // flag yet still sends its own drops, as modes: OnSetAttr turns those into
  // SETATTR_KILL_SUID, so either way a non-owner's write succeeds.
  want(FUSE_CAP_HANDLE_KILLPRIV);
  if (opts_.splice_write) {
    want(FUSE_CAP_SPLICE_WRITE);
  } else {
    conn->want &= ~FUSE_CAP_SPLICE_WRITE;
  }
  // Write data arrives in memory either way: a pipe in between only adds a copy.
  conn->want &= ~(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_MOVE);
  conn->want &= ~(FUSE_CAP_WRITEBACK_CACHE | FUSE_CAP_EXPORT_SUPPORT | FUSE_CAP_AUTO_INVAL_DATA);
  // Locks go to the MDS (cluster-wide); -o nolocks: the kernel's, per mount.
  if (opts_.locks) {
    want(FUSE_CAP_POSIX_LOCKS);
    want(FUSE_CAP_FLOCK_LOCKS);
  } else {
    conn->want &= ~(FUSE_CAP_POSIX_LOCKS | FUSE_CAP_FLOCK_LOCKS);
  }
  LOG_INFO("FUSE session up: protocol 7." << conn->proto_minor << ", max_write "
                                          << conn->max_write << ", max_read " << conn->max_read
                                          << ", handle_killpriv "
                                          << ((conn->want & FUSE_CAP_HANDLE_KILLPRIV) != 0
                                                  ? "on"
                                                  : "off"));
}

// A name absent from a complete directory is answered here (complete_dirs.h).
// Otherwise the MDS; its ENOENT under a directory lease becomes a negative
// entry for the rest of the lease (the MDS revokes it before anyone creates
// the name). No lock is needed between the check and the reply: the kernel
// holds the directory's lock across a LOOKUP, and the invalidation of a name
// in it (after CompleteDirs forgot the directory) waits for that lock.
void FuseOps::OnLookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  // ".", ".." and over-long names: the MDS's answer, whatever it is.
  const bool dots = std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0 ||
                    std::strlen(name) > 255;
  if (opts_.leases && !dots) {
    double absent = dirs_.AbsentFor(parent, name);
    if (absent > 0) return ReplyAbsent(req, absent);
  }
  if (statahead_ != nullptr && !dots) {
    client::Attr held;
    if (statahead_->Take(parent, name, &held)) {
      client::Attr a = client_->WithLocal(std::move(held));
      statahead_->Seen(parent, name, a);
      if (a.lease_ms > 0) return ReplyEntry(req, a);  // else open for writing here: ask
    }
  }
  if (opts_.leases && !dots) {
    // A hinted file the prefetcher just opened by this name (an epoch of a
    // dataset larger than statahead's leases cover).
    if (std::optional<client::Attr> a = client_->HintedName(CredOf(req), parent, name)) {
      if (statahead_ != nullptr) statahead_->Seen(parent, name, *a);
      if (a->lease_ms > 0) return ReplyEntry(req, *a);  // else open for writing here: ask
    }
  }
  const auto sent = CompleteDirs::Clock::now();
  uint32_t absent_ms = 0;
  Result<client::Attr> a =
      client_->Lookup(CredOf(req), parent, name, opts_.leases && !dots ? &absent_ms : nullptr);
  if (!a.ok()) {
    const double left = absent_ms / 1000.0 -
                        std::chrono::duration<double>(CompleteDirs::Clock::now() - sent).count();
    if (a.status().code() == ENOENT && left > 0) return ReplyAbsent(req, left);
    return ReplyStatus(req, a.status());
  }
  if (statahead_ != nullptr && !dots) {
    statahead_->Seen(parent, name, *a);
    // Not where the hint's prefetcher answers the lookups (its reader ahead
    // of it here): relisting a huge directory every few seconds cost the
    // MDS 1,500 pages of 1,024 entries in a 100,000-file epoch.
    if (a->lease_ms > 0 && !client_->HintListed(parent)) statahead_->NoteMiss(parent, CredOf(req));
  }
  ReplyEntry(req, *a);
}

void FuseOps::OnForget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
  nodes_.Forget(ino, nlookup);
  fuse_reply_none(req);
}

void FuseOps::OnForgetMulti(fuse_req_t req, size_t count, fuse_forget_data* forgets) {
  for (size_t i = 0; i < count; ++i) nodes_.Forget(forgets[i].ino, forgets[i].nlookup);
  fuse_reply_none(req);
}

// A directory's attributes that came with a name op's reply under its lease
// are answered here (the GETATTR the kernel sends after each create or
// unlink in the directory, to check search permission; complete_dirs.h).
void FuseOps::OnGetAttr(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  if (opts_.leases) {
    client::Attr cached;
    double left = dirs_.CachedAttr(ino, &cached);
    if (left > 0) {
      struct stat st = cached.ToStat();
      return static_cast<void>(fuse_reply_attr(req, &st, left));
    }
  }
  Result<client::Attr> a = client_->GetAttr(CredOf(req), ino);
  if (!a.ok()) return ReplyStatus(req, a.status());
  ReplyAttr(req, *a);
}

void FuseOps::OnSetAttr(fuse_req_t req, fuse_ino_t ino, struct stat* st, int to_set,
                        fuse_file_info* fi) {
  // ftruncate comes with its file handle: an fd opened for writing may truncate.
  const client::File* via =
      (to_set & FUSE_SET_ATTR_SIZE) && fi != nullptr && fi->fh != 0 ? FileOfHandle(fi) : nullptr;
  client::SetAttrArgs args = ToSetAttrArgs(*st, to_set);
  // The kernel drops set-id bits itself before a write or with a truncate
  // (FUSE_CAP_HANDLE_KILLPRIV notwithstanding, Linux 6.18): as a mode,
  // alone or with the size, sent with the writer's credentials, which the
  // MDS must refuse as a chmod by a non-owner. So: a mode that comes with a
  // size (no chmod(2) does) goes as SETATTR_KILL_SUID, which the MDS grants
  // any writer; a mode alone that the MDS refused goes so once more if all
  // it does is drop the bits a write drops. (Hence a non-owner with write
  // access may also chmod those bits away; a write would drop them anyway.)
  const bool kill_with_size =
      (to_set & FUSE_SET_ATTR_SIZE) != 0 && (to_set & FUSE_SET_ATTR_MODE) != 0;
  if (kill_with_size) args.valid = (args.valid & ~client::kSetMode) | client::kSetKillSuid;
  Result<client::Attr> a = client_->SetAttr(CredOf(req), ino, args, via);
  if (!a.ok() && a.status().code() == EPERM && !kill_with_size &&
      (to_set & ~(FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_CTIME)) == 0 &&
      nodes_.IsSetIdDrop(ino, st->st_mode)) {
    args.valid = (args.valid & ~client::kSetMode) | client::kSetKillSuid;
    a = client_->SetAttr(CredOf(req), ino, args, via);
  }
  dirs_.DropAttr(ino);
  if (!a.ok()) return ReplyStatus(req, a.status());
  // A kernel that leaves a truncate's set-id drop to us (HANDLE_KILLPRIV):
  // as a write does (a failure leaves them; the truncate happened).
  if ((to_set & FUSE_SET_ATTR_SIZE) != 0 && (to_set & FUSE_SET_ATTR_MODE) == 0) {
    nodes_.NoteMode(ino, a->mode);
    if (nodes_.SetIdBitsToDrop(ino) != 0) (void)KillSetId(req, ino, &a->mode);
  }
  ReplyAttr(req, *a);
}

void FuseOps::OnReadlink(fuse_req_t req, fuse_ino_t ino) {
  Result<std::string> target = client_->Readlink(CredOf(req), ino);
  if (!target.ok()) return ReplyStatus(req, target.status());
  fuse_reply_readlink(req, target->c_str());
}

// The ops below that add or remove a name tell CompleteDirs before the
// kernel gets the reply (and with it the directory's lock back).
void FuseOps::OnMknod(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode,
                      dev_t rdev) {
  const OpStart start = Begin();
  Result<client::Attr> a = client_->Mknod(CredOf(req), parent, name, mode, rdev);
  NoteAdded(parent, name, a.status(), a.ok() ? &*a : nullptr, start);
  if (!a.ok()) return ReplyStatus(req, a.status());
  ReplyEntry(req, *a);
}

// A directory made here with a lease is complete (and empty) from the start.
void FuseOps::OnMkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode) {
  const OpStart start = Begin();
  Result<client::Attr> a = client_->Mkdir(CredOf(req), parent, name, mode);
  NoteAdded(parent, name, a.status(), a.ok() ? &*a : nullptr, start);
  if (!a.ok()) return ReplyStatus(req, a.status());
  if (opts_.leases) dirs_.Made(a->ino, a->lease_ms, start.sent, start.epoch);
  ReplyEntry(req, *a);
}

// The statahead forgets only the name and the directory's attributes when
// the name was a file's only link (StatAhead::Unlinking), so an unlink loop
// (mdtest -r, rm -r) keeps its listing; anything else clears it first.
void FuseOps::OnUnlink(fuse_req_t req, fuse_ino_t parent, const char* name) {
  const bool only_name = statahead_ != nullptr && statahead_->Unlinking(parent, name);
  if (only_name) {
    local_epoch_.fetch_add(1, std::memory_order_acq_rel);
  } else {
    LocalChange();
  }
  const OpStart start = Begin();
  client::Attr dir_attr;
  Status st = client_->Unlink(CredOf(req), parent, name, &dir_attr);
  if (only_name) statahead_->Unlinked(parent, name);
  NoteRemoved(parent, name, st, dir_attr, start);
  ReplyStatus(req, st);
}

// The removed directory's cached attributes (inode unknown here) go with
// every other directory's.
void FuseOps::OnRmdir(fuse_req_t req, fuse_ino_t parent, const char* name) {
  Status st = client_->Rmdir(CredOf(req), parent, name);
  NoteRemoved(parent, name, st, client::Attr{}, OpStart{});
  if (st.ok()) dirs_.DropAllAttrs();
  ReplyStatus(req, st);
}

void FuseOps::OnSymlink(fuse_req_t req, const char* target, fuse_ino_t parent,
                        const char* name) {
  const OpStart start = Begin();
  Result<client::Attr> a = client_->Symlink(CredOf(req), parent, name, target);
  NoteAdded(parent, name, a.status(), a.ok() ? &*a : nullptr, start);
  if (!a.ok()) return ReplyStatus(req, a.status());
  ReplyEntry(req, *a);
}

void FuseOps::OnRename(fuse_req_t req, fuse_ino_t parent, const char* name,
                       fuse_ino_t new_parent, const char* new_name, unsigned int flags) {
  Status st = client_->Rename(CredOf(req), parent, name, new_parent, new_name, flags);
  if (!st.ok()) {
    dirs_.Forget(parent);
    dirs_.Forget(new_parent);
  } else if ((flags & 2) == 0) {  // RENAME_EXCHANGE (2) keeps both names
    dirs_.Removed(parent, name);
    dirs_.Added(new_parent, new_name);
  }
  // A directory moved changes too (its ctime, ".."), inode unknown here.
  dirs_.DropAllAttrs();
  ReplyStatus(req, st);
}

void FuseOps::OnLink(fuse_req_t req, fuse_ino_t ino, fuse_ino_t new_parent,
                     const char* new_name) {
  const OpStart start = Begin();
  Result<client::Attr> a = client_->Link(CredOf(req), ino, new_parent, new_name);
  NoteAdded(new_parent, new_name, a.status(), a.ok() ? &*a : nullptr, start);
  if (!a.ok()) return ReplyStatus(req, a.status());
  ReplyEntry(req, *a);
}

void FuseOps::OnStatfs(fuse_req_t req, fuse_ino_t ino) {
  Result<client::FsStat> fs = client_->StatFs();
  if (!fs.ok()) return ReplyStatus(req, fs.status());
  struct statvfs s{};
  uint64_t bsize = fs->bsize == 0 ? 4096 : fs->bsize;
  s.f_bsize = bsize;
  s.f_frsize = bsize;
  s.f_blocks = fs->total_bytes / bsize;
  s.f_bfree = fs->free_bytes / bsize;
  s.f_bavail = fs->avail_bytes / bsize;
  s.f_files = fs->total_inodes;
  s.f_ffree = fs->free_inodes;
  s.f_favail = fs->free_inodes;
  s.f_namemax = 255;
  fuse_reply_statfs(req, &s);
}

void FuseOps::OnSetXattr(fuse_req_t req, fuse_ino_t ino, const char* name, const char* value,
                         size_t size, int flags) {
  if (IsAclXattr(name)) return static_cast<void>(fuse_reply_err(req, EOPNOTSUPP));
  if (IsCacheCtl(name)) {
    return ReplyStatus(req, CacheCtlSet(*client_, CredOf(req), name, std::string_view(value, size)));
  }
  nodes_.XattrChanged(ino);
  Status st = client_->SetXattr(CredOf(req), ino, name, std::string_view(value, size), flags);
  dirs_.DropAttr(ino);  // ctime
  ReplyStatus(req, st);
}

void FuseOps::OnGetXattr(fuse_req_t req, fuse_ino_t ino, const char* name, size_t size) {
  if (IsAclXattr(name)) return static_cast<void>(fuse_reply_err(req, EOPNOTSUPP));
  if (IsCacheCtl(name)) {
    Result<std::string> v = CacheCtlGet(*client_, name);
    if (!v.ok()) return ReplyStatus(req, v.status());
    return ReplyXattrValue(req, *v, size);
  }
  // Asked before every write(2): answered here once known absent (node_table.h).
  const bool caps = std::strcmp(name, kCapsXattr) == 0;
  if (caps && nodes_.NoCaps(ino)) return static_cast<void>(fuse_reply_err(req, ENODATA));
  const uint64_t gen = caps ? nodes_.XattrGeneration(ino) : 0;
  Result<std::string> v = client_->GetXattr(CredOf(req), ino, name);
  if (caps && v.status().code() == ENODATA) nodes_.NoteNoCaps(ino, gen);
  if (!v.ok()) return ReplyStatus(req, v.status());
  ReplyXattrValue(req, *v, size);
}

void FuseOps::OnListXattr(fuse_req_t req, fuse_ino_t ino, size_t size) {
  Result<std::vector<std::string>> names = client_->ListXattr(CredOf(req), ino);
  if (!names.ok()) return ReplyStatus(req, names.status());
  std::string packed;  // each name followed by its NUL, as listxattr(2) wants
  for (const std::string& n : *names) packed.append(n).push_back('\0');
  ReplyXattrValue(req, packed, size);
}

void FuseOps::OnRemoveXattr(fuse_req_t req, fuse_ino_t ino, const char* name) {
  if (IsAclXattr(name)) return static_cast<void>(fuse_reply_err(req, EOPNOTSUPP));
  nodes_.XattrChanged(ino);
  Status st = client_->RemoveXattr(CredOf(req), ino, name);
  dirs_.DropAttr(ino);  // ctime
  ReplyStatus(req, st);
}

const fuse_lowlevel_ops& FuseOps::Table() {
  static const fuse_lowlevel_ops ops = [] {
    fuse_lowlevel_ops o{};
    o.init = [](void* self, fuse_conn_info* c) { static_cast<FuseOps*>(self)->OnInit(c); };
    o.lookup = [](fuse_req_t r, fuse_ino_t p, const char* n) {
      FuseOpScope scope = Track(r, FuseOp::kLookup);
      Self(r)->OnLookup(r, p, n);
    };
    o.forget = [](fuse_req_t r, fuse_ino_t i, uint64_t n) {
      FuseOpScope scope = Track(r, FuseOp::kForget);
      Self(r)->OnForget(r, i, n);
    };
    o.forget_multi = [](fuse_req_t r, size_t c, fuse_forget_data* f) {
      FuseOpScope scope = Track(r, FuseOp::kForgetMulti);
      Self(r)->OnForgetMulti(r, c, f);
    };
    o.getattr = [](fuse_req_t r, fuse_ino_t i, fuse_file_info* f) {
      FuseOpScope scope = Track(r, FuseOp::kGetattr);
      Self(r)->OnGetAttr(r, i, f);
    };
    o.setattr = [](fuse_req_t r, fuse_ino_t i, struct stat* s, int v, fuse_file_info* f) {
      FuseOpScope scope = Track(r, FuseOp::kSetattr);
      Self(r)->LocalChange();
      Self(r)->OnSetAttr(r, i, s, v, f);
    };
    o.readlink = [](fuse_req_t r, fuse_ino_t i) {
      FuseOpScope scope = Track(r, FuseOp::kReadlink);
      Self(r)->OnReadlink(r, i);
    };
    o.mknod = [](fuse_req_t r, fuse_ino_t p, const char* n, mode_t m, dev_t d) {
      FuseOpScope scope = Track(r, FuseOp::kMknod);
      Self(r)->LocalChange();
      Self(r)->OnMknod(r, p, n, m, d);
    };
    o.mkdir = [](fuse_req_t r, fuse_ino_t p, const char* n, mode_t m) {
      FuseOpScope scope = Track(r, FuseOp::kMkdir);
      Self(r)->LocalChange();
      Self(r)->OnMkdir(r, p, n, m);
    };
    o.unlink = [](fuse_req_t r, fuse_ino_t p, const char* n) {
      FuseOpScope scope = Track(r, FuseOp::kUnlink);
      Self(r)->OnUnlink(r, p, n);  // its own LocalChange
    };
    o.rmdir = [](fuse_req_t r, fuse_ino_t p, const char* n) {
      FuseOpScope scope = Track(r, FuseOp::kRmdir);
      Self(r)->LocalChange();
      Self(r)->OnRmdir(r, p, n);
    };
    o.symlink = [](fuse_req_t r, const char* t, fuse_ino_t p, const char* n) {
      FuseOpScope scope = Track(r, FuseOp::kSymlink);
      Self(r)->LocalChange();
      Self(r)->OnSymlink(r, t, p, n);
    };
    o.rename = [](fuse_req_t r, fuse_ino_t p, const char* n, fuse_ino_t np, const char* nn,
                  unsigned int fl) {
      FuseOpScope scope = Track(r, FuseOp::kRename);
      Self(r)->LocalChange();
      Self(r)->OnRename(r, p, n, np, nn, fl);
    };
    o.link = [](fuse_req_t r, fuse_ino_t i, fuse_ino_t np, const char* nn) {
      FuseOpScope scope = Track(r, FuseOp::kLink);
      Self(r)->LocalChange();
      Self(r)->OnLink(r, i, np, nn);
    };
    o.open = [](fuse_req_t r, fuse_ino_t i, fuse_file_info* f) {
      FuseOpScope scope = Track(r, FuseOp::kOpen);
      if ((f->flags & O_ACCMODE) != O_RDONLY || (f->flags & O_TRUNC) != 0) Self(r)->LocalChange();
      Self(r)->OnOpen(r, i, f);
    };
    o.create = [](fuse_req_t r, fuse_ino_t p, const char* n, mode_t m, fuse_file_info* f) {
      FuseOpScope scope = Track(r, FuseOp::kCreate);
      Self(r)->LocalChange();
      Self(r)->OnCreate(r, p, n, m, f);
    };
    o.read = [](fuse_req_t r, fuse_ino_t i, size_t s, off_t off, fuse_file_info* f) {
      FuseOpScope scope = Track(r, FuseOp::kRead, s);
      Self(r)->OnRead(r, i, s, off, f);
    };
    o.write_buf = [](fuse_req_t r, fuse_ino_t i, fuse_bufvec* b, off_t off, fuse_file_info* f) {
      FuseOpScope scope = Track(r, FuseOp::kWriteBuf, 0, fuse_buf_size(b));
      Self(r)->LocalChange();
      Self(r)->OnWriteBuf(r, i, b, off, f);
    };
    o.flush = [](fuse_req_t r, fuse_ino_t i, fuse_file_info* f) {
      FuseOpScope scope = Track(r, FuseOp::kFlush);
      Self(r)->LocalChange(f);
      Self(r)->OnFlush(r, i, f);
    };
    o.release = [](fuse_req_t r, fuse_ino_t i, fuse_file_info* f) {
      FuseOpScope scope = Track(r, FuseOp::kRelease);
      Self(r)->LocalChange(f);
      Self(r)->OnRelease(r, i, f);
    };
    o.getlk = [](fuse_req_t r, fuse_ino_t i, fuse_file_info* f, struct flock* l) {
      FuseOpScope scope = Track(r, FuseOp::kGetlk);
      Self(r)->OnGetlk(r, i, f, l);
    };
    o.setlk = [](fuse_req_t r, fuse_ino_t i, fuse_file_info* f, struct flock* l, int s) {
      FuseOpScope scope = Track(r, FuseOp::kSetlk);
      Self(r)->OnSetlk(r, i, f, l, s);
    };
    o.flock = [](fuse_req_t r, fuse_ino_t i, fuse_file_info* f, int op) {
      FuseOpScope scope = Track(r, FuseOp::kFlock);
      Self(r)->OnFlock(r, i, f, op);
    };
    o.fsync = [](fuse_req_t r, fuse_ino_t i, int d, fuse_file_info* f) {
      FuseOpScope scope = Track(r, FuseOp::kFsync);
      Self(r)->LocalChange(f);
      Self(r)->OnFsync(r, i, d, f);
    };
    o.fallocate = [](fuse_req_t r, fuse_ino_t i, int m, off_t off, off_t len, fuse_file_info* f) {
      FuseOpScope scope = Track(r, FuseOp::kFallocate);
      Self(r)->LocalChange();
      Self(r)->OnFallocate(r, i, m, off, len, f);
    };
    o.lseek = [](fuse_req_t r, fuse_ino_t i, off_t off, int w, fuse_file_info* f) {
      FuseOpScope scope = Track(r, FuseOp::kLseek);
      Self(r)->OnLseek(r, i, off, w, f);
    };
    o.copy_file_range = [](fuse_req_t r, fuse_ino_t ii, off_t oi, fuse_file_info* fi, fuse_ino_t io,
                           off_t oo, fuse_file_info* fo, size_t n, int fl) {
      FuseOpScope scope = Track(r, FuseOp::kCopyFileRange);
      Self(r)->LocalChange();
      Self(r)->OnCopyFileRange(r, ii, oi, fi, io, oo, fo, n, fl);
    };
    o.opendir = [](fuse_req_t r, fuse_ino_t i, fuse_file_info* f) {
      FuseOpScope scope = Track(r, FuseOp::kOpendir);
      Self(r)->OnOpendir(r, i, f);
    };
    o.readdir = [](fuse_req_t r, fuse_ino_t i, size_t s, off_t off, fuse_file_info* f) {
      FuseOpScope scope = Track(r, FuseOp::kReaddir);
      Self(r)->OnReaddir(r, i, s, off, f);
    };
    o.readdirplus = [](fuse_req_t r, fuse_ino_t i, size_t s, off_t off, fuse_file_info* f) {
      FuseOpScope scope = Track(r, FuseOp::kReaddirplus);
      Self(r)->OnReaddirPlus(r, i, s, off, f);
    };
    o.releasedir = [](fuse_req_t r, fuse_ino_t i, fuse_file_info* f) {
      FuseOpScope scope = Track(r, FuseOp::kReleasedir);
      Self(r)->OnReleasedir(r, i, f);
    };
    o.fsyncdir = [](fuse_req_t r, fuse_ino_t i, int d, fuse_file_info* f) {
      FuseOpScope scope = Track(r, FuseOp::kFsyncdir);
      Self(r)->OnFsyncdir(r, i, d, f);
    };
    o.statfs = [](fuse_req_t r, fuse_ino_t i) {
      FuseOpScope scope = Track(r, FuseOp::kStatfs);
      Self(r)->OnStatfs(r, i);
    };
    o.setxattr = [](fuse_req_t r, fuse_ino_t i, const char* n, const char* v, size_t s, int fl) {
      FuseOpScope scope = Track(r, FuseOp::kSetxattr);
      Self(r)->LocalChange();
      Self(r)->OnSetXattr(r, i, n, v, s, fl);
    };
    o.getxattr = [](fuse_req_t r, fuse_ino_t i, const char* n, size_t s) {
      FuseOpScope scope = Track(r, FuseOp::kGetxattr);
      Self(r)->OnGetXattr(r, i, n, s);
    };
    o.listxattr = [](fuse_req_t r, fuse_ino_t i, size_t s) {
      FuseOpScope scope = Track(r, FuseOp::kListxattr);
      Self(r)->OnListXattr(r, i, s);
    };
    o.removexattr = [](fuse_req_t r, fuse_ino_t i, const char* n) {
      FuseOpScope scope = Track(r, FuseOp::kRemovexattr);
      Self(r)->LocalChange();
      Self(r)->OnRemoveXattr(r, i, n);
    };
    // No access: default_permissions makes the kernel check.
    return o;
  }();
  return ops;
}

}  // namespace sfs::fuse
