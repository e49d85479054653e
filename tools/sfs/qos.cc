// `sfs qos`: per-job and per-tenant QoS on the OSSes (issue 17; docs/qos.md),
// shaped after Lustre's NRS TBF rules (`lctl set_param ost.OSS.ost_io.
// nrs_tbf_rule`), but kept by the MDS for the whole file system.
#include <getopt.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "tools/sfs/commands.h"

namespace sfs::tools {
namespace {

constexpr const char* kHelp =
    "usage: sfs qos set CLASS [--read-mibps N] [--write-mibps N] [--iops N]\n"
    "                         [--reserve-mibps N] [--reserve-iops N] [--weight W]\n"
    "       sfs qos show [CLASS] [--json]\n"
    "       sfs qos remove CLASS\n"
    "\n"
    "Quality of service on every OSS. CLASS is job:NAME (the SFS_JOBID of the\n"
    "processes), tenant:NAME (today every client is tenant 'default') or resync (the\n"
    "MDS's mirror resync traffic). A request belongs to its job's rule, else its\n"
    "tenant's; jobs without a rule share what is left fairly (weight 1).\n"
    "Rates are per OSS; 0 or absent = none. Limits (--read-mibps, --write-mibps,\n"
    "--iops) are never exceeded; a reservation (--reserve-*) is served ahead of\n"
    "everyone else while the class is below it; --weight (default 1) is the class's\n"
    "share of the rest. A set replaces the class's whole rule. Changing rules needs\n"
    "root; every OSS applies a change within one heartbeat (1 s).\n"
    "\n"
    "  -m, --mount PATH     any path on the mounted file system (default: the current\n"
    "                       directory)\n"
    "      --mds HOST:PORT  talk to this MDS instead of finding it through a mount\n"
    "      --json           (show) {\"rules\":[{\"class\",\"read_mibps\",...}]}\n"
    "\n"
    "examples:\n"
    "  sfs qos set job:ckpt --write-mibps 400 -m /mnt/sfs\n"
    "  sfs qos set tenant:default --reserve-iops 2000 --weight 2 -m /mnt/sfs\n"
    "  sfs qos set resync --read-mibps 100 --write-mibps 100 -m /mnt/sfs\n"
    "  sfs qos show -m /mnt/sfs\n"
    "  sfs qos remove job:ckpt -m /mnt/sfs\n";

struct Args {
  GlobalOptions g;
  std::string mount = ".";
  std::string op;
  std::vector<std::string> operands;
  client::QosRuleInfo rule;
};

bool ParseRate(const char* s, double* out) {
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s, &end);
  if (*s == '\0' || *end != '\0' || errno != 0 || !std::isfinite(v) || v < 0) return false;
  *out = v;
  return true;
}

// -1 when parsing succeeded, else the exit status.
int Parse(int argc, char** argv, Args* a) {
  enum { kRead = 1000, kWrite, kIops, kResMib, kResIops, kWeight };
  static const option kLong[] = {{"mount", required_argument, nullptr, 'm'},
                                 {"mds", required_argument, nullptr, 'M'},
                                 {"json", no_argument, nullptr, 'J'},
                                 {"help", no_argument, nullptr, 'h'},
                                 {"read-mibps", required_argument, nullptr, kRead},
                                 {"write-mibps", required_argument, nullptr, kWrite},
                                 {"iops", required_argument, nullptr, kIops},
                                 {"reserve-mibps", required_argument, nullptr, kResMib},
                                 {"reserve-iops", required_argument, nullptr, kResIops},
                                 {"weight", required_argument, nullptr, kWeight},
                                 {nullptr, 0, nullptr, 0}};
  optind = 1;
  int opt;
  bool rates = false;
  while ((opt = getopt_long(argc, argv, "m:h", kLong, nullptr)) != -1) {
    double* field = nullptr;
    switch (opt) {
      case 'm': a->mount = optarg; continue;
      case 'h': std::fputs(kHelp, stdout); return 0;
      case kRead: field = &a->rule.read_mibps; break;
      case kWrite: field = &a->rule.write_mibps; break;
      case kIops: field = &a->rule.iops; break;
      case kResMib: field = &a->rule.reserve_mibps; break;
      case kResIops: field = &a->rule.reserve_iops; break;
      case kWeight: field = &a->rule.weight; break;
      default:
        if (!ParseGlobal(opt, optarg, &a->g)) {
          std::fputs(kHelp, stderr);
          return 2;
        }
        continue;
    }
    if (!ParseRate(optarg, field) || (opt == kWeight && *field <= 0)) {
      std::fprintf(stderr, "sfs qos: bad value '%s' for --%s (a number %s)\n", optarg,
                   kLong[opt - kRead + 4].name, opt == kWeight ? "above 0" : ">= 0");
      return 2;
    }
    rates = true;
  }
  if (optind >= argc) {
    std::fputs(kHelp, stderr);
    return 2;
  }
  a->op = argv[optind];
  for (int i = optind + 1; i < argc; ++i) a->operands.push_back(argv[i]);
  if (!a->g.mds.empty() && a->mount == ".") a->mount = "/";
  if (a->op != "set" && a->op != "show" && a->op != "remove") {
    std::fprintf(stderr, "sfs qos: unknown operation '%s' (set, show, remove)\n", a->op.c_str());
    return 2;
  }
  size_t n = a->operands.size();
  if ((a->op == "show" && n > 1) || (a->op != "show" && n != 1)) {
    std::fputs(kHelp, stderr);
    return 2;
  }
  if (rates && a->op != "set") {
    std::fprintf(stderr, "sfs qos: rates go with 'set' only\n");
    return 2;
  }
  if (n == 1) a->rule.name = a->operands[0];
  return -1;
}

std::string Num(double v) {
  if (v == 0) return "-";
  std::ostringstream os;
  os << v;
  return os.str();
}

void PrintRules(const std::vector<client::QosRuleInfo>& rules, bool json) {
  std::ostringstream os;
  if (json) {
    os << "{\"rules\":[";
    for (size_t i = 0; i < rules.size(); ++i) {
      const auto& r = rules[i];
      os << (i ? "," : "") << "{\"class\":" << JsonString(r.name) << ",\"read_mibps\":" << r.read_mibps
         << ",\"write_mibps\":" << r.write_mibps << ",\"iops\":" << r.iops
         << ",\"reserve_mibps\":" << r.reserve_mibps << ",\"reserve_iops\":" << r.reserve_iops
         << ",\"weight\":" << r.weight << "}";
    }
    os << "]}\n";
  } else {
    char line[256];
    std::snprintf(line, sizeof(line), "%-32s %10s %10s %10s %12s %12s %7s\n", "CLASS", "READ_MiB/s",
                  "WRITE_MiB/s", "IOPS", "RESERVE_MiB/s", "RESERVE_IOPS", "WEIGHT");
    os << line;
    for (const auto& r : rules) {
      std::snprintf(line, sizeof(line), "%-32s %10s %10s %10s %12s %12s %7s\n", r.name.c_str(),
                    Num(r.read_mibps).c_str(), Num(r.write_mibps).c_str(), Num(r.iops).c_str(),
                    Num(r.reserve_mibps).c_str(), Num(r.reserve_iops).c_str(), Num(r.weight).c_str());
      os << line;
    }
  }
  std::fputs(os.str().c_str(), stdout);
}

Status RunOp(Target& t, const Args& a) {
  client::Client& c = t.client();
  if (a.op == "show") {
    SFS_ASSIGN_OR_RETURN(auto rules, c.ListQos(a.rule.name));
    PrintRules(rules, a.g.json);
    return Status::Ok();
  }
  if (a.op == "remove") return c.QosRemove(t.cred(), a.rule.name);
  return c.QosSet(t.cred(), a.rule);
}

}  // namespace

int RunQos(int argc, char** argv) {
  Args a;
  int rc = Parse(argc, argv, &a);
  if (rc >= 0) return rc;
  std::string cmd = "qos " + a.op;
  auto t = Target::Open(a.g, a.mount);
  if (!t.ok()) return Fail(cmd, a.mount, t.status());
  Status st = RunOp(**t, a);
  return st.ok() ? 0 : Fail(cmd, a.rule.name.empty() ? a.mount : a.rule.name, st);
}

}  // namespace sfs::tools
