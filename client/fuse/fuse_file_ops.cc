// FuseOps, part two: open files and their data. A file handle (fi->fh) owns
// one libsfs File; read and write go straight to libsfs, which splits them by
// stripe and talks to the OSSes in parallel. Close-to-open: open and create
// take fresh attributes from the MDS (libsfs Open/Create) and keep the
// kernel's pages only if the file is unchanged since this mount last opened
// it (NodeTable::KeepCache).
//
// Write-only handles use direct I/O — and read-write ones, when the kernel
// took FUSE_DIRECT_IO_ALLOW_MMAP (wire_flags.h; they stay mmappable), and
// O_APPEND ones: each write(2) is one FUSE WRITE of
// exactly the caller's bytes, with no page-cache copy. With the page cache
// the kernel sends an unaligned write's leading partial page as a request of
// its own, so a 47008-byte write cost two round trips through here, and
// every write(2) holds the inode lock across its round trip. Read-only
// handles keep the page cache (and its readahead); so do read-write ones
// with -o rdwr_cache or on a kernel that refuses to mmap direct-I/O files
// (a shared mapping of such a handle would be ENODEV). A direct read-write
// handle reads without the kernel's readahead. The kernel drops the written range from the page cache before
// a direct write, and the node table keeps a later open from keeping pages
// cached before it (NodeTable::OpenedForWrite). The kernel does not
// remove privileges before a direct write (file_remove_privs): RemovePrivs
// does, as the kernel would have. Set-id bits are dropped here before every
// write, as SETATTR_KILL_SUID, which the MDS grants any writer (the
// kernel's own drop, a chmod with the writer's credentials that the MDS
// must refuse to a non-owner, is turned into one too: fuse_ops.cc OnSetAttr).
//
// Write-behind (-o write_behind_kb=N, libsfs Client::WriteBehind): a WRITE
// on a direct handle is answered once libsfs has copied its bytes into
// the mount's window of writes in flight; the OSS calls finish in the
// background. FLUSH, FSYNC, RELEASE, SETATTR, READ, GETATTR and LOOKUP of
// the inode wait for them first (inside libsfs), so this mount reads its own
// writes and other mounts see them after close or fsync (close-to-open, as
// before). A failed background write is returned by the next WRITE, FLUSH
// (close) or FSYNC on that handle (docs/durability.md). The worker that
// sends a write is woken only after the WRITE's reply.
#include <fcntl.h>
#include <sys/file.h>
#include <linux/capability.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <utility>

#include "client/fuse/fuse_ops.h"
#include "client/fuse/wire_flags.h"
#include "common/log.h"

namespace sfs::fuse {

struct OpenFile {
  std::shared_ptr<client::File> file;
  bool direct = false;  // opened with direct I/O (write-only)
  // fcntl lock owners that locked through this handle: OFD locks (whose
  // owner is the open file) end with its release, which carries no owner.
  std::mutex mu;
  std::set<uint64_t> lockers;  // GUARDED_BY(mu)
};

namespace {


OpenFile* HandleOf(const fuse_file_info* fi) { return reinterpret_cast<OpenFile*>(fi->fh); }
client::File& FileOf(const fuse_file_info* fi) { return *HandleOf(fi)->file; }

// What a write must strip (file capabilities).
constexpr char kCapsXattr[] = "security.capability";

// True iff process pid has CAP_FSETID in effect (its writes keep set-id
// bits). Unreadable (the writer exited): false, so the bits are dropped.
bool HasCapFsetid(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("CapEff:", 0) != 0) continue;
    uint64_t caps = std::strtoull(line.c_str() + 7, nullptr, 16);
    return ((caps >> CAP_FSETID) & 1) != 0;
  }
  return false;
}

}  // namespace

const client::File* FileOfHandle(const fuse_file_info* fi) { return &FileOf(fi); }

