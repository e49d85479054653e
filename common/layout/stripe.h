// Stripe math (RAID-0 across objects) as pure functions.
//
// Byte `off` of a file lives in stripe s = (off / stripe_size) % stripe_count,
// at object offset (off / (stripe_size * stripe_count)) * stripe_size + off % stripe_size.
#pragma once

#include <cstdint>
#include <vector>

namespace sfs::layout {

struct Geometry {
  uint64_t stripe_size = 1 << 20;  // REQUIRES: > 0
  uint32_t stripe_count = 1;       // REQUIRES: > 0
};

// One contiguous piece of a file range that lies in a single stripe unit.
struct Extent {
  uint32_t stripe = 0;       // stripe index in the layout
  uint64_t obj_offset = 0;   // offset inside that stripe's object
  uint64_t file_offset = 0;  // offset in the file
  uint64_t length = 0;
};

// Splits [off, off + len) into extents, one per stripe unit touched, in file order.
std::vector<Extent> MapRange(const Geometry& g, uint64_t off, uint64_t len);

// File offset of byte obj_offset of stripe `stripe`'s object.
uint64_t FileOffset(const Geometry& g, uint32_t stripe, uint64_t obj_offset);

// Size the object of `stripe` has when the file is exactly file_size bytes long.
uint64_t ObjectSize(const Geometry& g, uint32_t stripe, uint64_t file_size);

// File size implied by an object of `stripe` holding obj_size bytes (0 if obj_size is 0).
uint64_t FileSizeFromObject(const Geometry& g, uint32_t stripe, uint64_t obj_size);

}  // namespace sfs::layout
