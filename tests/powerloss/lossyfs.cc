// sfs-lossyfs: a FUSE file system for power-loss tests (issue 15), in the
// manner of LevelDB's fault-injection Env but under a whole daemon.
//
//   sfs-lossyfs LIVE DURABLE MOUNTPOINT [fuse options]
//
// LIVE is what the machine sees while it runs (the page cache): every call
// goes straight through to it. DURABLE is what its disk would hold after a
// power cut; it must equal LIVE when lossyfs starts (the harness copies it).
// The model is ext4's ordered journal, kept simple:
//   - namespace changes (create, mknod, mkdir, unlink, rmdir, rename, link,
//     symlink, truncate/ftruncate, chmod) are applied to LIVE and appended,
//     in that order, to an in-memory log;
//   - every write (and fallocate) adds its byte range to its backing inode's
//     dirty set;
//   - fsync/fdatasync of a file, and fsync of a directory, first replay the
//     whole log onto DURABLE (whose namespace then equals LIVE's); fsync of a
//     file then also copies that file's dirty ranges from LIVE to DURABLE,
//     gives the DURABLE file LIVE's size and fdatasyncs it.
// A power cut is SIGKILL of this process (plus a lazy unmount): whatever is
// not in DURABLE is gone. Ownership and times are not modelled (they pass
// through to LIVE only).
//
// Pitfalls handled here: O_DIRECT is stripped from backing opens (the kernel
// hands us unaligned buffers) while O_DIRECT opens of the mount succeed;
// O_APPEND is stripped too, since the kernel already puts the end of file in
// each write's offset and the dirty range must be where the bytes went; no
// direct_io, so LevelDB can mmap its tables; libfuse's .fuse_hidden renames
// of open-unlinked files reach us as renames and are logged like any other.
//
// Lock order: durable_mu_ -> ns_mu_ -> dirty_mu_.
#define FUSE_USE_VERSION 314
#include <dirent.h>
#include <fcntl.h>
#include <fuse3/fuse.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace sfs::powerloss {
namespace {

// One logged namespace change; replayed by Apply() on any directory fd.
struct NsOp {
  enum class Kind {
    kCreate,
    kMknod,
    kMkdir,
    kUnlink,
    kRmdir,
    kSymlink,
    kRename,
    kLink,
    kTruncate,
    kChmod
  };
  Kind kind;
  std::string path;   // relative to the root ("." for the root itself)
  std::string path2;  // rename/link target, symlink target
  mode_t mode = 0;
  dev_t rdev = 0;
  off_t size = 0;
  unsigned flags = 0;  // renameat2 flags
};

const char* KindName(NsOp::Kind k) {
  static const char* const kNames[] = {"create",  "mknod",  "mkdir", "unlink",   "rmdir",
                                       "symlink", "rename", "link",  "truncate", "chmod"};
  return kNames[static_cast<int>(k)];
}

std::string Rel(const char* path) { return path[1] == '\0' ? "." : std::string(path + 1); }

int Errno(int rc) { return rc < 0 ? -errno : 0; }

int TruncateAt(int dir, const std::string& rel, off_t size) {
  int fd = ::openat(dir, rel.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  int err = Errno(::ftruncate(fd, size));
  ::close(fd);
  return err;
}

// Applies op under dir; 0 or -errno.
int Apply(int dir, const NsOp& op) {
  const char* p = op.path.c_str();
  switch (op.kind) {
    case NsOp::Kind::kCreate: {
      int fd = ::openat(dir, p, O_CREAT | O_WRONLY | O_CLOEXEC, op.mode);
      if (fd < 0) return -errno;
      ::close(fd);
      return 0;
    }
    case NsOp::Kind::kMknod:
      return Errno(::mknodat(dir, p, op.mode, op.rdev));
    case NsOp::Kind::kMkdir:
      return Errno(::mkdirat(dir, p, op.mode));
    case NsOp::Kind::kUnlink:
      return Errno(::unlinkat(dir, p, 0));
    case NsOp::Kind::kRmdir:
      return Errno(::unlinkat(dir, p, AT_REMOVEDIR));
    case NsOp::Kind::kSymlink:
      return Errno(::symlinkat(op.path2.c_str(), dir, p));
    case NsOp::Kind::kRename:
      return Errno(::renameat2(dir, p, dir, op.path2.c_str(), op.flags));
    case NsOp::Kind::kLink:
      return Errno(::linkat(dir, p, dir, op.path2.c_str(), 0));
    case NsOp::Kind::kTruncate:
      return TruncateAt(dir, op.path, op.size);
    case NsOp::Kind::kChmod:
      return Errno(::fchmodat(dir, p, op.mode, 0));
  }
  return -EINVAL;
}

// Byte ranges [start, end) of one file, kept disjoint and merged.
using Ranges = std::map<off_t, off_t>;

void AddRange(Ranges* r, off_t start, off_t end) {
  auto it = r->upper_bound(start);
  if (it != r->begin() && std::prev(it)->second >= start) --it;
  while (it != r->end() && it->first <= end) {
    start = std::min(start, it->first);
    end = std::max(end, it->second);
    it = r->erase(it);
  }
  r->emplace(start, end);
}

// Copies the bytes of [start, end) that exist in src to dst; 0 or -errno.
int CopyRange(int src, int dst, off_t start, off_t end) {
  std::vector<char> buf(1 << 20);
  for (off_t off = start; off < end;) {
    size_t want = static_cast<size_t>(std::min<off_t>(end - off, static_cast<off_t>(buf.size())));
    ssize_t n = ::pread(src, buf.data(), want, off);
    if (n < 0) return -errno;
    if (n == 0) return 0;  // past the live file's end (truncated since)
    if (::pwrite(dst, buf.data(), static_cast<size_t>(n), off) != n) return errno ? -errno : -EIO;
    off += n;
  }
  return 0;
}

class LossyFs {
 public:
  // Opens the two roots; false (with a message) if either is missing.
  bool Open(const char* live, const char* durable) {
    live_ = ::open(live, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    durable_ = ::open(durable, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (live_ < 0 || durable_ < 0) {
      std::fprintf(stderr, "sfs-lossyfs: cannot open %s or %s: %s\n", live, durable,
                   std::strerror(errno));
      return false;
    }
    return true;
  }

  int live() const { return live_; }

  // Applies op to LIVE and logs it; 0 or -errno (then nothing is logged).
  int Change(const NsOp& op) {
    std::lock_guard<std::mutex> l(ns_mu_);
    struct stat victim {};
    bool has_victim = VictimOf(op, &victim);
    int err = Apply(live_, op);
    if (err != 0) return err;
    log_.push_back(op);
    // The inode's number may be reused: forget its dirty ranges once it is gone.
    if (has_victim && S_ISREG(victim.st_mode) && victim.st_nlink == 1) Forget(victim.st_ino);
    return 0;
  }

  // open(2)/create(2) on LIVE, logging the create and an O_TRUNC; fd or -errno.
  int OpenFile(const char* path, int flags, mode_t mode, bool create) {
    flags &= ~(O_DIRECT | O_APPEND);
    std::lock_guard<std::mutex> l(ns_mu_);
    int fd = ::openat(live_, Rel(path).c_str(), flags | O_CLOEXEC | (create ? O_CREAT : 0), mode);
    if (fd < 0) return -errno;
    if (create) log_.push_back({NsOp::Kind::kCreate, Rel(path), "", mode});
    if (flags & O_TRUNC) log_.push_back({NsOp::Kind::kTruncate, Rel(path), "", 0, 0, 0});
    return fd;
  }

  // pwrite on fd, noting the range dirty; bytes written or -errno.
  int Write(int fd, const char* buf, size_t n, off_t off) {
    ssize_t w = ::pwrite(fd, buf, n, off);
    if (w < 0) return -errno;
    MarkDirty(fd, off, off + w);
    return static_cast<int>(w);
  }

  void MarkDirty(int fd, off_t start, off_t end) {
    struct stat st {};
    if (::fstat(fd, &st) != 0 || end <= start) return;
    std::lock_guard<std::mutex> l(dirty_mu_);
    AddRange(&dirty_[st.st_ino], start, end);
  }

  // fsync(2) of the file open as fd at path: see the top of the file.
  int SyncFile(const char* path, int fd) {
    std::lock_guard<std::mutex> l(durable_mu_);
    int err = ReplayLog();
    if (err == 0) err = CopyDirty(path, fd);
    return err;
  }

  // fsync(2) of a directory.
  int SyncDir() {
    std::lock_guard<std::mutex> l(durable_mu_);
    return ReplayLog();
  }

 private:
  // The inode op removes or replaces, if any.
  bool VictimOf(const NsOp& op, struct stat* st) {
    const std::string* name = nullptr;
    if (op.kind == NsOp::Kind::kUnlink) name = &op.path;
    if (op.kind == NsOp::Kind::kRename && !(op.flags & RENAME_EXCHANGE)) name = &op.path2;
    if (name == nullptr || ::fstatat(live_, name->c_str(), st, AT_SYMLINK_NOFOLLOW) != 0) {
      return false;
    }
    struct stat src {};
    // rename onto another name of the same inode removes nothing.
    return !(op.kind == NsOp::Kind::kRename &&
             ::fstatat(live_, op.path.c_str(), &src, AT_SYMLINK_NOFOLLOW) == 0 &&
             src.st_ino == st->st_ino);
  }

  void Forget(ino_t ino) {
    std::lock_guard<std::mutex> l(dirty_mu_);
    dirty_.erase(ino);
  }

  // REQUIRES: durable_mu_ held. A failed replay leaves DURABLE diverged from
  // the model, so every later sync fails too (a broken disk).
  int ReplayLog() {
    std::vector<NsOp> ops;
    {
      std::lock_guard<std::mutex> l(ns_mu_);
      ops.swap(log_);
    }
    for (const NsOp& op : ops) {
      if (broken_) break;
      int err = Apply(durable_, op);
      if (err != 0) {
        std::fprintf(stderr, "sfs-lossyfs: replaying %s %s %s on the durable image: %s\n",
                     KindName(op.kind), op.path.c_str(), op.path2.c_str(), std::strerror(-err));
        broken_ = true;
      }
    }
    return broken_ ? -EIO : 0;
  }

  // REQUIRES: durable_mu_ held and the log replayed (so path exists in DURABLE).
  int CopyDirty(const char* path, int fd) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return -errno;
    Ranges ranges;
    {
      std::lock_guard<std::mutex> l(dirty_mu_);
      auto it = dirty_.find(st.st_ino);
      if (it != dirty_.end()) ranges.swap(it->second);
    }
    // The size after taking the ranges: it covers every write they hold.
    if (::fstat(fd, &st) != 0) return -errno;
    int err = CopyRanges(path, fd, ranges, st.st_size);
    if (err != 0) {
      std::fprintf(stderr, "sfs-lossyfs: fsync %s: %s\n", path, std::strerror(-err));
      std::lock_guard<std::mutex> l(dirty_mu_);
      for (const auto& [start, end] : ranges) AddRange(&dirty_[st.st_ino], start, end);
    }
    return err;
  }

  int CopyRanges(const char* path, int fd, const Ranges& ranges, off_t size) {
    // fd may be write-only: read through a fresh descriptor of the same file.
    int src = ::open(("/proc/self/fd/" + std::to_string(fd)).c_str(), O_RDONLY | O_CLOEXEC);
    if (src < 0) return -errno;
    int dst = ::openat(durable_, Rel(path).c_str(), O_WRONLY | O_CLOEXEC);
    int err = dst < 0 ? -errno : 0;
    for (auto it = ranges.begin(); err == 0 && it != ranges.end(); ++it) {
      err = CopyRange(src, dst, it->first, it->second);
    }
    if (err == 0) err = Errno(::ftruncate(dst, size));
    if (err == 0) err = Errno(::fdatasync(dst));
    ::close(src);
    if (dst >= 0) ::close(dst);
    return err;
  }

  int live_ = -1;
  int durable_ = -1;
  std::mutex durable_mu_;  // serialises replays and copies onto DURABLE
  bool broken_ = false;    // GUARDED_BY(durable_mu_)
  std::mutex ns_mu_;       // LIVE's namespace changes happen in log order
  std::vector<NsOp> log_;  // GUARDED_BY(ns_mu_): changes not yet replayed
  std::mutex dirty_mu_;
  std::map<ino_t, Ranges> dirty_;  // GUARDED_BY(dirty_mu_): by LIVE inode
};

LossyFs& Fs() { return *static_cast<LossyFs*>(fuse_get_context()->private_data); }
int Live() { return Fs().live(); }

// The callbacks: one call on LIVE (through LossyFs for what is modelled).
void* OnInit(fuse_conn_info*, fuse_config* cfg) {
  cfg->hard_remove = 0;  // open-unlinked files become .fuse_hidden renames (logged)
  cfg->direct_io = 0;    // LevelDB mmaps its tables
  cfg->use_ino = 1;      // LIVE's inode numbers: hard links show as one file
  return fuse_get_context()->private_data;
}

int OnGetattr(const char* path, struct stat* st, fuse_file_info* fi) {
  if (fi != nullptr) return Errno(::fstat(static_cast<int>(fi->fh), st));
  return Errno(::fstatat(Live(), Rel(path).c_str(), st, AT_SYMLINK_NOFOLLOW));
}

int OnReadlink(const char* path, char* buf, size_t size) {
  ssize_t n = ::readlinkat(Live(), Rel(path).c_str(), buf, size - 1);
  if (n < 0) return -errno;
  buf[n] = '\0';
  return 0;
}

int OnMknod(const char* path, mode_t mode, dev_t rdev) {
  return Fs().Change({NsOp::Kind::kMknod, Rel(path), "", mode, rdev});
}
int OnMkdir(const char* path, mode_t mode) {
  return Fs().Change({NsOp::Kind::kMkdir, Rel(path), "", mode});
}
int OnUnlink(const char* path) { return Fs().Change({NsOp::Kind::kUnlink, Rel(path)}); }
int OnRmdir(const char* path) { return Fs().Change({NsOp::Kind::kRmdir, Rel(path)}); }
int OnSymlink(const char* target, const char* path) {
  return Fs().Change({NsOp::Kind::kSymlink, Rel(path), target});
}
int OnRename(const char* from, const char* to, unsigned flags) {
  return Fs().Change({NsOp::Kind::kRename, Rel(from), Rel(to), 0, 0, 0, flags});
}
int OnLink(const char* from, const char* to) {
  return Fs().Change({NsOp::Kind::kLink, Rel(from), Rel(to)});
}
int OnChmod(const char* path, mode_t mode, fuse_file_info*) {
  return Fs().Change({NsOp::Kind::kChmod, Rel(path), "", mode});
}
int OnTruncate(const char* path, off_t size, fuse_file_info*) {
  return Fs().Change({NsOp::Kind::kTruncate, Rel(path), "", 0, 0, size});
}

int OnChown(const char* path, uid_t uid, gid_t gid, fuse_file_info*) {
  return Errno(::fchownat(Live(), Rel(path).c_str(), uid, gid, AT_SYMLINK_NOFOLLOW));
}
int OnUtimens(const char* path, const struct timespec tv[2], fuse_file_info*) {
  return Errno(::utimensat(Live(), Rel(path).c_str(), tv, AT_SYMLINK_NOFOLLOW));
}

int OnOpenOrCreate(const char* path, mode_t mode, fuse_file_info* fi, bool create) {
  int fd = Fs().OpenFile(path, fi->flags, mode, create);
  if (fd < 0) return fd;
  fi->fh = static_cast<uint64_t>(fd);
  return 0;
}
int OnOpen(const char* path, fuse_file_info* fi) { return OnOpenOrCreate(path, 0, fi, false); }
int OnCreate(const char* path, mode_t mode, fuse_file_info* fi) {
  return OnOpenOrCreate(path, mode, fi, true);
}

int OnRead(const char*, char* buf, size_t n, off_t off, fuse_file_info* fi) {
  ssize_t r = ::pread(static_cast<int>(fi->fh), buf, n, off);
  return r < 0 ? -errno : static_cast<int>(r);
}
int OnWrite(const char*, const char* buf, size_t n, off_t off, fuse_file_info* fi) {
  return Fs().Write(static_cast<int>(fi->fh), buf, n, off);
}
int OnFallocate(const char*, int mode, off_t off, off_t len, fuse_file_info* fi) {
  int fd = static_cast<int>(fi->fh);
  if (::fallocate(fd, mode, off, len) != 0) return -errno;
  Fs().MarkDirty(fd, off, off + len);  // a punched hole reads back as zeros: copy those
  return 0;
}
int OnStatfs(const char*, struct statvfs* st) { return Errno(::fstatvfs(Live(), st)); }
int OnFlush(const char*, fuse_file_info*) { return 0; }
int OnRelease(const char*, fuse_file_info* fi) { return Errno(::close(static_cast<int>(fi->fh))); }
int OnFsync(const char* path, int, fuse_file_info* fi) {
  return Fs().SyncFile(path, static_cast<int>(fi->fh));
}

int OnOpendir(const char* path, fuse_file_info* fi) {
  int fd = ::openat(Live(), Rel(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -errno;
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    int err = -errno;
    ::close(fd);
    return err;
  }
  fi->fh = reinterpret_cast<uint64_t>(d);
  return 0;
}
// The whole directory in one call (offsets 0): libfuse buffers it.
int OnReaddir(const char*, void* buf, fuse_fill_dir_t fill, off_t, fuse_file_info* fi,
              fuse_readdir_flags) {
  DIR* d = reinterpret_cast<DIR*>(fi->fh);
  ::rewinddir(d);
  while (dirent* e = ::readdir(d)) {
    struct stat st {};
    st.st_ino = e->d_ino;
    st.st_mode = DTTOIF(e->d_type);
    if (fill(buf, e->d_name, &st, 0, static_cast<fuse_fill_dir_flags>(0)) != 0) break;
  }
  return 0;
}
int OnReleasedir(const char*, fuse_file_info* fi) {
  return Errno(::closedir(reinterpret_cast<DIR*>(fi->fh)));
}
int OnFsyncdir(const char*, int, fuse_file_info*) { return Fs().SyncDir(); }

fuse_operations Operations() {
  fuse_operations ops{};
  ops.init = OnInit;
  ops.getattr = OnGetattr;
  ops.readlink = OnReadlink;
  ops.mknod = OnMknod;
  ops.mkdir = OnMkdir;
  ops.unlink = OnUnlink;
  ops.rmdir = OnRmdir;
  ops.symlink = OnSymlink;
  ops.rename = OnRename;
  ops.link = OnLink;
  ops.chmod = OnChmod;
  ops.chown = OnChown;
  ops.truncate = OnTruncate;
  ops.utimens = OnUtimens;
  ops.open = OnOpen;
  ops.create = OnCreate;
  ops.read = OnRead;
  ops.write = OnWrite;
  ops.fallocate = OnFallocate;
  ops.statfs = OnStatfs;
  ops.flush = OnFlush;
  ops.release = OnRelease;
  ops.fsync = OnFsync;
  ops.opendir = OnOpendir;
  ops.readdir = OnReaddir;
  ops.releasedir = OnReleasedir;
  ops.fsyncdir = OnFsyncdir;
  return ops;
}

}  // namespace
}  // namespace sfs::powerloss

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: sfs-lossyfs LIVE_DIR DURABLE_DIR MOUNTPOINT [fuse options]\n");
    return 2;
  }
  ::umask(0);  // modes reach LIVE and DURABLE as the callers asked for them
  sfs::powerloss::LossyFs fs;
  if (!fs.Open(argv[1], argv[2])) return 1;
  std::vector<char*> args = {argv[0], argv[3], const_cast<char*>("-f")};
  for (int i = 4; i < argc; ++i) args.push_back(argv[i]);
  fuse_operations ops = sfs::powerloss::Operations();
  return fuse_main(static_cast<int>(args.size()), args.data(), &ops, &fs);
}