void FuseOps::ReplyOpen(fuse_req_t req, std::shared_ptr<client::File> f, const client::Attr& a,
                        fuse_file_info* fi, bool with_entry) {
  if (with_entry) nodes_.Ref(a.ino);
  nodes_.NoteMode(a.ino, a.mode);
  bool unchanged = nodes_.KeepCache(a.ino, a.mtime_ns, a.size);
  fi->keep_cache = unchanged && (fi->flags & O_TRUNC) == 0;
  // A read-only handle has no size to report, so its close needs no FLUSH —
  // unless locks are cluster-wide: FLUSH is where the kernel says that a
  // process's POSIX locks end (close(2) of any of its fds on the file).
  fi->noflush = (fi->flags & O_ACCMODE) == O_RDONLY && !opts_.locks;
  const bool writable = (fi->flags & O_ACCMODE) != O_RDONLY;
  // O_APPEND handles too: one WRITE per write(2), placed by the MDS at the
  // true end of file (OnWriteBuf), which a page-cache copy at the kernel's
  // idea of the end would contradict.
  // O_RDWR handles too once the kernel lets direct-I/O files be mmapped
  // (FUSE_DIRECT_IO_ALLOW_MMAP): IOR, HDF5 and MPI-IO open O_RDWR, and the
  // page cache would serialise their writes behind a round trip each.
  const int acc = fi->flags & O_ACCMODE;
  const bool rdwr_direct =
      acc == O_RDWR && opts_.rdwr_direct && wire_ != nullptr && wire_->DirectIoMmapAllowed();
  fi->direct_io = acc == O_WRONLY || rdwr_direct || (writable && (fi->flags & O_APPEND) != 0);
  if (writable) nodes_.OpenedForWrite(a.ino, fi->direct_io != 0);
  // A file this open made has no security.capability: the first write need
  // not ask (mdtest's create phase: one MDS round trip of four per file).
  if (writable && f->created()) nodes_.NoteNoCaps(a.ino, nodes_.XattrGeneration(a.ino));
  auto* h = new OpenFile{std::move(f), fi->direct_io != 0};
  fi->fh = reinterpret_cast<uint64_t>(h);
  int rc = 0;
  if (with_entry) {
    fuse_entry_param e = EntryParam(a);
    rc = fuse_reply_create(req, &e, fi);
  } else {
    rc = fuse_reply_open(req, fi);
  }
  if (rc != 0) {
    // The open was interrupted: the kernel has no handle and will not release it.
    (void)client_->Close(h->file);
    delete h;
    if (writable) nodes_.ClosedForWrite(a.ino, fi->direct_io != 0);
    if (with_entry) nodes_.Forget(a.ino, 1);
  }
}

void FuseOps::OnOpen(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  client::Attr a;
  Result<std::shared_ptr<client::File>> f = client_->Open(CredOf(req), ino, fi->flags, &a);
  if (!f.ok()) return ReplyStatus(req, f.status());
  KillSetIdOnTrunc(req, fi->flags, &a);
  ReplyOpen(req, std::move(*f), a, fi, /*with_entry=*/false);
}

void FuseOps::OnCreate(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode,
                       fuse_file_info* fi) {
  client::Attr a;
  const OpStart start = Begin();
  Result<std::shared_ptr<client::File>> f =
      client_->Create(CredOf(req), parent, name, mode, fi->flags, &a);
  NoteAdded(parent, name, f.status(), &a, start);  // before the kernel has the reply
  if (!f.ok()) return ReplyStatus(req, f.status());
  KillSetIdOnTrunc(req, fi->flags, &a);
  ReplyOpen(req, std::move(*f), a, fi, /*with_entry=*/true);
}

// open(O_TRUNC) drops the set-id bits as a truncate does (the kernel
// leaves it to us: FUSE_CAP_HANDLE_KILLPRIV). A failure leaves them: the
// open itself (and its truncate) succeeded.
void FuseOps::KillSetIdOnTrunc(fuse_req_t req, int flags, client::Attr* a) {
  if ((flags & O_TRUNC) == 0 || (flags & O_ACCMODE) == O_RDONLY) return;
  nodes_.NoteMode(a->ino, a->mode);
  if (nodes_.SetIdBitsToDrop(a->ino) != 0) (void)KillSetId(req, a->ino, &a->mode);
}

void FuseOps::OnRead(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                     fuse_file_info* fi) {
  // The reply buffer comes from a pool (no page faults while the socket
  // fills it): up to max_write from one, up to -o max_read_kb from the
  // other, which bounds their bytes; a larger READ (a libfuse -o max_read
  // the kernel was not told of) gets its own.
  ReadBuffers::Lease pooled;
  std::unique_ptr<uint8_t[]> own;
  uint8_t* buf = nullptr;
  if (size <= read_buffers_.size()) {
    pooled = read_buffers_.Get();
    buf = pooled.data();
  } else if (size <= big_read_buffers_.size()) {
    pooled = big_read_buffers_.Get();
    buf = pooled.data();
  } else {
    own = std::make_unique_for_overwrite<uint8_t[]>(size);
    buf = own.get();
  }
  Result<size_t> n = client_->Read(FileOf(fi), off, std::span<uint8_t>(buf, size));
  if (!n.ok()) return ReplyStatus(req, n.status());
  fuse_reply_buf(req, reinterpret_cast<const char*>(buf), *n);
}

