// FaultEnv: an Env for tests that fails the data path on cue. Test-only.
//
//   set_write_budget(n): pwrites may add n more bytes past the ends of files
//     in all (a pwrite crossing the budget is cut short at it), then fail
//     with ENOSPC, as a file system does when it fills up. Overwriting bytes
//     inside a file costs nothing, as on a file system that writes in place.
//   set_dead_after_writes(k): after k more pwrite calls every call fails with
//     EIO, as if the machine stopped there (the bytes of the first k calls
//     stay, in the page cache, like a killed process's).
#pragma once

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <limits>
#include <mutex>

#include "oss/store/env.h"

namespace sfs::oss {

class FaultEnv : public EnvWrapper {
 public:
  FaultEnv() : EnvWrapper(DefaultEnv()) {}

  void set_write_budget(uint64_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    budget_ = n;
  }
  void set_dead_after_writes(uint64_t k) {
    std::lock_guard<std::mutex> lock(mu_);
    calls_left_ = k;
  }
  void Heal() {
    std::lock_guard<std::mutex> lock(mu_);
    budget_ = calls_left_ = kUnlimited;
  }

  ssize_t Pwrite(int fd, const void* buf, size_t n, uint64_t off) override {
    struct stat st;
    if (::fstat(fd, &st) != 0) return -1;
    uint64_t size = static_cast<uint64_t>(st.st_size);
    uint64_t inside = off >= size ? 0 : std::min<uint64_t>(n, size - off);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (calls_left_ == 0) return Fail(EIO);
      if (calls_left_ != kUnlimited) --calls_left_;
      if (budget_ != kUnlimited) {
        uint64_t grow = std::min<uint64_t>(n - inside, budget_);
        if (inside + grow == 0) return Fail(ENOSPC);
        n = static_cast<size_t>(inside + grow);
        budget_ -= grow;
      }
    }
    return EnvWrapper::Pwrite(fd, buf, n, off);
  }
  ssize_t Pread(int fd, void* buf, size_t n, uint64_t off) override {
    if (Dead()) return Fail(EIO);
    return EnvWrapper::Pread(fd, buf, n, off);
  }
  int Ftruncate(int fd, uint64_t size) override {
    return Dead() ? Fail(EIO) : EnvWrapper::Ftruncate(fd, size);
  }
  int Fallocate(int fd, int mode, uint64_t off, uint64_t len) override {
    return Dead() ? Fail(EIO) : EnvWrapper::Fallocate(fd, mode, off, len);
  }

 private:
  static constexpr uint64_t kUnlimited = std::numeric_limits<uint64_t>::max();
  static int Fail(int err) {
    errno = err;
    return -1;
  }
  bool Dead() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_left_ == 0;
  }

  std::mutex mu_;
  uint64_t budget_ = kUnlimited;      // guarded by mu_
  uint64_t calls_left_ = kUnlimited;  // guarded by mu_
};

}  // namespace sfs::oss
