// TestCluster: starts, faults and tears down real StripeFS daemons and FUSE
// mounts for integration tests. See cluster.h for the contract.
//
// Every wait here is on a condition with a deadline: a LISTENING line on a
// pipe, a pidfd becoming readable, ListOsts reporting the OSTs up, the
// mountpoint's st_dev changing. Nothing sleeps to "give it time".
#include "tests/harness/cluster.h"

#include <stdlib.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <gtest/gtest.h>

#include "common/ondisk/ost_dir.h"
#include "tests/harness/test_util.h"

namespace sfs::testing {
namespace {

using std::chrono::milliseconds;
namespace fs = std::filesystem;

constexpr milliseconds kStopGrace{10000};
constexpr int kTailLines = 25;

// True once every thread of pid is stopped. A SIGSTOP takes effect
// asynchronously: a thread running on another CPU goes on until it next
// enters the kernel, long enough to answer a request on a fast path.
bool AllThreadsStopped(pid_t pid) {
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream in(e.path() / "stat");
    std::string stat;
    std::getline(in, stat);
    size_t r = stat.rfind(')');
    if (r == std::string::npos || r + 2 >= stat.size() || std::string("TtZX").find(stat[r + 2]) == std::string::npos) {
      return false;
    }
  }
  return !ec;
}

// Sends sig; a SIGSTOP returns once it has taken effect.
Status SignalAndWait(Subprocess& proc, int sig) {
  proc.Signal(sig);
  if (sig != SIGSTOP) return Status::Ok();
  if (PollUntil([&] { return AllThreadsStopped(proc.pid()); }, milliseconds(5000), milliseconds(1))) {
    return Status::Ok();
  }
  return Status::Errno(ETIMEDOUT, "process " + std::to_string(proc.pid()) + " not stopped after SIGSTOP");
}

std::string Env(const char* name) {
  const char* v = getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

std::string BuildDir() {
  std::string env = Env("SFS_BUILD_DIR");
  if (!env.empty()) return env;
#ifdef SFS_BUILD_DIR
  return SFS_BUILD_DIR;
#else
  return ".";
#endif
}

std::string Binary(const char* env, const char* compiled, const char* rel) {
  std::string e = Env(env);
  if (!e.empty()) return e;
  if (compiled != nullptr && *compiled != '\0' && Env("SFS_BUILD_DIR").empty()) return compiled;
  return BuildDir() + "/" + rel;
}

#ifndef SFS_MDS_BIN_DEFAULT
#define SFS_MDS_BIN_DEFAULT ""
#endif
#ifndef SFS_OSS_BIN_DEFAULT
#define SFS_OSS_BIN_DEFAULT ""
#endif
#ifndef SFS_MOUNT_BIN_DEFAULT
#define SFS_MOUNT_BIN_DEFAULT ""
#endif

std::string ReadTrimmed(const std::string& path) {
  std::string s;
  if (!ReadFile(path, &s)) return "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// Where each thread of process pid waits: its name, its wait channel and
// its kernel stack (/proc; the stack needs root), one block per thread, so
// that a mount that hangs on unmount says in which call (a FUSE handler, a
// kernel notify, a join) before it is terminated.
std::string ThreadWaits(pid_t pid) {
  std::ostringstream out;
  std::error_code ec;
  const fs::path tasks = "/proc/" + std::to_string(pid) + "/task";
  for (const auto& t : fs::directory_iterator(tasks, ec)) {
    const std::string dir = t.path().string();
    out << "  thread " << t.path().filename().string() << " " << ReadTrimmed(dir + "/comm")
        << " wchan=" << ReadTrimmed(dir + "/wchan") << "\n";
    std::string stack;
    if (ReadFile(dir + "/stack", &stack)) {
      std::istringstream lines(stack);
      for (std::string line; std::getline(lines, line);) out << "    " << line << "\n";
    }
  }
  return out.str();
}

// True iff some mount lies at or below dir (from /proc/self/mountinfo; does
// not touch the file systems themselves, so a hung mount cannot block it).
bool HasMountUnder(const std::string& dir) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string id, parent, devno, fsroot, mnt;
    ls >> id >> parent >> devno >> fsroot >> mnt;
    if (mnt == dir || mnt.rfind(dir + "/", 0) == 0) return true;
  }
  return false;
}

std::string PortOf(const std::string& address) {
  return address.substr(address.rfind(':') + 1);
}

}  // namespace

