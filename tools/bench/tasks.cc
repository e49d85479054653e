// The task runner (see tasks.h). The parent is a small event loop over the
// tasks' "up" pipes (ppoll, with SIGINT/SIGTERM unblocked only while it
// waits, so an interrupt is never missed between a check and the wait).
#include "tools/bench/tasks.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace sfs::bench {
namespace {

constexpr char kBarrier = 'B';
constexpr char kRecord = 'R';

volatile sig_atomic_t g_interrupted = 0;
void OnInterrupt(int) { g_interrupted = 1; }

bool WriteAll(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    ssize_t w = ::write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    c += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// A forked task's TaskContext: pipes to and from the parent.
class PipeTaskContext final : public TaskContext {
 public:
  PipeTaskContext(int rank, int ntasks, int up_fd, int down_fd)
      : TaskContext(rank, ntasks), up_(up_fd), down_(down_fd) {}
  Status Barrier() override;
  Status Report(const TaskRecord& r) override;

 private:
  int up_, down_;
};

struct Child {
  pid_t pid = -1;
  int up = -1;    // parent reads
  int down = -1;  // parent writes
  std::string in;
  bool eof = false;
  bool waiting = false;  // arrived at the current barrier
};

// Signal set-up of the parent for the run, undone by the destructor.
class SignalScope {
 public:
  SignalScope() {
    struct sigaction sa {};
    sa.sa_handler = OnInterrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
    sa.sa_handler = SIG_IGN;  // a task that died must not take the parent with it
    sigaction(SIGPIPE, &sa, &old_pipe_);
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigprocmask(SIG_BLOCK, &block, &old_mask_);
    wait_mask_ = old_mask_;
    sigdelset(&wait_mask_, SIGINT);
    sigdelset(&wait_mask_, SIGTERM);
  }
  ~SignalScope() { Restore(); }
  // Also what a forked task calls first: default dispositions, old mask.
  void Restore() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
    sigaction(SIGPIPE, &old_pipe_, nullptr);
    sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
  }
  const sigset_t* wait_mask() const { return &wait_mask_; }

 private:
  struct sigaction old_int_ {
  }, old_term_{}, old_pipe_{};
  sigset_t old_mask_{}, wait_mask_{};
};

[[noreturn]] void RunChild(int rank, std::vector<Child>& kids, SignalScope& sig,
                           const std::function<int(TaskContext&)>& body, int up, int down) {
  sig.Restore();
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the parent
  for (int i = 0; i < rank; ++i) {
    ::close(kids[i].up);
    ::close(kids[i].down);
  }
  PipeTaskContext ctx(rank, static_cast<int>(kids.size()), up, down);
  int code = body(ctx);
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(code);
}

class Parent {
 public:
  explicit Parent(std::vector<Child>& kids) : kids_(kids) {}

  // Runs the event loop until every task closed its pipe.
  void Loop(const sigset_t* wait_mask, TaskRunResult* res) {
    std::vector<pollfd> fds;
    std::vector<int> idx;
    for (;;) {
      fds.clear();
      idx.clear();
      for (size_t i = 0; i < kids_.size(); ++i) {
        if (!kids_[i].eof) {
          fds.push_back({kids_[i].up, POLLIN, 0});
          idx.push_back(static_cast<int>(i));
        }
      }
      if (fds.empty()) return;
      int n = ppoll(fds.data(), fds.size(), nullptr, wait_mask);
      if (g_interrupted && !res->interrupted) {
        res->interrupted = interrupted_ = true;
        Abort(SIGTERM);
      }
      if (n < 0) continue;  // EINTR
      for (size_t k = 0; k < fds.size(); ++k) {
        if (fds[k].revents != 0) Drain(kids_[idx[k]], res);
      }
      Step();
    }
  }

 private:
  void Drain(Child& c, TaskRunResult* res) {
    char buf[4096];
    ssize_t n = ::read(c.up, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) return;
    if (n <= 0) {
      c.eof = true;
      ::close(c.up);
      CheckExit(c);
      return;
    }
    c.in.append(buf, static_cast<size_t>(n));
    Parse(c, res);
  }

  void Parse(Child& c, TaskRunResult* res) {
    size_t pos = 0;
    while (pos < c.in.size()) {
      if (c.in[pos] == kBarrier) {
        c.waiting = true;
        ++pos;
        continue;
      }
      if (c.in.size() - pos < 1 + sizeof(TaskRecord)) break;
      TaskRecord r;
      std::memcpy(&r, c.in.data() + pos + 1, sizeof(r));
      res->records.push_back(r);
      pos += 1 + sizeof(TaskRecord);
    }
    c.in.erase(0, pos);
  }

