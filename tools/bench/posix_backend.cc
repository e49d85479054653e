// Backend over plain POSIX syscalls: what an application sees through a
// StripeFS mount (or any other file system, for a baseline). Nothing is
// cached or buffered here, so each call is one syscall (short reads and
// writes are retried, EINTR too).
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "tools/bench/backend.h"

namespace sfs::bench {
namespace {

Status PathError(const char* op, const std::string& path) {
  return Status::FromErrno(std::string(op) + " " + path);
}

class PosixFile final : public BenchFile {
 public:
  PosixFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~PosixFile() override {
    if (fd_ >= 0) ::close(fd_);
  }

  Status WriteAt(uint64_t off, std::span<const uint8_t> buf) override {
    size_t done = 0;
    while (done < buf.size()) {
      ssize_t n =
          ::pwrite(fd_, buf.data() + done, buf.size() - done, static_cast<off_t>(off + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0)
        return n < 0 ? PathError("pwrite", path_)
                     : Status(EIO, "pwrite " + path_ + ": wrote 0 bytes");
      done += static_cast<size_t>(n);
    }
    return Status::Ok();
  }

  Result<size_t> ReadAt(uint64_t off, std::span<uint8_t> buf) override {
    size_t done = 0;
    while (done < buf.size()) {
      ssize_t n =
          ::pread(fd_, buf.data() + done, buf.size() - done, static_cast<off_t>(off + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return PathError("pread", path_);
      if (n == 0) break;  // end of file
      done += static_cast<size_t>(n);
    }
    return done;
  }

  Status Sync() override {
    if (::fsync(fd_) != 0) return PathError("fsync", path_);
    return Status::Ok();
  }

  Status Close() override {
    int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) return PathError("close", path_);
    return Status::Ok();
  }

 private:
  int fd_;
  std::string path_;
};

class PosixBackend final : public Backend {
 public:
  Result<std::unique_ptr<BenchFile>> Open(const std::string& path, int flags) override {
    int fd;
    do {
      fd = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) return PathError("open", path);
    return std::unique_ptr<BenchFile>(new PosixFile(fd, path));
  }
  Status Mkdir(const std::string& path) override {
    return ::mkdir(path.c_str(), 0755) == 0 ? Status::Ok() : PathError("mkdir", path);
  }
  Status Rmdir(const std::string& path) override {
    return ::rmdir(path.c_str()) == 0 ? Status::Ok() : PathError("rmdir", path);
  }
  Status Unlink(const std::string& path) override {
    return ::unlink(path.c_str()) == 0 ? Status::Ok() : PathError("unlink", path);
  }
  Result<BenchStat> Stat(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return PathError("stat", path);
    return BenchStat{static_cast<uint64_t>(st.st_size), S_ISDIR(st.st_mode)};
  }
};

}  // namespace

std::unique_ptr<Backend> MakePosixBackend() { return std::make_unique<PosixBackend>(); }

}  // namespace sfs::bench
