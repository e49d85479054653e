// Logging: formats a timestamped line and writes it with a single write(2).
#include "common/log.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>

namespace sfs {
namespace {

std::mutex tag_mu;
std::string log_tag = "sfs";

LogLevel InitialLevel() {
  const char* env = std::getenv("SFS_LOG_LEVEL");
  if (env == nullptr) return LogLevel::kInfo;
  if (std::strcmp(env, "debug") == 0) return LogLevel::kDebug;
  if (std::strcmp(env, "warn") == 0) return LogLevel::kWarn;
  if (std::strcmp(env, "error") == 0) return LogLevel::kError;
  return LogLevel::kInfo;
}

std::atomic<int> min_level{static_cast<int>(InitialLevel())};

}  // namespace

void SetLogTag(std::string tag) {
  std::lock_guard<std::mutex> l(tag_mu);
  log_tag = std::move(tag);
}

void SetLogLevel(LogLevel level) { min_level = static_cast<int>(level); }

bool LogEnabled(LogLevel level) { return static_cast<int>(level) >= min_level.load(); }

void LogLine(LogLevel level, const std::string& msg) {
  using namespace std::chrono;
  auto now = system_clock::now();
  std::time_t t = system_clock::to_time_t(now);
  int ms = static_cast<int>(duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm tm;
  gmtime_r(&t, &tm);
  char ts[40];
  std::strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
  static const char kLevels[] = {'D', 'I', 'W', 'E'};
  std::string tag;
  {
    std::lock_guard<std::mutex> l(tag_mu);
    tag = log_tag;
  }
  std::string line;
  line.reserve(msg.size() + 48);
  line.append(ts).append(".");
  char msbuf[8];
  std::snprintf(msbuf, sizeof(msbuf), "%03dZ ", ms);
  line.append(msbuf);
  line.push_back(kLevels[static_cast<int>(level)]);
  line.append(" ").append(tag).append(": ").append(msg).append("\n");
  ssize_t unused = ::write(2, line.data(), line.size());
  (void)unused;
}

}  // namespace sfs
