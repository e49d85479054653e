// CRC-32C known answers (RFC 3720 B.4) and chaining.
#include "common/crc32c.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

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

}  // namespace
}  // namespace sfs::crc32c
