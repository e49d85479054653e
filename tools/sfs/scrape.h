// What `sfs stats` and `sfs top` read from the daemons' GET /metrics
// (docs/operations.md "Metrics"): one endpoint's exposition parsed and summed
// into the figures the two commands show. Which daemon it is comes from its
// metric names (sfs_mds_*, sfs_oss_*, sfs_fuse_*).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace sfs::tools {

struct MetricSample {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;
  double value = 0;
  std::string Label(std::string_view key) const;  // "" if absent
};

// Parses the text exposition; comment lines are skipped. EPROTO naming the
// line for one that is not `name[{labels}] value`.
Result<std::vector<MetricSample>> ParseExposition(std::string_view text);

struct OpFigures {
  double requests = 0;
  double latency_sum = 0;  // seconds
  double latency_count = 0;
};

struct JobFigures {
  double ops = 0;
  double read_bytes = 0;
  double write_bytes = 0;
};

struct EndpointStats {
  std::string address;
  std::string kind;  // "mds", "oss", "client" or "unknown"
  Status status;     // of the scrape
  double read_bytes = 0;
  double write_bytes = 0;
  std::map<std::string, OpFigures> ops;    // by op
  std::map<std::string, JobFigures> jobs;  // by job
  std::map<std::string, double> errors;    // "op errno" -> count
  OpFigures Total() const;
};

// GETs address's /metrics and sums it up (status set on failure).
EndpointStats Scrape(const std::string& address);
EndpointStats Summarize(const std::string& address, const std::vector<MetricSample>& samples);

std::string StatsJson(const std::vector<EndpointStats>& all);

// The metrics endpoints the MDS at mds knows: its own, then each OSS's once
// (GET_OST_MAP). ENOENT when it knows none (no --metrics-listen anywhere).
Result<std::vector<std::string>> DiscoverEndpoints(const std::string& mds);

}  // namespace sfs::tools