std::string MdsBinary() { return Binary("SFS_MDS_BIN", SFS_MDS_BIN_DEFAULT, "mds/sfs-mds"); }
std::string OssBinary() { return Binary("SFS_OSS_BIN", SFS_OSS_BIN_DEFAULT, "oss/sfs-oss"); }
std::string MountBinary() {
  return Binary("SFS_MOUNT_BIN", SFS_MOUNT_BIN_DEFAULT, "client/fuse/sfs-mount");
}

TestCluster::TestCluster(ClusterOptions opts) : opts_(std::move(opts)) {
  mds_.name = "mds";
  oss_.resize(opts_.num_oss);
  for (int i = 0; i < opts_.num_oss; ++i) oss_[i].name = "oss" + std::to_string(i);
}

TestCluster::~TestCluster() { Stop(); }

std::string TestCluster::mds_dir() const {
  return (opts_.mds_parent.empty() ? root_ : opts_.mds_parent) + "/mds";
}

std::string TestCluster::ost_dir(int oss, int k) const {
  return (opts_.ost_parent.empty() ? root_ : opts_.ost_parent) + "/ost" + std::to_string(oss) +
         (k == 0 ? "" : "." + std::to_string(k));
}

std::string TestCluster::LogPath(const std::string& name) const {
  return root_ + "/logs/" + name + ".log";
}

// 32 random bytes as hex, mode 0600 (as `sfs-key` or head -c 32 /dev/urandom would).
static Status WriteClusterKey(const std::string& path) {
  std::ifstream urandom("/dev/urandom", std::ios::binary);
  unsigned char raw[32];
  if (!urandom.read(reinterpret_cast<char*>(raw), sizeof raw)) {
    return Status::Errno(EIO, "reading /dev/urandom");
  }
  std::string hex;
  static const char kHex[] = "0123456789abcdef";
  for (unsigned char b : raw) hex += {kHex[b >> 4], kHex[b & 15]};
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Status::FromErrno("create " + path);
  bool ok = ::write(fd, hex.data(), hex.size()) == static_cast<ssize_t>(hex.size());
  ::close(fd);
  return ok ? Status::Ok() : Status::FromErrno("write " + path);
}

std::vector<std::string> TestCluster::MdsArgv(const std::string& listen) const {
  std::vector<std::string> argv = {MdsBinary(), "--data", mds_dir(), "--listen", listen,
                                   "--client-timeout-ms", std::to_string(opts_.client_timeout_ms),
                                   "--ost-timeout-ms", std::to_string(opts_.ost_timeout_ms)};
  argv.insert(argv.end(), opts_.mds_args.begin(), opts_.mds_args.end());
  if (opts_.cluster_key) argv.insert(argv.end(), {"--cluster-key", cluster_key_path()});
  if (opts_.metrics) argv.insert(argv.end(), {"--metrics-listen", "127.0.0.1:0"});
  return argv;
}

std::vector<std::string> TestCluster::OssArgv(int oss, const std::string& listen) const {
  std::vector<std::string> argv = {OssBinary(), "--mds", mds_.address, "--ost", ost_dir(oss),
                                   "--listen", listen, "--heartbeat-ms",
                                   std::to_string(opts_.heartbeat_ms)};
  for (int k = 1; k < opts_.osts_per_oss; ++k) argv.insert(argv.end(), {"--ost", ost_dir(oss, k)});
  argv.insert(argv.end(), opts_.oss_args.begin(), opts_.oss_args.end());
  if (auto it = opts_.oss_args_of.find(oss); it != opts_.oss_args_of.end()) {
    argv.insert(argv.end(), it->second.begin(), it->second.end());
  }
  if (opts_.cluster_key) argv.insert(argv.end(), {"--cluster-key", cluster_key_path()});
  if (opts_.metrics) argv.insert(argv.end(), {"--metrics-listen", "127.0.0.1:0"});
  return argv;
}

