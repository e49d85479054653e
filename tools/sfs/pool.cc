// `sfs pool`: named OST sets kept by the MDS (Lustre's lctl pool_new,
// pool_add, pool_remove, pool_list and pool_destroy). Files whose layout
// names a pool (`sfs setstripe -p`) get stripes only on its OSTs.
#include <getopt.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "tools/sfs/commands.h"

namespace sfs::tools {
namespace {

constexpr const char* kHelp =
    "usage: sfs pool create NAME\n"
    "       sfs pool add NAME OST_INDEX...\n"
    "       sfs pool remove NAME OST_INDEX...\n"
    "       sfs pool list [NAME] [--json]\n"
    "       sfs pool destroy NAME\n"
    "\n"
    "OST pools: named sets of OSTs that layouts may name. A directory or file set with\n"
    "'sfs setstripe -p NAME' places its stripes only on the pool's OSTs. Changing pools\n"
    "needs root. A pool must be empty to be destroyed (remove its OSTs first). NAME is\n"
    "1-64 letters, digits, '_', '-' or '.'; an OST is its index (3) or name (OST0003).\n"
    "\n"
    "  -m, --mount PATH     any path on the mounted file system (default: the current\n"
    "                       directory)\n"
    "      --mds HOST:PORT  talk to this MDS instead of finding it through a mount\n"
    "      --json           (list) {\"pools\":[{\"name\",\"osts\":[index...]}]}\n"
    "\n"
    "examples:\n"
    "  sfs pool create ssd -m /mnt/sfs\n"
    "  sfs pool add ssd 0 1 -m /mnt/sfs\n"
    "  sfs setstripe -p ssd -c 2 /mnt/sfs/scratch\n"
    "  sfs pool list --json -m /mnt/sfs\n"
    "  sfs pool remove ssd OST0001 -m /mnt/sfs && sfs pool remove ssd 0 -m /mnt/sfs\n"
    "  sfs pool destroy ssd -m /mnt/sfs\n";

struct Args {
  GlobalOptions g;
  std::string mount = ".";
  std::string op;
  std::vector<std::string> operands;
};

// "3" or "OST0003" (hex, as df names OSTs).
bool ParseOst(const std::string& s, uint32_t* out) {
  const char* digits = s.c_str();
  int base = 10;
  if (s.size() > 3 && strncasecmp(digits, "OST", 3) == 0) digits += 3, base = 16;
  char* end = nullptr;
  errno = 0;
  unsigned long v = std::strtoul(digits, &end, base);
  if (*digits == '\0' || *end != '\0' || errno != 0 || v > UINT32_MAX || *digits == '-') return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

// -1 when parsing succeeded, else the exit status.
int Parse(int argc, char** argv, Args* a) {
  static const option kLong[] = {{"mount", required_argument, nullptr, 'm'},
                                 {"mds", required_argument, nullptr, 'M'},
                                 {"json", no_argument, nullptr, 'J'},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  optind = 1;
  int opt;
  while ((opt = getopt_long(argc, argv, "m:h", kLong, nullptr)) != -1) {
    if (opt == 'm') a->mount = optarg;
    else if (opt == 'h') { std::fputs(kHelp, stdout); return 0; }
    else if (!ParseGlobal(opt, optarg, &a->g)) { std::fputs(kHelp, stderr); return 2; }
  }
  if (optind >= argc) { std::fputs(kHelp, stderr); return 2; }
  a->op = argv[optind];
  for (int i = optind + 1; i < argc; ++i) a->operands.push_back(argv[i]);
  if (!a->g.mds.empty() && a->mount == ".") a->mount = "/";
  bool list = a->op == "list";
  bool members = a->op == "add" || a->op == "remove";
  bool one = a->op == "create" || a->op == "destroy";
  if (!list && !members && !one) {
    std::fprintf(stderr, "sfs pool: unknown operation '%s' (create, add, remove, list, destroy)\n",
                 a->op.c_str());
    return 2;
  }
  size_t n = a->operands.size();
  if ((list && n > 1) || (one && n != 1) || (members && n < 2)) {
    std::fputs(kHelp, stderr);
    return 2;
  }
  return -1;
}

void PrintList(const std::vector<client::PoolInfo>& pools, bool json) {
  std::ostringstream os;
  if (json) os << "{\"pools\":[";
  else os << "POOL                             OSTS\n";
  for (size_t i = 0; i < pools.size(); ++i) {
    const auto& p = pools[i];
    std::ostringstream list;
    for (size_t j = 0; j < p.osts.size(); ++j) list << (j ? (json ? "," : " ") : "") << p.osts[j];
    if (json) {
      os << (i ? "," : "") << "{\"name\":" << JsonString(p.name) << ",\"osts\":[" << list.str() << "]}";
    } else {
      char line[96];
      std::snprintf(line, sizeof(line), "%-32s ", p.name.c_str());
      os << line << (p.osts.empty() ? "-" : list.str()) << "\n";
    }
  }
  if (json) os << "]}\n";
  std::fputs(os.str().c_str(), stdout);
}

Status RunOp(Target& t, const Args& a) {
  client::Client& c = t.client();
  const std::string& name = a.operands.empty() ? std::string() : a.operands[0];
  if (a.op == "list") {
    SFS_ASSIGN_OR_RETURN(auto pools, c.ListPools(name));
    PrintList(pools, a.g.json);
    return Status::Ok();
  }
  if (a.op == "create") return c.PoolCreate(t.cred(), name);
  if (a.op == "destroy") return c.PoolDestroy(t.cred(), name);
  std::vector<uint32_t> osts;
  for (size_t i = 1; i < a.operands.size(); ++i) {
    uint32_t ost;
    if (!ParseOst(a.operands[i], &ost)) {
      return Status(EINVAL, "bad OST index '" + a.operands[i] + "'");
    }
    osts.push_back(ost);
  }
  return a.op == "add" ? c.PoolAdd(t.cred(), name, osts) : c.PoolRemove(t.cred(), name, osts);
}

}  // namespace

int RunPool(int argc, char** argv) {
  Args a;
  int rc = Parse(argc, argv, &a);
  if (rc >= 0) return rc;
  std::string cmd = "pool " + a.op;
  auto t = Target::Open(a.g, a.mount);
  if (!t.ok()) return Fail(cmd, a.mount, t.status());
  Status st = RunOp(**t, a);
  std::string what = a.operands.empty() ? a.mount : a.operands[0];
  return st.ok() ? 0 : Fail(cmd, what, st);
}

}  // namespace sfs::tools
