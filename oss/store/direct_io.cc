// Direct I/O of object data (contract in direct_io.h): split a transfer into
// buffered head, direct middle and buffered tail.
#include "oss/store/direct_io.h"

#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <optional>

// cachestat(2) is Linux 6.5; older kernel headers lack its number (the same
// on every architecture that uses the generic syscall table).
#ifndef __NR_cachestat
#define __NR_cachestat 451
#endif

namespace sfs::oss {
namespace {

uint64_t Up(uint64_t v) { return (v + kDirectAlign - 1) / kDirectAlign * kDirectAlign; }
uint64_t Down(uint64_t v) { return v / kDirectAlign * kDirectAlign; }

// The file range [begin, end) of a transfer of n bytes at off from/to buf
// that may go direct; begin == end when none may.
struct Middle {
  uint64_t begin = 0;
  uint64_t end = 0;
  bool empty() const { return begin == end; }
};

Middle DirectPart(int direct_fd, const void* buf, uint64_t off, uint64_t n) {
  if (direct_fd < 0 || n < kDirectMin) return {};
  const uint64_t begin = Up(off), end = Down(off + n);
  if (end <= begin || end - begin < kDirectMin) return {};
  const uintptr_t addr = reinterpret_cast<uintptr_t>(buf) + (begin - off);
  if (addr % kDirectAlign != 0) return {};
  return {begin, end};
}

// Pages of [off, off + len) in the page cache (cachestat), or nullopt if
// the kernel cannot tell (ENOSYS before Linux 6.5).
std::optional<uint64_t> CachedPages(int fd, uint64_t off, uint64_t len) {
  struct {
    uint64_t off, len;
  } range{off, len};
  struct {
    uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
  } cs{};
  if (::syscall(__NR_cachestat, fd, &range, &cs, 0) != 0) return std::nullopt;
  return cs.nr_cache;
}

// True unless no page of [off, off + len) is in the page cache (unknown
// counts as cached).
bool AnyCached(int fd, uint64_t off, uint64_t len) {
  return CachedPages(fd, off, len).value_or(1) != 0;
}

}  // namespace

bool AllCached(int fd, uint64_t off, uint64_t len) {
  if (len == 0) return true;
  std::optional<uint64_t> n = CachedPages(fd, off, len);
  return n.has_value() && *n >= (Up(off + len) - Down(off)) / kDirectAlign;
}

namespace {

// True iff fd's file is smaller than kDirectReadMinObject (an error counts as
// small: the buffered path then reports it).
bool SmallObject(int fd) {
  struct stat st;
  return ::fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) < kDirectReadMinObject;
}

// Moves [pos, end) through the direct descriptor; returns where it stopped
// (end, or an earlier point the buffered path must take over from: an error,
// EOF on a read, or a transfer that stopped off alignment).
template <typename Op>
uint64_t DirectLoop(uint64_t pos, uint64_t end, Op op) {
  while (pos < end) {
    ssize_t n = op(pos, end - pos);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pos += static_cast<uint64_t>(n);
    if (pos % kDirectAlign != 0) break;
  }
  return pos;
}

}  // namespace

Status WriteMaybeDirect(Env& env, int fd, int direct_fd, std::span<const uint8_t> data,
                        uint64_t off) {
  const Middle m = DirectPart(direct_fd, data.data(), off, data.size());
  if (m.empty()) return WriteAll(env, fd, data, off);
  SFS_RETURN_IF_ERROR(WriteAll(env, fd, data.first(m.begin - off), off));
  const uint64_t pos = DirectLoop(m.begin, m.end, [&](uint64_t p, uint64_t n) {
    return env.Pwrite(direct_fd, data.data() + (p - off), n, p);
  });
  return WriteAll(env, fd, data.subspan(pos - off), pos);
}

Result<uint64_t> ReadMaybeDirect(Env& env, int fd, int direct_fd, std::span<uint8_t> dest,
                                 uint64_t off) {
  const Middle m = DirectPart(direct_fd, dest.data(), off, dest.size());
  if (m.empty() || SmallObject(fd) || AnyCached(fd, m.begin, m.end - m.begin)) {
    return ReadAll(env, fd, dest, off);
  }
  const uint64_t head = m.begin - off;
  SFS_ASSIGN_OR_RETURN(uint64_t got, ReadAll(env, fd, dest.first(head), off));
  if (got < head) return got;  // the file ends in the head
  const uint64_t pos = DirectLoop(m.begin, m.end, [&](uint64_t p, uint64_t n) {
    return env.Pread(direct_fd, dest.data() + (p - off), n, p);
  });
  SFS_ASSIGN_OR_RETURN(uint64_t rest, ReadAll(env, fd, dest.subspan(pos - off), pos));
  return pos - off + rest;
}

}  // namespace sfs::oss
