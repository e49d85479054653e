// Space and copy operations of a striped file, mapped onto its objects:
// fallocate(2), lseek(2) SEEK_DATA/SEEK_HOLE and copy_file_range(2) as OSS
// calls (OssRequest.fallocate / seek / copy; docs/protocol.md "Space and
// copies"). The size rules (what the MDS learns) are the Client's
// (client.cc); these functions only move objects.
//
// The stripe math: the bytes of object i that file range [a, b) covers are
// one contiguous object range, [ObjectSize(i, a), ObjectSize(i, b)), since
// object offsets grow with file offsets. So a fallocate or seek is one call
// per object, whatever the range's length.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "client/lib/client.h"
#include "client/lib/io.h"
#include "common/status.h"

namespace sfs::client {

// fallocate(2) of file range [off, off + len) with Linux's mode, on every
// object it touches at once; for a mirrored file on every good copy of them,
// under the range's cluster-wide lock, a copy whose OSS missed it marked
// stale (Striper::CallMirrored, as writes). REQUIRES: len > 0; mode one of
// 0, KEEP_SIZE, PUNCH_HOLE|KEEP_SIZE, ZERO_RANGE[|KEEP_SIZE] (Client::Fallocate
// checks).
Status FallocateObjects(Striper& s, const LayoutSpec& l, int mode, uint64_t off, uint64_t len);

// The first file offset >= off that holds data (hole false) or lies in a
// hole (hole true; every object's end is one), by asking every object;
// nullopt iff no object has data past off. Not clamped to the file's size.
Result<std::optional<uint64_t>> SeekObjects(Striper& s, const LayoutSpec& l, uint64_t off,
                                            bool hole);

// Copies file range [in_off, in_off + len) of layout `from` to out_off of
// layout `to` with OSS copy calls: each piece of the range that lies in one
// stripe unit of both files is copied by the destination object's OSS from
// the source object (its own, or pulled from the source's OSS), pieces of
// one object pair merged. Pieces an OSS cannot copy (EPROTO: an OSS from
// before the op; EXDEV: it cannot reach the source) are read and written
// through this client instead. REQUIRES: the ranges do not overlap within
// one file.
Status CopyObjects(Striper& s, const LayoutSpec& from, uint64_t in_off, const LayoutSpec& to,
                   uint64_t out_off, uint64_t len);

// Resync of a mirrored file (docs/redundancy.md): every stale copy of l is
// made equal to a good copy of its stripe, by the stale copy's OSS (the
// object cut to the good copy's size, then OSS copy calls pulling the good
// copy's bytes). Appends the copies done to *healed (for the MDS to mark ok);
// a copy that cannot be done is left stale and its failure returned after
// the others were tried. The caller has the MDS mark them ok only if nothing
// wrote the file meanwhile (Client::ResyncMirrors: MirrorStateReq.if_idle), as
// a write landing between the copy's read and its write is not on the copy.
Status ResyncCopies(Striper& s, const LayoutSpec& l, std::vector<StripeObject>* healed);

}  // namespace sfs::client
