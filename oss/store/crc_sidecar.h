// The I/O of one object's crc sidecar, the file `<oid>.crc` beside the
// object file. Its format and the chunk crc are common/ondisk/chunk_crc.h,
// shared with the offline checker; the OSS uses them by their names here.
//
// Thread safety: a CrcSidecar is a view of a descriptor; concurrent calls on
// disjoint entry ranges are safe (positional I/O).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/ondisk/chunk_crc.h"
#include "common/status.h"
#include "oss/store/env.h"

namespace sfs::oss {

using ondisk::ChunkCeil;
using ondisk::ChunkCrc;
using ondisk::ChunkFloor;
using ondisk::ChunksFor;
using ondisk::CrcEntry;
using ondisk::kCrcChunk;
using ondisk::kCrcEntrySize;
using ondisk::SlotMatches;
using ondisk::WholeChunkCrc;
using ondisk::ZeroChunkValue;

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
