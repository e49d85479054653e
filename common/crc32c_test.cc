// CRC-32C known answers (RFC 3720 B.4), chaining, and the fast path (three
// parallel chains on long inputs) against a bit-at-a-time reference.
#include "common/crc32c.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace sfs::crc32c {
namespace {

TEST(Crc32cTest, MatchesRfc3720Vectors) {
  char zeros[32] = {0};
  EXPECT_EQ(Value(zeros, 32), 0x8a9136aau);
  char ones[32];
  std::memset(ones, 0xff, 32);
  EXPECT_EQ(Value(ones, 32), 0x62a8ab43u);
  EXPECT_EQ(Value("123456789", 9), 0xe3069283u);
}

TEST(Crc32cTest, ExtendChainsLikeOneCall) {
  std::string s = "The quick brown fox jumps over the lazy dog, twice over.";
  for (size_t cut = 0; cut <= s.size(); ++cut) {
    EXPECT_EQ(Extend(Value(s.data(), cut), s.data() + cut, s.size() - cut), Value(s.data(), s.size()));
  }
}

// The definition, one bit at a time: slow, obviously right.
uint32_t Reference(const uint8_t* p, size_t n) {
  uint32_t c = ~0u;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
  }
  return ~c;
}

std::vector<uint8_t> RandomBytes(std::mt19937_64& rng, size_t n) {
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

TEST(Crc32cTest, LongInputsOfEveryShapeMatchTheReference) {
  std::mt19937_64 rng(42);
  // Lengths around the three-way block boundaries (3 x 1360, 3 x 8192), a
  // 4 KiB chunk, a 1 MiB bulk and odd sizes in between.
  std::vector<size_t> lengths = {4079, 4080, 4081, 4096, 8160, 24575, 24576, 24577,
                                 47008, 49152 + 4080 + 7, 1 << 20};
  for (int i = 0; i < 20; ++i) lengths.push_back(rng() % 100000);
  for (size_t n : lengths) {
    std::vector<uint8_t> v = RandomBytes(rng, n + 7);
    for (size_t misalign : {size_t{0}, size_t{3}}) {
      EXPECT_EQ(Value(v.data() + misalign, n), Reference(v.data() + misalign, n))
          << "length " << n << " misaligned by " << misalign;
    }
  }
}

TEST(Crc32cTest, RandomExtendChainsMatchOneCall) {
  std::mt19937_64 rng(7);
  std::vector<uint8_t> v = RandomBytes(rng, 200000);
  const uint32_t whole = Reference(v.data(), v.size());
  for (int trial = 0; trial < 50; ++trial) {
    uint32_t c = 0;
    size_t pos = 0;
    while (pos < v.size()) {
      size_t n = std::min<size_t>(v.size() - pos, rng() % 60000);
      c = Extend(c, v.data() + pos, n);
      pos += n;
    }
    EXPECT_EQ(c, whole) << "trial " << trial;
  }
}

}  // namespace
}  // namespace sfs::crc32c
