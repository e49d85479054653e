// One line per event to stderr: "2026-11-30T04:12:24.123Z I mds: message".
// Thread-safe (one write(2) per line). Level from SFS_LOG_LEVEL (debug|info|warn|error).
#pragma once

#include <sstream>
#include <string>

namespace sfs {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

void SetLogTag(std::string tag);        // e.g. "mds", "oss", "client"
void SetLogLevel(LogLevel level);
bool LogEnabled(LogLevel level);
void LogLine(LogLevel level, const std::string& msg);

}  // namespace sfs

#define SFS_LOG(level, expr)                                               \
  do {                                                                     \
    if (::sfs::LogEnabled(::sfs::LogLevel::level)) {                       \
      std::ostringstream sfs_log_os_;                                      \
      sfs_log_os_ << expr;                                                 \
      ::sfs::LogLine(::sfs::LogLevel::level, sfs_log_os_.str());           \
    }                                                                      \
  } while (0)

#define LOG_DEBUG(expr) SFS_LOG(kDebug, expr)
#define LOG_INFO(expr) SFS_LOG(kInfo, expr)
#define LOG_WARN(expr) SFS_LOG(kWarn, expr)
#define LOG_ERROR(expr) SFS_LOG(kError, expr)
