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

// Shift(r, n) for the short last piece (n < kBulkCrcPiece). crc32c::Extend
// inverts on the way in and out: Extend(~r, zeros) = ~Shift(r, n).
uint32_t ShiftSlow(uint32_t r, size_t n) { return ~crc32c::Extend(~r, Zeros(), n); }

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
  static const crc32c::ZeroShift shift(kBulkCrcPiece);
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

uint32_t ExtendByValue(uint32_t crc, uint32_t value, size_t len) {
  constexpr size_t kBig = 64 * kBulkCrcPiece;  // 16 steps per MiB instead of 256
  static const crc32c::ZeroShift big(kBig);
  static const crc32c::ZeroShift piece(kBulkCrcPiece);
  for (; len >= kBig; len -= kBig) crc = big.Apply(crc);
  for (; len >= kBulkCrcPiece; len -= kBulkCrcPiece) crc = piece.Apply(crc);
  return (len > 0 ? ShiftSlow(crc, len) : crc) ^ value;
}

uint32_t BodyCrcByPieces(std::span<const uint8_t> payload, std::span<const uint32_t> pieces,
                         size_t bulk_len) {
  return ExtendByPieces(crc32c::Value(payload.data(), payload.size()), pieces, bulk_len);
}

}  // namespace sfs::rpc
