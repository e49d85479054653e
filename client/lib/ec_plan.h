// Write planning for erasure-coded files, as pure functions over the EC
// geometry (common/ec/ec_geometry.h): which rows a write covers whole, and
// for the others which byte columns it touches and which old chunk bytes a
// read-modify-write needs. ec_io.cc runs the plans; ec_plan_test.cc checks
// the mapping and the parity math.
//
// Columns: byte x of every chunk of a row (x < chunk_size) is column x.
// Reed-Solomon works column by column (parity[x] depends only on the data
// chunks' bytes x), so a partial write recomputes parity over the columns
// it touches only, from the row's old bytes in those columns with the new
// ones laid over them, and leaves the other columns' parity as it was.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/ec/ec_geometry.h"

namespace sfs::client::ecplan {

// The part of a write that lands in one row.
struct RowWrite {
  uint64_t row = 0;
  bool full = false;  // supplies every byte of the row: encoded from the write alone
  uint64_t col_begin = 0, col_end = 0;  // columns touched, [col_begin, col_end)
  // The new bytes of one data chunk: columns [col, col + len) of `chunk`,
  // from the write's buffer at buf_off. At most one per chunk, in chunk order.
  struct Part {
    uint32_t chunk = 0;
    uint64_t col = 0;
    uint64_t len = 0;
    uint64_t buf_off = 0;
  };
  std::vector<Part> parts;

  uint64_t width() const { return col_end - col_begin; }
};

// One RowWrite per row that [off, off + len) touches, in row order.
// REQUIRES: off + len does not overflow.
std::vector<RowWrite> PlanWrite(const ec::Geometry& g, uint64_t off, uint64_t len);

// True iff a read-modify-write of w needs data chunk `chunk`'s old bytes in
// w's columns: the write does not replace all of them.
bool NeedsOld(const RowWrite& w, uint32_t chunk);

// Lays w's new bytes (from buf, the whole write's buffer) over cols, where
// cols[c] holds data chunk c's bytes of w's columns (k spans of w.width()).
void Overlay(const RowWrite& w, std::span<const uint8_t> buf,
             std::span<const std::span<uint8_t>> cols);

// Bytes of data chunk `chunk` that remain in the last row of a file cut to
// `size` (the rest of that row reads as zeros): clamp(L - chunk*S, 0, S).
uint64_t KeptInLastRow(const ec::Geometry& g, uint64_t size, uint32_t chunk);

}  // namespace sfs::client::ecplan
