// DefaultEnv (plain POSIX calls) and the short-transfer loops over any Env.
#include "oss/store/env.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace sfs::oss {
namespace {

class PosixEnv : public Env {
 public:
  ssize_t Pread(int fd, void* buf, size_t n, uint64_t off) override {
    return ::pread(fd, buf, n, static_cast<off_t>(off));
  }
  ssize_t Pwrite(int fd, const void* buf, size_t n, uint64_t off) override {
    return ::pwrite(fd, buf, n, static_cast<off_t>(off));
  }
  int Ftruncate(int fd, uint64_t size) override {
    return ::ftruncate(fd, static_cast<off_t>(size));
  }
  int Fallocate(int fd, int mode, uint64_t off, uint64_t len) override {
    return ::fallocate(fd, mode, static_cast<off_t>(off), static_cast<off_t>(len));
  }
  int Fdatasync(int fd) override { return ::fdatasync(fd); }
};

}  // namespace

int Env::Fsync(int fd) { return ::fsync(fd); }

Env* DefaultEnv() {
  static Env* env = new PosixEnv;
  return env;
}

Status WriteAll(Env& env, int fd, std::span<const uint8_t> data, uint64_t off) {
  const uint8_t* p = data.data();
  size_t n = data.size();
  while (n > 0) {
    ssize_t w = env.Pwrite(fd, p, n, off);
    if (w < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno("pwrite");
    }
    if (w == 0) return Status::Errno(EIO, "pwrite wrote nothing");
    p += w;
    n -= static_cast<size_t>(w);
    off += static_cast<uint64_t>(w);
  }
  return Status::Ok();
}

Result<uint64_t> ReadAll(Env& env, int fd, std::span<uint8_t> dest, uint64_t off) {
  size_t done = 0;
  while (done < dest.size()) {
    ssize_t r = env.Pread(fd, dest.data() + done, dest.size() - done, off + done);
    if (r < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno("pread");
    }
    if (r == 0) break;
    done += static_cast<size_t>(r);
  }
  return static_cast<uint64_t>(done);
}

}  // namespace sfs::oss
