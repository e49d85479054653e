// FuseOps: sfs-mount's FUSE low-level operations, a thin adapter from the
// kernel's requests onto libsfs. Each OnX translates its arguments, calls
// libsfs once (a few times for the composite ops noted at their definition)
// and makes exactly one reply; errors are Status::code(), which is the errno.
// An object of this class is the session's userdata: it owns the Client and
// the options, and there is no file-level state.
//
// Lookup count: every reply that hands the kernel an inode (entry, create,
// a readdirplus entry other than "." and "..") counts one lookup in the
// NodeTable before it is sent, undone if it cannot be delivered; FORGET
// subtracts. libsfs keeps nothing per inode, so the table only carries the
// page-cache rule below.
//
// Caching, chosen for many mounts of one file system (each a training node):
// - Directories with leases on: entries and attributes live as long as the
//   MDS's lease, as for regular files below, and not at all without one
//   (file_entry_timeout / file_attr_timeout). With -o noleases:
//   entry_timeout and attr_timeout, so path walks do not ask the MDS for
//   every component.
//   A lease on a directory (Attr::dir_lease_ms, from any lookup or name op in
//   it) also covers its absent names: the MDS's ENOENT becomes a negative
//   entry for the rest of the lease, and a directory this mount made itself
//   or listed whole under the lease is complete (complete_dirs.h): a LOOKUP
//   of a name absent there (the one the kernel sends before every CREATE of
//   a new name) is answered here, and so is the GETATTR of the directory
//   the kernel sends after each create or unlink in it.
//   READDIRPLUS hands the kernel each entry's attributes with what is left
//   of the lease the MDS granted on it in the listing (ListedLeaseLeft), so
//   the stats of ls -l or find(1) need no LOOKUP.
//   Another client's create, unlink or rename in the directory is revoked
//   first (invalidation of the name and the directory's attributes).
// - Regular files with leases on (the default; -o noleases turns them off):
//   entries and attributes live as long as the MDS's lease (lease_ms, 5 s by
//   default), so mdtest-style stat/open/unlink of a file this mount just
//   created or looked at ask the MDS nothing. A change made through another
//   mount first reaches us as an invalidation (LeaseWatch thread): we tell the
//   kernel with fuse_lowlevel_notify_inval_entry/_inode (attributes only; the
//   page cache stays governed by the keep_cache rule at open), and the other
//   mount's syscall returns only after that. Notify calls run only on the
//   watch thread, never inside a request handler: inval_entry takes the
//   parent directory's lock, which the kernel holds while a request on it is
//   with us. A reply that may have been read before an invalidation we
//   applied gets no lease (libsfs) and the kernel drops attributes that
//   arrive after an inode invalidation (attr_version), so a stale answer is
//   never cached. Two mounts each unlinking in one directory a file the other
//   holds a lease on would wait for each other's directory lock; the MDS
//   breaks such wait cycles (docs/protocol.md, "Metadata leases").
// - Everything else (files, symlinks, devices; regular files with leases off):
//   entries and attributes live
//   file_entry_timeout / file_attr_timeout, 0 by default. So every open and
//   stat looks the name up afresh: a name renamed or unlinked on another node
//   is gone here at once, and open sees the size another node extended the
//   file to (no premature EOF, and O_APPEND appends at the true end). That
//   costs one LOOKUP per open or stat, as the GETATTR of NFS's close-to-open
//   does. AUTO_INVAL_DATA is off so that expired attributes do not cost a
//   GETATTR on every read(); reads refresh the size only past the cached end.
// - security.capability, which the kernel asks for before every write(2):
//   known absent while this mount has the file open for writing, from the
//   first answer until the next open, the last writable close or an xattr
//   change through this mount (node_table.h). One MDS getxattr per open
//   rather than per write.
// - Negative entries are cached only under a directory lease (above), so a
//   name created elsewhere is seen at once.
// - Page cache: kept at open (keep_cache) iff the file's mtime and size at
//   the MDS equal those seen by the previous open through this mount
//   (close-to-open); otherwise the kernel drops the pages. No writeback
//   cache: every write goes to the OSSes as the kernel gets it, so writers on
//   many nodes to disjoint ranges of one file never rewrite each other's
//   bytes from a stale page. Write-only handles bypass the page cache
//   altogether (direct I/O: one FUSE WRITE per write(2); fuse_file_ops.cc),
//   and their writes are answered once libsfs has copied them (write-behind,
//   -o write_behind_kb; the mount waits for them before reads, attributes,
//   truncates, flush and fsync of that inode).
// - An operation on an inode removed elsewhere gets ESTALE from the MDS; the
//   kernel then walks the path again with revalidation, so a name removed and
//   re-created through another mount is usable at once. (This needs the MDS
//   to answer ESTALE, not ENOENT, when the *parent* of a named operation is
//   gone; opendir checks its directory with GetAttr for the same reason.)
// - fallocate (mode 0, KEEP_SIZE, PUNCH_HOLE, ZERO_RANGE), lseek
//   SEEK_DATA/SEEK_HOLE and copy_file_range are done by the OSSes on the
//   stripe objects (libsfs space_ops.h; no file data through the mount).
// - Not implemented, so the kernel answers: ioctl; O_TMPFILE (EOPNOTSUPP:
//   libfuse 3.14 has no tmpfile op, so the kernel's FUSE_TMPFILE gets ENOSYS,
//   which the kernel turns into EOPNOTSUPP for good, as on other FUSE file
//   systems of this libfuse). POSIX ACL xattrs are EOPNOTSUPP.
// - Locks (flock, fcntl POSIX and OFD) are cluster-wide, granted by the MDS
//   (fuse_file_ops.cc, "Locks"); -o nolocks leaves them to the kernel, per
//   mount. With locks on, read-only handles get FLUSH too (where a
//   process's POSIX locks end).
//
// Thread-safe: FUSE's multi-threaded loop calls any OnX from any worker.
#pragma once

