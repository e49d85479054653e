// `sfs top`: a live view of the daemons' metrics, like top(1) or iotop(8):
// every interval it scrapes each endpoint (scrape.h) and shows the rates
// since the previous scrape: MDS ops/s and mean latency (and its busiest
// ops), per-OSS read/write throughput and IOPS, and per-job throughput and
// ops/s summed over the OSSes (jobstats). q or SIGINT quits; with --once it
// prints one frame (after one interval) and exits, for scripts and tests.
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <map>
#include <string>
#include <vector>

#include "tools/sfs/commands.h"
#include "tools/sfs/scrape.h"

namespace sfs::tools {
namespace {

constexpr const char* kTopHelp =
    "usage: sfs top [--interval-ms N] [--once | --iterations N] [--mds HOST:PORT]\n"
    "               [METRICS_HOST:PORT...]\n"
    "\n"
    "A live view, refreshed every interval (default 1000 ms), of the endpoints' rates:\n"
    "MDS ops/s and mean latency with its busiest ops, per-OSS read and write MB/s and\n"
    "IOPS, and per-job MB/s and ops/s (SFS_JOBID, summed over the OSSes). Press q (or\n"
    "Ctrl-C) to quit. With --mds, the endpoints that MDS knows (as sfs stats --mds).\n"
    "\n"
    "  --once           print one frame, one interval after the first scrape, and exit\n"
    "  --iterations N   exit after N refreshes\n"
    "\n"
    "examples:\n"
    "  sfs top 10.0.0.1:9100 10.0.0.2:9100 10.0.0.3:9100\n";

volatile sig_atomic_t stop = 0;
void OnSigint(int) { stop = 1; }

// Raw keys from a terminal while alive; the old mode back at the end.
class RawTerminal {
 public:
  RawTerminal() {
    if (!isatty(0) || tcgetattr(0, &old_) != 0) return;
    termios raw = old_;
    raw.c_lflag &= ~(ICANON | ECHO);
    raw.c_cc[VMIN] = 0;
    raw.c_cc[VTIME] = 0;
    active_ = tcsetattr(0, TCSANOW, &raw) == 0;
  }
  ~RawTerminal() {
    if (active_) tcsetattr(0, TCSANOW, &old_);
  }

 private:
  termios old_{};
  bool active_ = false;
};

// Waits up to d for a key on stdin (if it is a terminal); true iff q was pressed.
bool WaitForQuit(std::chrono::milliseconds d) {
  auto end = std::chrono::steady_clock::now() + d;
  while (!stop) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        end - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    // The refresh interval itself; SIGINT ends it early (EINTR).
    pollfd p{0, POLLIN, 0};
    if (poll(&p, isatty(0) ? 1 : 0, static_cast<int>(left.count())) > 0) {
      char c = 0;
      if (read(0, &c, 1) == 1 && (c == 'q' || c == 'Q')) return true;
    }
  }
  return true;
}

double Rate(double now, double before, double secs) {
  return secs > 0 && now >= before ? (now - before) / secs : 0;
}

std::string Frame(const std::vector<EndpointStats>& prev, const std::vector<EndpointStats>& now,
                  double secs) {
  std::string out;
  char line[256];
  std::time_t t = std::time(nullptr);
  char clock[16];
  std::strftime(clock, sizeof clock, "%H:%M:%S", std::localtime(&t));
  std::snprintf(line, sizeof line, "sfs top - %s, interval %.1f s (q quits)\n\n", clock, secs);
  out += line;
  std::map<std::string, JobFigures> jobs_now, jobs_prev;
  std::snprintf(line, sizeof line, "%-22s %-6s %10s %10s %10s %12s\n", "ENDPOINT", "KIND",
                "READ MB/s", "WRITE MB/s", "OPS/s", "MEAN LAT ms");
  out += line;
  for (size_t i = 0; i < now.size(); ++i) {
    const EndpointStats& n = now[i];
    const EndpointStats& p = prev[i];
    if (!n.status.ok() || !p.status.ok()) {
      std::snprintf(line, sizeof line, "%-22s %s\n", n.address.c_str(),
                    (n.status.ok() ? p.status : n.status).ToString().c_str());
      out += line;
      continue;
    }
    OpFigures tn = n.Total(), tp = p.Total();
    double dc = tn.latency_count - tp.latency_count;
    std::snprintf(line, sizeof line, "%-22s %-6s %10.2f %10.2f %10.0f %12.3f\n", n.address.c_str(),
                  n.kind.c_str(), Rate(n.read_bytes, p.read_bytes, secs) / 1e6,
                  Rate(n.write_bytes, p.write_bytes, secs) / 1e6,
                  Rate(tn.requests, tp.requests, secs),
                  dc > 0 ? 1000 * (tn.latency_sum - tp.latency_sum) / dc : 0.0);
    out += line;
    if (n.kind == "mds") {  // its three busiest ops
      std::vector<std::pair<double, std::string>> busy;
      for (const auto& [op, f] : n.ops) {
        auto it = p.ops.find(op);
        double r = Rate(f.requests, it == p.ops.end() ? 0 : it->second.requests, secs);
        if (r > 0) busy.emplace_back(r, op);
      }
      std::sort(busy.rbegin(), busy.rend());
      for (size_t k = 0; k < busy.size() && k < 3; ++k) {
        std::snprintf(line, sizeof line, "  %-20s %-6s %32.0f\n", busy[k].second.c_str(), "op",
                      busy[k].first);
        out += line;
      }
    }
    if (n.kind != "oss") continue;
    for (const auto& [job, f] : n.jobs) {
      jobs_now[job].read_bytes += f.read_bytes;
      jobs_now[job].write_bytes += f.write_bytes;
      jobs_now[job].ops += f.ops;
    }
    for (const auto& [job, f] : p.jobs) {
      jobs_prev[job].read_bytes += f.read_bytes;
      jobs_prev[job].write_bytes += f.write_bytes;
      jobs_prev[job].ops += f.ops;
    }
  }
  std::snprintf(line, sizeof line, "\n%-29s %10s %10s %10s\n", "JOB (OSS I/O)", "READ MB/s",
                "WRITE MB/s", "OPS/s");
  out += line;
  for (const auto& [job, f] : jobs_now) {
    const JobFigures& b = jobs_prev[job];
    std::snprintf(line, sizeof line, "%-29s %10.2f %10.2f %10.0f\n", job.c_str(),
                  Rate(f.read_bytes, b.read_bytes, secs) / 1e6,
                  Rate(f.write_bytes, b.write_bytes, secs) / 1e6, Rate(f.ops, b.ops, secs));
    out += line;
  }
  return out;
}

std::vector<EndpointStats> ScrapeAll(const std::vector<std::string>& endpoints) {
  std::vector<EndpointStats> all;
  for (const std::string& e : endpoints) all.push_back(Scrape(e));
  return all;
}

}  // namespace

