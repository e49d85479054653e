// ObjectStore: the objects of one OST, as the OSS service sees them.
//
// An object is a sparse byte array named by a 64-bit object id. It comes into
// being on its first Write or Truncate; reading, punching, stat-ing, syncing or
// destroying an object that was never written is not an error (it reads as
// zeros, stats as !exists, and the rest are no-ops). Errors are POSIX errnos
// in a Status: a full disk is ENOSPC and a failing one EIO, never a crash.
//
// Destroyed objects: Destroy leaves a tombstone, and every later operation on
// that object id but Destroy (Read, Write, Truncate, Punch, Stat, Sync) fails
// with ESTALE instead of reading zeros or re-creating an object nobody would
// ever free. A client that kept an old layout (its opens were dropped, or the
// file was destroyed under it) thus gets an error, never wrong data.
// Tombstones are persistent (they survive a restart of the OSS and, once
// Destroy returned, a crash of its machine) and are removed by
// ExpireTombstones once older than the OSS's --tombstone-ttl-s. Why a bounded
// life is enough, and why the tombstone never hides a live object (object ids
// are never reused), is in docs/formats.md ("Tombstones").
//
// Thread safety: every method may be called concurrently from many threads.
// Concurrent writes to disjoint ranges of one object never disturb each other;
// overlapping concurrent writes leave each byte from one of the writers.
//
// The file-backed implementation keeps each object as a file
// `<ost>/objects/<oid % 256 as 2 hex digits>/<oid as 16 hex digits>`
// (common/ondisk/ost_dir.h spells these paths for everyone), a
// tombstone as an empty file `<ost>/tombstones/<oid as 16 hex digits>.gone`
// (all in one directory, so a batch of destroys costs one fsync), and the
// OST's identity in `<ost>/ost_uuid` (32 hex digits, created on first open).
//
// End-to-end integrity on disk: with checksums on (the default) each object
// created gets a sidecar `<oid as 16 hex digits>.crc` holding a crc32c per
// 4 KiB chunk (format in common/ondisk/chunk_crc.h, protocol in checked_object.h). A read
// that meets a chunk not matching its crc fails with EIO and logs the object
// and offset; it never returns the bad bytes. Objects without a sidecar
// (created with checksums off) are read and written unchecked; a store opened
// with checksums off removes an object's sidecar when it first opens it, so a
// later checksummed store never sees stale crcs.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"

namespace sfs::oss {

struct ObjectAttr {
  bool exists = false;
  uint64_t size = 0;
  uint64_t blocks = 0;  // 512-byte blocks actually allocated (st_blocks)
};

struct OstSpace {
  uint64_t total_bytes = 0;
  uint64_t free_bytes = 0;
  uint64_t avail_bytes = 0;  // free to an unprivileged user
  uint64_t total_inodes = 0;
  uint64_t free_inodes = 0;
};

// A range of an object's file to send as it is (ObjectStore::OpenCachedRange).
struct CachedRange {
  std::shared_ptr<const void> owner;  // keeps fd open while the range is sent
  int fd = -1;
  uint64_t offset = 0;
  uint64_t length = 0;
  uint32_t crc = 0;  // crc32c of the range's bytes, as the store vouches for them
};

class ObjectStore {
 public:
  virtual ~ObjectStore() = default;

  // The OST's stable identity (32 lowercase hex digits).
  virtual const std::string& uuid() const = 0;

  // Fills dest with the object's bytes [off, off + dest.size()). Returns how many
  // bytes exist there (up to the object's end); the rest of dest is zero-filled.
  // Holes read as zeros; a missing object reads as all zeros and returns 0.
  // piece_crcs, if not null, is set to the crc32c of each 4 KiB piece of dest
  // as filled (rpc/bulk_crc.h) when the store computed them anyway (checksums
  // on, off 4 KiB-aligned), else left empty.
  virtual Result<uint64_t> Read(uint64_t oid, uint64_t off, std::span<uint8_t> dest,
                                std::vector<uint32_t>* piece_crcs = nullptr) = 0;

  // Read, for a client that checks the bytes end to end (stored_crc_read.h):
  // sets *value to the crc32c of dest as filled, taken from the stored chunk
  // crcs, and verifies only the partly covered chunks at the ends. ENOTSUP
  // (before reading data) when it cannot: no stored crcs, a missing object, a
  // short range, a chunk being changed; the caller then uses Read.
  virtual Result<uint64_t> ReadWithStoredCrc(uint64_t /*oid*/, uint64_t /*off*/,
                                             std::span<uint8_t> /*dest*/, uint32_t* /*value*/) {
    return Status::Errno(ENOTSUP, "no stored crcs");
  }

