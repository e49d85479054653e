// The storage a benchmark task drives, behind one interface so that ior and
// mdtest run unchanged over plain POSIX syscalls (through a FUSE mount, or on
// any local directory, for a baseline) and over libsfs directly (no FUSE, no
// kernel: what the file system itself costs).
//
// One Backend per task process, made after fork(): a libsfs Client owns
// threads and sockets, which a forked child does not inherit in a usable
// state. Paths are absolute paths inside the file system for SFS ("/" is its
// root) and ordinary paths for POSIX. Errors are errnos in Status; messages
// name the path.
//
// Thread safety: a Backend and its files are used by the one thread of a task.
#pragma once

#include <fcntl.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "common/status.h"

namespace sfs::bench {

enum class Api { kPosix, kSfs };

// "POSIX" / "SFS" (any case) → Api; EINVAL otherwise.
Result<Api> ParseApi(std::string_view s);
const char* ApiName(Api api);

struct BackendOptions {
  Api api = Api::kPosix;
  std::string mds;  // "host:port"; REQUIRES: non-empty iff api == kSfs
  std::string transport = "auto";  // libsfs transport for kSfs: auto, tcp or rdma
};

// An open file. Close() reports errors; a file destroyed unclosed is closed
// quietly.
class BenchFile {
 public:
  virtual ~BenchFile() = default;
  // Writes all of buf at off (pwrite semantics, retried until done).
  virtual Status WriteAt(uint64_t off, std::span<const uint8_t> buf) = 0;
  // Reads up to buf.size() bytes at off; fewer only at end of file.
  virtual Result<size_t> ReadAt(uint64_t off, std::span<uint8_t> buf) = 0;
  // fsync: written data durable.
  virtual Status Sync() = 0;
  // REQUIRES: called at most once, and no other call after it.
  virtual Status Close() = 0;
};

struct BenchStat {
  uint64_t size = 0;
  bool is_dir = false;
};

class Backend {
 public:
  virtual ~Backend() = default;
  // flags: O_RDONLY / O_WRONLY / O_RDWR, optionally | O_CREAT | O_EXCL | O_TRUNC.
  // Created files get mode 0644.
  virtual Result<std::unique_ptr<BenchFile>> Open(const std::string& path, int flags) = 0;
  virtual Status Mkdir(const std::string& path) = 0;  // mode 0755
  virtual Status Rmdir(const std::string& path) = 0;
  virtual Status Unlink(const std::string& path) = 0;
  virtual Result<BenchStat> Stat(const std::string& path) = 0;
};

// Connects (SFS) or just wraps the syscalls (POSIX).
Result<std::unique_ptr<Backend>> MakeBackend(const BackendOptions& opts);
std::unique_ptr<Backend> MakePosixBackend();
Result<std::unique_ptr<Backend>> MakeSfsBackend(const std::string& mds,
                                                const std::string& transport = "auto");

// The directory part of path ("." for a bare name, "/" for "/x").
std::string ParentDir(const std::string& path);

}  // namespace sfs::bench
