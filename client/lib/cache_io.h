// Reads through the client cache (data_cache.h): the glue between a File,
// the Striper and the DataCache, used by Client::Read and the prefetcher.
#pragma once

#include <cstdint>
#include <span>

#include "client/lib/client.h"
#include "client/lib/data_cache.h"
#include "client/lib/io.h"

namespace sfs::client {

// Reads [off, off + buf.size()) of f, which is size bytes long at its data
// version (REQUIRES: within it): held blocks are copied out, each run of
// missing blocks is one striped read (all its stripes in parallel) into a
// buffer that becomes those blocks, then kept.
Status CachedRead(DataCache& cache, Striper& striper, const File& f, uint64_t size, uint64_t off,
                  std::span<uint8_t> buf);

// Brings the blocks of [off, end) of f into the cache (a prefetch): as
// CachedRead without a reader's buffer, counting no hits or misses.
Status CacheFill(DataCache& cache, Striper& striper, const File& f, uint64_t size, uint64_t off,
                 uint64_t end);

// The data version an open of an inode gives out, from the version its
// attributes show (lookup, readdir) and the MDS's boot epoch: the open puts
// the epoch in the top bits (mds/namespace/create_open.cc, RegisterOpen),
// and blocks are keyed by what the open gave.
constexpr int kVersionEpochShift = 40;
inline uint64_t OpenedVersion(uint64_t inode_version, uint64_t boot_epoch) {
  return (boot_epoch << kVersionEpochShift) |
         (inode_version & ((uint64_t{1} << kVersionEpochShift) - 1));
}

// Bytes of [off, end) of f's blocks that the cache neither holds nor is
// fetching.
uint64_t MissingBytes(DataCache& cache, const File& f, uint64_t size, uint64_t off, uint64_t end);
// The same for inode ino at data version `version`, without an open.
uint64_t MissingBytes(DataCache& cache, uint64_t ino, uint64_t version, uint64_t size,
                      uint64_t off, uint64_t end);

}  // namespace sfs::client