#define FUSE_USE_VERSION 314
#include <fuse3/fuse_lowlevel.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "client/fuse/complete_dirs.h"
#include "client/fuse/dir_cursor.h"
#include "client/fuse/fuse_metrics.h"
#include "client/fuse/node_table.h"
#include "client/fuse/read_buffers.h"
#include "client/fuse/stat_ahead.h"
#include "client/lib/client.h"

namespace sfs::fuse {

// The libsfs File behind an open file handle (fi->fh of open/create).
const client::File* FileOfHandle(const fuse_file_info* fi);

struct FuseOptions {
  double entry_timeout = 1.0;       // seconds: entries naming directories
  double attr_timeout = 1.0;        // seconds: attributes of directories
  double file_entry_timeout = 0.0;  // seconds: entries naming anything else
  double file_attr_timeout = 0.0;   // seconds: attributes of anything else
  // Regular files: cache for as long as the MDS's lease (Attr::lease_ms).
  bool leases = true;
  uint32_t max_write = 1u << 20;
  uint32_t max_read = 1u << 20;    // the largest READ asked of the kernel (-o max_read_kb)
  bool splice_write = false;       // reply read data through a pipe
  uint32_t readdir_page = 512;     // entries per libsfs Readdir call
  uint32_t max_readahead = 0;      // bytes; 0 = what the kernel proposes
  // Cluster-wide fcntl/flock locks through the MDS (-o nolocks: the
  // kernel's, per mount).
  bool locks = true;
  // O_RDWR handles get direct I/O and write-behind, as write-only ones, when
  // the kernel took FUSE_DIRECT_IO_ALLOW_MMAP (wire_flags.h), so they can
  // still be mmapped. -o rdwr_cache: they use the page cache.
  bool rdwr_direct = true;
  // With leases: list a directory ahead of a run of LOOKUPs in it
  // (stat_ahead.h). -o nostatahead: one MDS lookup per name.
  bool statahead = true;
};

class WireFlags;  // wire_flags.h

struct OpenFile;  // fuse_file_ops.cc: what fi->fh points to

class FuseOps {
 public:
  FuseOps(std::unique_ptr<client::Client> client, FuseOptions opts);
  FuseOps(const FuseOps&) = delete;
  FuseOps& operator=(const FuseOps&) = delete;

  // The operation table; its callbacks find this object as the userdata.
  static const fuse_lowlevel_ops& Table();
  // What the kernel accepted at INIT (read at each open). REQUIRES: set
  // before the session starts; wire outlives this object.
  void SetWireFlags(const WireFlags* wire) { wire_ = wire; }
  // Counts every request there (fuse_metrics.h); null = none. REQUIRES: set
  // before the session starts; m outlives this object.
  void SetMetrics(FuseMetrics* m) { metrics_ = m; }
  FuseMetrics* metrics() const { return metrics_; }

  const NodeTable& nodes() const { return nodes_; }
  const CompleteDirs& complete_dirs() const { return dirs_; }
  // Null with -o noleases or -o nostatahead.
  const StatAhead* statahead() const { return statahead_.get(); }

