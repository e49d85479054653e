// Env: the system calls of the object store's data path, behind an interface
// so tests can inject faults (a full disk after N bytes, a failing fsync), as
// LevelDB's Env does. Production code uses DefaultEnv(), plain POSIX calls.
//
// Each method behaves like the system call it names: it returns -1 and sets
// errno on failure, and Pread/Pwrite may transfer fewer bytes than asked.
// ReadAll/WriteAll loop over short transfers and turn errors into a Status.
//
// Thread safety: implementations must be safe to call from many threads.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <span>

#include "common/status.h"

namespace sfs::oss {

class Env {
 public:
  virtual ~Env() = default;
  virtual ssize_t Pread(int fd, void* buf, size_t n, uint64_t off) = 0;
  virtual ssize_t Pwrite(int fd, const void* buf, size_t n, uint64_t off) = 0;
  virtual int Ftruncate(int fd, uint64_t size) = 0;
  virtual int Fallocate(int fd, int mode, uint64_t off, uint64_t len) = 0;
  virtual int Fdatasync(int fd) = 0;
  // fsync(2); the object store uses it for directories (tombstones).
  virtual int Fsync(int fd);
};

// The process-wide POSIX Env; never destroyed.
Env* DefaultEnv();

// Forwards every call to a target Env; subclasses override what they fake.
// REQUIRES: target outlives the wrapper.
class EnvWrapper : public Env {
 public:
  explicit EnvWrapper(Env* target) : target_(target) {}
  ssize_t Pread(int fd, void* buf, size_t n, uint64_t off) override {
    return target_->Pread(fd, buf, n, off);
  }
  ssize_t Pwrite(int fd, const void* buf, size_t n, uint64_t off) override {
    return target_->Pwrite(fd, buf, n, off);
  }
  int Ftruncate(int fd, uint64_t size) override { return target_->Ftruncate(fd, size); }
  int Fallocate(int fd, int mode, uint64_t off, uint64_t len) override {
    return target_->Fallocate(fd, mode, off, len);
  }
  int Fdatasync(int fd) override { return target_->Fdatasync(fd); }
  int Fsync(int fd) override { return target_->Fsync(fd); }

 private:
  Env* const target_;
};

// Writes all of data at off. The errno of a failed pwrite becomes the code.
Status WriteAll(Env& env, int fd, std::span<const uint8_t> data, uint64_t off);

// Reads until dest is full or end of file; returns the bytes read.
Result<uint64_t> ReadAll(Env& env, int fd, std::span<uint8_t> dest, uint64_t off);

}  // namespace sfs::oss
