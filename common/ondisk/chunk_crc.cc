// Chunk crcs and sidecar entry encoding (format in chunk_crc.h).
#include "common/ondisk/chunk_crc.h"

#include "common/crc32c.h"

namespace sfs::ondisk {
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

std::vector<uint8_t> EncodeCrcEntries(std::span<const CrcEntry> entries) {
  std::vector<uint8_t> raw(entries.size() * kCrcEntrySize);
  for (size_t i = 0; i < entries.size(); ++i) {
    Put32(&raw[i * kCrcEntrySize], entries[i].stable);
    Put32(&raw[i * kCrcEntrySize + 4], entries[i].pending);
  }
  return raw;
}

std::vector<CrcEntry> DecodeCrcEntries(std::span<const uint8_t> raw, uint64_t count) {
  std::vector<CrcEntry> out(count);
  for (uint64_t i = 0; i < count && (i + 1) * kCrcEntrySize <= raw.size(); ++i) {
    out[i].stable = Get32(&raw[i * kCrcEntrySize]);
    out[i].pending = Get32(&raw[i * kCrcEntrySize + 4]);
  }
  return out;
}

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

}  // namespace sfs::ondisk