void FuseOps::OnWriteBuf(fuse_req_t req, fuse_ino_t ino, fuse_bufvec* bufv, off_t off,
                         fuse_file_info* fi) {
  size_t size = fuse_buf_size(bufv);
  const fuse_buf& first = bufv->buf[bufv->idx];
  const uint8_t* data = nullptr;
  std::unique_ptr<uint8_t[]> copy;
  if (bufv->count - bufv->idx == 1 && (first.flags & FUSE_BUF_IS_FD) == 0) {
    data = static_cast<const uint8_t*>(first.mem) + bufv->off;
  } else {
    // Spliced (fd) or scattered data: gather it into one buffer for libsfs.
    copy = std::make_unique_for_overwrite<uint8_t[]>(size);
    fuse_bufvec dst{};
    dst.count = 1;
    dst.buf[0].size = size;
    dst.buf[0].mem = copy.get();
    dst.buf[0].fd = -1;
    ssize_t got = fuse_buf_copy(&dst, bufv, FUSE_BUF_NO_SPLICE);
    if (got < 0) return static_cast<void>(fuse_reply_err(req, static_cast<int>(-got)));
    size = static_cast<size_t>(got);
    data = copy.get();
  }
  {
    Status st = RemovePrivs(req, ino, HandleOf(fi)->direct);
    if (!st.ok()) return ReplyStatus(req, st);
  }
  // Write-only handles write behind (-o write_behind_kb): the reply goes once
  // libsfs has copied the bytes; handles that can read (and be mmapped) stay
  // synchronous.
  // The worker that sends a written-behind job is woken after the reply: on a
  // busy CPU it would otherwise run first and hold back the writer's next
  // write(2) by one wake-up and send.
  std::span<const uint8_t> bytes(data, size);
  bool wake = false;
  // O_APPEND: the kernel's offset is its cached size, which another mount's
  // appends may have passed; libsfs appends at the true end (AppendReq).
  // (A page-cache handle that set O_APPEND later with fcntl keeps the
  // kernel's offsets: its cached pages are at those.)
  Result<size_t> n = (fi->flags & O_APPEND) != 0 && opts_.locks && HandleOf(fi)->direct
                         ? client_->Append(HandleOf(fi)->file, bytes, nullptr, &wake)
                     : HandleOf(fi)->direct
                         ? client_->WriteBehind(HandleOf(fi)->file, off, bytes, &wake)
                         : client_->Write(FileOf(fi), off, bytes);
  if (!n.ok()) {
    ReplyStatus(req, n.status());
  } else {
    fuse_reply_write(req, *n);
  }
  if (wake) client_->WakeWriteBehind();
}

// The kernel's file_remove_privs: drop security.capability before a direct
// write (the kernel does it for page-cache writes; asked of the MDS once per
// open while absent: NodeTable::NoCaps), then, before any write, the set-id
// bits the last known mode has unless the writer has CAP_FSETID. As the
// writer, as the kernel's own requests would be; the set-id drop is
// SETATTR_KILL_SUID, which the MDS grants any writer (a chmod it would not).
Status FuseOps::RemovePrivs(fuse_req_t req, fuse_ino_t ino, bool direct) {
  const bool caps_absent = !direct || nodes_.NoCaps(ino);
  const uint32_t setid = nodes_.SetIdBitsToDrop(ino);
  if (caps_absent && setid == 0) return Status::Ok();  // every write but the first
  const client::Cred cred = CredOf(req);
  if (!caps_absent) {
    const uint64_t gen = nodes_.XattrGeneration(ino);
    Result<std::string> v = client_->GetXattr(cred, ino, kCapsXattr);
    if (v.ok()) {
      nodes_.XattrChanged(ino);
      Status st = client_->RemoveXattr(cred, ino, kCapsXattr);
      if (!st.ok() && st.code() != ENODATA) return st;
    } else if (v.status().code() == ENODATA) {
      nodes_.NoteNoCaps(ino, gen);
    }  // any other answer: nothing to strip, as the kernel decides
  }
  if (setid == 0) return Status::Ok();
  return KillSetId(req, ino, nullptr);
}

