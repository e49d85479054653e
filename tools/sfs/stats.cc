// `sfs stats`: one scrape of each daemon's GET /metrics, summed up (JSON for
// scripts, or a few lines per endpoint).
#include <getopt.h>

#include <cstdio>
#include <string>
#include <vector>

#include "tools/sfs/commands.h"
#include "tools/sfs/scrape.h"

namespace sfs::tools {
namespace {

constexpr const char* kStatsHelp =
    "usage: sfs stats [--json] [--mds HOST:PORT] [METRICS_HOST:PORT...]\n"
    "\n"
    "Scrapes the GET /metrics endpoints of sfs-mds, sfs-oss and sfs-mount (their\n"
    "--metrics-listen, or the mount option metrics_listen=) once and prints, per endpoint, its\n"
    "kind, requests, latency, bytes, errors by op and errno, and per-job ops and bytes.\n"
    "Exits 1 if an endpoint cannot be scraped (the others are still printed).\n"
    "With --mds, the endpoints are the ones that MDS knows: its own and each OSS's\n"
    "(those started with --metrics-listen), then any given.\n"
    "\n"
    "  --json   "
    "{\"endpoints\":[{\"address\",\"kind\",\"ok\",\"requests\",\"latency_seconds_sum\",\n"
    "           \"latency_count\",\"read_bytes\",\"write_bytes\",\"ops\":{OP:{...}},\n"
    "           \"errors\":{\"OP "
    "ERRNO\":N},\"jobs\":{JOB:{\"ops\",\"read_bytes\",\"write_bytes\"}}}]}\n"
    "\n"
    "examples:\n"
    "  sfs stats --json 10.0.0.1:9100 10.0.0.2:9100\n"
    "  sfs stats --mds 10.0.0.1:7700\n";

void PrintText(const EndpointStats& e) {
  if (!e.status.ok()) {
    std::printf("%s: %s\n", e.address.c_str(), e.status.ToString().c_str());
    return;
  }
  OpFigures t = e.Total();
  std::printf("%s (%s): requests %.0f, mean latency %.3f ms, read %.0f B, written %.0f B\n",
              e.address.c_str(), e.kind.c_str(), t.requests,
              t.latency_count > 0 ? 1000 * t.latency_sum / t.latency_count : 0.0, e.read_bytes,
              e.write_bytes);
  for (const auto& [key, n] : e.errors) std::printf("  errors %s: %.0f\n", key.c_str(), n);
  for (const auto& [job, f] : e.jobs) {
    std::printf("  job %s: ops %.0f, read %.0f B, written %.0f B\n", job.c_str(), f.ops,
                f.read_bytes, f.write_bytes);
  }
}

}  // namespace

int RunStats(int argc, char** argv) {
  static const option kLong[] = {{"json", no_argument, nullptr, 'J'},
                                 {"mds", required_argument, nullptr, 'M'},
                                 {"help", no_argument, nullptr, 1000},
                                 {nullptr, 0, nullptr, 0}};
  bool json = false;
  std::string mds;
  optind = 1;
  int opt;
  while ((opt = getopt_long(argc, argv, "", kLong, nullptr)) != -1) {
    if (opt == 'J') {
      json = true;
    } else if (opt == 'M') {
      mds = optarg;
    } else if (opt == 1000) {
      std::fputs(kStatsHelp, stdout);
      return 0;
    } else {
      std::fputs(kStatsHelp, stderr);
      return 2;
    }
  }
  std::vector<std::string> endpoints;
  if (!mds.empty()) {
    Result<std::vector<std::string>> found = DiscoverEndpoints(mds);
    if (!found.ok()) return Fail("stats", mds, found.status());
    endpoints = *found;
  }
  endpoints.insert(endpoints.end(), argv + optind, argv + argc);
  if (endpoints.empty()) {
    std::fputs("sfs stats: no METRICS_HOST:PORT given (or --mds HOST:PORT)\n", stderr);
    return 2;
  }
  std::vector<EndpointStats> all;
  int rc = 0;
  for (const std::string& e : endpoints) {
    all.push_back(Scrape(e));
    if (!all.back().status.ok()) {
      if (!json) Fail("stats", e, all.back().status);
      rc = 1;
    }
  }
  if (json) {
    std::fputs(StatsJson(all).c_str(), stdout);
  } else {
    for (const EndpointStats& e : all) {
      if (e.status.ok()) PrintText(e);
    }
  }
  return rc;
}

}  // namespace sfs::tools
