// Helpers of the bench-smoke tests: run the sfs-bench binary with captured
// stdout/stderr, pull figures out of its --json output, and a temp dir that
// removes itself.
//
// The binary is $SFS_BENCH_BIN, else the path meson compiled in.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace sfs::bench_test {

struct BenchRun {
  int exit_code = -1;  // -1: killed by a signal
  std::string out, err;
};

inline std::string BenchBinary() {
  const char* env = std::getenv("SFS_BENCH_BIN");
  if (env != nullptr && *env != '\0') return env;
#ifdef SFS_BENCH_BIN
  return SFS_BENCH_BIN;
#else
  return "sfs-bench";
#endif
}

inline std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it.
class TempDir {
 public:
  TempDir() {
    const char* t = std::getenv("TMPDIR");
    std::string tmpl = std::string(t != nullptr && *t ? t : "/tmp") + "/sfs-bench-smoke.XXXXXX";
    path_ = mkdtemp(tmpl.data()) != nullptr ? tmpl : "";
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }
  // Names in the directory other than the bench's captured output.
  std::vector<std::string> Entries() const {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(path_)) {
      std::string n = e.path().filename();
      if (n.rfind("bench-", 0) != 0) out.push_back(n);
    }
    return out;
  }

 private:
  std::string path_;
};

// Starts `sfs-bench args...` in its own process group with stdout and stderr
// into files of dir; returns its pid (or -1).
inline pid_t StartBench(const std::vector<std::string>& args, const std::string& dir) {
  std::vector<std::string> argv{BenchBinary()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, (dir + "/bench-out").c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, (dir + "/bench-err").c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid = -1;
  if (posix_spawn(&pid, cargv[0], &fa, &attr, cargv.data(), environ) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  return pid;
}

inline BenchRun FinishBench(pid_t pid, const std::string& dir) {
  BenchRun r;
  int status = 0;
  if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status))
    r.exit_code = WEXITSTATUS(status);
  r.out = Slurp(dir + "/bench-out");
  r.err = Slurp(dir + "/bench-err");
  return r;
}

// Runs sfs-bench to completion; its output files go to dir.
inline BenchRun RunBench(const std::vector<std::string>& args, const std::string& dir) {
  return FinishBench(StartBench(args, dir), dir);
}

// From --json output: phases[phase].<metric>.<stat>, e.g.
// PhaseStat(json, "write", "bw_mib_s", "min"). NaN if absent.
inline double PhaseStat(const std::string& json, const std::string& phase,
                        const std::string& metric, const std::string& stat) {
  size_t p = json.find("\"phase\":\"" + phase + "\"");
  if (p == std::string::npos) return std::nan("");
  size_t end = json.find("\"iterations\"", p);
  size_t m = json.find("\"" + metric + "\":{", p);
  if (m == std::string::npos || m > end) return std::nan("");
  size_t s = json.find("\"" + stat + "\":", m);
  if (s == std::string::npos || s > end) return std::nan("");
  return std::strtod(json.c_str() + s + stat.size() + 3, nullptr);
}

// From --json output: a top-level integer or boolean field ("verify_errors", "ok").
inline std::string TopField(const std::string& json, const std::string& key) {
  size_t p = json.rfind("\"" + key + "\":");
  if (p == std::string::npos) return "";
  p += key.size() + 3;
  size_t e = json.find_first_of(",}", p);
  return json.substr(p, e - p);
}

}  // namespace sfs::bench_test