Status FuseOps::KillSetId(fuse_req_t req, fuse_ino_t ino, uint32_t* mode) {
  if (HasCapFsetid(fuse_req_ctx(req)->pid)) return Status::Ok();
  client::SetAttrArgs args;
  args.valid = client::kSetKillSuid;
  Result<client::Attr> changed = client_->SetAttr(CredOf(req), ino, args, nullptr);
  if (!changed.ok()) return changed.status();
  nodes_.NoteMode(ino, changed->mode);
  if (mode != nullptr) *mode = changed->mode;
  return Status::Ok();
}

void FuseOps::OnFlush(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  // (FLUSH carries no open flags: a read-only handle's Flush has nothing to
  // report and asks nobody.)
  Status st = client_->Flush(FileOf(fi));
  // The closing process's POSIX locks on the file end here (free without any).
  if (opts_.locks) {
    Status unlock = client_->ReleaseLocks(ino, fi->lock_owner, /*flock=*/false);
    if (st.ok()) st = unlock;
  }
  ReplyStatus(req, st);
}

void FuseOps::OnRelease(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  std::unique_ptr<OpenFile> h(HandleOf(fi));
  if (opts_.locks) ReleaseHandleLocks(ino, fi, h.get());
  if ((fi->flags & O_ACCMODE) != O_RDONLY) nodes_.ClosedForWrite(ino, h->direct);
  Status st = client_->Close(h->file);
  // close(2) has returned already; the kernel ignores a release error.
  if (!st.ok()) LOG_WARN("close of inode " << ino << " failed: " << st.ToString());
  fuse_reply_err(req, 0);
}

void FuseOps::OnFsync(fuse_req_t req, fuse_ino_t ino, int datasync, fuse_file_info* fi) {
  ReplyStatus(req, client_->Fsync(FileOf(fi), datasync != 0));
}

// ---- Space and copies, done by the OSSes (libsfs space_ops.h) ----
//
// The kernel drops its cached pages of the range after a punch, a zero range
// and a copy's destination, and takes the new size from the reply (copy) or
// its own arithmetic (fallocate without KEEP_SIZE). Both change the file as
// a write does, so set-id bits go first (RemovePrivs). O_TMPFILE is not
// here: libfuse 3.14 has no tmpfile op, so it answers the kernel's
// FUSE_TMPFILE with ENOSYS and the kernel fails every open(O_TMPFILE) on the
// mount with EOPNOTSUPP (fuse_ops.h).

void FuseOps::OnFallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
                          fuse_file_info* fi) {
  if (off < 0 || len <= 0) return static_cast<void>(fuse_reply_err(req, EINVAL));
  Status st = RemovePrivs(req, ino, HandleOf(fi)->direct);
  if (st.ok()) {
    st = client_->Fallocate(FileOf(fi), mode, static_cast<uint64_t>(off),
                            static_cast<uint64_t>(len));
  }
  ReplyStatus(req, st);
}

void FuseOps::OnLseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
                      fuse_file_info* fi) {
  if (off < 0) return static_cast<void>(fuse_reply_err(req, ENXIO));
  Result<uint64_t> at = client_->Seek(FileOf(fi), static_cast<uint64_t>(off), whence);
  if (!at.ok()) return ReplyStatus(req, at.status());
  fuse_reply_lseek(req, static_cast<off_t>(*at));
}

void FuseOps::OnCopyFileRange(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
                              fuse_file_info* fi_in, fuse_ino_t ino_out, off_t off_out,
                              fuse_file_info* fi_out, size_t len, int flags) {
  if (flags != 0 || off_in < 0 || off_out < 0) {
    return static_cast<void>(fuse_reply_err(req, EINVAL));
  }
  Status st = RemovePrivs(req, ino_out, HandleOf(fi_out)->direct);
  if (!st.ok()) return ReplyStatus(req, st);
  Result<size_t> n = client_->CopyRange(FileOf(fi_in), static_cast<uint64_t>(off_in),
                                        FileOf(fi_out), static_cast<uint64_t>(off_out), len);
  if (!n.ok()) return ReplyStatus(req, n.status());
  fuse_reply_write(req, *n);
}

