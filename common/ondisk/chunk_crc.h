// The on-disk checksums of one object: the format of its crc sidecar (the
// file `<oid>.crc` beside the object file, ost_dir.h) and the crc of one
// chunk of object data. The OSS writes them (oss/store/crc_sidecar.h does
// the I/O, oss/store/checked_object.h the update protocol); the offline
// checker (tools/fsck) verifies objects against them.
//
// Format: an array of 8-byte entries, entry i at byte 8*i describing chunk i
// (object bytes [i*kCrcChunk, (i+1)*kCrcChunk)); each entry is two
// little-endian uint32 slots, `stable` then `pending`. A slot holds
// ChunkCrc() of the chunk's bytes (bytes past the object's end count as
// zeros), or 0, meaning "the chunk is all zeros" (a hole, never written).
// Entries past the sidecar's end read as {0, 0}. A chunk verifies iff its
// data matches either slot; both slots are equal except while a mutation of
// the chunk is in flight.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace sfs::ondisk {

inline constexpr uint64_t kCrcChunk = 4096;
inline constexpr uint64_t kCrcEntrySize = 8;

struct CrcEntry {
  uint32_t stable = 0;
  uint32_t pending = 0;
};

// The sidecar bytes of entries, in order.
std::vector<uint8_t> EncodeCrcEntries(std::span<const CrcEntry> entries);
// count entries from raw, the bytes a sidecar holds from some entry on (fewer
// if the file ends first): entries past raw's end are {0, 0}.
std::vector<CrcEntry> DecodeCrcEntries(std::span<const uint8_t> raw, uint64_t count);

// The crc of a chunk whose bytes are `bytes` followed by zeros up to
// kCrcChunk. Never 0 (0 is reserved for holes). REQUIRES: bytes.size() <= kCrcChunk.
uint32_t ChunkCrc(std::span<const uint8_t> bytes);

// ChunkCrc() of a whole chunk whose plain crc32c is value.
inline uint32_t WholeChunkCrc(uint32_t value) { return value == 0 ? 1 : value; }

// True iff a chunk whose ChunkCrc() is crc matches the slot value.
bool SlotMatches(uint32_t slot, uint32_t crc);

// Number of chunks that hold bytes [0, size).
inline uint64_t ChunksFor(uint64_t size) { return (size + kCrcChunk - 1) / kCrcChunk; }

// v rounded down / up to a chunk boundary.
inline uint64_t ChunkFloor(uint64_t v) { return v / kCrcChunk * kCrcChunk; }
inline uint64_t ChunkCeil(uint64_t v) { return ChunksFor(v) * kCrcChunk; }

// The plain crc32c of a whole chunk of zeros (a hole's bytes).
uint32_t ZeroChunkValue();

}  // namespace sfs::ondisk
