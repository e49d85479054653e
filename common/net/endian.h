// Little-endian packing of fixed-width integers, as every StripeFS wire
// format uses it (frame header, RDMA bulk descriptors). Explicit byte moves,
// so no layout depends on struct padding or host byte order.
#pragma once

#include <cstdint>

namespace sfs::net {

inline void Put16(uint8_t* p, uint16_t v) { p[0] = v; p[1] = v >> 8; }
inline void Put32(uint8_t* p, uint32_t v) { for (int i = 0; i < 4; ++i) p[i] = v >> (8 * i); }
inline void Put64(uint8_t* p, uint64_t v) { for (int i = 0; i < 8; ++i) p[i] = v >> (8 * i); }
inline uint16_t Get16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
inline uint32_t Get32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
inline uint64_t Get64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace sfs::net
