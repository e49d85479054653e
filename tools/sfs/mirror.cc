// `sfs mirror resync PATH...`: copies good copies of mirrored files over
// their stale ones (docs/redundancy.md), as Lustre's `lfs mirror resync`.
#include <getopt.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <sstream>

#include "tools/sfs/commands.h"

namespace sfs::tools {
namespace {

constexpr const char* kHelp =
    "usage: sfs mirror resync [-v] PATH...\n"
    "\n"
    "For each mirrored file (sfs setstripe -N), copies a good copy of every stripe over\n"
    "its stale copies (those that missed writes while their OSS was away), then marks\n"
    "them ok. The copying is done by the stale copies' OSSes, pulling from the good\n"
    "copies' OSSes, under the file's whole mirror-range lock: writers of every mount wait\n"
    "meanwhile, also one that keeps the file open, and write to the resynced copies after.\n"
    "(With an MDS without range locks it is refused while the file is open for write.)\n"
    "\n"
    "  -v, --verbose      print how many copies each file had resynced\n"
    "      --mds HOST:PORT\n"
    "\n"
    "examples:\n"
    "  sfs mirror resync /mnt/sfs/ckpt/model.pt\n"
    "  sfs find /mnt/sfs/ckpt --type f | xargs sfs mirror resync\n";

Status ResyncOne(const GlobalOptions& g, const std::string& path, bool verbose) {
  SFS_ASSIGN_OR_RETURN(auto t, Target::Open(g, path));
  SFS_ASSIGN_OR_RETURN(client::Attr attr, t->Stat(path));
  if (!S_ISREG(attr.mode)) return Status(EINVAL, "not a regular file");
  SFS_ASSIGN_OR_RETURN(client::LayoutSpec before, t->client().GetLayout(t->cred(), attr.ino));
  size_t stale = 0;
  for (const auto& o : before.objects) stale += o.stale ? 1 : 0;
  SFS_ASSIGN_OR_RETURN(client::LayoutSpec after, t->client().ResyncMirrors(t->cred(), attr.ino));
  (void)after;
  if (verbose) std::printf("%s: %zu stale cop%s resynced\n", path.c_str(), stale, stale == 1 ? "y" : "ies");
  return Status::Ok();
}

}  // namespace

int RunMirror(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    std::fputs(kHelp, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (std::strcmp(argv[1], "resync") != 0) {
    std::fprintf(stderr, "sfs mirror: unknown subcommand '%s'\n", argv[1]);
    std::fputs(kHelp, stderr);
    return 2;
  }
  static const option kLong[] = {{"verbose", no_argument, nullptr, 'v'},
                                 {"mds", required_argument, nullptr, 'M'},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  GlobalOptions g;
  bool verbose = false;
  optind = 1;
  int opt;
  while ((opt = getopt_long(argc - 1, argv + 1, "vh", kLong, nullptr)) != -1) {
    if (opt == 'v') {
      verbose = true;
    } else if (opt == 'h') {
      std::fputs(kHelp, stdout);
      return 0;
    } else if (!ParseGlobal(opt, optarg, &g)) {
      std::fputs(kHelp, stderr);
      return 2;
    }
  }
  if (optind >= argc - 1) {
    std::fputs(kHelp, stderr);
    return 2;
  }
  int rc = 0;
  for (int i = optind + 1; i < argc; ++i) {
    Status st = ResyncOne(g, argv[i], verbose);
    if (!st.ok()) rc = Fail("mirror resync", argv[i], st);
  }
  return rc;
}

}  // namespace sfs::tools
