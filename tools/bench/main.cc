// `sfs-bench`: IOR- and mdtest-style benchmarks for StripeFS, through a
// mount (or any directory) with -a POSIX, or through libsfs with -a SFS.
// Built with MPI and started by mpirun, the MPI ranks are the tasks.
#include <cstdio>
#include <cstring>
#include <string>

#include "tools/bench/ior.h"
#include "tools/bench/kv_bench.h"
#include "tools/bench/mdtest.h"
#include "tools/bench/tasks.h"
#include "tools/bench/train_bench.h"

namespace {

constexpr const char* kUsage =
    "usage: sfs-bench COMMAND [options]\n"
    "\n"
    "commands:\n"
    "  ior      IOR-style bandwidth: file per process or shared N-to-1 strided,\n"
    "           sequential or random, with data verification\n"
    "  mdtest   mdtest-style metadata rates: create, stat, read, remove\n"
    "  kv       the KV-cache tier (docs/kv.md): put/get GB/s of blocks, get latency\n"
    "  train    a training loader's epochs over small files, with and without the\n"
    "           client cache and its order hint (issue 18)\n"
    "\n"
    "Run 'sfs-bench COMMAND --help' for a command's options.\n";

int Dispatch(int argc, char** argv, int mpi_size) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ||
      std::strcmp(argv[1], "help") == 0) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  std::string cmd = argv[1];
  if (cmd == "ior") return sfs::bench::RunIor(argc - 1, argv + 1, mpi_size);
  if (cmd == "mdtest") return sfs::bench::RunMdtest(argc - 1, argv + 1, mpi_size);
  if (cmd == "kv") return sfs::bench::RunKv(argc - 1, argv + 1);
  if (cmd == "train") return sfs::bench::RunTrain(argc - 1, argv + 1);
  std::fprintf(stderr, "sfs-bench: unknown command '%s' (try 'sfs-bench --help')\n", cmd.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int mpi_size = sfs::bench::MpiStart(&argc, &argv);
  int rc = Dispatch(argc, argv, mpi_size);
  sfs::bench::MpiFinish();
  return rc;
}
