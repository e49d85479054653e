// Reading a Prometheus text exposition in tests (metrics_test, qos_test,
// cache_test): the value of one series as the daemons render it.
#pragma once

#include <cstdlib>
#include <regex>
#include <string>

#include "tests/harness/test_util.h"

namespace sfs::testing {

// The value of the sample `series` (name and labels exactly as rendered), or
// 0 if the exposition has no such line.
inline double Sample(const std::string& exposition, const std::string& series) {
  size_t pos = 0;
  while ((pos = exposition.find(series + " ", pos)) != std::string::npos) {
    if (pos == 0 || exposition[pos - 1] == '\n') {
      return std::strtod(exposition.c_str() + pos + series.size() + 1, nullptr);
    }
    pos += series.size();
  }
  return 0;
}

// The address a daemon started with a metrics port of 0 printed (its
// "METRICS host:port" line) into the log at path; "" if none.
inline std::string MetricsAddressInLog(const std::string& path) {
  std::string log;
  std::smatch match;
  if (!ReadFile(path, &log) || !std::regex_search(log, match, std::regex("METRICS (\\S+)"))) {
    return "";
  }
  return match[1];
}

}  // namespace sfs::testing
