// `sfs setstripe`: set a directory's default layout, create an empty file
// with a layout, or (-d) remove a directory's default.
#include <fcntl.h>
#include <getopt.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <set>

#include "tools/sfs/commands.h"

namespace sfs::tools {
namespace {

constexpr const char* kHelp =
    "usage: sfs setstripe [-c COUNT] [-S SIZE] [-i START_OST] [-p POOL] [-N COPIES | --ec K+M] PATH\n"
    "       sfs setstripe -d DIR\n"
    "\n"
    "On a directory: set the default layout its new files and subdirectories inherit.\n"
    "On a path that does not exist: create an empty file with that layout.\n"
    "On an empty file: replace its layout. A file with data cannot be restriped here.\n"
    "\n"
    "  -c, --stripe-count COUNT   OSTs to stripe over; -1 = all OSTs\n"
    "  -S, --stripe-size SIZE     bytes per stripe, K/M/G suffixes, a multiple of 64K\n"
    "  -i, --stripe-index I       OST of the first stripe (-1 = allocator's choice)\n"
    "  -p, --pool POOL            place stripes only on the OSTs of POOL\n"
    "  -N, --mirror-count N       keep N copies (1, 2 or 3) of every stripe, each on\n"
    "                             its own OST: a lost OSS loses nothing (not on a file\n"
    "                             with data)\n"
    "      --ec K+M               erasure-code: rows of K data chunks of SIZE bytes plus\n"
    "                             M Reed-Solomon parity chunks over K+M OSTs (stripe count\n"
    "                             K+M); any M OSSs may be lost. Small chunks (-S 64K..256K)\n"
    "                             let 1 MiB writes cover whole rows (no read-back)\n"
    "  -d, --delete               remove DIR's default layout (inherit the parent's again)\n"
    "      --mds HOST:PORT        PATH is inside the file system served by this MDS\n"
    "\n"
    "examples:\n"
    "  sfs setstripe -c 4 -S 1M /mnt/sfs/checkpoints     # new files 4 wide, 1 MiB stripes\n"
    "  sfs setstripe -c -1 /mnt/sfs/datasets/big.bin     # new empty file over all OSTs\n"
    "  sfs setstripe -N 2 -c 2 /mnt/sfs/ckpt             # new files mirrored twice\n"
    "  sfs setstripe --ec 4+2 -S 128K /mnt/sfs/ckpt      # new files erasure-coded 4+2\n"
    "  sfs setstripe -d /mnt/sfs/checkpoints             # back to the inherited default\n";

struct Args {
  GlobalOptions g;
  client::LayoutSpec spec;
  bool remove = false;
  bool any = false;
  std::string path;
};

int ParseArgs(int argc, char** argv, Args* a) {
  static const option kLong[] = {
      {"stripe-count", required_argument, nullptr, 'c'}, {"stripe-size", required_argument, nullptr, 'S'},
      {"stripe-index", required_argument, nullptr, 'i'}, {"pool", required_argument, nullptr, 'p'},
      {"delete", no_argument, nullptr, 'd'},             {"mds", required_argument, nullptr, 'M'},
      {"mirror-count", required_argument, nullptr, 'N'}, {"ec", required_argument, nullptr, 'E'},
      {"help", no_argument, nullptr, 'h'},               {nullptr, 0, nullptr, 0}};
  optind = 1;
  int opt;
  while ((opt = getopt_long(argc, argv, "c:S:i:p:N:dh", kLong, nullptr)) != -1) {
    char* end = nullptr;
    switch (opt) {
      case 'c':
        a->spec.stripe_count = static_cast<int32_t>(std::strtol(optarg, &end, 10));
        if (*end != '\0' || a->spec.stripe_count == 0 || a->spec.stripe_count < -1) {
          std::fprintf(stderr, "sfs setstripe: bad stripe count '%s' (1.. or -1 for all OSTs)\n", optarg);
          return 2;
        }
        a->any = true;
        break;
      case 'S': {
        auto size = client::ParseSize(optarg);
        if (!size.ok() || *size == 0 || *size % 65536 != 0) {
          std::fprintf(stderr, "sfs setstripe: stripe size '%s' is not a positive multiple of 64K\n", optarg);
          return 2;
        }
        a->spec.stripe_size = *size;
        a->any = true;
        break;
      }
      case 'i':
        a->spec.start_ost = static_cast<int32_t>(std::strtol(optarg, &end, 10));
        if (*end != '\0' || a->spec.start_ost < -1) {
          std::fprintf(stderr, "sfs setstripe: bad OST index '%s'\n", optarg);
          return 2;
        }
        a->any = true;
        break;
      case 'p': a->spec.pool = optarg; a->any = true; break;
      case 'N': {
        long n = std::strtol(optarg, &end, 10);
        if (*end != '\0' || n < 1 || n > 3) {
          std::fprintf(stderr, "sfs setstripe: bad mirror count '%s' (1, 2 or 3)\n", optarg);
          return 2;
        }
        a->spec.mirror_count = static_cast<uint32_t>(n);
        a->any = true;
        break;
      }
      case 'E':
        if (!ParseEc("setstripe", optarg, &a->spec)) return 2;
        a->any = true;
        break;
      case 'd': a->remove = true; break;
      case 'h': std::fputs(kHelp, stdout); return 0;
      default:
        if (!ParseGlobal(opt, optarg, &a->g)) {
          std::fputs(kHelp, stderr);
          return 2;
        }
    }
  }
  if (a->spec.IsEc() && a->spec.mirror_count != 0) {
    std::fprintf(stderr,
                 "sfs setstripe: --ec and -N exclude each other (erasure-coded or mirrored)\n");
    return 2;
  }
  const int32_t width = static_cast<int32_t>(a->spec.ec_data + a->spec.ec_parity);
  if (a->spec.IsEc() && a->spec.stripe_count != 0 && a->spec.stripe_count != width) {
    std::fprintf(stderr, "sfs setstripe: --ec %u+%u stripes over K+M = %d OSTs; drop -c\n",
                 a->spec.ec_data, a->spec.ec_parity, width);
    return 2;
  }
  if (optind + 1 != argc || (a->remove && a->any) || (!a->remove && !a->any)) {
    std::fputs(kHelp, stderr);
    return 2;
  }
  a->path = argv[optind];
  return -1;
}

// A new file's explicit layout is clamped by the MDS; setstripe refuses instead.
Status CheckAgainstPool(Target& t, const client::LayoutSpec& spec,
                        const std::vector<client::OstStatus>& osts) {
  auto pools = t.client().ListPools(spec.pool);
  if (!pools.ok() && pools.status().code() == ENOENT) {
    return Status(EINVAL, "unknown pool '" + spec.pool + "'");
  }
  if (!pools.ok()) return pools.status();
  int32_t up = 0;
  for (uint32_t m : pools->front().osts) up += m < osts.size() && osts[m].up ? 1 : 0;
  if (up == 0) return Status(EINVAL, "pool '" + spec.pool + "' has no OST up");
  if (spec.stripe_count > up) {
    return Status(EINVAL, "stripe count " + std::to_string(spec.stripe_count) + " exceeds the " +
                              std::to_string(up) + " OSTs up in pool '" + spec.pool + "'");
  }
  const int32_t width = static_cast<int32_t>(spec.ec_data + spec.ec_parity);
  if (spec.IsEc() && width > up) {
    return Status(EINVAL, "EC " + std::to_string(spec.ec_data) + "+" +
                              std::to_string(spec.ec_parity) + " needs " + std::to_string(width) +
                              " OSTs, pool '" + spec.pool + "' has " + std::to_string(up) + " up");
  }
  if (static_cast<int32_t>(spec.mirror_count) > up) {
    return Status(EINVAL, "mirror count " + std::to_string(spec.mirror_count) + " exceeds the " +
                              std::to_string(up) + " OSTs up in pool '" + spec.pool +
                              "' (each copy needs its own OST)");
  }
  return Status::Ok();
}

// Checks the request against the OSTs the file system has.
Status CheckAgainstOsts(Target& t, const client::LayoutSpec& spec) {
  SFS_ASSIGN_OR_RETURN(auto osts, t.client().ListOsts());
  if (spec.stripe_count > static_cast<int32_t>(osts.size())) {
    return Status(EINVAL, "stripe count " + std::to_string(spec.stripe_count) + " exceeds the " +
                              std::to_string(osts.size()) + " OSTs of the file system");
  }
  const size_t width = spec.ec_data + spec.ec_parity;
  if (spec.IsEc() && width > osts.size()) {
    return Status(EINVAL, "EC " + std::to_string(spec.ec_data) + "+" +
                              std::to_string(spec.ec_parity) + " needs " + std::to_string(width) +
                              " OSTs, the file system has " + std::to_string(osts.size()));
  }
  if (spec.mirror_count > osts.size()) {
    return Status(EINVAL, "mirror count " + std::to_string(spec.mirror_count) + " exceeds the " +
                              std::to_string(osts.size()) +
                              " OSTs of the file system (each copy needs its own OST)");
  }
  // Copies and chunks also need an OSS each (one OSS may serve several OSTs).
  std::set<std::string> servers;
  for (const auto& o : osts) {
    if (!o.lost) servers.insert(o.address);
  }
  if (spec.IsEc() && width > servers.size()) {
    return Status(EINVAL, "EC " + std::to_string(spec.ec_data) + "+" +
                              std::to_string(spec.ec_parity) + " needs " + std::to_string(width) +
                              " OSSes (one chunk each), the file system has " +
                              std::to_string(servers.size()));
  }
  if (spec.mirror_count > servers.size()) {
    return Status(EINVAL, "mirror count " + std::to_string(spec.mirror_count) + " exceeds the " +
                              std::to_string(servers.size()) +
                              " OSSes of the file system (each copy needs its own OSS)");
  }
  if (spec.start_ost >= static_cast<int32_t>(osts.size())) {
    return Status(EINVAL, "OST index " + std::to_string(spec.start_ost) + " does not exist");
  }
  return spec.pool.empty() ? Status::Ok() : CheckAgainstPool(t, spec, osts);
}

Status CreateWithLayout(Target& t, const std::string& path, const client::LayoutSpec& spec) {
  uint64_t parent;
  std::string name;
  SFS_RETURN_IF_ERROR(t.SplitParent(path, &parent, &name));
  mode_t mask = umask(022);
  umask(mask);
  client::Attr attr;
  SFS_ASSIGN_OR_RETURN(auto f, t.client().Create(t.cred(), parent, name, 0666 & ~mask,
                                                 O_CREAT | O_EXCL | O_WRONLY, &attr, &spec));
  return t.client().Close(f);
}

// An EC layout the file system cannot hold (EINVAL: too few OSTs, a file
// with data) is bad input: exit 2, as a usage error. Other failures exit 1.
int BadLayout(const Args& a, const Status& st) {
  const int rc = Fail("setstripe", a.path, st);
  return a.spec.IsEc() && st.code() == EINVAL ? 2 : rc;
}

}  // namespace

int RunSetstripe(int argc, char** argv) {
  Args a;
  int rc = ParseArgs(argc, argv, &a);
  if (rc >= 0) return rc;
  auto t = Target::Open(a.g, a.path);
  if (!t.ok()) return Fail("setstripe", a.path, t.status());
  Target& target = **t;
  Status st = a.remove ? Status::Ok() : CheckAgainstOsts(target, a.spec);
  if (!st.ok()) return BadLayout(a, st);
  auto attr = target.Stat(a.path);
  if (!attr.ok() && attr.status().code() != ENOENT) return Fail("setstripe", a.path, attr.status());
  if (!attr.ok()) {
    if (a.remove) return Fail("setstripe", a.path, attr.status());
    st = CreateWithLayout(target, a.path, a.spec);
  } else if (S_ISDIR(attr->mode)) {
    st = target.client().SetLayout(target.cred(), attr->ino, a.spec, a.remove);
  } else if (a.remove) {
    st = Status(ENOTDIR, "-d applies to directories only");
  } else if (!S_ISREG(attr->mode)) {
    st = Status(EINVAL, "not a regular file or directory");
  } else if (attr->size > 0 && a.spec.IsEc()) {
    st = Status(EINVAL, "file has data; making it erasure-coded needs 'sfs migrate'");
  } else if (attr->size > 0 && a.spec.mirror_count != 0) {
    st = Status(EINVAL, "file has data; cannot change its mirror count");
  } else if (attr->size > 0) {
    st = Status(EBUSY, "file has data; restriping a file with data needs 'sfs migrate'");
  } else {
    st = target.client().SetLayout(target.cred(), attr->ino, a.spec, false);
  }
  if (!st.ok() && a.spec.IsEc()) return BadLayout(a, st);
  return st.ok() ? 0 : Fail("setstripe", a.path, st);
}

}  // namespace sfs::tools
