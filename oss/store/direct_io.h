// Direct I/O of object data: the 4 KiB-aligned middle of a large transfer
// moves between the request's buffer and the disk through an O_DIRECT
// descriptor, with no copy through the page cache (Lustre's OSS writes bulk
// the same way). Profiles of sfs-oss under 1 MiB file-per-process I/O had 60-70 %
// of its samples in that copy (copy_folio_from_iter_atomic on writes,
// filemap_read's _copy_to_iter on reads; docs/benchmarks.md, pass 3).
//
// What goes direct: the part [roundup(off), rounddown(off + n)) of a transfer,
// if it is at least kDirectMin bytes and the buffer lines up with it (the byte
// for an aligned file offset sits at an aligned address). The unaligned head
// and tail, small transfers and misaligned buffers take the buffered
// descriptor. Reads go direct only when none of the middle's pages is in the
// page cache (cachestat(2)), so warm data is still served from memory and a
// cold sequential reader is not charged the copy; if the kernel has no
// cachestat, reads stay buffered. Nor do reads of an object smaller than
// kDirectReadMinObject go direct: small files (a training set's samples) are
// read whole again and again, and a direct read leaves nothing cached, so
// every epoch went to the disk (binding_vs_fuse.py with 4-256 KiB files: the
// OSS spent 36 % more CPU per read than with its page cache warm). The copy
// of such a read is small; large objects stream past as before.
//
// Coherence: both descriptors name one inode, and Linux keeps direct and
// buffered I/O of one file coherent: a direct write writes back cached dirty
// pages of its range first and invalidates its range's pages afterwards, a
// direct read writes back dirty pages of its range first. So bytes written
// either way read back the same either way. The store's range locks
// (checked objects) keep a write's crc steps and data together as before.
// Durability is unchanged: fdatasync of the buffered descriptor covers the
// inode, whichever descriptor wrote (a direct write's blocks may sit in the
// disk's volatile cache, and its size change in the journal, until then).
//
// A direct transfer that the file system refuses (EINVAL) or that stops at an
// unaligned point (a short write near a full disk) finishes buffered, so
// errors (ENOSPC, EIO) are the buffered path's.
#pragma once

#include <cstdint>
#include <span>

#include "common/status.h"
#include "oss/store/env.h"

namespace sfs::oss {

inline constexpr uint64_t kDirectAlign = 4096;
inline constexpr uint64_t kDirectMin = 64 * 1024;
inline constexpr uint64_t kDirectReadMinObject = 1024 * 1024;

// Writes all of data at off, as WriteAll(env, fd, data, off) would, sending
// the aligned middle through direct_fd when it qualifies (direct_fd < 0: never).
Status WriteMaybeDirect(Env& env, int fd, int direct_fd, std::span<const uint8_t> data,
                        uint64_t off);

// Reads like ReadAll(env, fd, dest, off) (until dest is full or end of file;
// returns the bytes read), the aligned middle through direct_fd when it
// qualifies, is not cached and the object holds at least kDirectReadMinObject
// bytes. Bytes of dest past the returned count are unspecified (a direct read
// may fill a whole block past the end of file).
Result<uint64_t> ReadMaybeDirect(Env& env, int fd, int direct_fd, std::span<uint8_t> dest,
                                 uint64_t off);

// True iff cachestat(2) says every page of fd's [off, off + len) is in the
// page cache; false when it cannot tell (an old kernel).
bool AllCached(int fd, uint64_t off, uint64_t len);

}  // namespace sfs::oss