Status TestCluster::Start() {
  const char* tmp = getenv("SFS_TEST_TMPDIR");
  if (tmp == nullptr) tmp = getenv("TMPDIR");
  std::string templ = std::string(tmp != nullptr ? tmp : "/tmp") + "/sfs-" + opts_.name + "-XXXXXX";
  if (mkdtemp(templ.data()) == nullptr) return Status::FromErrno("mkdtemp " + templ);
  root_ = templ;
  chmod(root_.c_str(), 0755);  // unprivileged test children must reach the mounts
  std::error_code ec;
  fs::create_directories(root_ + "/logs", ec);
  fs::create_directories(mds_dir(), ec);
  for (int i = 0; i < num_oss(); ++i) {
    for (int k = 0; k < std::max(opts_.osts_per_oss, 1); ++k) fs::create_directories(ost_dir(i, k), ec);
  }
  if (opts_.cluster_key) SFS_RETURN_IF_ERROR(WriteClusterKey(cluster_key_path()));
  SFS_RETURN_IF_ERROR(StartDaemon(&mds_, MdsArgv("127.0.0.1:0")));
  // One at a time, so OSS i normally gets OST index i (easier logs to read).
  for (int i = 0; i < num_oss(); ++i) {
    SFS_RETURN_IF_ERROR(StartDaemon(&oss_[i], OssArgv(i, "127.0.0.1:0")));
  }
  return WaitForOstsUp(num_oss() * std::max(opts_.osts_per_oss, 1), opts_.start_timeout);
}

Status TestCluster::StartDaemon(Daemon* d, std::vector<std::string> argv) {
  d->killed = false;
  SFS_ASSIGN_OR_RETURN(d->proc, Subprocess::Spawn(argv, LogPath(d->name)));
  for (;;) {
    auto line = d->proc->ReadLine(opts_.start_timeout);
    if (line.ok() && line->rfind("LISTENING ", 0) == 0) {
      d->address = line->substr(10);
      return Status::Ok();
    }
    if (line.ok() && line->rfind("METRICS ", 0) == 0) {  // printed before LISTENING
      d->metrics_address = line->substr(8);
      continue;
    }
    if (line.ok()) continue;  // not the handshake; keep reading
    std::string why = line.status().code() == ETIMEDOUT ? "did not print LISTENING in time"
                                                        : "exited before LISTENING";
    d->proc->Terminate(milliseconds(2000));
    auto st = d->proc->Wait(milliseconds(0));
    return Status::Errno(line.status().code() == ETIMEDOUT ? ETIMEDOUT : ECHILD,
                         d->name + " " + why + " (" +
                             (st.ok() ? DescribeWaitStatus(*st) : "?") + ")\n  command: " +
                             d->proc->CommandLine() + "\n  log " + LogPath(d->name) + ":\n" +
                             TailFile(LogPath(d->name), kTailLines));
  }
}

Status TestCluster::KillMds(int sig) {
  mds_.killed = true;
  SFS_RETURN_IF_ERROR(SignalAndWait(*mds_.proc, sig));
  if (sig == SIGKILL || sig == SIGTERM) return mds_.proc->Wait(kStopGrace).status();
  return Status::Ok();
}

Status TestCluster::RestartMds() {
  if (mds_.proc->Running()) return Status::Errno(EBUSY, "the MDS is still running");
  return StartDaemon(&mds_, MdsArgv("127.0.0.1:" + PortOf(mds_.address)));
}

Status TestCluster::KillOss(int oss, int sig) {
  oss_[oss].killed = true;
  SFS_RETURN_IF_ERROR(SignalAndWait(*oss_[oss].proc, sig));
  if (sig == SIGKILL || sig == SIGTERM) return oss_[oss].proc->Wait(kStopGrace).status();
  return Status::Ok();
}

Status TestCluster::RestartOss(int oss) {
  if (oss_[oss].proc->Running()) return Status::Errno(EBUSY, oss_[oss].name + " still running");
  return StartDaemon(&oss_[oss], OssArgv(oss, "127.0.0.1:" + PortOf(oss_[oss].address)));
}

bool TestCluster::MdsRunning() { return mds_.proc && mds_.proc->Running(); }
bool TestCluster::OssRunning(int oss) { return oss_[oss].proc && oss_[oss].proc->Running(); }

