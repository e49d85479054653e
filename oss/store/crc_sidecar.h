// The on-disk checksums of one object: the sidecar file `<oid>.crc` beside
// the object file, and the crc of one chunk of object data.
//
// Format: an array of 8-byte entries, entry i at byte 8*i describing chunk i
// (object bytes [i*kCrcChunk, (i+1)*kCrcChunk)); each entry is two
// little-endian uint32 slots, `stable` then `pending`. A slot holds
// ChunkCrc() of the chunk's bytes (bytes past the object's end count as
// zeros), or 0, meaning "the chunk is all zeros" (a hole, never written).
// Entries past the sidecar's end read as {0, 0}. A chunk verifies iff its
// data matches either slot; both slots are equal except while a mutation of
// the chunk is in flight (see checked_object.h for the protocol).
//
// Thread safety: a CrcSidecar is a view of a descriptor; concurrent calls on
// disjoint entry ranges are safe (positional I/O).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/status.h"
#include "oss/store/env.h"

namespace sfs::oss {

inline constexpr uint64_t kCrcChunk = 4096;
inline constexpr uint64_t kCrcEntrySize = 8;

struct CrcEntry {
  uint32_t stable = 0;
  uint32_t pending = 0;
};

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

class CrcSidecar {
 public:
  // REQUIRES: env and fd outlive this view.
  CrcSidecar(Env& env, int fd) : env_(env), fd_(fd) {}

  // Entries [first, first + count); those past the file's end are {0, 0}.
  Result<std::vector<CrcEntry>> Read(uint64_t first, uint64_t count) const;
  Status Write(uint64_t first, std::span<const CrcEntry> entries) const;
  // Keeps exactly the entries of chunks [0, chunks).
  Status Truncate(uint64_t chunks) const;
  Status Sync() const;

 private:
  Env& env_;
  const int fd_;
};

}  // namespace sfs::oss
