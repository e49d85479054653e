// `sfs-bench mdtest`: mdtest's metadata workloads over a Backend. Each
// iteration builds a tree (a top directory, plus one directory per task
// with -u), then runs, each phase started by a barrier: directory create,
// stat, remove; file create (writing -w bytes), stat, read, remove; and
// removes the tree. Rates are ops/s over the phase's wall time (last task's
// end minus first task's start), as mdtest reports them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "tools/bench/backend.h"
#include "tools/bench/report.h"

namespace sfs::bench {

struct MdtestOptions {
  BackendOptions backend;
  int64_t items = 100;       // -n, per task
  bool files = true;         // -F alone: files only
  bool dirs = true;          // -D alone: directories only
  bool unique_dir = false;   // -u: a directory per task (else one shared)
  uint64_t write_bytes = 0;  // -w, per file; read back in the read phase
  int ntasks = 1;            // -np
  int iterations = 1;        // -i
  std::string base;          // -d; default "." (POSIX) or "/" (SFS)
  bool json = false;
};

// Parses argv[1..] (argv[0] = "mdtest"); EINVAL with a one-line reason.
// mpi_size > 0: under mpirun with that many ranks (the tasks).
Result<MdtestOptions> ParseMdtestOptions(int argc, char** argv, bool* help, int mpi_size = 0);
std::string MdtestUsage();

// The subcommand: returns the exit status (0 ok, 1 failure, 2 usage, 130 interrupted).
int RunMdtest(int argc, char** argv, int mpi_size = 0);

}  // namespace sfs::bench
