// CRC-32C (Castagnoli), as used by iSCSI/ext4/LevelDB. Uses the SSE4.2 crc32
// instruction when the CPU has it, a table otherwise. Extend() chains.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sfs::crc32c {

uint32_t Extend(uint32_t crc, const void* data, size_t n);
inline uint32_t Value(const void* data, size_t n) { return Extend(0, data, n); }

}  // namespace sfs::crc32c
