// EC geometry. Every function is O(1) or O(chunks touched).
#include "common/ec/ec_geometry.h"

#include <algorithm>
#include <string>

namespace sfs::ec {

Status Validate(const Geometry& g) {
  if (g.chunk_size == 0) return Status::Errno(EINVAL, "EC chunk size must be > 0");
  if (g.k < 1 || g.m < 1 || g.k + g.m > 32) {
    return Status::Errno(EINVAL, "EC " + std::to_string(g.k) + "+" + std::to_string(g.m) +
                                     ": need K >= 1, M >= 1, K+M <= 32");
  }
  return Status::Ok();
}

uint32_t ObjectOf(const Geometry& g, uint64_t row, uint32_t chunk) {
  return static_cast<uint32_t>((chunk + row % g.width()) % g.width());
}

uint32_t ChunkOf(const Geometry& g, uint64_t row, uint32_t object) {
  uint32_t n = g.width();
  return static_cast<uint32_t>((object + n - row % n) % n);
}

std::vector<uint32_t> RowObjects(const Geometry& g, uint64_t row) {
  std::vector<uint32_t> out(g.width());
  for (uint32_t c = 0; c < g.width(); ++c) out[c] = ObjectOf(g, row, c);
  return out;
}

Location Locate(const Geometry& g, uint64_t off) {
  Location l;
  uint64_t unit = off / g.chunk_size;
  l.row = unit / g.k;
  l.chunk = static_cast<uint32_t>(unit % g.k);
  l.object = ObjectOf(g, l.row, l.chunk);
  l.obj_offset = l.row * g.chunk_size + off % g.chunk_size;
  return l;
}

std::optional<uint64_t> FileOffset(const Geometry& g, uint32_t object, uint64_t obj_offset) {
  uint64_t row = obj_offset / g.chunk_size;
  uint32_t chunk = ChunkOf(g, row, object);
  if (chunk >= g.k) return std::nullopt;
  return row * g.row_bytes() + uint64_t{chunk} * g.chunk_size + obj_offset % g.chunk_size;
}

uint64_t RowCount(const Geometry& g, uint64_t file_size) {
  return file_size / g.row_bytes() + (file_size % g.row_bytes() != 0);
}

uint64_t ChunkLength(const Geometry& g, uint64_t row, uint32_t chunk, uint64_t file_size) {
  uint64_t start = row * g.row_bytes();
  if (file_size <= start) return 0;
  uint64_t in_row = std::min(file_size - start, g.row_bytes());
  uint64_t chunk_start = chunk < g.k ? uint64_t{chunk} * g.chunk_size : 0;
  if (in_row <= chunk_start) return 0;
  return std::min(g.chunk_size, in_row - chunk_start);
}

uint64_t ObjectSize(const Geometry& g, uint32_t object, uint64_t file_size) {
  uint64_t rows = RowCount(g, file_size);
  if (rows == 0) return 0;
  uint64_t last = rows - 1;
  return last * g.chunk_size + ChunkLength(g, last, ChunkOf(g, last, object), file_size);
}

std::vector<Extent> MapRange(const Geometry& g, uint64_t off, uint64_t len) {
  std::vector<Extent> out;
  uint64_t end = off + len;
  while (off < end) {
    Location l = Locate(g, off);
    uint64_t n = std::min(g.chunk_size - off % g.chunk_size, end - off);
    out.push_back({l.row, l.chunk, l.object, l.obj_offset, off, n});
    off += n;
  }
  return out;
}

namespace {

// The write [off, end) supplies every byte of `row` that may hold data: the
// bytes of the row below old_size (the rest are holes, zeros, or written now).
bool RowFull(const Geometry& g, uint64_t row, uint64_t off, uint64_t end, uint64_t old_size) {
  uint64_t start = row * g.row_bytes();
  uint64_t hi = std::min(start + g.row_bytes(), old_size);
  return hi <= start || (off <= start && end >= hi);
}

}  // namespace

RowRange ClassifyRange(const Geometry& g, uint64_t off, uint64_t len, uint64_t old_size) {
  RowRange r;
  if (len == 0) return r;
  uint64_t end = off + len;
  r.first = off / g.row_bytes();
  r.end = (end - 1) / g.row_bytes() + 1;
  bool head_full = RowFull(g, r.first, off, end, old_size);
  bool tail_full = r.end - 1 == r.first ? head_full : RowFull(g, r.end - 1, off, end, old_size);
  r.head_partial = !head_full;
  r.tail_partial = r.end - 1 != r.first && !tail_full;
  // Rows strictly inside the range are always full.
  r.full_first = head_full ? r.first : r.first + 1;
  r.full_end = tail_full ? r.end : r.end - 1;
  if (r.full_end < r.full_first) r.full_end = r.full_first;
  return r;
}

}  // namespace sfs::ec
