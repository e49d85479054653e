// JobIdOf: the /proc read and the per-thread cache.
#include "client/fuse/job_ids.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <unordered_map>

namespace sfs::fuse {
namespace {

constexpr size_t kMaxCached = 1024;      // pids per thread; then the cache starts over
constexpr size_t kMaxEnviron = 1 << 20;  // bytes of environ read at most

int64_t CoarseNowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

std::string ReadJobId(pid_t pid) {
  std::string path = "/proc/" + std::to_string(pid) + "/environ";
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string env;
  char buf[16384];
  ssize_t n;
  while (env.size() < kMaxEnviron && (n = ::read(fd, buf, sizeof buf)) > 0) {
    env.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return std::string(JobIdInEnviron(env));
}

struct Cached {
  std::string job;
  int64_t expires_ms = 0;
};

}  // namespace

std::string_view JobIdInEnviron(std::string_view env) {
  constexpr std::string_view kPrefix = "SFS_JOBID=";
  size_t pos = 0;
  while (pos < env.size()) {
    size_t end = env.find('\0', pos);
    if (end == std::string_view::npos) end = env.size();
    std::string_view entry = env.substr(pos, end - pos);
    if (entry.substr(0, kPrefix.size()) == kPrefix) return entry.substr(kPrefix.size());
    pos = end + 1;
  }
  return {};
}

const std::string& JobIdOf(pid_t pid) {
  static const std::string kNone;
  if (pid <= 0) return kNone;
  thread_local std::unordered_map<pid_t, Cached> cache;
  int64_t now = CoarseNowMs();
  auto it = cache.find(pid);
  if (it != cache.end() && it->second.expires_ms > now) return it->second.job;
  if (it == cache.end()) {
    if (cache.size() >= kMaxCached) cache.clear();
    it = cache.emplace(pid, Cached{}).first;
  }
  it->second.job = ReadJobId(pid);
  it->second.expires_ms = now + std::chrono::milliseconds(kJobIdTtl).count();
  return it->second.job;
}

}  // namespace sfs::fuse
