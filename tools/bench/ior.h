// `sfs-bench ior`: IOR's bandwidth workloads over a Backend, with IOR's
// options and meanings (see IorUsage()). Parsing and validation live in
// ior_options.cc so the unit tests can check them without running I/O; the
// task body and the run are in ior.cc.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "tools/bench/backend.h"
#include "tools/bench/report.h"
#include "tools/bench/schedule.h"

namespace sfs::bench {

struct IorOptions {
  BackendOptions backend;
  IorGeometry geom{1 << 20, 256 << 10, 1, 1, false};  // IOR's defaults: -b 1m -t 256k -s 1
  bool random = false;                                // -z
  bool write = false;                                 // -w
  bool read = false;                                  // -r (neither -w nor -r: both, as IOR)
  bool fsync = false;                                 // -e
  bool reorder = false;                               // -C: task i reads what task (i+1) % n wrote
  bool verify_write = false;       // -W: read back and check after the write phase
  bool verify_read = false;        // -R: check the data of the read phase
  int iterations = 1;              // -i
  // -o; default "testFile" (POSIX) or "/testFile" (SFS). Several paths
  // (-o A,B: the same file seen through two mounts) are used round-robin:
  // task i opens paths[i % paths.size()].
  std::vector<std::string> paths;
  bool keep = false;               // -k
  bool json = false;               // --json
  bool drop_caches = false;        // --drop-caches: before every read phase
  // The write phase opens O_CREAT|O_RDWR, as IOR's POSIX backend creates its
  // files; --open-wronly: O_CREAT|O_WRONLY instead (what sfs-bench did before).
  bool open_wronly = false;
  int64_t verify_seed_offset = 0;  // hidden: makes every check fail (tests)

  int ntasks() const { return geom.ntasks; }
  // Verification needs the pattern in the data; otherwise a fixed buffer is written.
  bool fill_pattern() const { return verify_write || verify_read; }
};

// Parses argv[1..] (argv[0] = "ior"). EINVAL with a one-line reason for bad
// options or combinations (before any I/O). *help set for -h/--help.
// mpi_size > 0: running under mpirun with that many ranks (the tasks).
Result<IorOptions> ParseIorOptions(int argc, char** argv, bool* help, int mpi_size = 0);
std::string IorUsage();
// The header lines and JSON "options" of a run.
std::vector<Param> IorParams(const IorOptions& o);

// The test path task `rank` works through: paths[rank % paths.size()].
const std::string& IorPath(const IorOptions& o, int rank);
// The file task `owner` writes, as task `rank` opens it (through rank's
// path): the path itself for a shared file, else "path.0000000N" with N =
// owner (IOR's naming). With -C, rank reads owner = (rank+1) % N's file.
std::string IorFileName(const IorOptions& o, int rank, int owner);
inline std::string IorFileName(const IorOptions& o, int task) {
  return IorFileName(o, task, task);
}

// The subcommand: returns the exit status (0 ok; 1 verification errors or a
// failed task; 2 usage; 130 interrupted). mpi_size > 0: under mpirun (the
// ranks are the tasks; rank 0 prints the report).
int RunIor(int argc, char** argv, int mpi_size = 0);

}  // namespace sfs::bench
