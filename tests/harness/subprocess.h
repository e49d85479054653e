// Subprocess: one child process started by the integration-test harness.
//
// The child's stdout is a pipe the harness reads line by line (the daemons'
// `LISTENING host:port` handshake), its stderr is appended to a log file that
// outlives the test, stdin is /dev/null and every other descriptor is closed.
// The child gets a signal if the test process dies (PR_SET_PDEATHSIG), so a
// crashed test never leaves daemons behind.
//
// Waiting never sleeps blindly: ReadLine polls the pipe and Wait polls a
// pidfd, each with a deadline.
//
// Thread safety: none; one owner drives a Subprocess.
#pragma once

#include <sys/types.h>

#include <csignal>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace sfs::testing {

class Subprocess {
 public:
  // Starts argv (argv[0] is a path). stderr goes to log_path (appended).
  // death_signal is what the child gets if the test process dies: SIGKILL
  // for daemons, SIGTERM for sfs-mount (so that it unmounts on its way out).
  // With capture_stdout false, stdout goes to the log too (ReadLine then
  // sees EOF at once).
  static Result<std::unique_ptr<Subprocess>> Spawn(const std::vector<std::string>& argv,
                                                   const std::string& log_path,
                                                   int death_signal = SIGKILL,
                                                   bool capture_stdout = true);
  // Kills (SIGKILL) and reaps the child if it is still running.
  ~Subprocess();

  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }
  const std::string& log_path() const { return log_path_; }
  // The command line, shell-quoted, for repro messages.
  std::string CommandLine() const;

  // Reads one line of the child's stdout (without the newline). ETIMEDOUT when
  // the deadline passes first, EPIPE when the child closed stdout (exited).
  Result<std::string> ReadLine(std::chrono::milliseconds timeout);

  // True iff the child has not exited (reaps it if it has).
  bool Running();
  // Sends sig; a no-op once the child has been reaped.
  void Signal(int sig);
  // Waits for the child to exit; returns its wait status. ETIMEDOUT if it is
  // still running at the deadline.
  Result<int> Wait(std::chrono::milliseconds timeout);
  // SIGCONT + SIGTERM, then SIGKILL if it has not exited within grace (after
  // dumping its threads' stacks to stderr and its log). Returns the wait status.
  int Terminate(std::chrono::milliseconds grace);

 private:
  Subprocess() = default;
  bool Reap(int options);
  void DumpStacks();

  pid_t pid_ = -1;
  int pidfd_ = -1;
  int stdout_fd_ = -1;
  bool exited_ = false;
  int wait_status_ = 0;
  std::string buffered_;  // stdout bytes read but not yet returned as a line
  std::vector<std::string> argv_;
  std::string log_path_;
};

// Describes a wait status: "exit 0", "signal 9 (Killed)".
std::string DescribeWaitStatus(int status);

// The last `lines` lines of a text file ("" if unreadable).
std::string TailFile(const std::string& path, int lines);

// The first sanitizer report in a log (its first `lines` lines, from the
// "ERROR: AddressSanitizer"/"WARNING: ThreadSanitizer"... or "runtime
// error:" line on), or "" iff the log holds none. A sanitized daemon may be
// killed before its report shows in its exit status; its log always shows it.
std::string SanitizerReport(const std::string& path, int lines = 30);

// Runs argv to completion (stdout and stderr into log_path); returns its wait
// status, or ETIMEDOUT (after killing it) if it runs longer than timeout.
Result<int> RunCommand(const std::vector<std::string>& argv, const std::string& log_path,
                       std::chrono::milliseconds timeout);

}  // namespace sfs::testing
