// CheckedObject: reads and changes one object's data file together with its
// crc sidecar, so that corruption on disk is detected and never returned.
//
// Every read verifies each chunk it touches that holds object bytes (chunks
// wholly past the end are zeros by definition and are not checked); a chunk
// that matches neither slot of its entry is EIO, naming the object and the
// chunk's offset. Aligned chunks are read straight into the caller's buffer
// (large aligned runs with O_DIRECT when not cached, direct_io.h); only a
// partly requested chunk goes through a 4 KiB bounce buffer. Writes send
// their data the same way (WriteMaybeDirect).
//
// Mutations follow a two-slot protocol per chunk:
//   1. entry := {stable = crc the data matches now, pending = crc after the change}
//   2. change the data (pwrite / ftruncate / punch)
//   3. entry := {pending, pending}
// so at every instant between system calls the data matches a slot: a
// process killed mid-mutation (SIGKILL of sfs-oss) leaves chunks that still
// verify, as the old or the new bytes. A chunk whose data matches neither
// slot after a machine crash (a write that was never fsync'd, torn on disk)
// reads EIO until it is rewritten whole, truncated or punched — never wrong
// bytes. A chunk written only partly is read back and verified first
// (read-modify-write); if it is already corrupt the write fails with EIO
// rather than bless bad bytes with a fresh crc. Full chunks take their crc
// from the incoming bytes, with no read.
//
// When a data write fails part way (ENOSPC, EIO), each chunk of the range is
// re-read and its entry set to what is now on disk, so the bytes that were
// there before stay readable and the sidecar stays consistent.
//
// Thread safety: Read may run concurrently with anything (a mismatch seen
// during a concurrent mutation is resolved by the caller re-reading under the
// range lock). REQUIRES for Write/Punch: the caller holds the RangeLocks
// range of the chunks touched; for Truncate: all chunks of the object.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "oss/store/crc_sidecar.h"
#include "oss/store/env.h"

namespace sfs::oss {

// The chunk index holding byte off.
inline uint64_t ChunkOf(uint64_t off) { return off / kCrcChunk; }

class CheckedObject {
 public:
  // name appears in errors (e.g. "oid 0x2a (/ost/objects/2a/...)").
  // REQUIRES: env and both descriptors outlive this object.
  // direct_fd: an O_DIRECT descriptor of the data file for large transfers
  // (direct_io.h), or -1.
  CheckedObject(Env& env, int data_fd, int crc_fd, std::string name, int direct_fd = -1)
      : env_(env), data_fd_(data_fd), direct_fd_(direct_fd), crc_(env, crc_fd),
        name_(std::move(name)) {}

  // Fills dest with bytes [off, off + dest.size()), zeros past the end;
  // returns how many bytes exist there. EIO iff a touched chunk fails its check.
  // If off is chunk-aligned and piece_crcs is not null, sets it to the raw
  // crc32c of each 4 KiB piece of dest (the verification computes them anyway;
  // rpc/bulk_crc.h), else leaves it empty.
  Result<uint64_t> Read(uint64_t off, std::span<uint8_t> dest,
                        std::vector<uint32_t>* piece_crcs = nullptr);

  // piece_crcs, if not empty: the raw crc32c of each chunk data touches,
  // from chunk ChunkOf(off) on (ObjectStore::Write), used for the chunks data
  // covers whole instead of reading their bytes again.
  Status Write(uint64_t off, std::span<const uint8_t> data,
               std::span<const uint32_t> piece_crcs = {});
  Status Truncate(uint64_t size);
  // punch_data deallocates [off, off + len) of the data file, keeping its size.
  Status Punch(uint64_t off, uint64_t len, const std::function<Status()>& punch_data);

 private:
  // Reads chunk c into buf (kCrcChunk bytes, zero-filled past the end).
  Result<uint64_t> ReadChunk(uint64_t c, std::span<uint8_t> buf);
  Status Verify(uint64_t c, const CrcEntry& e, std::span<const uint8_t> chunk);
  // Verify for a chunk whose ChunkCrc() is crc.
  Status VerifyCrc(uint64_t c, const CrcEntry& e, uint32_t crc);
  // Reads chunk c into buf and makes e's slots both the crc its data matches.
  // A chunk holding no bytes becomes {0, 0}. If the data matches neither slot:
  // EIO when must_match, else e is left alone (the caller overwrites it whole).
  Status Settle(uint64_t c, CrcEntry* e, std::span<uint8_t> buf, bool must_match);
  // After a failed data change: entries of [first, last] := what is on disk.
  void Repair(uint64_t first, uint64_t last);
  // Steps 1 and 3 of the protocol around `change`.
  Status Mutate(uint64_t first, std::vector<CrcEntry>& entries,
                const std::function<Status()>& change);

  Env& env_;
  const int data_fd_;
  const int direct_fd_;
  const CrcSidecar crc_;
  const std::string name_;
};

}  // namespace sfs::oss
