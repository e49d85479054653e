// sfs-fuse-passthrough: a plain FUSE passthrough file system, for benchmarks only.
//
//   sfs-fuse-passthrough BACKING_DIR MOUNTPOINT [-f] [-o opts]
//
// It mirrors BACKING_DIR at MOUNTPOINT and does nothing else: every request
// becomes the matching system call on the backing file (pread, pwrite, fsync,
// ...). Its throughput is the "FUSE ceiling" of issue 6: what any FUSE file
// system over the same disk can reach, so sfs-mount's rates are compared with
// it (scripts/peers/fuse_passthrough.sh).
//
// To be a fair ceiling it uses the FUSE settings sfs-mount uses where they
// apply (client/fuse/main.cc, fuse_ops.cc OnInit, mount_args.cc):
// multi-threaded loop with clone_fd, max_threads 64, max_idle_threads 10;
// max_write 1 MiB; max_readahead and the mount's bdi read_ahead_kb 4096 KiB;
// max_background 64, congestion_threshold 48; async read, parallel dirops,
// atomic O_TRUNC; no writeback cache, no splice, no auto_inval_data, locks
// left to the kernel; default_permissions; attribute and entry timeouts 0
// (sfs-mount's defaults for files). xattrs are passed through, so the kernel's
// security.capability lookup per write costs a request here as well.
//
// High-level libfuse API with nullpath_ok: read, write, fsync and release work
// on the open descriptor alone, without building a path. Paths are resolved
// relative to a descriptor of BACKING_DIR (the *at() calls).
#define FUSE_USE_VERSION 314

#include <dirent.h>
#include <fcntl.h>
#include <fuse3/fuse.h>
#include <fuse3/fuse_lowlevel.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace {

constexpr unsigned kMaxWrite = 1u << 20;
constexpr unsigned kReadAheadKb = 4096;
constexpr unsigned kMaxThreads = 64;
constexpr unsigned kMaxIdleThreads = 10;

int g_root_fd = -1;         // the backing directory
std::string g_backing;      // its absolute path (for the *xattr calls, which have no *at form)

// "/a/b" as the kernel names it → "a/b" relative to g_root_fd ("." for the root).
const char* Rel(const char* path) {
  while (*path == '/') ++path;
  return *path == '\0' ? "." : path;
}

std::string Abs(const char* path) { return g_backing + "/" + Rel(path); }

int Err(int rc) { return rc < 0 ? -errno : rc; }

// New files and directories belong to the caller, as on a local file system.
void GiveToCaller(const char* path) {
  fuse_context* c = fuse_get_context();
  if (c->uid == 0 && c->gid == 0) return;
  if (fchownat(g_root_fd, Rel(path), c->uid, c->gid, AT_SYMLINK_NOFOLLOW) != 0) {
    // The daemon is not root: the file stays the daemon's.
  }
}

void* OnInit(fuse_conn_info* conn, fuse_config* cfg) {
  conn->max_write = kMaxWrite;
  conn->max_readahead = kReadAheadKb * 1024;
  conn->max_background = 64;
  conn->congestion_threshold = 48;
  auto want = [conn](unsigned cap) {
    if (conn->capable & cap) conn->want |= cap;
  };
  want(FUSE_CAP_ASYNC_READ);
  want(FUSE_CAP_PARALLEL_DIROPS);
  want(FUSE_CAP_ATOMIC_O_TRUNC);
  conn->want &= ~(FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_MOVE);
  conn->want &= ~(FUSE_CAP_WRITEBACK_CACHE | FUSE_CAP_EXPORT_SUPPORT | FUSE_CAP_AUTO_INVAL_DATA);
  conn->want &= ~(FUSE_CAP_POSIX_LOCKS | FUSE_CAP_FLOCK_LOCKS);
  cfg->use_ino = 1;
  cfg->readdir_ino = 1;
  cfg->nullpath_ok = 1;
  cfg->hard_remove = 1;
  cfg->entry_timeout = 0;
  cfg->attr_timeout = 0;
  cfg->negative_timeout = 0;
  cfg->kernel_cache = 0;
  cfg->auto_cache = 0;
  cfg->direct_io = 0;
  return nullptr;
}

