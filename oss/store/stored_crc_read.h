// ReadWithStoredCrc: a read of a checksummed object for a client that checks
// the bytes end to end, whose crc32c comes from the sidecar instead of from
// the bytes.
//
// Why: after O_DIRECT took the page-cache copy away, the OSS's one pass over
// the data of a cold read was the crc32c that verified each chunk and gave the
// frame crc (~8 % of its samples, docs/benchmarks.md pass 3). The client
// checks the frame crc anyway. So for a read it asks for with client_checks,
// the OSS folds the bulk's crc from the stored crcs of the whole chunks in the
// middle of the range (a 4 KiB table step each) and does not read those bytes
// with its CPU at all: they go from the disk (O_DIRECT when not cached) to the
// pooled buffer to the socket. A chunk that rotted on disk then no longer
// matches the frame crc, so the client sees it; it asks again without
// client_checks, and the OSS's verified read fails with EIO naming the chunk
// (docs/durability.md). The partly requested chunk at each end is read whole
// into a bounce buffer and verified here, as CheckedObject::Read does: its crc
// is of bytes not all sent, so it cannot vouch for them.
//
// Falls back (ENOTSUP, before reading any data: the caller then reads the
// verified way) when the range is short (< kDirectMin), a middle chunk is
// mid-mutation (its two slots differ) or its stored crc is 1 (which stands
// for a plain crc32c of 0 or 1), or an end chunk fails its check. A write
// racing with the read can make the bytes differ from the crc; the client's
// check catches that too, and its verified retry reads under the range lock.
//
// Thread safety: as CheckedObject::Read (no lock; positional I/O).
#pragma once

#include <cstdint>
#include <span>

#include "common/status.h"
#include "oss/store/crc_sidecar.h"
#include "oss/store/env.h"

namespace sfs::oss {

// Fills dest with the object's bytes [off, off + dest.size()) (zeros past the
// end) like CheckedObject::Read, and sets *value to the crc32c of dest as
// filled, taken from the stored crcs; returns the bytes that exist there.
// direct_fd: the O_DIRECT twin of data_fd, or -1 (direct_io.h).
Result<uint64_t> ReadWithStoredCrc(Env& env, int data_fd, int direct_fd, const CrcSidecar& crc,
                                   uint64_t off, std::span<uint8_t> dest, uint32_t* value);

// The crc32c of the object's bytes [off, end), to send them from the file
// without reading them here (ObjectStore::OpenCachedRange): the whole chunks'
// crcs folded from the stored ones, the partly covered chunk at each end read
// and checked as above. ENOTSUP as ReadWithStoredCrc (a chunk being changed,
// an ambiguous stored crc, an end chunk failing its check).
// REQUIRES: off <= end <= size, the object's size.
Result<uint32_t> StoredCrcOfRange(Env& env, int data_fd, const CrcSidecar& crc, uint64_t size,
                                  uint64_t off, uint64_t end);

}  // namespace sfs::oss
