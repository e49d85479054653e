// `sfs find`: walk the namespace (metadata only, no data reads) and print the
// paths whose type, size or layout match.
#include <getopt.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <optional>

#include "tools/sfs/commands.h"

namespace sfs::tools {
namespace {

constexpr const char* kHelp =
    "usage: sfs find PATH [--stripe-count N] [--stripe-size S] [--ost I] [--pool P]\n"
    "                     [--size [+-]N[KMG]] [--type f|d] [--mds HOST:PORT]\n"
    "\n"
    "Prints every path below PATH (PATH included) that matches all the given tests.\n"
    "Layout tests match regular files by their layout; --size +N is 'larger than N',\n"
    "-N 'smaller than N', N 'exactly N' bytes.\n"
    "\n"
    "examples:\n"
    "  sfs find /mnt/sfs --ost 2                 # files with a stripe on OST 2\n"
    "  sfs find /mnt/sfs/data --type f --stripe-count 1 --size +1G\n";

struct Filter {
  std::optional<int32_t> stripe_count;
  std::optional<uint64_t> stripe_size;
  std::optional<uint32_t> ost;
  std::optional<std::string> pool;
  std::optional<std::pair<int, uint64_t>> size;  // (-1 <, 0 ==, +1 >, bytes)
  char type = 0;
  bool NeedsLayout() const { return stripe_count || stripe_size || ost || pool; }
};

Result<bool> Matches(Target& t, const Filter& f, const client::Attr& a) {
  if (f.type == 'f' && !S_ISREG(a.mode)) return false;
  if (f.type == 'd' && !S_ISDIR(a.mode)) return false;
  if (f.size) {
    auto [cmp, n] = *f.size;
    if ((cmp < 0 && !(a.size < n)) || (cmp > 0 && !(a.size > n)) || (cmp == 0 && a.size != n)) return false;
  }
  if (!f.NeedsLayout()) return true;
  if (!S_ISREG(a.mode)) return false;
  SFS_ASSIGN_OR_RETURN(client::LayoutSpec l, t.client().GetLayout(t.cred(), a.ino));
  if (f.stripe_count && l.stripe_count != *f.stripe_count) return false;
  if (f.stripe_size && l.stripe_size != *f.stripe_size) return false;
  if (f.pool && l.pool != *f.pool) return false;
  if (f.ost) {
    bool on = false;
    for (const auto& o : l.objects) on = on || o.ost == *f.ost;
    if (!on) return false;
  }
  return true;
}

Status Walk(Target& t, const Filter& f, const std::string& path, const client::Attr& a) {
  SFS_ASSIGN_OR_RETURN(bool match, Matches(t, f, a));
  if (match) std::printf("%s\n", path.c_str());
  if (!S_ISDIR(a.mode)) return Status::Ok();
  std::string after;
  for (;;) {
    SFS_ASSIGN_OR_RETURN(client::DirPage page, t.client().Readdir(t.cred(), a.ino, after, 1024, true));
    for (const auto& e : page.entries) {
      if (!e.attr) continue;
      SFS_RETURN_IF_ERROR(Walk(t, f, path + (path.back() == '/' ? "" : "/") + e.name, *e.attr));
    }
    if (page.eof || page.entries.empty()) return Status::Ok();
    after = page.entries.back().name;
  }
}

bool ParseSizeTest(const char* arg, Filter* f) {
  int cmp = 0;
  if (*arg == '+') cmp = 1, ++arg;
  else if (*arg == '-') cmp = -1, ++arg;
  auto n = client::ParseSize(arg);
  if (!n.ok()) return false;
  f->size = std::make_pair(cmp, *n);
  return true;
}

}  // namespace

int RunFind(int argc, char** argv) {
  enum { kCount = 1000, kSize, kOst, kPool, kFsize, kType, kHelpOpt };
  static const option kLong[] = {
      {"stripe-count", required_argument, nullptr, kCount}, {"stripe-size", required_argument, nullptr, kSize},
      {"ost", required_argument, nullptr, kOst},            {"pool", required_argument, nullptr, kPool},
      {"size", required_argument, nullptr, kFsize},         {"type", required_argument, nullptr, kType},
      {"mds", required_argument, nullptr, 'M'},             {"help", no_argument, nullptr, kHelpOpt},
      {nullptr, 0, nullptr, 0}};
  GlobalOptions g;
  Filter f;
  optind = 1;
  int opt;
  bool bad = false;
  while ((opt = getopt_long_only(argc, argv, "", kLong, nullptr)) != -1) {
    switch (opt) {
      case kCount: f.stripe_count = std::atoi(optarg); break;
      case kSize: {
        auto n = client::ParseSize(optarg);
        bad |= !n.ok();
        if (n.ok()) f.stripe_size = *n;
        break;
      }
      case kOst: f.ost = static_cast<uint32_t>(std::atoi(optarg)); break;
      case kPool: f.pool = optarg; break;
      case kFsize: bad |= !ParseSizeTest(optarg, &f); break;
      case kType:
        f.type = optarg[0];
        bad |= (f.type != 'f' && f.type != 'd') || optarg[1] != '\0';
        break;
      case kHelpOpt: std::fputs(kHelp, stdout); return 0;
      default: bad |= !ParseGlobal(opt, optarg, &g);
    }
  }
  if (bad || optind + 1 != argc) {
    std::fputs(kHelp, stderr);
    return 2;
  }
  std::string path = argv[optind];
  auto t = Target::Open(g, path);
  if (!t.ok()) return Fail("find", path, t.status());
  auto a = (*t)->Stat(path);
  Status st = a.ok() ? Walk(**t, f, path, *a) : a.status();
  return st.ok() ? 0 : Fail("find", path, st);
}

}  // namespace sfs::tools
