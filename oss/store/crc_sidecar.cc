// Sidecar entry encoding and I/O (format in crc_sidecar.h).
#include "oss/store/crc_sidecar.h"

#include <cerrno>

#include "common/crc32c.h"

namespace sfs::oss {
namespace {

void Put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t Get32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

const uint8_t* Zeros() {
  static const std::vector<uint8_t> zeros(kCrcChunk);
  return zeros.data();
}

}  // namespace

uint32_t ChunkCrc(std::span<const uint8_t> bytes) {
  uint32_t c = crc32c::Value(bytes.data(), bytes.size());
  if (bytes.size() < kCrcChunk) c = crc32c::Extend(c, Zeros(), kCrcChunk - bytes.size());
  return c == 0 ? 1 : c;
}

uint32_t ZeroChunkValue() {
  static const uint32_t value = crc32c::Value(Zeros(), kCrcChunk);
  return value;
}

bool SlotMatches(uint32_t slot, uint32_t crc) {
  static const uint32_t zero_crc = ChunkCrc({});
  return slot == crc || (slot == 0 && crc == zero_crc);
}

Result<std::vector<CrcEntry>> CrcSidecar::Read(uint64_t first, uint64_t count) const {
  std::vector<uint8_t> raw(count * kCrcEntrySize);
  SFS_ASSIGN_OR_RETURN(uint64_t got, ReadAll(env_, fd_, raw, first * kCrcEntrySize));
  std::vector<CrcEntry> out(count);
  for (uint64_t i = 0; i < got / kCrcEntrySize; ++i) {
    out[i].stable = Get32(&raw[i * kCrcEntrySize]);
    out[i].pending = Get32(&raw[i * kCrcEntrySize + 4]);
  }
  return out;
}

Status CrcSidecar::Write(uint64_t first, std::span<const CrcEntry> entries) const {
  std::vector<uint8_t> raw(entries.size() * kCrcEntrySize);
  for (size_t i = 0; i < entries.size(); ++i) {
    Put32(&raw[i * kCrcEntrySize], entries[i].stable);
    Put32(&raw[i * kCrcEntrySize + 4], entries[i].pending);
  }
  Status st = WriteAll(env_, fd_, raw, first * kCrcEntrySize);
  if (!st.ok()) return Status::Errno(st.code(), "checksum sidecar: " + st.message());
  return st;
}

Status CrcSidecar::Truncate(uint64_t chunks) const {
  if (env_.Ftruncate(fd_, chunks * kCrcEntrySize) != 0) {
    return Status::FromErrno("ftruncate checksum sidecar");
  }
  return Status::Ok();
}

Status CrcSidecar::Sync() const {
  if (env_.Fdatasync(fd_) != 0) return Status::FromErrno("fdatasync checksum sidecar");
  return Status::Ok();
}

}  // namespace sfs::oss
