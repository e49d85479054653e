// sfs-mount: mounts a StripeFS file system through FUSE.
//
//   sfs-mount HOST:PORT MOUNTPOINT [-f] [-d] [-o opts]     (see MountUsage)
//
// Order matters: the MDS is reached first, so that an unreachable MDS is one
// line on stderr and exit 1 within connect_timeout_ms, before anything is
// mounted. Without -f the process forks before it creates any thread (libsfs
// starts I/O threads, which a later fork would lose); the parent waits until
// the child has mounted, then exits 0, or 1 if the child failed, so that
// mount(8) and scripts see the mount ready when sfs-mount returns.
// SIGTERM/SIGINT/SIGHUP end the session loop and unmount cleanly (exit 0).
// In the background, log lines go on to stderr only if it is a regular file.
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "client/fuse/bdi.h"
#include "client/fuse/fuse_ops.h"
#include "client/fuse/mount_args.h"
#include "client/fuse/wire_flags.h"
#include "common/log.h"
#include "common/metrics/http_server.h"
#include "common/metrics/metrics.h"

namespace sfs::fuse {
namespace {

// The background half of daemonizing: the child reports readiness through a pipe.
class Daemon {
 public:
  // In the parent, waits for the child's verdict and exits with it. In the
  // child, returns. REQUIRES: no thread has been started.
  void Fork() {
    int fds[2];
    if (pipe(fds) != 0) Die("pipe");
    pid_t pid = fork();
    if (pid < 0) Die("fork");
    if (pid > 0) {
      close(fds[1]);
      char verdict = 1;
      ssize_t n;
      do {
        n = read(fds[0], &verdict, 1);
      } while (n < 0 && errno == EINTR);
      if (n == 1 && verdict == 0) _exit(0);
      // No verdict: the child failed before mounting; exit as it did.
      int status = 0;
      if (waitpid(pid, &status, 0) == pid && WIFEXITED(status)) _exit(WEXITSTATUS(status));
      _exit(1);
    }
    close(fds[0]);
    ready_fd_ = fds[1];
    setsid();  // a terminal's ^C or hang-up no longer reaches the daemon
  }

  // Mounted: detach from the terminal and let the parent exit 0.
  void Ready() {
    if (ready_fd_ < 0) return;
    if (chdir("/") != 0) {
      // Not fatal: only keeps the directory we started in busy.
    }
    int null_fd = open("/dev/null", O_RDWR);
    if (null_fd >= 0) {
      dup2(null_fd, 0);
      dup2(null_fd, 1);
      // Logs keep going to a file stderr was sent to (sfs-mount ... 2>>log);
      // a terminal or a pipe is let go, so that nobody waits on us for EOF.
      struct stat st;
      if (fstat(2, &st) != 0 || !S_ISREG(st.st_mode)) dup2(null_fd, 2);
      if (null_fd > 2) close(null_fd);
    }
    char ok = 0;
    if (write(ready_fd_, &ok, 1) != 1) {
      // The parent is gone; nobody waits for the verdict.
    }
    close(ready_fd_);
    ready_fd_ = -1;
  }

