// RandomBytes: n bytes from a seeded generator, the same for the same seed,
// for the OSS tests' object data. Test-only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace sfs::oss {

inline std::vector<uint8_t> RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> b(n);
  for (auto& x : b) x = static_cast<uint8_t>(rng());
  return b;
}

}  // namespace sfs::oss