int OnGetattr(const char* path, struct stat* st, fuse_file_info* fi) {
  if (fi != nullptr) return Err(fstat(static_cast<int>(fi->fh), st));
  return Err(fstatat(g_root_fd, Rel(path), st, AT_SYMLINK_NOFOLLOW));
}

int OnReadlink(const char* path, char* buf, size_t size) {
  ssize_t n = readlinkat(g_root_fd, Rel(path), buf, size - 1);
  if (n < 0) return -errno;
  buf[n] = '\0';
  return 0;
}

int OnMknod(const char* path, mode_t mode, dev_t rdev) {
  int rc = Err(mknodat(g_root_fd, Rel(path), mode, rdev));
  if (rc == 0) GiveToCaller(path);
  return rc;
}

int OnMkdir(const char* path, mode_t mode) {
  int rc = Err(mkdirat(g_root_fd, Rel(path), mode));
  if (rc == 0) GiveToCaller(path);
  return rc;
}

int OnUnlink(const char* path) { return Err(unlinkat(g_root_fd, Rel(path), 0)); }
int OnRmdir(const char* path) { return Err(unlinkat(g_root_fd, Rel(path), AT_REMOVEDIR)); }

int OnSymlink(const char* target, const char* path) {
  int rc = Err(symlinkat(target, g_root_fd, Rel(path)));
  if (rc == 0) GiveToCaller(path);
  return rc;
}

int OnRename(const char* from, const char* to, unsigned int flags) {
  return Err(renameat2(g_root_fd, Rel(from), g_root_fd, Rel(to), flags));
}

int OnLink(const char* from, const char* to) {
  return Err(linkat(g_root_fd, Rel(from), g_root_fd, Rel(to), 0));
}

int OnChmod(const char* path, mode_t mode, fuse_file_info* fi) {
  if (fi != nullptr) return Err(fchmod(static_cast<int>(fi->fh), mode));
  return Err(fchmodat(g_root_fd, Rel(path), mode, 0));
}

int OnChown(const char* path, uid_t uid, gid_t gid, fuse_file_info* fi) {
  if (fi != nullptr) return Err(fchown(static_cast<int>(fi->fh), uid, gid));
  return Err(fchownat(g_root_fd, Rel(path), uid, gid, AT_SYMLINK_NOFOLLOW));
}

int OnTruncate(const char* path, off_t size, fuse_file_info* fi) {
  if (fi != nullptr) return Err(ftruncate(static_cast<int>(fi->fh), size));
  int fd = openat(g_root_fd, Rel(path), O_WRONLY);
  if (fd < 0) return -errno;
  int rc = Err(ftruncate(fd, size));
  close(fd);
  return rc;
}

int OnUtimens(const char* path, const struct timespec tv[2], fuse_file_info* fi) {
  if (fi != nullptr) return Err(futimens(static_cast<int>(fi->fh), tv));
  return Err(utimensat(g_root_fd, Rel(path), tv, AT_SYMLINK_NOFOLLOW));
}

int OnOpen(const char* path, fuse_file_info* fi) {
  int fd = openat(g_root_fd, Rel(path), fi->flags & ~O_NOFOLLOW);
  if (fd < 0) return -errno;
  fi->fh = static_cast<uint64_t>(fd);
  return 0;
}

int OnCreate(const char* path, mode_t mode, fuse_file_info* fi) {
  int fd = openat(g_root_fd, Rel(path), fi->flags | O_CREAT, mode);
  if (fd < 0) return -errno;
  GiveToCaller(path);
  fi->fh = static_cast<uint64_t>(fd);
  return 0;
}