 private:
  [[noreturn]] static void Die(const char* what) {
    std::fprintf(stderr, "sfs-mount: %s: %s\n", what, std::strerror(errno));
    _exit(1);
  }
  int ready_fd_ = -1;
};

bool IsUnreachable(int code) {
  return code == ECONNREFUSED || code == ETIMEDOUT || code == EHOSTUNREACH ||
         code == ENETUNREACH || code == ECONNRESET || code == EIO;
}

// Runs the session until unmount or a signal. Returns the exit code.
int Serve(fuse_session* se, const MountArgs& a) {
  fuse_loop_config* cfg = fuse_loop_cfg_create();
  fuse_loop_cfg_set_clone_fd(cfg, 1);
  fuse_loop_cfg_set_max_threads(cfg, a.max_threads);
  fuse_loop_cfg_set_idle_threads(cfg, a.max_idle_threads);
  int rc = fuse_session_loop_mt(se, cfg);
  fuse_loop_cfg_destroy(cfg);
  // libfuse reports the signal that ended the loop; that is a clean stop.
  bool clean = rc == 0 || rc == SIGTERM || rc == SIGINT || rc == SIGHUP;
  if (!clean) LOG_ERROR("FUSE session ended with error " << rc);
  return clean ? 0 : 1;
}

// The INIT max_pages for READs of up to max_read_kb, within what the
// kernel allows (raising its limit when root); 0 leaves libfuse's 1 MiB.
uint16_t MaxPagesFor(unsigned max_read_kb) {
  const unsigned want = max_read_kb / 4;
  if (want <= 256) return 0;
  Result<unsigned> limit = RaiseFuseMaxPages(want);
  if (!limit.ok()) {
    if (geteuid() == 0) LOG_WARN("READ requests stay at 1 MiB: " << limit.status().ToString());
    // Not root: a kernel before 6.13 has no knob and takes up to 256 pages.
    return 0;
  }
  return static_cast<uint16_t>(std::min(want, *limit));
}

// fuse_argv as libfuse wants it; the strings stay owned by a.
std::vector<char*> FuseArgv(const MountArgs& a) {
  std::vector<char*> argv;
  for (const std::string& s : a.fuse_argv) argv.push_back(const_cast<char*>(s.c_str()));
  return argv;
}

// True iff libfuse accepts the options. A session is only parsed here, not
// mounted, so this catches a bad -o before the MDS is contacted.
bool FuseArgsValid(const MountArgs& a) {
  std::vector<char*> argv = FuseArgv(a);
  fuse_args args = FUSE_ARGS_INIT(static_cast<int>(argv.size()), argv.data());
  fuse_session* se = fuse_session_new(&args, &FuseOps::Table(), sizeof(fuse_lowlevel_ops), nullptr);
  fuse_opt_free_args(&args);  // the parse left a malloc'd copy in args; the session keeps none
  if (se == nullptr) return false;
  fuse_session_destroy(se);
  return true;
}

void PrintConnectError(const MountArgs& a, const Status& st) {
  std::string reason = st.message().empty() ? std::strerror(st.code()) : st.message();
  std::string prefix = "cannot reach MDS at " + a.mds_address + ": ";
  if (reason.rfind(prefix, 0) == 0) reason.erase(0, prefix.size());
  const char* what = IsUnreachable(st.code()) ? "cannot reach" : "cannot connect to";
  std::fprintf(stderr, "sfs-mount: %s MDS at %s: %s\n", what, a.mds_address.c_str(),
               reason.c_str());
}

int Run(const MountArgs& a) {
  char real[PATH_MAX];
  if (realpath(a.mountpoint.c_str(), real) == nullptr) {
    std::fprintf(stderr, "sfs-mount: mount point %s: %s\n", a.mountpoint.c_str(),
                 std::strerror(errno));
    return 1;
  }
  if (!FuseArgsValid(a)) return 2;  // libfuse has printed which option it refused
  Daemon daemon;
  if (!a.foreground) {
    // mount(8) on a terminal shows what went wrong, not how it went.
    if (isatty(2) && std::getenv("SFS_LOG_LEVEL") == nullptr) SetLogLevel(LogLevel::kWarn);
    daemon.Fork();
  }
  Result<std::unique_ptr<client::Client>> client = client::Client::Connect(a.client);
  if (!client.ok()) {
    PrintConnectError(a, client.status());
    return 1;
  }
  // Declared before ops and the session, so that it outlives both.
  WireFlags wire;
  // Metrics (off by default), after the fork: the server has a thread.
  metrics::Registry registry;
  std::unique_ptr<FuseMetrics> fuse_metrics;
  std::unique_ptr<metrics::MetricsHttpServer> metrics_server;
  if (!a.metrics_listen.empty()) {
    fuse_metrics = std::make_unique<FuseMetrics>(&registry);
    auto m = metrics::ServeMetrics(a.metrics_listen, &registry);
    if (!m.ok()) {
      std::fprintf(stderr, "sfs-mount: %s\n", m.status().ToString().c_str());
      return 1;
    }
    metrics_server = std::move(*m);
  }
  FuseOps ops(std::move(*client), a.fuse);
  ops.SetWireFlags(&wire);
  ops.SetMetrics(fuse_metrics.get());
  std::vector<char*> argv = FuseArgv(a);
  fuse_args args = FUSE_ARGS_INIT(static_cast<int>(argv.size()), argv.data());
  fuse_session* se = fuse_session_new(&args, &FuseOps::Table(), sizeof(fuse_lowlevel_ops), &ops);
  fuse_opt_free_args(&args);
  if (se == nullptr) return 1;
  int code = 1;
  if (a.wire_flags) wire.SetMaxPages(MaxPagesFor(a.max_read_kb));
  if (fuse_set_signal_handlers(se) == 0) {
    if (fuse_session_mount(se, real) == 0) {
      // Before the loop reads the first request, INIT (see wire_flags.h);
      // the verdict is logged once the INIT reply is out.
      if (!a.wire_flags) {
        LOG_INFO("wire flags: off (-o nowireflags)");
      } else if (Status st = wire.Install(se); !st.ok()) {
        LOG_WARN("wire flags: off: " << st.ToString());
      }
      if (a.read_ahead_kb != 0) {
        Status st = SetReadAheadKb(real, a.read_ahead_kb);
        // Only root may write the knob; other users simply keep the default.
        if (!st.ok() && geteuid() == 0) {
          LOG_WARN("readahead left at the kernel's default: " << st.ToString());
        }
      }
      ops.StartLeases(se);
      daemon.Ready();
      LOG_INFO("mounted " << a.mds_address << " on " << real);
      code = Serve(se, a);
      // Before the unmount, which closes /dev/fuse: the lease thread writes
      // its notifications there, and the number may name another file next.
      ops.StopLeases();
      fuse_session_unmount(se);
      LOG_INFO("unmounted " << real);
    }
    fuse_remove_signal_handlers(se);
  }
  fuse_session_destroy(se);
  return code;
}

}  // namespace
}  // namespace sfs::fuse

int main(int argc, char** argv) {
  sfs::SetLogTag("mount");
  sfs::Result<sfs::fuse::MountArgs> a =
      sfs::fuse::ParseMountArgsWithConfig(argc, argv, "/etc/stripefs/client.conf");
  if (!a.ok()) {
    std::fprintf(stderr,
                 "sfs-mount: %s (usage: sfs-mount HOST:PORT MOUNTPOINT [-f] [-d] [-o opts]; "
                 "-h for the options)\n",
                 a.status().message().c_str());
    return 2;
  }
  if (a->help) {
    std::fputs(sfs::fuse::MountUsage().c_str(), stdout);
    return 0;
  }
  return sfs::fuse::Run(*a);
}