// ---- Locks: cluster-wide, granted by the MDS (libsfs SetLock) ----
//
// fcntl (POSIX and OFD) locks come as SETLK/SETLKW/GETLK with the kernel's
// lock owner, flock(2) as FLOCK. The kernel keeps no lock state of its own
// once we implement these, so the releases are ours too: a process's POSIX
// locks at FLUSH (OnFlush), flock and OFD locks at the handle's RELEASE.
// A granted lock drops this mount's cached pages and attributes of the
// file (the previous holder's writes were flushed before its unlock), so
// what the next holder reads is what was written under the lock.

namespace {

client::LockSpec SpecOf(const struct flock& l) {
  client::LockSpec s;
  s.type = l.l_type;
  s.start = static_cast<uint64_t>(l.l_start);
  s.end = l.l_len == 0 ? UINT64_MAX : static_cast<uint64_t>(l.l_start + l.l_len - 1);
  s.pid = static_cast<uint32_t>(l.l_pid);
  return s;
}

// What an interrupted blocking lock needs to cancel its wait.
struct LockWait {
  client::Client* client;
  uint64_t ino;
  uint64_t owner;
  bool flock;
};

void OnLockInterrupt(fuse_req_t, void* data) {
  auto* w = static_cast<LockWait*>(data);
  w->client->CancelLockWait(w->ino, w->owner, w->flock);
}

}  // namespace

void FuseOps::OnGetlk(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi, struct flock* lock) {
  Result<client::LockSpec> r = client_->TestLock(ino, fi->lock_owner, false, SpecOf(*lock));
  if (!r.ok()) return ReplyStatus(req, r.status());
  struct flock out = *lock;
  out.l_type = static_cast<short>(r->type);
  if (r->type != F_UNLCK) {
    out.l_start = static_cast<off_t>(r->start);
    out.l_len = r->end == UINT64_MAX ? 0 : static_cast<off_t>(r->end - r->start + 1);
    out.l_pid = static_cast<pid_t>(r->pid);
  }
  fuse_reply_lock(req, &out);
}

Status FuseOps::DoLock(fuse_req_t req, fuse_ino_t ino, uint64_t owner, bool flock,
                       const client::LockSpec& spec, bool wait) {
  LockWait w{client_.get(), ino, owner, flock};
  if (wait) fuse_req_interrupt_func(req, OnLockInterrupt, &w);
  Status st = client_->SetLock(ino, owner, flock, spec, wait);
  if (wait) fuse_req_interrupt_func(req, nullptr, nullptr);
  if (st.ok() && spec.type != F_UNLCK) {
    if (fuse_session* se = data_se_.load()) fuse_lowlevel_notify_inval_inode(se, ino, 0, 0);
  }
  return st;
}

void FuseOps::OnSetlk(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi, struct flock* lock,
                      int sleep) {
  if (lock->l_type != F_UNLCK) {
    std::lock_guard<std::mutex> l(HandleOf(fi)->mu);
    HandleOf(fi)->lockers.insert(fi->lock_owner);
  }
  ReplyStatus(req, DoLock(req, ino, fi->lock_owner, false, SpecOf(*lock), sleep != 0));
}

void FuseOps::OnFlock(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi, int op) {
  client::LockSpec spec;
  switch (op & ~LOCK_NB) {
    case LOCK_SH: spec.type = F_RDLCK; break;
    case LOCK_EX: spec.type = F_WRLCK; break;
    case LOCK_UN: spec.type = F_UNLCK; break;
    default: return static_cast<void>(fuse_reply_err(req, EINVAL));
  }
  spec.pid = static_cast<uint32_t>(fuse_req_ctx(req)->pid);
  ReplyStatus(req, DoLock(req, ino, fi->lock_owner, true, spec, (op & LOCK_NB) == 0));
}

void FuseOps::ReleaseHandleLocks(fuse_ino_t ino, fuse_file_info* fi, OpenFile* h) {
  if (fi->flock_release) {
    Status st = client_->ReleaseLocks(ino, fi->lock_owner, /*flock=*/true);
    if (!st.ok()) LOG_WARN("flock release of inode " << ino << ": " << st.ToString());
  }
  std::set<uint64_t> owners;
  {
    std::lock_guard<std::mutex> l(h->mu);
    owners.swap(h->lockers);
  }
  for (uint64_t owner : owners) {
    Status st = client_->ReleaseLocks(ino, owner, /*flock=*/false);
    if (!st.ok()) LOG_WARN("lock release of inode " << ino << ": " << st.ToString());
  }
}

}  // namespace sfs::fuse
