// ReadWithStoredCrc: the end chunks verified, the middle read unverified with
// its crc folded from the sidecar (contract in stored_crc_read.h).
#include "oss/store/stored_crc_read.h"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "common/crc32c.h"
#include "common/rpc/bulk_crc.h"
#include "oss/store/direct_io.h"

namespace sfs::oss {
namespace {

Status Fallback(const char* why) { return Status::Errno(ENOTSUP, why); }

// The crc32c of chunks [first, first + count) of an object of `size` bytes
// (zeros past the end), from their stored crcs.
Result<uint32_t> MiddleValue(const CrcSidecar& crc, uint64_t size, uint64_t first,
                             uint64_t count) {
  uint32_t value = 0;
  if (count == 0) return value;
  SFS_ASSIGN_OR_RETURN(std::vector<CrcEntry> entries, crc.Read(first, count));
  for (uint64_t i = 0; i < count; ++i) {
    uint32_t v = ZeroChunkValue();
    if ((first + i) * kCrcChunk < size) {
      const CrcEntry& e = entries[i];
      if (e.stable != e.pending) return Fallback("a chunk is being changed");
      if (e.stable == 1) return Fallback("a stored crc of 1 is ambiguous");
      if (e.stable != 0) v = e.stable;  // a whole chunk's ChunkCrc is its crc32c
    }
    value = rpc::ExtendByValue(value, v, kCrcChunk);
  }
  return value;
}

// Copies bytes [a, b) (within one chunk) to out, zeros past the end of file,
// after checking the chunk against its stored crc.
Status ReadEnd(Env& env, int fd, const CrcSidecar& crc, uint64_t a, uint64_t b, uint8_t* out) {
  if (a == b) return Status::Ok();
  const uint64_t c = a / kCrcChunk;
  std::array<uint8_t, kCrcChunk> chunk;
  SFS_ASSIGN_OR_RETURN(uint64_t n, ReadAll(env, fd, chunk, c * kCrcChunk));
  std::memset(chunk.data() + n, 0, kCrcChunk - n);
  if (n > 0) {
    SFS_ASSIGN_OR_RETURN(std::vector<CrcEntry> e, crc.Read(c, 1));
    const uint32_t got = ChunkCrc(chunk);
    if (!SlotMatches(e[0].stable, got) && !SlotMatches(e[0].pending, got)) {
      return Fallback("an end chunk fails its check");  // the verified read reports it
    }
  }
  std::memcpy(out, chunk.data() + (a - c * kCrcChunk), b - a);
  return Status::Ok();
}

}  // namespace

Result<uint64_t> ReadWithStoredCrc(Env& env, int data_fd, int direct_fd, const CrcSidecar& crc,
                                   uint64_t off, std::span<uint8_t> dest, uint32_t* value) {
  if (dest.size() < kDirectMin) return Fallback("a short read");
  struct stat st;
  if (::fstat(data_fd, &st) != 0) return Status::FromErrno("fstat");
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  const uint64_t end = off + dest.size();
  const uint64_t head_end = std::min(ChunkCeil(off), end);
  const uint64_t tail_begin = std::max(ChunkFloor(end), head_end);
  const uint64_t head = head_end - off, mid = tail_begin - head_end;
  SFS_ASSIGN_OR_RETURN(uint32_t mid_value,
                       MiddleValue(crc, size, head_end / kCrcChunk, mid / kCrcChunk));
  SFS_RETURN_IF_ERROR(ReadEnd(env, data_fd, crc, off, head_end, dest.data()));
  if (mid > 0) {
    std::span<uint8_t> m = dest.subspan(head, mid);
    SFS_ASSIGN_OR_RETURN(uint64_t n, ReadMaybeDirect(env, data_fd, direct_fd, m, head_end));
    // Zeros from the end the crcs were taken for (a file grown since reads
    // as it was; one shrunk reads zeros, which the client's check catches).
    n = std::min(n, size > head_end ? size - head_end : 0);
    std::memset(m.data() + n, 0, mid - n);
  }
  SFS_RETURN_IF_ERROR(ReadEnd(env, data_fd, crc, tail_begin, end, dest.data() + head + mid));
  uint32_t v = crc32c::Value(dest.data(), head);
  v = rpc::ExtendByValue(v, mid_value, mid);
  *value = crc32c::Extend(v, dest.data() + head + mid, end - tail_begin);
  return size > off ? std::min(size, end) - off : 0;
}

Result<uint32_t> StoredCrcOfRange(Env& env, int data_fd, const CrcSidecar& crc, uint64_t size,
                                  uint64_t off, uint64_t end) {
  const uint64_t head_end = std::min(ChunkCeil(off), end);
  const uint64_t tail_begin = std::max(ChunkFloor(end), head_end);
  const uint64_t mid = tail_begin - head_end;
  SFS_ASSIGN_OR_RETURN(uint32_t mid_value,
                       MiddleValue(crc, size, head_end / kCrcChunk, mid / kCrcChunk));
  std::array<uint8_t, kCrcChunk> bytes;
  SFS_RETURN_IF_ERROR(ReadEnd(env, data_fd, crc, off, head_end, bytes.data()));
  uint32_t v = crc32c::Value(bytes.data(), head_end - off);
  v = rpc::ExtendByValue(v, mid_value, mid);
  SFS_RETURN_IF_ERROR(ReadEnd(env, data_fd, crc, tail_begin, end, bytes.data()));
  return crc32c::Extend(v, bytes.data(), end - tail_begin);
}

}  // namespace sfs::oss
