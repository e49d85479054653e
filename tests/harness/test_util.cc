// Helpers shared by the integration tests; see test_util.h.
#include "tests/harness/test_util.h"

#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace sfs::testing {

uint64_t TestSeed() {
  static const uint64_t seed = []() -> uint64_t {
    const char* env = getenv("SFS_SEED");
    if (env != nullptr && *env != '\0') return std::strtoull(env, nullptr, 0);
    return (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  }();
  return seed;
}

uint64_t PerTestSeed() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = info ? std::string(info->test_suite_name()) + "." + info->name() : "";
  return TestSeed() ^ std::hash<std::string>{}(name);
}

bool LongRun() {
  const char* env = getenv("SFS_LONG");
  return env != nullptr && *env != '\0' && std::strcmp(env, "0") != 0;
}

std::string TestName() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = info != nullptr ? info->name() : "test";
  for (char& c : name) {
    if (c == '/') c = '_';
  }
  return name;
}

std::string ReproCommand() {
  char exe[PATH_MAX] = {};
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  std::string self = n > 0 ? std::string(exe, static_cast<size_t>(n)) : "<test binary>";
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string filter = info ? std::string(info->test_suite_name()) + "." + info->name() : "*";
  std::ostringstream os;
  os << "SFS_SEED=" << TestSeed();
  if (LongRun()) os << " SFS_LONG=1";
  os << " " << self << " --gtest_filter='" << filter << "'";
  return os.str();
}

namespace {

int RunForked(bool drop, uid_t uid, gid_t gid, const std::function<int()>& fn) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return -1;
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    close(fds[0]);
    int result = -1;
    if (!drop || (setgroups(0, nullptr) == 0 && setgid(gid) == 0 && setuid(uid) == 0)) {
      result = fn();
    }
    (void)!write(fds[1], &result, sizeof result);
    _exit(0);
  }
  close(fds[1]);
  int result = -1;
  ssize_t got = read(fds[0], &result, sizeof result);
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return got == sizeof result ? result : -1;
}

}  // namespace

int RunAsUser(uid_t uid, gid_t gid, const std::function<int()>& fn) {
  return RunForked(true, uid, gid, fn);
}

int RunInChild(const std::function<int()>& fn) { return RunForked(false, 0, 0, fn); }

std::vector<uint8_t> RandomBytes(std::mt19937_64& rng, size_t n) {
  std::vector<uint8_t> out(n);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t v = rng();
    std::memcpy(&out[i], &v, 8);
  }
  for (; i < n; ++i) out[i] = static_cast<uint8_t>(rng());
  return out;
}

int64_t FirstDifference(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) return static_cast<int64_t>(i);
  }
  return a.size() == b.size() ? -1 : static_cast<int64_t>(n);
}

::testing::AssertionResult SameBytes(std::string_view got, std::string_view want) {
  size_t n = std::min(got.size(), want.size());
  size_t i = 0;
  while (i < n && got[i] == want[i]) ++i;
  if (i == n && got.size() == want.size()) return ::testing::AssertionSuccess();
  auto show = [](std::string_view s, size_t at) {
    std::ostringstream os;
    os << std::hex;
    for (size_t k = at; k < std::min(s.size(), at + 8); ++k) {
      os << " " << static_cast<unsigned>(static_cast<uint8_t>(s[k]));
    }
    return os.str();
  };
  return ::testing::AssertionFailure()
         << "got " << got.size() << " bytes, want " << want.size() << "; first difference at "
         << i << " (got:" << show(got, i) << " / want:" << show(want, i) << ")";
}

bool WriteFile(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
  out.close();
  return static_cast<bool>(out);
}

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream os;
  os << in.rdbuf();
  *out = os.str();
  return true;
}

std::string SfsBinary() {
  if (const char* p = getenv("SFS_CLI_BIN")) return p;
  return std::filesystem::read_symlink("/proc/self/exe").parent_path().parent_path() /
         "tools/sfs";
}

int RunShell(const std::string& cmd, std::string* out) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return -1;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out->append(buf, n);
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

}  // namespace sfs::testing