  // For a client that checks the bytes end to end, a read to answer by
  // sendfile (rpc::FileBulk): the object's bytes [off, min(off + len, size))
  // as a range of its open file, with their crc32c from the stored chunk crcs
  // (StoredCrcOfRange: only the partly covered end chunks are read, and
  // checked). The reply carries just those bytes; the rest of the read is
  // zeros by the protocol. ENOTSUP (the caller reads) unless the object is
  // checksummed, smaller than kDirectReadMinObject (larger ones keep the
  // direct path), has bytes there, len >= kDirectMin (a shorter copy costs
  // less than the probes), and all of the range is in the page cache: the
  // server's I/O thread sends it, and must not wait on the disk.
  virtual Result<CachedRange> OpenCachedRange(uint64_t /*oid*/, uint64_t /*off*/,
                                              uint64_t /*len*/) {
    return Status::Errno(ENOTSUP, "no stored crcs");
  }

  // Writes data at off, creating the object if needed. With sync the data (and
  // a newly created object's name) is durable when this returns OK.
  // piece_crcs, if not empty, are the crc32c of the 4 KiB chunks data
  // touches, as the request's bulk held them (rpc/bulk_crc.h): entry i is
  // for object chunk off / 4 KiB + i, and only the entries of chunks that data
  // covers whole are used (the others may hold other bytes). A checksummed
  // store takes those chunks' crcs from them instead of reading the bytes
  // again. REQUIRES: the used entries match data. (With off 4 KiB-aligned
  // these are the crcs of data's own 4 KiB pieces.)
  virtual Status Write(uint64_t oid, uint64_t off, std::span<const uint8_t> data, bool sync,
                       std::span<const uint32_t> piece_crcs = {}) = 0;

  // Sets the object's size exactly, creating it if needed.
  virtual Status Truncate(uint64_t oid, uint64_t size) = 0;

  // Deallocates [off, off + len) so it reads as zeros; the size is unchanged.
  virtual Status Punch(uint64_t oid, uint64_t off, uint64_t len) = 0;

  virtual Result<ObjectAttr> Stat(uint64_t oid) = 0;

  // fallocate(2) of [off, off + len) with Linux's mode: 0 allocates (the
  // object grows to off + len if shorter, and is created if missing),
  // FALLOC_FL_KEEP_SIZE allocates without growing it, FALLOC_FL_PUNCH_HOLE |
  // KEEP_SIZE is Punch, FALLOC_FL_ZERO_RANGE [| KEEP_SIZE] makes the range
  // read as zeros, allocated (growing the object unless KEEP_SIZE; a punch
  // and an allocation where the OST's file system has no zero-range).
  // REQUIRES: mode is one of those and len > 0 (the service checks).
  // EFBIG past the largest object; EOPNOTSUPP if the OST cannot allocate.
  virtual Status Fallocate(uint64_t /*oid*/, int /*mode*/, uint64_t /*off*/, uint64_t /*len*/) {
    return Status::Errno(EOPNOTSUPP, "fallocate not supported by this store");
  }

  // lseek(2) SEEK_DATA (hole false) or SEEK_HOLE (hole true) from off: the
  // first offset >= off that holds data / lies in a hole, as the OST's file
  // system reports them. The object's end and all past it are a hole, and so
  // is all of a missing object; nullopt iff there is no data at or past off.
  virtual Result<std::optional<uint64_t>> Seek(uint64_t oid, uint64_t off, bool hole) {
    SFS_ASSIGN_OR_RETURN(ObjectAttr a, Stat(oid));  // all of it data: one hole, at its end
    if (hole) return std::optional<uint64_t>(off < a.size ? a.size : off);
    if (off < a.size) return std::optional<uint64_t>(off);
    return std::optional<uint64_t>();
  }

  // Removes the object and leaves its tombstone (durable when this returns
  // OK). A missing or already destroyed object is success.
  virtual Status Destroy(uint64_t oid) = 0;

  // Destroy of every oid, made durable together (the file-backed store syncs
  // its tombstone directory once for the batch). One Status per oid, in order.
  virtual std::vector<Status> DestroyMany(std::span<const uint64_t> oids) {
    std::vector<Status> out;
    for (uint64_t oid : oids) out.push_back(Destroy(oid));
    return out;
  }

  // Makes the object's data and existence durable.
  virtual Status Sync(uint64_t oid) = 0;

  virtual Result<OstSpace> Statfs() = 0;

  // Removes the tombstones of objects destroyed before `cutoff` (by their
  // ctime); returns how many it removed. Those object ids read as never
  // written again.
  virtual Result<uint64_t> ExpireTombstones(std::chrono::system_clock::time_point cutoff) = 0;
};

class Env;

struct FileStoreOptions {
  size_t fd_cache_capacity = 1024;  // open descriptors kept across requests (up to 3 per
                                    // object: data, sidecar, O_DIRECT twin); sfs-oss sizes
                                    // it from RLIMIT_NOFILE (FdCacheCapacityFor)
  bool checksums = true;            // keep and verify per-chunk crcs (see above)
  Env* env = nullptr;               // system calls of the data path; null = DefaultEnv()
};

// Opens (creating if needed) the OST directory `dir`: its objects/ tree and
// its ost_uuid file. EINVAL if ost_uuid exists but is malformed.
Result<std::unique_ptr<ObjectStore>> OpenFileObjectStore(const std::string& dir,
                                                         const FileStoreOptions& opts = {});

}  // namespace sfs::oss
