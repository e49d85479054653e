// `sfs`: the StripeFS administration tool, shaped after Lustre's `lfs`.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/log.h"
#include "tools/sfs/commands.h"

namespace {

constexpr const char* kUsage =
    "usage: sfs COMMAND [options] ...\n"
    "\n"
    "Striping policy, usage and health of a StripeFS file system. PATH arguments are\n"
    "paths on a mounted StripeFS, or with --mds HOST:PORT paths inside the file system.\n"
    "\n"
    "commands:\n"
    "  setstripe [-c COUNT] [-S SIZE] [-i START_OST] [-p POOL] [-N COPIES] PATH  set a layout\n"
    "  setstripe -d DIR                                               remove a directory default\n"
    "  getstripe [-v] [-d] [-r] [--json] PATH...                      show layouts\n"
    "  df [-h] [-i] [--json] [PATH]                                   space per OST\n"
    "  servers [--json] [PATH]                                        OSS/OST state (alias: osts)\n"
    "  find PATH [--stripe-count N] [--stripe-size S] [--ost I] [--pool P] [--size [+-]N] [--type f|d]\n"
    "  pool create|add|remove|list|destroy NAME [OST_INDEX...]        OST pools\n"
    "  migrate [-c COUNT] [-S SIZE] [-i START_OST] [-p POOL] FILE...  restripe files with data\n"
    "  mirror resync [-v] FILE...                                     resync stale mirror copies\n"
    "  ost lost INDEX                                                 declare an OST lost: rebuild its objects\n"
    "  rebuild status [--wait] [--json]                               rebuild/resync progress, ETA\n"
    "  scrub [--no-repair] [-v] [PATH]                                check copies/chunks, repair bad ones\n"
    "  fsck --mds-data DIR [--ost DIR]... [--repair] | --mds HOST:PORT  check the file system\n"
    "  stats [--json] [--mds HOST:PORT] [METRICS_HOST:PORT...]        the daemons' metrics, once\n"
    "  top [--once] [--mds HOST:PORT] [METRICS_HOST:PORT...]          live per-OSS/per-job rates\n"
    "  key generate|check FILE                                        the cluster key (capabilities)\n"
    "  key status|rotate                                              capability signing keys\n"
    "  qos set|show|remove CLASS [--read-mibps N] [--write-mibps N] [--iops N] ...  OSS QoS rules\n"
    "  tenant create|list|show|remove|rotate-key NAME ...              tenants, filesets, keys\n"
    "  prefetch [--append] [--wait] PATH... | --list FILE             order hint for the mount's cache\n"
    "  cache warm PATH... | --list FILE, cache status [--json], cache drop   the mount's client cache\n"
    "\n"
    "Run 'sfs COMMAND --help' for a command's options and examples.\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ||
      std::strcmp(argv[1], "help") == 0) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  // An admin tool prints its answer, not libsfs's progress; SFS_LOG_LEVEL overrides.
  if (std::getenv("SFS_LOG_LEVEL") == nullptr) sfs::SetLogLevel(sfs::LogLevel::kWarn);
  std::string cmd = argv[1];
  int sub_argc = argc - 1;
  char** sub_argv = argv + 1;
  using namespace sfs::tools;
  if (cmd == "setstripe") return RunSetstripe(sub_argc, sub_argv);
  if (cmd == "getstripe") return RunGetstripe(sub_argc, sub_argv);
  if (cmd == "df") return RunDf(sub_argc, sub_argv);
  if (cmd == "servers" || cmd == "osts") return RunServers(sub_argc, sub_argv);
  if (cmd == "find") return RunFind(sub_argc, sub_argv);
  if (cmd == "pool") return RunPool(sub_argc, sub_argv);
  if (cmd == "migrate") return RunMigrate(sub_argc, sub_argv);
  if (cmd == "mirror") return RunMirror(sub_argc, sub_argv);
  if (cmd == "ost") return RunOst(sub_argc, sub_argv);
  if (cmd == "rebuild") return RunRebuild(sub_argc, sub_argv);
  if (cmd == "scrub") return RunScrub(sub_argc, sub_argv);
  if (cmd == "fsck") return RunFsck(sub_argc, sub_argv);
  if (cmd == "stats") return RunStats(sub_argc, sub_argv);
  if (cmd == "top") return RunTop(sub_argc, sub_argv);
  if (cmd == "key") return RunKey(sub_argc, sub_argv);
  if (cmd == "qos") return RunQos(sub_argc, sub_argv);
  if (cmd == "tenant") return RunTenant(sub_argc, sub_argv);
  if (cmd == "prefetch") return RunPrefetch(sub_argc, sub_argv);
  if (cmd == "cache") return RunCache(sub_argc, sub_argv);
  std::fprintf(stderr, "sfs: unknown command '%s' (try 'sfs --help')\n", cmd.c_str());
  return 2;
}
