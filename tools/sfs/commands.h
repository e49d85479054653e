// The `sfs` subcommands. Each Run* parses its own arguments (getopt_long),
// prints to stdout, reports errors as one line "sfs CMD: PATH: reason" on
// stderr, and returns the process exit status (0 ok, 1 failure, 2 usage).
#pragma once

#include <string>

#include "tools/sfs/target.h"

namespace sfs::tools {

int RunSetstripe(int argc, char** argv);
int RunGetstripe(int argc, char** argv);
int RunDf(int argc, char** argv);
int RunServers(int argc, char** argv);
int RunFind(int argc, char** argv);
int RunPool(int argc, char** argv);
int RunQos(int argc, char** argv);   // qos.cc: OSS QoS rules
int RunTenant(int argc, char** argv);  // tenant.cc: tenants, filesets, keys
int RunMigrate(int argc, char** argv);
int RunMirror(int argc, char** argv);  // mirror resync
int RunOst(int argc, char** argv);      // rebuild.cc: ost lost INDEX
int RunRebuild(int argc, char** argv);  // rebuild.cc: rebuild status
int RunScrub(int argc, char** argv);    // scrub.cc: exit 0 clean, 1 problems
int RunFsck(int argc, char** argv);  // exit 0 clean, 1 problems, 2 usage, 8 error
int RunStats(int argc, char** argv);  // stats.cc: one scrape of the /metrics endpoints
int RunTop(int argc, char** argv);    // top.cc: a live view of them
int RunKey(int argc, char** argv);    // key.cc: generate/check the cluster key
// key_rotate.cc: `sfs key status|rotate` (argv[0] is the verb).
int RunKeyAdmin(int argc, char** argv);
int RunPrefetch(int argc, char** argv);  // cache.cc: the order hint of a mount's cache
int RunCache(int argc, char** argv);     // cache.cc: cache warm|status|drop

// Shared by the commands: prints "sfs CMD: what: reason" and returns 1.
int Fail(const std::string& cmd, const std::string& what, const Status& st);
// Parses --ec's "K+M" (K >= 1, M >= 1, K+M <= 32) into spec; false (after a
// one-line "sfs CMD: bad EC geometry" on stderr) otherwise.
bool ParseEc(const char* cmd, const char* arg, client::LayoutSpec* spec);
// Parses --mds/--json (also accepted after the subcommand).
bool ParseGlobal(int opt, const char* arg, GlobalOptions* g);

}  // namespace sfs::tools