Result<std::string> TestCluster::Mount(const std::string& dir_in,
                                       const std::vector<std::string>& options) {
  int n = mount_counter_++;
  std::string dir = dir_in.empty() ? root_ + "/mnt" + std::to_string(n) : dir_in;
  std::error_code ec;
  fs::create_directories(dir, ec);
  chmod(dir.c_str(), 0755);
  struct stat parent_st {};
  if (stat(fs::path(dir).parent_path().c_str(), &parent_st) != 0) {
    return Status::FromErrno("stat parent of " + dir);
  }
  std::string name = "mount" + std::to_string(n);
  MountPoint m{dir, nullptr};
  std::string opts = "allow_other";
  for (const auto& o : options) opts += "," + o;
  std::vector<std::string> argv = {MountBinary(), mds_.address, dir, "-f", "-o", opts};
  SFS_ASSIGN_OR_RETURN(m.proc,
                       Subprocess::Spawn(argv, LogPath(name), SIGTERM, /*capture_stdout=*/false));
  bool exited = false;
  bool live = PollUntil(
      [&] {
        if (!m.proc->Running()) return exited = true;
        struct stat st {};
        return HasMountUnder(dir) && stat(dir.c_str(), &st) == 0 && st.st_dev != parent_st.st_dev;
      },
      opts_.mount_timeout);
  if (!live || exited) {
    std::string cmd = m.proc->CommandLine();
    (void)StopMount(&m);
    return Status::Errno(exited ? ECHILD : ETIMEDOUT,
                         std::string("mount ") + (exited ? "exited" : "not live in time") +
                             "\n  command: " + cmd + "\n  log " + LogPath(name) + ":\n" +
                             TailFile(LogPath(name), kTailLines));
  }
  mounts_.push_back(std::move(m));
  return dir;
}

Status TestCluster::StopMount(MountPoint* m) {
  Status result;
  if (!m->proc->Running()) {
    auto st = m->proc->Wait(milliseconds(0));
    result = Status::Errno(ECHILD, "sfs-mount of " + m->dir + " exited on its own (" +
                                       (st.ok() ? DescribeWaitStatus(*st) : "?") + ")");
  }
  if (HasMountUnder(m->dir)) {
    auto st = RunCommand({"fusermount3", "-u", m->dir}, m->proc->log_path(), milliseconds(20000));
    if (!st.ok() || *st != 0) {
      if (result.ok()) {
        result = Status::Errno(EBUSY, "fusermount3 -u " + m->dir + " failed; used umount -l");
      }
      umount2(m->dir.c_str(), MNT_DETACH);
    }
  }
  if (m->proc->Running()) {
    auto st = m->proc->Wait(kStopGrace);
    if (!st.ok()) {
      const std::string waits = ThreadWaits(m->proc->pid());
      m->proc->Terminate(milliseconds(2000));
      if (result.ok()) {
        result = Status::Errno(ETIMEDOUT, "sfs-mount did not exit on unmount; its threads:\n" +
                                              waits + "  log " + m->proc->log_path() + ":\n" +
                                              TailFile(m->proc->log_path(), kTailLines));
      }
    }
  }
  return result;
}

Status TestCluster::Unmount(const std::string& dir) {
  for (size_t i = 0; i < mounts_.size(); ++i) {
    if (mounts_[i].dir != dir) continue;
    Status st = StopMount(&mounts_[i]);
    mounts_.erase(mounts_.begin() + static_cast<long>(i));
    return st;
  }
  return Status::Errno(ENOENT, "not mounted by this cluster: " + dir);
}

Status TestCluster::SignalMount(const std::string& dir, int sig) {
  for (MountPoint& m : mounts_) {
    if (m.dir != dir) continue;
    return SignalAndWait(*m.proc, sig);
  }
  return Status::Errno(ENOENT, "not mounted by this cluster: " + dir);
}

Result<std::unique_ptr<client::Client>> TestCluster::Connect(milliseconds rpc_timeout,
                                                             milliseconds timeout) const {
  client::Options o;
  o.mds_address = mds_.address;
  o.rpc_timeout = rpc_timeout;
  Status last;
  std::unique_ptr<client::Client> c;
  PollUntil(
      [&] {
        auto r = client::Client::Connect(o);
        if (r.ok()) c = std::move(*r);
        last = r.status();
        return r.ok();
      },
      timeout, milliseconds(100));
  if (c == nullptr) return last;
  return c;
}

Status TestCluster::WaitForOstsUp(int up, milliseconds timeout) {
  auto start = std::chrono::steady_clock::now();
  SFS_ASSIGN_OR_RETURN(auto c, Connect(milliseconds(5000), timeout));
  std::string seen = "no answer";
  auto left = timeout - std::chrono::duration_cast<milliseconds>(
                            std::chrono::steady_clock::now() - start);
  bool ok = PollUntil(
      [&] {
        auto osts = c->ListOsts();
        if (!osts.ok()) {
          seen = osts.status().ToString();
          return false;
        }
        int n = 0;
        for (const auto& o : *osts) n += o.up ? 1 : 0;
        seen = std::to_string(n) + " of " + std::to_string(osts->size()) + " up";
        return n == up;
      },
      std::max(left, milliseconds(0)), milliseconds(50));
  if (ok) return Status::Ok();
  return Status::Errno(ETIMEDOUT, "waiting for " + std::to_string(up) + " OSTs up: " + seen);
}

