// Which chunk of an erasure-coded row is wrong, when the row's parity does
// not match its data and every chunk passed its crc (sfs scrub,
// docs/redundancy.md "sfs scrub"). A Reed–Solomon K+M code has distance
// M+1, so with M >= 2 one wrong chunk is the only one whose rebuild from the
// other K+M-1 makes the whole row agree; with M = 1 every chunk's would.
//
// Pure functions over caller-owned buffers; thread-safe as RsCodec is.
#pragma once

#include <span>

#include "common/ec/rs_codec.h"

namespace sfs::ec {

// The index (0 .. K+M-1, data then parity) of the one chunk of a row whose
// replacement by what the others rebuild makes the row consistent; -1 if
// none does, or several do (M = 1; or a row that is consistent already).
// REQUIRES: chunks.size() == K+M, all the same length; reads them only.
int LoneBadChunk(const RsCodec& codec, std::span<const std::span<uint8_t>> chunks);

}  // namespace sfs::ec
