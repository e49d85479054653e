// CRC-32C (Castagnoli), as used by iSCSI/ext4/LevelDB. Uses the SSE4.2 crc32
// instruction when the CPU has it, a table otherwise. Extend() chains.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sfs::crc32c {

uint32_t Extend(uint32_t crc, const void* data, size_t n);
inline uint32_t Value(const void* data, size_t n) { return Extend(0, data, n); }

// The CRC register is linear: Extend(c, B) == Shift(c, |B|) ^ Value(B), where
// Shift(r, n) is the register r after n zero bytes. ZeroShift is Shift for
// one fixed n, kept as four tables of 256 entries (one per byte of r), so
// crcs of consecutive blocks combine without reading the bytes again.
class ZeroShift {
 public:
  explicit ZeroShift(size_t n);
  uint32_t Apply(uint32_t r) const {
    return t_[0][r & 0xff] ^ t_[1][(r >> 8) & 0xff] ^ t_[2][(r >> 16) & 0xff] ^ t_[3][r >> 24];
  }

 private:
  uint32_t t_[4][256];
};

}  // namespace sfs::crc32c
