// `sfs key generate FILE` and `sfs key check FILE`: the cluster key that the
// MDS signs capabilities with and every OSS checks them with
// (docs/security.md). The file is 64 hex digits, mode 0600, written once.
#include <cstdio>
#include <cstring>
#include <string>

#include "common/auth/capability.h"
#include "tools/sfs/commands.h"

namespace sfs::tools {
namespace {

constexpr const char* kHelp =
    "usage: sfs key generate FILE\n"
    "       sfs key check FILE\n"
    "       sfs key status|rotate [-m MOUNT | --mds HOST:PORT] [--json]\n"
    "\n"
    "generate writes a new cluster key (32 random bytes from OpenSSL, as 64 hex digits)\n"
    "to FILE, created with mode 0600; it never overwrites a file. check reads FILE as the\n"
    "daemons do (32 raw bytes or 64 hex digits, readable by its owner only). Give the same\n"
    "file to sfs-mds and every sfs-oss with --cluster-key (docs/security.md).\n"
    "status and rotate show and rotate the MDS's capability signing keys (sfs key rotate\n"
    "--help).\n"
    "\n"
    "examples:\n"
    "  sfs key generate /etc/stripefs/cluster.key\n"
    "  sfs key check /etc/stripefs/cluster.key\n"
    "  sfs key rotate --mds mds1:7700\n";

}  // namespace

int RunKey(int argc, char** argv) {
  if (argc >= 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  if (argc >= 2 && (std::strcmp(argv[1], "status") == 0 || std::strcmp(argv[1], "rotate") == 0)) {
    return RunKeyAdmin(argc - 1, argv + 1);
  }
  if (argc != 3 || (std::strcmp(argv[1], "generate") != 0 && std::strcmp(argv[1], "check") != 0)) {
    std::fputs(kHelp, stderr);
    return 2;
  }
  const std::string verb = argv[1], path = argv[2];
  Status st = verb == "generate" ? auth::GenerateKey(path) : auth::LoadKey(path).status();
  if (!st.ok()) {
    // The messages name the file already.
    std::fprintf(stderr, "sfs key %s: %s\n", verb.c_str(),
                 st.message().empty() ? (path + ": " + std::strerror(st.code())).c_str()
                                      : st.message().c_str());
    return 1;
  }
  if (verb == "check") std::printf("%s: a valid cluster key, readable by its owner only\n", path.c_str());
  return 0;
}

}  // namespace sfs::tools