  // A task that closed its pipe has exited (or is about to): reap it, and
  // stop the others if it failed, so a broken run ends quickly.
  void CheckExit(Child& c) {
    int status = 0;
    while (waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
    }
    c.pid = -1;
    bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    // Tasks we stopped (after an interrupt or another task's failure) did not fail.
    bool stopped =
        interrupted_ || (signalled_ && WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
    if (!ok && !stopped) {
      ++failed_;
      Abort(SIGTERM);
    }
  }

  // Releases the barrier when every task is waiting; aborts it when some
  // task waits for one that is gone.
  void Step() {
    if (aborted_) return;
    int waiting = 0, gone = 0;
    for (const Child& c : kids_) {
      waiting += c.waiting ? 1 : 0;
      gone += c.eof ? 1 : 0;
    }
    if (waiting > 0 && gone > 0) {
      Abort(0);
    } else if (waiting == static_cast<int>(kids_.size())) {
      for (Child& c : kids_) {
        c.waiting = false;
        char go = kBarrier;
        (void)WriteAll(c.down, &go, 1);
      }
    }
  }

  // Closing the down pipes wakes every waiting task with ECANCELED; sig
  // (if not 0) stops the tasks that are still working.
  void Abort(int sig) {
    if (!aborted_) {
      aborted_ = true;
      for (Child& c : kids_) {
        ::close(c.down);
        c.down = -1;
      }
    }
    if (sig == 0) return;
    signalled_ = true;
    for (Child& c : kids_) {
      if (c.pid > 0) ::kill(c.pid, sig);
    }
  }

  std::vector<Child>& kids_;
  bool aborted_ = false;
  bool interrupted_ = false;
  bool signalled_ = false;  // Abort() sent SIGTERM to the tasks

 public:
  int failed_ = 0;
};

}  // namespace

int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

bool DropCaches() {
  ::sync();
  int fd = ::open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::write(fd, "3\n", 2) == 2;
  ::close(fd);
  return ok;
}

Status PipeTaskContext::Barrier() {
  char b = kBarrier;
  if (!WriteAll(up_, &b, 1)) return Status(ECANCELED, "run aborted");
  for (;;) {
    ssize_t n = ::read(down_, &b, 1);
    if (n == 1) return Status::Ok();
    if (n < 0 && errno == EINTR) continue;
    return Status(ECANCELED, "run aborted");
  }
}

Status PipeTaskContext::Report(const TaskRecord& r) {
  char msg[1 + sizeof(TaskRecord)];  // < PIPE_BUF: one atomic write
  msg[0] = kRecord;
  std::memcpy(msg + 1, &r, sizeof(r));
  if (!WriteAll(up_, msg, sizeof(msg))) return Status(EPIPE, "parent gone");
  return Status::Ok();
}

TaskRunResult RunTasks(int ntasks, const std::function<int(TaskContext&)>& body) {
  TaskRunResult res;
  g_interrupted = 0;
  SignalScope sig;
  std::vector<Child> kids(static_cast<size_t>(ntasks));
  std::fflush(stdout);  // or each task would print the parent's buffered output again
  std::fflush(stderr);
  int not_started = 0;
  for (int i = 0; i < ntasks; ++i) {
    int up[2], down[2];
    if (pipe2(up, O_CLOEXEC) != 0 || pipe2(down, O_CLOEXEC) != 0) {
      std::perror("sfs-bench: pipe");  // out of descriptors: started tasks die with us
      std::_Exit(1);
    }
    pid_t pid = fork();
    if (pid == 0) {
      ::close(up[0]);
      ::close(down[1]);
      RunChild(i, kids, sig, body, up[1], down[0]);
    }
    ::close(up[1]);
    ::close(down[0]);
    kids[i] = Child{pid, up[0], down[1], {}, false, false};
    if (pid < 0) {  // the others will find the barrier aborted
      std::perror("sfs-bench: fork");
      ::close(up[0]);
      kids[i].eof = true;
      ++not_started;
    }
  }
  Parent parent(kids);
  parent.Loop(sig.wait_mask(), &res);
  // A Ctrl-C that reached us after the last wait (the tasks it killed closed
  // their pipes, so the loop ended without waiting again) is still pending,
  // blocked: take it now, or restoring the default action in ~SignalScope
  // would let it kill us before the files are cleaned up.
  sigset_t ours, pending;
  sigemptyset(&ours);
  sigaddset(&ours, SIGINT);
  sigaddset(&ours, SIGTERM);
  timespec zero{0, 0};
  while (sigpending(&pending) == 0 &&
         (sigismember(&pending, SIGINT) || sigismember(&pending, SIGTERM))) {
    if (sigtimedwait(&ours, nullptr, &zero) > 0) res.interrupted = true;
  }
  if (g_interrupted) res.interrupted = true;
  for (Child& c : kids) {
    if (c.down >= 0) ::close(c.down);
  }
  res.failed_tasks = parent.failed_ + not_started;
  return res;
}

}  // namespace sfs::bench
