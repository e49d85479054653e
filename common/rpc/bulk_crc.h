// BulkCrc: the crc32c of each 4 KiB piece of a bulk buffer, and a frame's
// body crc folded from those pieces without reading the bytes again.
//
// Why: the OSS keeps a crc32c per 4 KiB chunk on disk (common/ondisk/chunk_crc.h)
// and the wire frame carries one crc32c over payload + bulk. Computing both
// read every byte of file data twice (a fifth of sfs-oss's samples after
// O_DIRECT took the page-cache copy away). With the pieces' crcs, the frame
// crc costs a table fold per 4 KiB: Extend(c, B) = Shift(c, |B|) ^ Value(B),
// where Shift(c, n) is the crc register after n zero bytes (linear in c).
//
// Pieces are counted from the start of the bulk; piece i covers bytes
// [i * kBulkCrcPiece, (i + 1) * kBulkCrcPiece), the last one maybe shorter.
//
// Thread-safe (pure functions; the shift table is built once).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace sfs::rpc {

inline constexpr size_t kBulkCrcPiece = 4096;

// How many pieces a bulk of n bytes has.
inline size_t BulkCrcPieces(size_t n) { return (n + kBulkCrcPiece - 1) / kBulkCrcPiece; }

// crc32c::Value of each piece of bulk.
std::vector<uint32_t> PieceCrcs(std::span<const uint8_t> bulk);

// crc32c::Extend(crc, bulk) from bulk's piece crcs and its length.
// REQUIRES: pieces.size() == BulkCrcPieces(bulk_len).
uint32_t ExtendByPieces(uint32_t crc, std::span<const uint32_t> pieces, size_t bulk_len);

// net::BodyCrc(payload, bulk) from bulk's piece crcs and its length.
// REQUIRES: pieces.size() == BulkCrcPieces(bulk_len).
uint32_t BodyCrcByPieces(std::span<const uint8_t> payload, std::span<const uint32_t> pieces,
                         size_t bulk_len);

// crc32c::Extend(crc, B) from value = crc32c::Value(B) and len = |B|, without
// B's bytes: Shift(crc, len) ^ value (a table fold per 4 KiB of len).
uint32_t ExtendByValue(uint32_t crc, uint32_t value, size_t len);

}  // namespace sfs::rpc
