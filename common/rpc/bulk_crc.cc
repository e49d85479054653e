// BulkCrc: per-piece crcs and the fold (math in bulk_crc.h).
#include "common/rpc/bulk_crc.h"

#include <array>

#include "common/crc32c.h"

namespace sfs::rpc {
namespace {

const uint8_t* Zeros() {
  static const std::array<uint8_t, kBulkCrcPiece> zeros{};
  return zeros.data();
}

// The crc register r after n zero bytes (n <= kBulkCrcPiece). crc32c::Extend
// inverts on the way in and out: Extend(~r, zeros) = ~Shift(r, n).
uint32_t ShiftSlow(uint32_t r, size_t n) { return ~crc32c::Extend(~r, Zeros(), n); }

// Shift(r, kBulkCrcPiece) as four byte-indexed tables (the map is linear).
struct PieceShift {
  uint32_t t[4][256];
  PieceShift() {
    for (int k = 0; k < 4; ++k) {
      uint32_t basis[8];
      for (int b = 0; b < 8; ++b) basis[b] = ShiftSlow(uint32_t{1} << (8 * k + b), kBulkCrcPiece);
      for (uint32_t v = 0; v < 256; ++v) {
        uint32_t r = 0;
        for (int b = 0; b < 8; ++b) {
          if (v & (1u << b)) r ^= basis[b];
        }
        t[k][v] = r;
      }
    }
  }
  uint32_t Apply(uint32_t r) const {
    return t[0][r & 0xff] ^ t[1][(r >> 8) & 0xff] ^ t[2][(r >> 16) & 0xff] ^ t[3][r >> 24];
  }
};

}  // namespace

std::vector<uint32_t> PieceCrcs(std::span<const uint8_t> bulk) {
  std::vector<uint32_t> out(BulkCrcPieces(bulk.size()));
  for (size_t i = 0; i < out.size(); ++i) {
    std::span<const uint8_t> piece = bulk.subspan(i * kBulkCrcPiece);
    if (piece.size() > kBulkCrcPiece) piece = piece.first(kBulkCrcPiece);
    out[i] = crc32c::Value(piece.data(), piece.size());
  }
  return out;
}

uint32_t ExtendByPieces(uint32_t crc, std::span<const uint32_t> pieces, size_t bulk_len) {
  static const PieceShift shift;
  for (size_t i = 0; i < pieces.size(); ++i) {
    size_t len = bulk_len - i * kBulkCrcPiece;
    if (len >= kBulkCrcPiece) {
      crc = shift.Apply(crc) ^ pieces[i];
    } else {
      crc = ShiftSlow(crc, len) ^ pieces[i];
    }
  }
  return crc;
}

}  // namespace sfs::rpc
