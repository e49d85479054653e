// `sfs ost lost INDEX` and `sfs rebuild status`: declaring an OST lost (its
// objects are rebuilt onto other OSTs by the MDS) and watching the rebuild
// (docs/redundancy.md "Rebuild").
#include <getopt.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <thread>

#include "tools/sfs/commands.h"

namespace sfs::tools {
namespace {

constexpr const char* kOstHelp =
    "usage: sfs ost lost INDEX [-m PATH] [--mds HOST:PORT]\n"
    "\n"
    "Declares OST INDEX lost for good (root only), durably at the MDS: it is never\n"
    "allocated again, nothing is read from it, and every mirror copy or EC chunk object\n"
    "on it is rebuilt by the MDS onto another OST (one its file does not use), from a\n"
    "good copy or from K other chunks, in the background (see 'sfs rebuild status').\n"
    "Files whose every copy (or more than M chunks) was there stay unreadable (EIO).\n"
    "\n"
    "examples:\n"
    "  sfs ost lost 3 -m /mnt/sfs && sfs rebuild status --wait -m /mnt/sfs\n";

constexpr const char* kRebuildHelp =
    "usage: sfs rebuild status [--wait] [--json] [-m PATH] [--mds HOST:PORT]\n"
    "\n"
    "The MDS's rebuild and resync progress: lost OSTs, files and objects still to\n"
    "rebuild (lost) or resync (stale), objects and bytes done since the MDS started,\n"
    "the rate and, on a terminal, a progress bar with an ETA; a rebuild waiting for\n"
    "space on a full OST says so (\"paused: OST N is full ...\") and goes on by itself\n"
    "once that OST has room. The rate is bounded by\n"
    "sfs-mds --rebuild-mibps N (and the OSSes' QoS class \"resync\", sfs qos).\n"
    "\n"
    "  --wait      poll every second until nothing is left (exit 1 if failures only\n"
    "              remain after 10 minutes)\n"
    "  --json      {\"lost_osts\":[..],\"files_pending\",\"objects_pending\",\"bytes_pending\",\n"
    "              \"objects_done\",\"bytes_done\",\"failures\",\"bytes_per_s\",\"paused\":[..]}\n";

struct Args {
  GlobalOptions g;
  std::string mount = ".";
  bool wait = false;
  std::vector<std::string> operands;
};

int Parse(int argc, char** argv, Args* a, const char* help) {
  static const option kLong[] = {{"mount", required_argument, nullptr, 'm'},
                                 {"mds", required_argument, nullptr, 'M'},
                                 {"json", no_argument, nullptr, 'J'},
                                 {"wait", no_argument, nullptr, 'w'},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  optind = 1;
  int opt;
  while ((opt = getopt_long(argc, argv, "m:h", kLong, nullptr)) != -1) {
    if (opt == 'm') a->mount = optarg;
    else if (opt == 'w') a->wait = true;
    else if (opt == 'h') { std::fputs(help, stdout); return 0; }
    else if (!ParseGlobal(opt, optarg, &a->g)) { std::fputs(help, stderr); return 2; }
  }
  for (int i = optind; i < argc; ++i) a->operands.push_back(argv[i]);
  if (!a->g.mds.empty() && a->mount == ".") a->mount = "/";
  return -1;
}

std::string Mib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f MiB", bytes / 1048576.0);
  return buf;
}

void Print(const client::RebuildStatus& s, bool json, bool tty) {
  std::ostringstream lost;
  for (size_t i = 0; i < s.lost_osts.size(); ++i) lost << (i ? "," : "") << s.lost_osts[i];
  if (json) {
    std::ostringstream paused;
    for (size_t i = 0; i < s.paused.size(); ++i) {
      paused << (i ? "," : "") << '"' << s.paused[i] << '"';  // no quotes or backslashes in them
    }
    std::printf("{\"lost_osts\":[%s],\"files_pending\":%llu,\"objects_pending\":%llu,"
                "\"bytes_pending\":%llu,\"objects_done\":%llu,\"bytes_done\":%llu,"
                "\"failures\":%llu,\"bytes_per_s\":%.0f,\"paused\":[%s]}\n",
                lost.str().c_str(), (unsigned long long)s.files_pending,
                (unsigned long long)s.objects_pending, (unsigned long long)s.bytes_pending,
                (unsigned long long)s.objects_done, (unsigned long long)s.bytes_done,
                (unsigned long long)s.failures, s.bytes_per_s, paused.str().c_str());
    return;
  }
  std::printf("lost OSTs: %s\n", s.lost_osts.empty() ? "none" : lost.str().c_str());
  for (const std::string& p : s.paused) std::printf("paused: %s\n", p.c_str());
  std::printf("pending: %llu file(s), %llu object(s), about %s\n",
              (unsigned long long)s.files_pending, (unsigned long long)s.objects_pending,
              Mib(static_cast<double>(s.bytes_pending)).c_str());
  std::printf("done: %llu object(s), %s, %llu failed attempt(s); rate %s/s\n",
              (unsigned long long)s.objects_done, Mib(static_cast<double>(s.bytes_done)).c_str(),
              (unsigned long long)s.failures, Mib(s.bytes_per_s).c_str());
  if (tty && s.objects_pending > 0) {
    const double total = static_cast<double>(s.bytes_done + s.bytes_pending);
    const double frac = total > 0 ? static_cast<double>(s.bytes_done) / total : 0;
    constexpr int kWidth = 40;
    const int fill = static_cast<int>(frac * kWidth);
    std::string bar(static_cast<size_t>(fill), '#');
    bar.append(static_cast<size_t>(kWidth - fill), '.');
    std::printf("[%s] %3.0f%%", bar.c_str(), frac * 100);
    if (s.bytes_per_s > 0) {
      const long eta = static_cast<long>(static_cast<double>(s.bytes_pending) / s.bytes_per_s);
      std::printf("  ETA %ldm%02lds", eta / 60, eta % 60);
    }
    std::printf("\n");
  }
}

}  // namespace

int RunOst(int argc, char** argv) {
  Args a;
  int rc = Parse(argc, argv, &a, kOstHelp);
  if (rc >= 0) return rc;
  if (a.operands.size() != 2 || a.operands[0] != "lost") {
    std::fputs(kOstHelp, stderr);
    return 2;
  }
  char* end = nullptr;
  errno = 0;
  const unsigned long index = std::strtoul(a.operands[1].c_str(), &end, 10);
  if (a.operands[1].empty() || *end != '\0' || errno != 0 || index > UINT32_MAX ||
      a.operands[1][0] == '-') {
    std::fprintf(stderr, "sfs ost lost: bad OST index '%s'\n", a.operands[1].c_str());
    return 2;
  }
  auto t = Target::Open(a.g, a.mount);
  if (!t.ok()) return Fail("ost lost", a.mount, t.status());
  auto files = (*t)->client().OstLost((*t)->cred(), static_cast<uint32_t>(index));
  if (!files.ok()) return Fail("ost lost", "OST " + a.operands[1], files.status());
  std::printf("OST %lu declared lost: %llu file(s) to rebuild\n", index,
              static_cast<unsigned long long>(*files));
  return 0;
}

int RunRebuild(int argc, char** argv) {
  Args a;
  int rc = Parse(argc, argv, &a, kRebuildHelp);
  if (rc >= 0) return rc;
  if (a.operands.size() != 1 || a.operands[0] != "status") {
    std::fputs(kRebuildHelp, stderr);
    return 2;
  }
  auto t = Target::Open(a.g, a.mount);
  if (!t.ok()) return Fail("rebuild status", a.mount, t.status());
  const bool tty = isatty(STDOUT_FILENO) != 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(10);
  for (;;) {
    auto s = (*t)->client().GetRebuildStatus();
    if (!s.ok()) return Fail("rebuild status", a.mount, s.status());
    if (!a.wait || s->objects_pending == 0) {
      Print(*s, a.g.json, tty);
      return 0;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      Print(*s, a.g.json, tty);
      std::fprintf(stderr, "sfs rebuild status: still %llu object(s) pending after 10 minutes\n",
                   static_cast<unsigned long long>(s->objects_pending));
      return 1;
    }
    if (tty && !a.g.json) Print(*s, false, true);
    std::this_thread::sleep_for(std::chrono::seconds(1));  // a display's refresh, not a sync
  }
}

}  // namespace sfs::tools
