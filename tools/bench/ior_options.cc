// `sfs-bench ior` options: parsing, validation (every bad combination is a
// one-line error before any I/O), usage text and the run's parameter list.
#include <cstdio>

#include "client/lib/client.h"
#include "tools/bench/args.h"
#include "tools/bench/ior.h"
#include "tools/bench/tasks.h"

namespace sfs::bench {
namespace {

constexpr uint64_t kMaxTransfer = 1ULL << 30;  // one buffer per task is allocated

struct RawIor {
  std::string api = "POSIX";
  std::string paths;
  int64_t segments = 1, iterations = 1, ntasks = kTasksNotGiven;
  bool fpp = false;
};

void Register(ArgParser& p, IorOptions& o, RawIor& raw) {
  p.Text("-a", &raw.api, "API: POSIX (syscalls on a path: a mount, any dir) or SFS (libsfs)");
  p.Text("--mds", &o.backend.mds, "HOST:PORT of the MDS, for -a SFS");
  p.Text("--transport", &o.backend.transport, "libsfs transport for -a SFS: auto, tcp, rdma [auto]");
  p.Flag("-F", &raw.fpp, "file per process (else one shared file, N-to-1 strided)");
  p.Size("-b", &o.geom.block, "block size: contiguous bytes per task per segment [1M]");
  p.Size("-t", &o.geom.transfer, "transfer size: bytes per I/O call [256K]");
  p.Int("-s", &raw.segments, "segments [1]");
  p.Flag("-z", &o.random, "random offsets: each task's transfers in a random order");
  p.Flag("-w", &o.write, "write phase");
  p.Flag("-r", &o.read, "read phase (neither -w nor -r: both)");
  p.Flag("-e", &o.fsync, "fsync before closing after the write");
  p.Flag("-C", &o.reorder, "read back another task's data: task i reads task (i+1)%N's");
  p.Flag("-W", &o.verify_write, "verify: read back and check the data after the write phase");
  p.Flag("-R", &o.verify_read, "verify: check the data read in the read phase");
  p.Int("-i", &raw.iterations, "iterations [1]");
  p.Text("-o", &raw.paths,
         "test file path [testFile; /testFile with -a SFS]; several, comma-separated\n"
         "                    (-o /mnt/a/f,/mnt/b/f: one file through two mounts): task i uses\n"
         "                    path i % count, so with -C task i reads task i+1's data through\n"
         "                    another mount");
  p.Flag("-k", &o.keep, "keep the test files");
  p.Int("-np", &raw.ntasks,
        "tasks: processes forked on this node [1]; under mpirun the MPI ranks are\n"
        "                    the tasks (-np, if given, must equal their number)");
  p.Flag("--json", &o.json, "print the results as one JSON object");
  p.Flag("--drop-caches", &o.drop_caches, "drop the page cache before each read (needs root)");
  p.Flag("--open-wronly", &o.open_wronly,
         "write phase opens O_CREAT|O_WRONLY (default O_CREAT|O_RDWR, as IOR's POSIX\n"
         "                    backend; reads open O_RDONLY either way)");
  p.Int("--verify-seed-offset", &o.verify_seed_offset, nullptr);
}

Status CheckGeometry(const IorOptions& o) {
  const IorGeometry& g = o.geom;
  if (g.transfer == 0 || g.block == 0) return Status(EINVAL, "-b and -t must be positive");
  if (g.transfer % 8 != 0) return Status(EINVAL, "-t must be a multiple of 8 bytes");
  if (g.transfer > kMaxTransfer) return Status(EINVAL, "-t must be at most 1G");
  if (g.block % g.transfer != 0) {
    return Status(EINVAL, "transfer size -t " + std::to_string(g.transfer) +
                              " does not divide block size -b " + std::to_string(g.block));
  }
  return Status::Ok();
}

Status CheckCombinations(const IorOptions& o) {
  if (o.reorder && o.ntasks() < 2) return Status(EINVAL, "-C needs at least 2 tasks (-np)");
  if (o.verify_write && !o.write) return Status(EINVAL, "-W checks the write phase: add -w");
  if (o.backend.api == Api::kSfs) {
    if (o.backend.mds.empty()) return Status(EINVAL, "-a SFS needs --mds HOST:PORT");
    SFS_RETURN_IF_ERROR(client::ParseTransport(o.backend.transport).status());
    for (const std::string& path : o.paths) {
      if (path[0] != '/') {
        return Status(EINVAL, "-o with -a SFS is a path inside the file system, starting with /");
      }
    }
  } else if (!o.backend.mds.empty()) {
    return Status(EINVAL, "--mds is for -a SFS");
  } else if (o.backend.transport != "auto") {
    return Status(EINVAL, "--transport is for -a SFS");
  }
  return Status::Ok();
}

// "-o A,B,C" → {A, B, C}; EINVAL for an empty element or more paths than tasks.
Status SplitPaths(const std::string& list, int ntasks, std::vector<std::string>* out) {
  out->clear();
  size_t start = 0;
  for (;;) {
    size_t comma = list.find(',', start);
    std::string p = list.substr(start, comma == std::string::npos ? comma : comma - start);
    if (p.empty()) return Status(EINVAL, "-o: empty path in '" + list + "'");
    out->push_back(p);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (static_cast<int>(out->size()) > ntasks) {
    return Status(EINVAL, "-o names " + std::to_string(out->size()) + " paths for " +
                              std::to_string(ntasks) + " task(s): at most one path per task");
  }
  return Status::Ok();
}

Status Finish(const RawIor& raw, int mpi_size, IorOptions* o) {
  SFS_ASSIGN_OR_RETURN(o->backend.api, ParseApi(raw.api));
  SFS_RETURN_IF_ERROR(ResolveTasks(raw.ntasks, mpi_size, &o->geom.ntasks));
  if (raw.segments < 1) return Status(EINVAL, "-s must be at least 1");
  if (raw.iterations < 1) return Status(EINVAL, "-i must be at least 1");
  o->geom.segments = static_cast<uint64_t>(raw.segments);
  o->geom.file_per_process = raw.fpp;
  o->iterations = static_cast<int>(raw.iterations);
  if (!o->write && !o->read) o->write = o->read = true;
  std::string list = raw.paths;
  if (list.empty()) list = o->backend.api == Api::kSfs ? "/testFile" : "testFile";
  SFS_RETURN_IF_ERROR(SplitPaths(list, o->geom.ntasks, &o->paths));
  SFS_RETURN_IF_ERROR(CheckGeometry(*o));
  return CheckCombinations(*o);
}

std::string Bool(bool b) { return b ? "yes" : "no"; }

std::string JoinPaths(const std::vector<std::string>& paths) {
  std::string out;
  for (const std::string& p : paths) out += (out.empty() ? "" : ",") + p;
  return out;
}

}  // namespace

Result<IorOptions> ParseIorOptions(int argc, char** argv, bool* help, int mpi_size) {
  IorOptions o;
  RawIor raw;
  ArgParser p;
  Register(p, o, raw);
  SFS_RETURN_IF_ERROR(p.Parse(argc, argv));
  *help = p.help_requested();
  if (*help) return o;
  SFS_RETURN_IF_ERROR(Finish(raw, mpi_size, &o));
  return o;
}

std::string IorUsage() {
  IorOptions o;
  RawIor raw;
  ArgParser p;
  Register(p, o, raw);
  return "usage: sfs-bench ior [options]\n\n"
         "IOR-style bandwidth test: N tasks write and/or read blocks of a shared file\n"
         "(segment s, task i at (s*N + i)*b) or of a file each (-F).\n\n" +
         p.Help() +
         "\nexamples:\n"
         "  sfs-bench ior -a POSIX -F -np 4 -b 64M -t 1M -w -r -e -o /mnt/sfs/ior\n"
         "  sfs-bench ior -a SFS --mds host:7700 -np 4 -b 16M -t 1M -s 4 -w -r -R -C -o /ior\n"
         "  sfs-bench ior -np 4 -b 47008 -t 47008 -s 64 -w -W -r -R -C -o /mnt/a/f,/mnt/b/f\n"
         "      (two mounts of one file system: even tasks write through /mnt/a, odd\n"
         "       through /mnt/b, and each reads the other mount's blocks back)\n"
         "  mpirun -np 8 sfs-bench ior -F -b 64M -t 1M -o /mnt/sfs/ior   (built with MPI)\n";
}

std::vector<Param> IorParams(const IorOptions& o) {
  const IorGeometry& g = o.geom;
  return {
      {"api", ApiName(o.backend.api)},
      {"mds", o.backend.mds},
      {"transport", o.backend.api == Api::kSfs ? o.backend.transport : ""},
      {"test_file", JoinPaths(o.paths)},
      {"access", g.file_per_process ? "file-per-process" : "single-shared-file"},
      {"ordering", o.random ? "random" : "sequential"},
      {"reorder_tasks", Bool(o.reorder)},
      {"tasks", std::to_string(g.ntasks), true},
      {"segments", std::to_string(g.segments), true},
      {"block_bytes", std::to_string(g.block), true},
      {"transfer_bytes", std::to_string(g.transfer), true},
      {"aggregate_bytes", std::to_string(g.BytesPerTask() * g.ntasks), true},
      {"iterations", std::to_string(o.iterations), true},
      {"fsync", Bool(o.fsync)},
      {"verify_write", Bool(o.verify_write)},
      {"verify_read", Bool(o.verify_read)},
      {"drop_caches", Bool(o.drop_caches)},
      {"write_open", o.open_wronly ? "O_CREAT|O_WRONLY" : "O_CREAT|O_RDWR"},
  };
}

const std::string& IorPath(const IorOptions& o, int rank) {
  return o.paths[static_cast<size_t>(rank) % o.paths.size()];
}

std::string IorFileName(const IorOptions& o, int rank, int owner) {
  const std::string& path = IorPath(o, rank);
  if (!o.geom.file_per_process) return path;
  char suffix[16];
  std::snprintf(suffix, sizeof(suffix), ".%08d", owner);
  return path + suffix;
}

}  // namespace sfs::bench
