// `sfs df` and `sfs servers`: space and state per OST, as `lfs df` shows it.
#include <getopt.h>

#include <chrono>
#include <cstdio>
#include <sstream>

#include "tools/sfs/commands.h"

namespace sfs::tools {
namespace {

constexpr const char* kDfHelp =
    "usage: sfs df [-h] [-i] [--json] [PATH]\n"
    "\n"
    "Space per OST (size, used, available, use%, state) with a filesystem_summary line;\n"
    "with -i, inodes of the MDS instead. Down OSTs are flagged 'DOWN'. PATH is any path\n"
    "on the mount (default: the current directory), or use --mds HOST:PORT.\n"
    "\n"
    "  -h, --human-readable   sizes as 1.5G instead of bytes\n"
    "  -i, --inodes           inode usage of the MDS\n"
    "      --json             {\"osts\":[{\"index\",\"uuid\",\"address\",\"up\",\"total\",\"used\",\"avail\"}],\n"
    "                         \"summary\":{\"total\",\"used\",\"avail\"},\"inodes\":{\"total\",\"free\"}}\n"
    "\n"
    "examples:\n"
    "  sfs df -h /mnt/sfs\n"
    "  sfs df --mds 10.0.0.1:7700 --json\n";

constexpr const char* kServersHelp =
    "usage: sfs servers [--json] [PATH]     (alias: sfs osts)\n"
    "\n"
    "Each OST: index, uuid, serving OSS address, state, seconds since its last heartbeat,\n"
    "and free space.\n"
    "\n"
    "examples:\n"
    "  sfs servers /mnt/sfs\n"
    "  sfs servers --mds 10.0.0.1:7700 --json\n";

std::string Size(uint64_t v, bool human) { return human ? HumanSize(v) : std::to_string(v); }

// As df(1): used / (used + available), rounded up (reserved blocks count as neither).
int Pct(uint64_t used, uint64_t avail) {
  uint64_t d = used + avail;
  return d == 0 ? 0 : static_cast<int>((used * 100 + d - 1) / d);
}

struct Args {
  GlobalOptions g;
  bool human = false;
  bool inodes = false;
  std::string path = ".";
};

int Parse(int argc, char** argv, Args* a, const char* help) {
  static const option kLong[] = {{"human-readable", no_argument, nullptr, 'H'}, {"inodes", no_argument, nullptr, 'i'},
                                 {"json", no_argument, nullptr, 'J'}, {"mds", required_argument, nullptr, 'M'},
                                 {"help", no_argument, nullptr, 1000}, {nullptr, 0, nullptr, 0}};
  optind = 1;
  int opt;
  while ((opt = getopt_long(argc, argv, "hi", kLong, nullptr)) != -1) {
    if (opt == 'h' || opt == 'H') a->human = true;
    else if (opt == 'i') a->inodes = true;
    else if (opt == 1000) { std::fputs(help, stdout); return 0; }
    else if (!ParseGlobal(opt, optarg, &a->g)) { std::fputs(help, stderr); return 2; }
  }
  if (optind < argc) a->path = argv[optind];
  if (!a->g.mds.empty() && optind >= argc) a->path = "/";
  return -1;
}

// Degraded state, when there is any: OSTs down and mirrored files whose stale
// copy waits for resync (the MDS's resync list).
void PrintRedundancy(const std::vector<client::OstStatus>& osts, const client::FsStat& fs) {
  size_t down = 0, lost = 0;
  for (const auto& o : osts) {
    down += o.up || o.lost ? 0 : 1;
    lost += o.lost ? 1 : 0;
  }
  if (down == 0 && lost == 0 && fs.degraded_files == 0) return;
  std::printf("degraded: %zu OST(s) down, %llu mirrored file(s) with a stale copy (resync pending)\n",
              down, static_cast<unsigned long long>(fs.degraded_files));
  if (lost > 0) {
    std::printf("rebuilding: %zu OST(s) lost; see 'sfs rebuild status'\n", lost);
  }
}

void PrintDfText(const Args& a, const std::vector<client::OstStatus>& osts, const client::FsStat& fs) {
  std::printf("%-28s %14s %14s %14s %5s %s\n", "UUID", a.human ? "size" : "bytes", "used", "available", "use%", "state");
  uint64_t total = 0, used = 0, avail = 0;
  for (const auto& o : osts) {
    uint64_t u = o.total_bytes - o.free_bytes;
    char name[64];
    std::snprintf(name, sizeof(name), "OST%04x", o.index);
    std::printf("%-28s %14s %14s %14s %4d%% %s\n", name, Size(o.total_bytes, a.human).c_str(),
                Size(u, a.human).c_str(), Size(o.avail_bytes, a.human).c_str(), Pct(u, o.avail_bytes),
                o.lost ? "LOST" : o.up ? "UP" : "DOWN");
    total += o.total_bytes;
    used += u;
    avail += o.avail_bytes;
  }
  std::printf("\n%-28s %14s %14s %14s %4d%%\n", "filesystem_summary:", Size(total, a.human).c_str(),
              Size(used, a.human).c_str(), Size(avail, a.human).c_str(), Pct(used, avail));
  PrintRedundancy(osts, fs);
}

void PrintDfInodes(const client::FsStat& fs) {
  uint64_t used = fs.total_inodes - fs.free_inodes;
  std::printf("%-28s %14s %14s %14s %5s\n", "UUID", "inodes", "iused", "ifree", "iuse%");
  std::printf("%-28s %14llu %14llu %14llu %4d%%\n", "MDT0000", static_cast<unsigned long long>(fs.total_inodes),
              static_cast<unsigned long long>(used), static_cast<unsigned long long>(fs.free_inodes),
              Pct(used, fs.free_inodes));
}

void PrintDfJson(const std::vector<client::OstStatus>& osts, const client::FsStat& fs) {
  std::ostringstream os;
  uint64_t total = 0, used = 0, avail = 0;
  os << "{\"osts\":[";
  for (size_t i = 0; i < osts.size(); ++i) {
    const auto& o = osts[i];
    uint64_t u = o.total_bytes - o.free_bytes;
    os << (i ? "," : "") << "{\"index\":" << o.index << ",\"uuid\":" << JsonString(o.uuid)
       << ",\"address\":" << JsonString(o.address) << ",\"up\":" << (o.up ? "true" : "false") << ",\"lost\":" << (o.lost ? "true" : "false")
       << ",\"total\":" << o.total_bytes << ",\"used\":" << u << ",\"avail\":" << o.avail_bytes << "}";
    total += o.total_bytes;
    used += u;
    avail += o.avail_bytes;
  }
  os << "],\"summary\":{\"total\":" << total << ",\"used\":" << used << ",\"avail\":" << avail
     << "},\"inodes\":{\"total\":" << fs.total_inodes << ",\"free\":" << fs.free_inodes
     << "},\"degraded_files\":" << fs.degraded_files << "}\n";
  std::fputs(os.str().c_str(), stdout);
}

}  // namespace

int RunDf(int argc, char** argv) {
  Args a;
  int rc = Parse(argc, argv, &a, kDfHelp);
  if (rc >= 0) return rc;
  auto t = Target::Open(a.g, a.path);
  if (!t.ok()) return Fail("df", a.path, t.status());
  auto osts = (*t)->client().ListOsts();
  if (!osts.ok()) return Fail("df", a.path, osts.status());
  auto fs = (*t)->client().StatFs();
  if (!fs.ok()) return Fail("df", a.path, fs.status());
  if (a.g.json) PrintDfJson(*osts, *fs);
  else if (a.inodes) PrintDfInodes(*fs);
  else PrintDfText(a, *osts, *fs);
  return 0;
}

int RunServers(int argc, char** argv) {
  Args a;
  int rc = Parse(argc, argv, &a, kServersHelp);
  if (rc >= 0) return rc;
  auto t = Target::Open(a.g, a.path);
  if (!t.ok()) return Fail("servers", a.path, t.status());
  auto osts = (*t)->client().ListOsts();
  if (!osts.ok()) return Fail("servers", a.path, osts.status());
  auto fs = (*t)->client().StatFs();
  if (!fs.ok()) return Fail("servers", a.path, fs.status());
  int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch()).count();
  std::ostringstream os;
  if (a.g.json) os << "{\"mds\":" << JsonString((*t)->mds()) << ",\"osts\":[";
  else os << "MDS " << (*t)->mds() << "\n" << "OST   UUID                              ADDRESS                STATE  HEARTBEAT  AVAIL      TRANSPORT\n";
  for (size_t i = 0; i < osts->size(); ++i) {
    const auto& o = (*osts)[i];
    double age = o.last_heartbeat_ms ? (now_ms - o.last_heartbeat_ms) / 1000.0 : -1;
    if (a.g.json) {
      os << (i ? "," : "") << "{\"index\":" << o.index << ",\"uuid\":" << JsonString(o.uuid)
         << ",\"address\":" << JsonString(o.address) << ",\"up\":" << (o.up ? "true" : "false") << ",\"lost\":" << (o.lost ? "true" : "false")
         << ",\"heartbeat_age_s\":" << age << ",\"avail\":" << o.avail_bytes << ",\"transport\":" << JsonString(o.transport) << "}";
    } else {
      char line[256];
      std::snprintf(line, sizeof(line), "%-5u %-33s %-22s %-6s %8.1fs  %-10s %s\n", o.index,
                    o.uuid.c_str(), o.address.c_str(), o.lost ? "LOST" : o.up ? "UP" : "DOWN", age,
                    HumanSize(o.avail_bytes).c_str(), o.transport.c_str());
      os << line;
    }
  }
  if (a.g.json) os << "],\"degraded_files\":" << fs->degraded_files << "}\n";
  std::fputs(os.str().c_str(), stdout);
  if (!a.g.json) PrintRedundancy(*osts, *fs);
  return 0;
}

}  // namespace sfs::tools
