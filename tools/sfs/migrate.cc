// `sfs migrate`: restripe files that hold data (Lustre's lfs migrate). The
// work is libsfs's Client::Migrate: new objects, a parallel copy, an atomic
// layout swap at the MDS; this file only parses arguments and reports.
#include <getopt.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "tools/sfs/commands.h"

namespace sfs::tools {
namespace {

constexpr const char* kHelp =
    "usage: sfs migrate [-c COUNT | --ec K+M] [-S SIZE] [-i START_OST] [-p POOL] [-v] [--json]\n"
    "                   FILE...\n"
    "\n"
    "Restripes regular files that may hold data: new objects are allocated, the data is\n"
    "copied to them (holes stay holes), and the layout is switched atomically; the old\n"
    "objects are freed once no reader that opened the file before the switch still has\n"
    "it open. The file stays readable throughout. Options not given keep the file's\n"
    "current values. A file open for write cannot be migrated; a file written during\n"
    "the copy is left as it was (error 'written during migration'; run again).\n"
    "\n"
    "  -c, --stripe-count COUNT   OSTs to stripe over; -1 = all OSTs up\n"
    "  -S, --stripe-size SIZE     bytes per stripe, K/M/G suffixes, a multiple of 64K\n"
    "  -i, --stripe-index I       OST of the first stripe (-1 = allocator's choice)\n"
    "  -p, --pool POOL            place stripes only on the OSTs of POOL\n"
    "      --ec K+M               erasure-code it: K data + M parity chunks of SIZE per row\n"
    "                             over K+M OSTs (see sfs setstripe); -c N makes it plain\n"
    "  -v, --verbose              print each file's new layout\n"
    "      --json                 one line per file: {\"path\",\"ino\",\"stripe_count\",\n"
    "                             \"stripe_size\",\"pool\",\"objects\":[{\"ost\",\"oid\"}]}\n"
    "      --mds HOST:PORT        FILE is inside the file system served by this MDS\n"
    "\n"
    "examples:\n"
    "  sfs migrate -c 4 /mnt/sfs/ckpt/model.pt          # spread over 4 OSTs\n"
    "  sfs migrate -c 2 -S 4M -p ssd /mnt/sfs/hot.db    # onto pool ssd, 4 MiB stripes\n"
    "  sfs find /mnt/sfs --type f --stripe-count 1 --size +1G | xargs sfs migrate -c -1\n";

struct Args {
  GlobalOptions g;
  client::LayoutSpec spec;
  bool verbose = false;
  std::vector<std::string> paths;
};

int Parse(int argc, char** argv, Args* a) {
  static const option kLong[] = {
      {"stripe-count", required_argument, nullptr, 'c'}, {"stripe-size", required_argument, nullptr, 'S'},
      {"stripe-index", required_argument, nullptr, 'i'}, {"pool", required_argument, nullptr, 'p'},
      {"verbose", no_argument, nullptr, 'v'},            {"json", no_argument, nullptr, 'J'},
      {"mds", required_argument, nullptr, 'M'},          {"help", no_argument, nullptr, 'h'},
      {"ec", required_argument, nullptr, 'E'},
      {nullptr, 0, nullptr, 0}};
  optind = 1;
  int opt;
  while ((opt = getopt_long(argc, argv, "c:S:i:p:vh", kLong, nullptr)) != -1) {
    char* end = nullptr;
    switch (opt) {
      case 'c':
        a->spec.stripe_count = static_cast<int32_t>(std::strtol(optarg, &end, 10));
        if (*end != '\0' || a->spec.stripe_count == 0 || a->spec.stripe_count < -1) {
          std::fprintf(stderr, "sfs migrate: bad stripe count '%s' (1.. or -1 for all OSTs)\n", optarg);
          return 2;
        }
        break;
      case 'S': {
        auto size = client::ParseSize(optarg);
        if (!size.ok() || *size == 0 || *size % 65536 != 0) {
          std::fprintf(stderr, "sfs migrate: stripe size '%s' is not a positive multiple of 64K\n", optarg);
          return 2;
        }
        a->spec.stripe_size = *size;
        break;
      }
      case 'i':
        a->spec.start_ost = static_cast<int32_t>(std::strtol(optarg, &end, 10));
        if (*end != '\0' || a->spec.start_ost < -1) {
          std::fprintf(stderr, "sfs migrate: bad OST index '%s'\n", optarg);
          return 2;
        }
        break;
      case 'p': a->spec.pool = optarg; break;
      case 'E':
        if (!ParseEc("migrate", optarg, &a->spec)) return 2;
        break;
      case 'v': a->verbose = true; break;
      case 'h': std::fputs(kHelp, stdout); return 0;
      default:
        if (!ParseGlobal(opt, optarg, &a->g)) {
          std::fputs(kHelp, stderr);
          return 2;
        }
    }
  }
  if (a->spec.IsEc() && a->spec.stripe_count != 0) {
    std::fprintf(stderr, "sfs migrate: --ec K+M stripes over K+M OSTs; drop -c\n");
    return 2;
  }
  for (int i = optind; i < argc; ++i) a->paths.push_back(argv[i]);
  if (a->paths.empty()) {
    std::fputs(kHelp, stderr);
    return 2;
  }
  return -1;
}

void Report(const Args& a, const std::string& path, uint64_t ino, const client::LayoutSpec& l) {
  std::ostringstream os;
  if (a.g.json) {
    os << "{\"path\":" << JsonString(path) << ",\"ino\":" << ino << ",\"stripe_count\":"
       << l.stripe_count << ",\"stripe_size\":" << l.stripe_size << ",\"pool\":" << JsonString(l.pool)
       << ",\"objects\":[";
    for (size_t i = 0; i < l.objects.size(); ++i) {
      os << (i ? "," : "") << "{\"ost\":" << l.objects[i].ost << ",\"oid\":" << l.objects[i].oid << "}";
    }
    os << "]}\n";
  } else if (a.verbose) {
    os << path << ": " << l.stripe_count << " stripes of " << HumanSize(l.stripe_size)
       << (l.pool.empty() ? "" : " in pool " + l.pool) << ", OSTs";
    for (const auto& o : l.objects) os << " " << o.ost;
    os << "\n";
  }
  std::fputs(os.str().c_str(), stdout);
}

Status MigrateOne(const Args& a, const std::string& path) {
  SFS_ASSIGN_OR_RETURN(auto t, Target::Open(a.g, path));
  SFS_ASSIGN_OR_RETURN(client::Attr attr, t->Stat(path));
  if (!S_ISREG(attr.mode)) return Status(EINVAL, "not a regular file");
  SFS_ASSIGN_OR_RETURN(client::LayoutSpec l, t->client().Migrate(t->cred(), attr.ino, a.spec));
  Report(a, path, attr.ino, l);
  return Status::Ok();
}

}  // namespace

int RunMigrate(int argc, char** argv) {
  Args a;
  int rc = Parse(argc, argv, &a);
  if (rc >= 0) return rc;
  for (const auto& path : a.paths) {
    Status st = MigrateOne(a, path);
    if (!st.ok()) rc = Fail("migrate", path, st);
  }
  return rc < 0 ? 0 : rc;
}

}  // namespace sfs::tools
