// Parallel direct writes (see parallel_writes.h): /dev/fuse read and writev
// hooks that add FOPEN_PARALLEL_DIRECT_WRITES to direct-I/O open replies.
#include "client/fuse/parallel_writes.h"

#include <linux/fuse.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <vector>

namespace sfs::fuse {
namespace {

// OPEN and CREATE requests read from the kernel and not answered yet.
class PendingOpens {
 public:
  void Add(uint64_t unique, uint32_t opcode) {
    std::lock_guard<std::mutex> lock(mu_);
    pending_.push_back({unique, opcode});
    count_.store(pending_.size(), std::memory_order_release);
  }
  // The opcode of pending request `unique` (which is no longer pending), or 0.
  uint32_t Take(uint64_t unique) {
    if (count_.load(std::memory_order_acquire) == 0) return 0;  // the common case
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < pending_.size(); ++i) {
      if (pending_[i].unique != unique) continue;
      uint32_t opcode = pending_[i].opcode;
      pending_[i] = pending_.back();
      pending_.pop_back();
      count_.store(pending_.size(), std::memory_order_release);
      return opcode;
    }
    return 0;
  }

 private:
  struct Request {
    uint64_t unique;
    uint32_t opcode;
  };
  std::mutex mu_;
  std::vector<Request> pending_;  // GUARDED_BY(mu_); as many as opens in flight
  std::atomic<size_t> count_{0};
};

PendingOpens& Pending() {
  static PendingOpens* pending = new PendingOpens;  // outlives every session thread
  return *pending;
}

ssize_t ReadRequest(int fd, void* buf, size_t len, void* /*userdata*/) {
  ssize_t n = ::read(fd, buf, len);
  if (n >= static_cast<ssize_t>(sizeof(fuse_in_header))) {
    fuse_in_header in;
    std::memcpy(&in, buf, sizeof(in));
    if (in.opcode == FUSE_OPEN || in.opcode == FUSE_CREATE) Pending().Add(in.unique, in.opcode);
  }
  return n;
}

ssize_t WriteReply(int fd, struct iovec* iov, int count, void* /*userdata*/) {
  if (count > 0 && iov[0].iov_len >= sizeof(fuse_out_header)) {
    fuse_out_header out;
    std::memcpy(&out, iov[0].iov_base, sizeof(out));
    // Notifications have unique 0; a reply with an error still ends the request.
    uint32_t opcode = out.unique == 0 ? 0 : Pending().Take(out.unique);
    if (opcode != 0) MarkParallelIfDirect(iov, count, opcode);
  }
  return ::writev(fd, iov, count);
}

}  // namespace

// An OPEN reply is fuse_open_out; a CREATE reply is fuse_entry_out followed
// by fuse_open_out. libfuse sends either as the header (iov[0]) and one
// argument (iov[1]); any other shape is left alone. The bytes belong to the
// libfuse thread sending them, which is blocked in our writev.
bool MarkParallelIfDirect(struct iovec* iov, int count, uint32_t opcode) {
  size_t arg = sizeof(fuse_open_out);
  if (opcode == FUSE_CREATE) arg += sizeof(fuse_entry_out);
  if (count != 2 || iov[0].iov_len != sizeof(fuse_out_header) || iov[1].iov_len != arg) {
    return false;
  }
  fuse_out_header out;
  std::memcpy(&out, iov[0].iov_base, sizeof(out));
  if (out.error != 0 || out.len != sizeof(fuse_out_header) + arg) return false;
  uint8_t* at = static_cast<uint8_t*>(iov[1].iov_base) + arg - sizeof(fuse_open_out) +
                offsetof(fuse_open_out, open_flags);
  uint32_t flags;
  std::memcpy(&flags, at, sizeof(flags));
  if ((flags & FOPEN_DIRECT_IO) == 0) return false;
  flags |= FOPEN_PARALLEL_DIRECT_WRITES;
  std::memcpy(at, &flags, sizeof(flags));
  return true;
}

Status EnableParallelDirectWrites(fuse_session* se) {
  fuse_custom_io io{};
  io.read = ReadRequest;
  io.writev = WriteReply;
  // Same fd: the session keeps it (and closes it once); libfuse then calls
  // these for it and for every clone_fd channel its workers open.
  int rc = fuse_session_custom_io(se, &io, fuse_session_fd(se));
  if (rc != 0) return Status(rc < 0 ? -rc : EINVAL, "fuse_session_custom_io failed");
  return Status::Ok();
}

}  // namespace sfs::fuse