int RunTop(int argc, char** argv) {
  static const option kLong[] = {{"interval-ms", required_argument, nullptr, 'n'},
                                 {"once", no_argument, nullptr, 'o'},
                                 {"iterations", required_argument, nullptr, 'N'},
                                 {"mds", required_argument, nullptr, 'M'},
                                 {"help", no_argument, nullptr, 1000},
                                 {nullptr, 0, nullptr, 0}};
  long interval_ms = 1000, iterations = -1;
  std::string mds;
  optind = 1;
  int opt;
  while ((opt = getopt_long(argc, argv, "", kLong, nullptr)) != -1) {
    char* end = nullptr;
    if (opt == 'n') {
      interval_ms = std::strtol(optarg, &end, 10);
      if (*end != '\0' || interval_ms < 10 || interval_ms > 3600000) {
        std::fputs("sfs top: --interval-ms wants 10..3600000\n", stderr);
        return 2;
      }
    } else if (opt == 'M') {
      mds = optarg;
    } else if (opt == 'o') {
      iterations = 1;
    } else if (opt == 'N') {
      iterations = std::strtol(optarg, &end, 10);
      if (*end != '\0' || iterations < 1) {
        std::fputs("sfs top: --iterations wants a positive number\n", stderr);
        return 2;
      }
    } else if (opt == 1000) {
      std::fputs(kTopHelp, stdout);
      return 0;
    } else {
      std::fputs(kTopHelp, stderr);
      return 2;
    }
  }
  std::vector<std::string> endpoints;
  if (!mds.empty()) {
    Result<std::vector<std::string>> found = DiscoverEndpoints(mds);
    if (!found.ok()) return Fail("top", mds, found.status());
    endpoints = *found;
  }
  endpoints.insert(endpoints.end(), argv + optind, argv + argc);
  if (endpoints.empty()) {
    std::fputs("sfs top: no METRICS_HOST:PORT given (or --mds HOST:PORT)\n", stderr);
    return 2;
  }
  struct sigaction sa {};
  sa.sa_handler = OnSigint;  // no SA_RESTART: the wait's poll returns at once
  sigaction(SIGINT, &sa, nullptr);
  const bool tty = isatty(1);
  RawTerminal raw;
  auto interval = std::chrono::milliseconds(interval_ms);
  std::vector<EndpointStats> prev = ScrapeAll(endpoints);
  auto prev_t = std::chrono::steady_clock::now();
  for (long n = 0; iterations < 0 || n < iterations; ++n) {
    if (WaitForQuit(interval)) break;
    std::vector<EndpointStats> now = ScrapeAll(endpoints);
    auto now_t = std::chrono::steady_clock::now();
    double secs = std::chrono::duration<double>(now_t - prev_t).count();
    // ANSI: cursor home and clear screen, on a terminal only.
    std::string frame = (tty ? "\x1b[H\x1b[2J" : "") + Frame(prev, now, secs);
    std::fputs(frame.c_str(), stdout);
    std::fflush(stdout);
    prev = std::move(now);
    prev_t = now_t;
  }
  return 0;
}

}  // namespace sfs::tools