int TestCluster::OssOfOst(client::Client& c, uint32_t ost_index) {
  auto osts = c.ListOsts();
  if (!osts.ok()) return -1;
  for (const auto& o : *osts) {
    if (o.index != ost_index) continue;
    for (int i = 0; i < num_oss(); ++i) {
      for (int k = 0; k < std::max(opts_.osts_per_oss, 1); ++k) {
        if (ReadTrimmed(ondisk::OstUuidPath(ost_dir(i, k))) == o.uuid) return i;
      }
    }
  }
  return -1;
}

std::string TestCluster::ObjectPath(client::Client& c, uint32_t ost_index, uint64_t oid) {
  auto osts = c.ListOsts();
  if (!osts.ok()) return "";
  for (const auto& o : *osts) {
    if (o.index != ost_index) continue;
    for (int i = 0; i < num_oss(); ++i) {
      for (int k = 0; k < std::max(opts_.osts_per_oss, 1); ++k) {
        if (ReadTrimmed(ondisk::OstUuidPath(ost_dir(i, k))) == o.uuid) {
          return ondisk::ObjectPath(ost_dir(i, k), oid);
        }
      }
    }
  }
  return "";
}

bool TestCluster::AnyTestFailed() const {
  const auto* ut = ::testing::UnitTest::GetInstance();
  const auto* info = ut->current_test_info();
  const auto* suite = ut->current_test_suite();
  return (info != nullptr && info->result()->Failed()) || (suite != nullptr && suite->Failed());
}

void TestCluster::ReportFailure() {
  keep_ = true;
  std::ostringstream os;
  os << "\n=== StripeFS test cluster: repro with\n  " << ReproCommand() << "\n"
     << "=== logs kept in " << root_ << "/logs\n";
  auto tail = [&](const std::string& name) {
    os << "--- " << LogPath(name) << " (last " << kTailLines << " lines)\n"
       << TailFile(LogPath(name), kTailLines);
  };
  tail("mds");
  for (const auto& d : oss_) tail(d.name);
  for (int i = 0; i < mount_counter_; ++i) tail("mount" + std::to_string(i));
  std::cerr << os.str() << std::flush;
}

void TestCluster::StopDaemon(Daemon* d, bool was_running, std::vector<std::string>* problems) {
  if (!d->proc) return;
  int status = d->proc->Terminate(kStopGrace);
  if (!was_running && !d->killed) {
    problems->push_back(d->name + " exited on its own during the test: " +
                        DescribeWaitStatus(status));
  } else if (was_running && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
    problems->push_back(d->name + " did not exit cleanly on SIGTERM: " +
                        DescribeWaitStatus(status));
  }
}

void TestCluster::NoteSanitizerReports(std::vector<std::string>* problems) const {
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(root_ + "/logs", ec)) {
    std::string report = SanitizerReport(e.path().string());
    if (report.empty()) continue;
    problems->push_back("a sanitizer report in " + e.path().string() + ":\n" + report);
  }
}

void TestCluster::Stop() {
  if (stopped_ || root_.empty()) return;
  stopped_ = true;
  std::vector<std::string> problems;
  for (auto& m : mounts_) {
    Status st = StopMount(&m);
    if (!st.ok()) problems.push_back(st.ToString());
  }
  mounts_.clear();
  // OSSes first (all at once: each takes a while to exit), then the MDS.
  std::vector<bool> running;
  for (auto& d : oss_) {
    running.push_back(d.proc && d.proc->Running());
    if (!running.back()) continue;
    d.proc->Signal(SIGCONT);
    d.proc->Signal(SIGTERM);
  }
  for (size_t i = 0; i < oss_.size(); ++i) StopDaemon(&oss_[i], running[i], &problems);
  StopDaemon(&mds_, mds_.proc && mds_.proc->Running(), &problems);
  NoteSanitizerReports(&problems);
  for (const auto& p : problems) ADD_FAILURE() << "cluster teardown: " << p;
  bool keep = keep_ || !problems.empty() || AnyTestFailed() || !Env("SFS_KEEP_TMP").empty() ||
              HasMountUnder(root_);
  if (keep) {
    std::cerr << "StripeFS test cluster kept in " << root_ << "\n";
  } else {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
}

}  // namespace sfs::testing
