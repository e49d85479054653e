// EC write planning (ec_plan.h). O(rows + chunks touched); no I/O.
#include "client/lib/ec_plan.h"

#include <algorithm>
#include <cstring>

namespace sfs::client::ecplan {

std::vector<RowWrite> PlanWrite(const ec::Geometry& g, uint64_t off, uint64_t len) {
  std::vector<RowWrite> out;
  if (len == 0) return out;
  const uint64_t end = off + len, rb = g.row_bytes(), s = g.chunk_size;
  for (uint64_t row = off / rb; row * rb < end; ++row) {
    const uint64_t start = row * rb;
    RowWrite w;
    w.row = row;
    w.full = off <= start && end >= start + rb;
    w.col_begin = s;
    for (uint32_t c = 0; c < g.k; ++c) {
      const uint64_t lo = std::max(off, start + c * s), hi = std::min(end, start + (c + 1) * s);
      if (lo >= hi) continue;
      const uint64_t col = lo - start - c * s;
      w.parts.push_back({c, col, hi - lo, lo - off});
      w.col_begin = std::min(w.col_begin, col);
      w.col_end = std::max(w.col_end, col + (hi - lo));
    }
    out.push_back(std::move(w));
  }
  return out;
}

bool NeedsOld(const RowWrite& w, uint32_t chunk) {
  for (const RowWrite::Part& p : w.parts) {
    if (p.chunk == chunk) return p.col > w.col_begin || p.col + p.len < w.col_end;
  }
  return true;
}

void Overlay(const RowWrite& w, std::span<const uint8_t> buf,
             std::span<const std::span<uint8_t>> cols) {
  for (const RowWrite::Part& p : w.parts) {
    std::memcpy(cols[p.chunk].data() + (p.col - w.col_begin), buf.data() + p.buf_off, p.len);
  }
}

uint64_t KeptInLastRow(const ec::Geometry& g, uint64_t size, uint32_t chunk) {
  const uint64_t in_row = size % g.row_bytes(), start = uint64_t{chunk} * g.chunk_size;
  return in_row <= start ? 0 : std::min(g.chunk_size, in_row - start);
}

}  // namespace sfs::client::ecplan
