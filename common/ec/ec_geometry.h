// Erasure-coded stripe geometry as pure functions (the EC counterpart of
// common/layout/stripe.h). docs/redundancy.md draws the picture.
//
// A file is cut into rows of K data chunks of S bytes each (row r holds file
// bytes [r*K*S, (r+1)*K*S)); each row gets M parity chunks. A layout has
// N = K+M objects, and every object holds exactly one chunk of every row, at
// object offset r*S. Which object holds which chunk rotates by one per row,
// as RAID-5/6 rotate parity:
//
//   object(row r, chunk c) = (c + r) mod N      c < K: data, c >= K: parity
//
// so every object carries data K/N of the time and parity M/N of the time:
// healthy reads use all N servers (not only K) and partial-stripe parity
// updates do not all land on the same M servers.
//
// The last row of a file may be short: data chunk j holds
// clamp(L - j*S, 0, S) bytes where L is the file's bytes in that row, and each
// parity chunk is as long as the longest data chunk (chunk 0), computed over
// the data zero-padded to that length.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "common/status.h"

namespace sfs::ec {

struct Geometry {
  uint64_t chunk_size = 1 << 20;  // S; REQUIRES: > 0
  uint32_t k = 4;                 // data chunks per row; REQUIRES: >= 1
  uint32_t m = 2;                 // parity chunks per row; REQUIRES: >= 1, k + m <= 32

  uint32_t width() const { return k + m; }
  uint64_t row_bytes() const { return chunk_size * k; }
};

// EINVAL with a one-line reason unless g meets the REQUIREs above.
Status Validate(const Geometry& g);

// Where file byte `off` lives.
struct Location {
  uint64_t row = 0;
  uint32_t chunk = 0;        // data chunk index in the row, < k
  uint32_t object = 0;       // object index in the layout, < k + m
  uint64_t obj_offset = 0;   // offset inside that object
};
Location Locate(const Geometry& g, uint64_t off);

// The object that holds chunk `chunk` (< k + m) of row `row`, and the inverse.
uint32_t ObjectOf(const Geometry& g, uint64_t row, uint32_t chunk);
uint32_t ChunkOf(const Geometry& g, uint64_t row, uint32_t object);
// objects[c] = ObjectOf(g, row, c) for every chunk c of the row: the first k
// entries hold data chunks 0..k-1, the last m parity chunks 0..m-1.
std::vector<uint32_t> RowObjects(const Geometry& g, uint64_t row);

// File offset of byte obj_offset of `object`, or nullopt when that byte is
// parity (it has no file offset).
std::optional<uint64_t> FileOffset(const Geometry& g, uint32_t object, uint64_t obj_offset);

// Rows a file of file_size bytes has (the last possibly short).
uint64_t RowCount(const Geometry& g, uint64_t file_size);
// Bytes of chunk `chunk` of row `row` that exist in a file of file_size bytes
// (parity: the longest data chunk of the row).
uint64_t ChunkLength(const Geometry& g, uint64_t row, uint32_t chunk, uint64_t file_size);
// Size object `object` has when the file is exactly file_size bytes long.
uint64_t ObjectSize(const Geometry& g, uint32_t object, uint64_t file_size);

// Ranges below: REQUIRES off + len does not overflow uint64_t (callers bound
// file offsets far below that: libsfs answers EFBIG past its largest file).

// One piece of a file range inside a single data chunk, in file order.
struct Extent {
  uint64_t row = 0;
  uint32_t chunk = 0;       // data chunk index, < k
  uint32_t object = 0;
  uint64_t obj_offset = 0;
  uint64_t file_offset = 0;
  uint64_t length = 0;
};
std::vector<Extent> MapRange(const Geometry& g, uint64_t off, uint64_t len);

inline constexpr uint64_t kUnknownSize = std::numeric_limits<uint64_t>::max();

// How a write of [off, off + len) meets the rows. A row is *full* when the
// write supplies every byte of it that can hold data: all of it, or, given the
// file's size before the write (old_size), every byte of the row below old_size
// (bytes at or past old_size are holes, i.e. zeros, and need no read). Full rows
// are encoded from the write alone; partial rows need the rest of the row
// (read-modify-write) or another protocol.
struct RowRange {
  uint64_t first = 0, end = 0;            // rows touched: [first, end); empty if len == 0
  uint64_t full_first = 0, full_end = 0;  // full rows: [full_first, full_end), contiguous
  bool head_partial = false;              // row `first` is touched but not full
  bool tail_partial = false;              // row `end - 1` (!= first) is touched but not full
};
RowRange ClassifyRange(const Geometry& g, uint64_t off, uint64_t len,
                       uint64_t old_size = kUnknownSize);

}  // namespace sfs::ec
