// Verification data for sfs-bench ior (-W / -R).
//
// Every 8-byte word of test data is a function of who wrote it and where:
// word at file offset O, written by task T in iteration I, holds
// (Key(T, I) ^ O) * K for an odd constant K, stored little-endian; Key is a
// 64-bit hash of (T, I). Any range can therefore be
// checked without knowing how (in which order, by which transfers) it was
// written, and data from the wrong task, the wrong iteration or the wrong
// offset (a misplaced stripe) fails. One multiply per word keeps filling and
// checking at memory speed.
#pragma once

#include <cstdint>
#include <span>

namespace sfs::bench {

// The key for task `task`'s data of iteration `iteration`. seed_offset is
// added for the hidden --verify-seed-offset flag (0 in normal runs; any
// other value makes every check fail, which tests the failure path).
uint64_t PatternKey(int task, int iteration, int64_t seed_offset);

// Fills buf, which holds the file bytes [off, off + buf.size()).
// REQUIRES: off and buf.size() are multiples of 8.
void FillPattern(uint64_t key, uint64_t off, std::span<uint8_t> buf);

// Compares buf (file bytes [off, off + size)) against the pattern. Returns
// the index in buf of the first byte that differs, or -1 if all match; if
// mismatched_words is not null, stores how many 8-byte words differ.
// REQUIRES: off and buf.size() are multiples of 8.
int64_t CheckPattern(uint64_t key, uint64_t off, std::span<const uint8_t> buf,
                     uint64_t* mismatched_words = nullptr);

// The expected word at file offset off (a multiple of 8), as stored bytes.
uint64_t PatternWord(uint64_t key, uint64_t off);

}  // namespace sfs::bench
