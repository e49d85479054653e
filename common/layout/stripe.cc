// Stripe math. Every function is O(stripe units touched) or O(1).
#include "common/layout/stripe.h"

#include <algorithm>

namespace sfs::layout {

std::vector<Extent> MapRange(const Geometry& g, uint64_t off, uint64_t len) {
  std::vector<Extent> out;
  uint64_t end = off + len;
  while (off < end) {
    uint64_t unit = off / g.stripe_size;
    uint64_t in_unit = off % g.stripe_size;
    uint64_t n = std::min(g.stripe_size - in_unit, end - off);
    Extent e;
    e.stripe = static_cast<uint32_t>(unit % g.stripe_count);
    e.obj_offset = (unit / g.stripe_count) * g.stripe_size + in_unit;
    e.file_offset = off;
    e.length = n;
    out.push_back(e);
    off += n;
  }
  return out;
}

uint64_t FileOffset(const Geometry& g, uint32_t stripe, uint64_t obj_offset) {
  uint64_t row = obj_offset / g.stripe_size;
  return (row * g.stripe_count + stripe) * g.stripe_size + obj_offset % g.stripe_size;
}

uint64_t ObjectSize(const Geometry& g, uint32_t stripe, uint64_t file_size) {
  uint64_t row_bytes = g.stripe_size * g.stripe_count;
  uint64_t full_rows = file_size / row_bytes;
  uint64_t rem = file_size % row_bytes;
  uint64_t size = full_rows * g.stripe_size;
  uint64_t start = static_cast<uint64_t>(stripe) * g.stripe_size;
  if (rem > start) size += std::min(g.stripe_size, rem - start);
  return size;
}

uint64_t FileSizeFromObject(const Geometry& g, uint32_t stripe, uint64_t obj_size) {
  if (obj_size == 0) return 0;
  return FileOffset(g, stripe, obj_size - 1) + 1;
}

}  // namespace sfs::layout