int OnRead(const char*, char* buf, size_t size, off_t off, fuse_file_info* fi) {
  size_t done = 0;
  while (done < size) {
    ssize_t n = pread(static_cast<int>(fi->fh), buf + done, size - done, off + done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return done > 0 ? static_cast<int>(done) : -errno;
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return static_cast<int>(done);
}

int OnWrite(const char*, const char* buf, size_t size, off_t off, fuse_file_info* fi) {
  size_t done = 0;
  while (done < size) {
    ssize_t n = pwrite(static_cast<int>(fi->fh), buf + done, size - done, off + done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return done > 0 ? static_cast<int>(done) : -errno;
    done += static_cast<size_t>(n);
  }
  return static_cast<int>(done);
}

int OnStatfs(const char* path, struct statvfs* st) {
  return Err(statvfs(Abs(path).c_str(), st));
}

int OnRelease(const char*, fuse_file_info* fi) {
  close(static_cast<int>(fi->fh));
  return 0;
}

int OnFsync(const char*, int datasync, fuse_file_info* fi) {
  int fd = static_cast<int>(fi->fh);
  return Err(datasync ? fdatasync(fd) : fsync(fd));
}

int OnSetxattr(const char* path, const char* name, const char* value, size_t size, int flags) {
  return Err(lsetxattr(Abs(path).c_str(), name, value, size, flags));
}

int OnGetxattr(const char* path, const char* name, char* value, size_t size) {
  ssize_t n = lgetxattr(Abs(path).c_str(), name, value, size);
  return n < 0 ? -errno : static_cast<int>(n);
}

int OnListxattr(const char* path, char* list, size_t size) {
  ssize_t n = llistxattr(Abs(path).c_str(), list, size);
  return n < 0 ? -errno : static_cast<int>(n);
}

int OnRemovexattr(const char* path, const char* name) {
  return Err(lremovexattr(Abs(path).c_str(), name));
}

int OnOpendir(const char* path, fuse_file_info* fi) {
  int fd = openat(g_root_fd, Rel(path), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return -errno;
  DIR* d = fdopendir(fd);
  if (d == nullptr) {
    int e = errno;
    close(fd);
    return -e;
  }
  fi->fh = reinterpret_cast<uint64_t>(d);
  return 0;
}

int OnReaddir(const char*, void* buf, fuse_fill_dir_t fill, off_t off, fuse_file_info* fi,
              fuse_readdir_flags) {
  DIR* d = reinterpret_cast<DIR*>(fi->fh);
  if (off != telldir(d)) seekdir(d, off);
  for (;;) {
    errno = 0;
    dirent* e = readdir(d);
    if (e == nullptr) return -errno;
    struct stat st {};
    st.st_ino = e->d_ino;
    st.st_mode = static_cast<mode_t>(DTTOIF(e->d_type));
    if (fill(buf, e->d_name, &st, telldir(d), static_cast<fuse_fill_dir_flags>(0)) != 0) break;
  }
  return 0;
}

int OnReleasedir(const char*, fuse_file_info* fi) {
  closedir(reinterpret_cast<DIR*>(fi->fh));
  return 0;
}

fuse_operations Operations() {
  fuse_operations o{};
  o.init = OnInit;
  o.getattr = OnGetattr;
  o.readlink = OnReadlink;
  o.mknod = OnMknod;
  o.mkdir = OnMkdir;
  o.unlink = OnUnlink;
  o.rmdir = OnRmdir;
  o.symlink = OnSymlink;
  o.rename = OnRename;
  o.link = OnLink;
  o.chmod = OnChmod;
  o.chown = OnChown;
  o.truncate = OnTruncate;
  o.utimens = OnUtimens;
  o.open = OnOpen;
  o.create = OnCreate;
  o.read = OnRead;
  o.write = OnWrite;
  o.statfs = OnStatfs;
  o.release = OnRelease;
  o.fsync = OnFsync;
  o.setxattr = OnSetxattr;
  o.getxattr = OnGetxattr;
  o.listxattr = OnListxattr;
  o.removexattr = OnRemovexattr;
  o.opendir = OnOpendir;
  o.readdir = OnReaddir;
  o.releasedir = OnReleasedir;
  return o;
}

// The mount's bdi is named after its device number, found in mountinfo (a
// stat of the mount point would wait for this very process to answer).
void SetReadAhead(const char* mountpoint) {
  std::ifstream info("/proc/self/mountinfo");
  std::string line, dev;
  while (std::getline(info, line)) {
    std::istringstream f(line);
    std::string id, parent, majmin, root, mp;
    if ((f >> id >> parent >> majmin >> root >> mp) && mp == mountpoint) dev = majmin;
  }
  std::ofstream knob("/sys/class/bdi/" + dev + "/read_ahead_kb");
  knob << kReadAheadKb << "\n";
  knob.flush();
  if (dev.empty() || !knob) {
    std::fprintf(stderr, "sfs-fuse-passthrough: read_ahead_kb left at the kernel's default\n");
  }
}

int Usage() {
  std::fprintf(stderr, "usage: sfs-fuse-passthrough BACKING_DIR MOUNTPOINT [-f] [-o opts]\n");
  return 2;
}

int Serve(fuse_args* args, const fuse_cmdline_opts& opts) {
  fuse_operations ops = Operations();
  fuse* f = fuse_new(args, &ops, sizeof(ops), nullptr);
  if (f == nullptr) return 1;
  int rc = 1;
  if (fuse_mount(f, opts.mountpoint) == 0) {
    SetReadAhead(opts.mountpoint);
    if (fuse_daemonize(opts.foreground) == 0 && fuse_set_signal_handlers(fuse_get_session(f)) == 0) {
      fuse_loop_config* cfg = fuse_loop_cfg_create();
      fuse_loop_cfg_set_clone_fd(cfg, 1);
      fuse_loop_cfg_set_max_threads(cfg, kMaxThreads);
      fuse_loop_cfg_set_idle_threads(cfg, kMaxIdleThreads);
      int loop = fuse_loop_mt(f, cfg);
      fuse_loop_cfg_destroy(cfg);
      rc = (loop == 0 || loop == SIGTERM || loop == SIGINT || loop == SIGHUP) ? 0 : 1;
      fuse_remove_signal_handlers(fuse_get_session(f));
    }
    fuse_unmount(f);
  }
  fuse_destroy(f);
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || argv[1][0] == '-') return Usage();
  char real[PATH_MAX];
  if (realpath(argv[1], real) == nullptr) {
    std::fprintf(stderr, "sfs-fuse-passthrough: %s: %s\n", argv[1], std::strerror(errno));
    return 1;
  }
  g_backing = real;
  g_root_fd = open(real, O_RDONLY | O_DIRECTORY);
  if (g_root_fd < 0) {
    std::fprintf(stderr, "sfs-fuse-passthrough: %s: %s\n", real, std::strerror(errno));
    return 1;
  }
  // argv without the backing dir, plus sfs-mount's fixed options.
  fuse_args args = FUSE_ARGS_INIT(0, nullptr);
  fuse_opt_add_arg(&args, argv[0]);
  for (int i = 2; i < argc; ++i) fuse_opt_add_arg(&args, argv[i]);
  fuse_opt_add_arg(&args, "-o");
  fuse_opt_add_arg(&args, "default_permissions,fsname=passthrough,subtype=passthrough");
  fuse_cmdline_opts opts{};
  if (fuse_parse_cmdline(&args, &opts) != 0 || opts.mountpoint == nullptr) {
    fuse_opt_free_args(&args);
    return Usage();
  }
  umask(0);  // the kernel has applied the caller's umask to the modes we get
  int rc = Serve(&args, opts);
  std::free(opts.mountpoint);
  fuse_opt_free_args(&args);
  return rc;
}