  void OnInit(fuse_conn_info* conn);
  // Names, attributes, xattrs (fuse_ops.cc).
  void OnLookup(fuse_req_t req, fuse_ino_t parent, const char* name);
  void OnForget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup);
  void OnForgetMulti(fuse_req_t req, size_t count, fuse_forget_data* forgets);
  void OnGetAttr(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
  void OnSetAttr(fuse_req_t req, fuse_ino_t ino, struct stat* st, int to_set, fuse_file_info* fi);
  void OnReadlink(fuse_req_t req, fuse_ino_t ino);
  void OnMknod(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, dev_t rdev);
  void OnMkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode);
  void OnUnlink(fuse_req_t req, fuse_ino_t parent, const char* name);
  void OnRmdir(fuse_req_t req, fuse_ino_t parent, const char* name);
  void OnSymlink(fuse_req_t req, const char* target, fuse_ino_t parent, const char* name);
  void OnRename(fuse_req_t req, fuse_ino_t parent, const char* name, fuse_ino_t new_parent,
                const char* new_name, unsigned int flags);
  void OnLink(fuse_req_t req, fuse_ino_t ino, fuse_ino_t new_parent, const char* new_name);
  void OnStatfs(fuse_req_t req, fuse_ino_t ino);
  void OnSetXattr(fuse_req_t req, fuse_ino_t ino, const char* name, const char* value,
                  size_t size, int flags);
  void OnGetXattr(fuse_req_t req, fuse_ino_t ino, const char* name, size_t size);
  void OnListXattr(fuse_req_t req, fuse_ino_t ino, size_t size);
  void OnRemoveXattr(fuse_req_t req, fuse_ino_t ino, const char* name);
  // Open files and data (fuse_file_ops.cc).
  void OnOpen(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
  void OnCreate(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode,
                fuse_file_info* fi);
  void OnRead(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi);
  void OnWriteBuf(fuse_req_t req, fuse_ino_t ino, fuse_bufvec* bufv, off_t off,
                  fuse_file_info* fi);
  void OnFlush(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
  void OnRelease(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
  void OnFsync(fuse_req_t req, fuse_ino_t ino, int datasync, fuse_file_info* fi);
  // Space and copies (fuse_file_ops.cc).
  void OnFallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
                   fuse_file_info* fi);
  void OnLseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, fuse_file_info* fi);
  void OnCopyFileRange(fuse_req_t req, fuse_ino_t ino_in, off_t off_in, fuse_file_info* fi_in,
                       fuse_ino_t ino_out, off_t off_out, fuse_file_info* fi_out, size_t len,
                       int flags);
  // Locks (fuse_file_ops.cc).
  void OnGetlk(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi, struct flock* lock);
  void OnSetlk(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi, struct flock* lock,
               int sleep);
  void OnFlock(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi, int op);
  // Directories (fuse_dir_ops.cc).
  void OnOpendir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
  void OnReaddir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi);
  void OnReaddirPlus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                     fuse_file_info* fi);
  void OnReleasedir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);

  // Leases: StartLeases (after the mount) starts libsfs's watch thread with
  // our invalidation handler, if leases are on; StopLeases (after the loop,
  // before the unmount closes the session's fd) makes the handler a no-op.
  void StartLeases(fuse_session* se);
  void StopLeases();
  // fsync(2) of a directory: its entries (and every other metadata change
  // acknowledged before) become durable on the MDS.
  void OnFsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, fuse_file_info* fi);

 private:
  double AttrTimeout(const client::Attr& a) const;
  double EntryTimeout(const client::Attr& a) const;
  void Invalidate(const client::Invalidation& i);  // watch thread only
  fuse_entry_param EntryParam(const client::Attr& a) const;
  // Replies with an entry for a, counting the lookup.
  void ReplyEntry(fuse_req_t req, const client::Attr& a);
  // Replies "no such name", cached by the kernel for `seconds` (a negative
  // entry under a directory lease; fuse_ops.h).
  static void ReplyAbsent(fuse_req_t req, double seconds);
  // When and at which CompleteDirs epoch a name op was sent.
  struct OpStart {
    CompleteDirs::Clock::time_point sent;
    uint64_t epoch = 0;
  };
  OpStart Begin() const { return {CompleteDirs::Clock::now(), dirs_.Epoch()}; }
  // A change of names or attributes through this mount (the MDS revokes no
  // lease of ours for it): the statahead forgets what it holds, and listed
  // pages held by open directories give the kernel no leases. With fi: only
  // for a handle open for writing.
  void LocalChange();
  void LocalChange(const fuse_file_info* fi);
  // After a change of a name in dir through this mount: what CompleteDirs
  // must learn from the reply a (null on error) or dir_attr (a failure may
  // have changed anything: it forgets dir).
  void NoteAdded(uint64_t dir, const char* name, const Status& st, const client::Attr* a,
                 const OpStart& start);
  void NoteRemoved(uint64_t dir, const char* name, const Status& st,
                   const client::Attr& dir_attr, const OpStart& start);
  void ReplyAttr(fuse_req_t req, const client::Attr& a);
  void ReplyOpen(fuse_req_t req, std::shared_ptr<client::File> f, const client::Attr& a,
                 fuse_file_info* fi, bool with_entry);
  // One lock call; a grant drops the file's cached pages (fuse_file_ops.cc).
  Status DoLock(fuse_req_t req, fuse_ino_t ino, uint64_t owner, bool flock,
                const client::LockSpec& spec, bool wait);
  // At RELEASE: the handle's flock lock and the OFD locks taken through it.
  void ReleaseHandleLocks(fuse_ino_t ino, fuse_file_info* fi, OpenFile* h);
  // Before a write: what the kernel's file_remove_privs would do (file
  // capabilities only for a direct write; the kernel strips those itself).
  Status RemovePrivs(fuse_req_t req, fuse_ino_t ino, bool direct);
  // Drops ino's set-id bits as a write by req's process does (SETATTR_KILL_SUID)
  // unless it has CAP_FSETID; *mode (if not null) := the mode after.
  Status KillSetId(fuse_req_t req, fuse_ino_t ino, uint32_t* mode);
  // After an open with O_TRUNC for writing: KillSetId if a's mode calls for it.
  void KillSetIdOnTrunc(fuse_req_t req, int flags, client::Attr* a);
  // One entry about to be added to a readdir reply.
  struct Emit {
    const char* name = "";  // NUL-terminated: FUSE copies it by strlen
    uint64_t ino = 0;
    uint32_t type = 0;      // DT_*
    const client::Attr* attr = nullptr;  // readdirplus: hand the kernel this inode
  };
  void DoReaddir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi,
                 bool plus);
  // Fills buf under the cursor's lock; returns the bytes used.
  Result<size_t> FillDir(fuse_req_t req, fuse_ino_t ino, off_t off, bool plus, DirCursor& dir,
                         std::vector<char>& buf, std::vector<uint64_t>& refs);
  // After each libsfs Readdir page (first: from the start).
  void NoteListed(uint64_t ino, DirCursor& dir, bool first, const Result<client::DirPage>& page,
                  const OpStart& start, uint64_t names_epoch);
  // Readdirplus: what is left, now, of the lease a.lease_ms of an entry of
  // the page stamped s; 0 if it ran out or anything may have changed since
  // the page was asked for (an invalidation, a name op or a change here).
  uint32_t ListedLeaseLeft(const client::Attr& a, const DirCursor::Stamp* s) const;
  // Adds em at out; returns the size it needs (> room: nothing was added).
  size_t AddDirEntry(fuse_req_t req, char* out, size_t room, const Emit& em, off_t next,
                     bool plus, std::vector<uint64_t>& refs);

  std::unique_ptr<client::Client> client_;
  const FuseOptions opts_;
  FuseMetrics* metrics_ = nullptr;
  NodeTable nodes_;
  CompleteDirs dirs_;
  std::unique_ptr<StatAhead> statahead_;
  std::atomic<uint64_t> local_epoch_{0};  // advanced by LocalChange
  // READ reply buffers of max_write bytes (1 MiB): 32 idle at most, one per
  // worker in use at most. READs beyond that (up to -o max_read_kb) take
  // one of big_read_buffers_: 8 idle at most, and 64 MiB of them in use at
  // most, the bytes of 64 workers' READs of 1 MiB (read_buffers.h).
  ReadBuffers read_buffers_{opts_.max_write, 32};
  ReadBuffers big_read_buffers_{std::max(opts_.max_write, opts_.max_read), 8,
                                std::max<size_t>(1, (64u << 20) / std::max(opts_.max_write,
                                                                           opts_.max_read))};
  std::mutex notify_mu_;                 // held across a notify call
  fuse_session* notify_se_ = nullptr;    // GUARDED_BY(notify_mu_)
  // For data invalidations from request handlers (a lock grant): set from
  // the mount to the unmount, with or without leases.
  std::atomic<fuse_session*> data_se_{nullptr};
  const WireFlags* wire_ = nullptr;
};

// The caller's credentials (uid, gid, supplementary groups) for libsfs.
client::Cred CredOf(fuse_req_t req);
// The one reply for a request that returns only a status: 0 or the errno.
void ReplyStatus(fuse_req_t req, const Status& st);

}  // namespace sfs::fuse
