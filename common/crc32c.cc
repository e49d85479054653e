// CRC-32C: hardware path (crc32q, three independent chains on long inputs,
// about 8 bytes/cycle) and a portable table path.
#include "common/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <nmmintrin.h>
#endif

namespace sfs::crc32c {
namespace {

constexpr uint32_t kPoly = 0x82F63B78u;  // reflected Castagnoli polynomial

std::array<uint32_t, 256> MakeTable() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
    t[i] = c;
  }
  return t;
}

const std::array<uint32_t, 256>& Table() {
  static const std::array<uint32_t, 256> table = MakeTable();
  return table;
}

uint32_t ExtendPortable(uint32_t crc, const uint8_t* p, size_t n) {
  const std::array<uint32_t, 256>& table = Table();
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

#if defined(__x86_64__)
// crc32q has a latency of 3 cycles but issues every cycle, so one dependent
// chain runs at a third of the instruction's throughput. Long inputs are cut
// into three equal blocks whose crcs run as independent chains and are then
// combined with ZeroShift (crc32c.h).
// Block lengths of one three-way round: long for bulk data, short so that a
// 4 KiB OSS chunk (4080 = 3 x 1360) still takes the parallel path.
constexpr size_t kLongBlock = 8192;
constexpr size_t kShortBlock = 1360;

// Runs three chains over p[0, 3 * kBlock) from register c; returns the register.
template <size_t kBlock>
__attribute__((target("sse4.2"))) uint64_t Round3(uint64_t c, const uint8_t* p,
                                                 const ZeroShift& shift) {
  uint64_t c1 = 0, c2 = 0;
  const uint8_t* p1 = p + kBlock;
  const uint8_t* p2 = p + 2 * kBlock;
  for (size_t i = 0; i < kBlock; i += 8) {
    uint64_t v0, v1, v2;
    std::memcpy(&v0, p + i, 8);
    std::memcpy(&v1, p1 + i, 8);
    std::memcpy(&v2, p2 + i, 8);
    c = _mm_crc32_u64(c, v0);
    c1 = _mm_crc32_u64(c1, v1);
    c2 = _mm_crc32_u64(c2, v2);
  }
  uint32_t r = shift.Apply(static_cast<uint32_t>(c)) ^ static_cast<uint32_t>(c1);
  return shift.Apply(r) ^ static_cast<uint32_t>(c2);
}

__attribute__((target("sse4.2"))) uint32_t ExtendHw(uint32_t crc, const uint8_t* p, size_t n) {
  static const ZeroShift long_shift(kLongBlock);
  static const ZeroShift short_shift(kShortBlock);
  uint64_t c = static_cast<uint32_t>(~crc);
  for (; n >= 3 * kLongBlock; p += 3 * kLongBlock, n -= 3 * kLongBlock) {
    c = Round3<kLongBlock>(c, p, long_shift);
  }
  for (; n >= 3 * kShortBlock; p += 3 * kShortBlock, n -= 3 * kShortBlock) {
    c = Round3<kShortBlock>(c, p, short_shift);
  }
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c = _mm_crc32_u64(c, v);
    p += 8;
    n -= 8;
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  while (n > 0) {
    c32 = _mm_crc32_u8(c32, *p++);
    --n;
  }
  return ~c32;
}

bool HaveSse42() {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  return (c & bit_SSE4_2) != 0;
}
#endif

}  // namespace

ZeroShift::ZeroShift(size_t n) {
  // The image of each bit of r, by the portable table (no instruction needed).
  const std::array<uint32_t, 256>& table = Table();
  uint32_t basis[32];
  for (int b = 0; b < 32; ++b) {
    uint32_t r = uint32_t{1} << b;
    for (size_t i = 0; i < n; ++i) r = table[r & 0xff] ^ (r >> 8);
    basis[b] = r;
  }
  for (int k = 0; k < 4; ++k) {
    for (uint32_t v = 0; v < 256; ++v) {
      uint32_t r = 0;
      for (int b = 0; b < 8; ++b) {
        if (v & (1u << b)) r ^= basis[8 * k + b];
      }
      t_[k][v] = r;
    }
  }
}

uint32_t Extend(uint32_t crc, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
#if defined(__x86_64__)
  static const bool hw = HaveSse42();
  if (hw) return ExtendHw(crc, p, n);
#endif
  return ExtendPortable(crc, p, n);
}

}  // namespace sfs::crc32c
