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

// A range [off, end) as both reads take it: the partly covered chunk at each
// end, read and checked, [off, head_end) and [tail_begin, end), and the whole
// chunks between, whose crcs come from the sidecar.
struct Split {
  uint64_t off, head_end, tail_begin, end;
  uint64_t head() const { return head_end - off; }
  uint64_t mid() const { return tail_begin - head_end; }
  uint64_t tail() const { return end - tail_begin; }
};

Split SplitRange(uint64_t off, uint64_t end) {
  const uint64_t head_end = std::min(ChunkCeil(off), end);
  return {off, head_end, std::max(ChunkFloor(end), head_end), end};
}

// The range's crc32c: its head's bytes, then the middle's folded value, then
// its tail's bytes.
uint32_t Fold(const Split& s, const uint8_t* head, uint32_t mid_value, const uint8_t* tail) {
  uint32_t v = crc32c::Value(head, s.head());
  v = rpc::ExtendByValue(v, mid_value, s.mid());
  return crc32c::Extend(v, tail, s.tail());
}

// The crc32c of s's middle chunks in an object of `size` bytes (zeros past
// the end), from their stored crcs.
Result<uint32_t> MiddleValue(const CrcSidecar& crc, uint64_t size, const Split& s) {
  const uint64_t first = s.head_end / kCrcChunk, count = s.mid() / kCrcChunk;
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
  const Split s = SplitRange(off, end);
  SFS_ASSIGN_OR_RETURN(uint32_t mid_value, MiddleValue(crc, size, s));
  uint8_t* const tail = dest.data() + s.head() + s.mid();
  SFS_RETURN_IF_ERROR(ReadEnd(env, data_fd, crc, off, s.head_end, dest.data()));
  if (s.mid() > 0) {
    std::span<uint8_t> m = dest.subspan(s.head(), s.mid());
    SFS_ASSIGN_OR_RETURN(uint64_t n, ReadMaybeDirect(env, data_fd, direct_fd, m, s.head_end));
    // Zeros from the end the crcs were taken for (a file grown since reads
    // as it was; one shrunk reads zeros, which the client's check catches).
    n = std::min(n, size > s.head_end ? size - s.head_end : 0);
    std::memset(m.data() + n, 0, s.mid() - n);
  }
  SFS_RETURN_IF_ERROR(ReadEnd(env, data_fd, crc, s.tail_begin, end, tail));
  *value = Fold(s, dest.data(), mid_value, tail);
  return size > off ? std::min(size, end) - off : 0;
}

Result<uint32_t> StoredCrcOfRange(Env& env, int data_fd, const CrcSidecar& crc, uint64_t size,
                                  uint64_t off, uint64_t end) {
  const Split s = SplitRange(off, end);
  SFS_ASSIGN_OR_RETURN(uint32_t mid_value, MiddleValue(crc, size, s));
  std::array<uint8_t, kCrcChunk> head, tail;
  SFS_RETURN_IF_ERROR(ReadEnd(env, data_fd, crc, off, s.head_end, head.data()));
  SFS_RETURN_IF_ERROR(ReadEnd(env, data_fd, crc, s.tail_begin, end, tail.data()));
  return Fold(s, head.data(), mid_value, tail.data());
}

}  // namespace sfs::oss
