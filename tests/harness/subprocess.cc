// Subprocess: fork/exec of daemons and helper commands for the test harness.
// See subprocess.h for the contract. The pidfd makes waiting for exit an
// event (poll) rather than a sleep loop.
#include "tests/harness/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <deque>
#include <fstream>
#include <iostream>
#include <sstream>

namespace sfs::testing {
namespace {

using Clock = std::chrono::steady_clock;

int PidfdOpen(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

int MillisLeft(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

// In the child, between fork and exec: only async-signal-safe calls.
[[noreturn]] void ExecChild(const std::vector<char*>& args, const char* log_path, int out_fd,
                            bool stdout_to_log, int death_signal) {
  prctl(PR_SET_PDEATHSIG, death_signal);
  int log_fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
  int null_fd = open("/dev/null", O_RDONLY);
  if (log_fd < 0 || null_fd < 0) _exit(126);
  dup2(null_fd, 0);
  dup2(stdout_to_log ? log_fd : out_fd, 1);
  dup2(log_fd, 2);
  syscall(SYS_close_range, 3, ~0U, 0);
  // Undo signal state the test runner may have set up.
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  signal(SIGPIPE, SIG_DFL);
  execvp(args[0], args.data());
  const char* msg = "harness: exec failed: ";
  (void)!write(2, msg, strlen(msg));
  (void)!write(2, args[0], strlen(args[0]));
  (void)!write(2, "\n", 1);
  _exit(127);
}

std::string ShellQuote(const std::string& s) {
  if (!s.empty() && s.find_first_of(" \t'\"\\$`*?;&|<>(){}") == std::string::npos) return s;
  std::string out = "'";
  for (char c : s) out += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

Result<std::unique_ptr<Subprocess>> Subprocess::Spawn(const std::vector<std::string>& argv,
                                                      const std::string& log_path,
                                                      int death_signal, bool capture_stdout) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return Status::FromErrno("pipe2");
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return Status::FromErrno("fork");
  }
  if (pid == 0) ExecChild(args, log_path.c_str(), fds[1], !capture_stdout, death_signal);
  close(fds[1]);
  std::unique_ptr<Subprocess> p(new Subprocess());
  p->pid_ = pid;
  p->pidfd_ = PidfdOpen(pid);
  p->stdout_fd_ = fds[0];
  p->argv_ = argv;
  p->log_path_ = log_path;
  if (p->pidfd_ < 0) return Status::FromErrno("pidfd_open");
  return p;
}

Subprocess::~Subprocess() {
  if (!exited_ && pid_ > 0) {
    kill(pid_, SIGKILL);
    Reap(0);
  }
  if (pidfd_ >= 0) close(pidfd_);
  if (stdout_fd_ >= 0) close(stdout_fd_);
}

std::string Subprocess::CommandLine() const {
  std::string out;
  for (const auto& a : argv_) {
    if (!out.empty()) out += ' ';
    out += ShellQuote(a);
  }
  return out;
}

Result<std::string> Subprocess::ReadLine(std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  for (;;) {
    size_t nl = buffered_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buffered_.substr(0, nl);
      buffered_.erase(0, nl + 1);
      return line;
    }
    pollfd pfd{stdout_fd_, POLLIN, 0};
    int n = poll(&pfd, 1, MillisLeft(deadline));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::FromErrno("poll");
    if (n == 0) return Status::Errno(ETIMEDOUT, "no line on stdout before the deadline");
    char buf[4096];
    ssize_t r = read(stdout_fd_, buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return Status::Errno(EPIPE, "stdout closed (the process exited?)");
    buffered_.append(buf, static_cast<size_t>(r));
  }
}

bool Subprocess::Reap(int options) {
  if (exited_) return true;
  int status = 0;
  pid_t r;
  do {
    r = waitpid(pid_, &status, options);
  } while (r < 0 && errno == EINTR);
  if (r == pid_ || (r < 0 && errno == ECHILD)) {
    exited_ = true;
    wait_status_ = status;
  }
  return exited_;
}

bool Subprocess::Running() { return !Reap(WNOHANG); }

void Subprocess::Signal(int sig) {
  // The pidfd cannot name a recycled pid, so this never hits a stranger.
  if (!exited_) syscall(SYS_pidfd_send_signal, pidfd_, sig, nullptr, 0);
}

Result<int> Subprocess::Wait(std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (!Reap(WNOHANG)) {
    pollfd pfd{pidfd_, POLLIN, 0};
    int n = poll(&pfd, 1, MillisLeft(deadline));
    if (n == 0) return Status::Errno(ETIMEDOUT, "still running: " + CommandLine());
    if (n < 0 && errno != EINTR) return Status::FromErrno("poll pidfd");
  }
  return wait_status_;
}

int Subprocess::Terminate(std::chrono::milliseconds grace) {
  Signal(SIGCONT);  // a stopped process cannot act on SIGTERM
  Signal(SIGTERM);
  auto st = Wait(grace);
  if (st.ok()) return *st;
  DumpStacks();
  Signal(SIGKILL);
  Reap(0);
  return wait_status_;
}

// Where a child that ignores SIGTERM is stuck, for the log: every thread's
// stack by gdb (when installed), appended to the child's log and copied to
// our stderr (meson shows it with the failure). Costs nothing on a clean stop.
void Subprocess::DumpStacks() {
  if (exited_ || ::access("/usr/bin/gdb", X_OK) != 0) return;
  std::string cmd = "/usr/bin/gdb -p " + std::to_string(pid_) +
                    " -batch -nx -ex 'thread apply all bt' 2>&1 | head -400";
  std::string out;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    ::pclose(p);
  }
  std::cerr << "=== " << argv_[0] << " (pid " << pid_ << ") did not exit on SIGTERM; its threads:\n"
            << out << std::flush;
  std::ofstream(log_path_, std::ios::app) << "=== stacks at SIGTERM timeout:\n" << out;
}

std::string DescribeWaitStatus(int status) {
  std::ostringstream os;
  if (WIFEXITED(status)) {
    os << "exit " << WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    os << "signal " << WTERMSIG(status) << " (" << strsignal(WTERMSIG(status)) << ")";
  } else {
    os << "status " << status;
  }
  return os.str();
}

std::string TailFile(const std::string& path, int lines) {
  std::ifstream in(path);
  std::deque<std::string> last;
  std::string line;
  while (std::getline(in, line)) {
    last.push_back(line);
    if (static_cast<int>(last.size()) > lines) last.pop_front();
  }
  std::string out;
  for (const auto& l : last) out += "    | " + l + "\n";
  return out;
}

std::string SanitizerReport(const std::string& path, int lines) {
  // The first line of every report of ASan, LSan, TSan and UBSan (gcc's and clang's).
  static constexpr const char* kStarts[] = {
      "ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "WARNING: ThreadSanitizer",
      "ERROR: ThreadSanitizer", "ERROR: UndefinedBehaviorSanitizer", ": runtime error: "};
  auto starts = [](const std::string& l) {
    for (const char* s : kStarts) {
      if (l.find(s) != std::string::npos) return true;
    }
    return false;
  };
  std::ifstream in(path);
  std::string line, out;
  int left = 0;
  while (std::getline(in, line)) {
    if (left == 0 && !starts(line)) continue;
    if (left == 0) left = lines;
    out += "    | " + line + "\n";
    if (--left == 0) break;
  }
  return out;
}

Result<int> RunCommand(const std::vector<std::string>& argv, const std::string& log_path,
                       std::chrono::milliseconds timeout) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) return Status::FromErrno("fork");
  if (pid == 0) ExecChild(args, log_path.c_str(), -1, /*stdout_to_log=*/true, SIGKILL);
  int pidfd = PidfdOpen(pid);
  pollfd pfd{pidfd, POLLIN, 0};
  int n;
  do {
    n = poll(&pfd, 1, static_cast<int>(timeout.count()));
  } while (n < 0 && errno == EINTR);
  if (n == 0) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (pidfd >= 0) close(pidfd);
  if (n == 0) return Status::Errno(ETIMEDOUT, "timed out: " + argv[0]);
  return status;
}

}  // namespace sfs::testing
