// LoneBadChunk: a single wrong chunk, data or parity, is found for M >= 2
// wherever it is and however many bytes of it are wrong; with M = 1, with
// two wrong chunks, or in a consistent row, no chunk is named.
#include "common/ec/row_check.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace sfs::ec {
namespace {

using Bytes = std::vector<uint8_t>;

std::vector<Bytes> EncodedRow(const RsCodec& codec, std::mt19937_64& rng, size_t len) {
  std::vector<Bytes> row;
  for (int i = 0; i < codec.k() + codec.m(); ++i) {
    Bytes b(len);
    for (auto& x : b) x = static_cast<uint8_t>(rng());
    row.push_back(std::move(b));
  }
  std::vector<std::span<const uint8_t>> data(row.begin(), row.begin() + codec.k());
  std::vector<std::span<uint8_t>> parity(row.begin() + codec.k(), row.end());
  EXPECT_TRUE(codec.Encode(data, parity).ok());
  return row;
}

int Check(const RsCodec& codec, std::vector<Bytes>& row) {
  std::vector<std::span<uint8_t>> spans(row.begin(), row.end());
  return LoneBadChunk(codec, spans);
}

TEST(LoneBadChunkTest, OneWrongChunkIsFoundWhereverItIs) {
  std::mt19937_64 rng(16);
  for (auto [k, m] : {std::pair{4, 2}, std::pair{8, 2}, std::pair{6, 3}}) {
    auto codec = RsCodec::Create(k, m);
    ASSERT_TRUE(codec.ok());
    for (int bad = 0; bad < k + m; ++bad) {
      for (size_t wrong_bytes : {size_t{1}, size_t{17}, size_t{256}}) {
        std::vector<Bytes> row = EncodedRow(**codec, rng, 256);
        for (size_t i = 0; i < wrong_bytes; ++i) row[bad][rng() % 256] ^= 1 + rng() % 255;
        EXPECT_EQ(Check(**codec, row), bad) << k << "+" << m << ", " << wrong_bytes << " bytes";
      }
    }
  }
}

TEST(LoneBadChunkTest, NothingIsNamedWhenNoOneChunkCanBeTold) {
  std::mt19937_64 rng(61);
  auto one = RsCodec::Create(2, 1);
  ASSERT_TRUE(one.ok());
  std::vector<Bytes> row = EncodedRow(**one, rng, 64);
  row[0][5] ^= 0x40;
  EXPECT_EQ(Check(**one, row), -1) << "M = 1: any chunk explains it";
  auto two = RsCodec::Create(4, 2);
  ASSERT_TRUE(two.ok());
  row = EncodedRow(**two, rng, 64);
  EXPECT_EQ(Check(**two, row), -1) << "a consistent row";
  for (size_t i = 0; i < 64; ++i) {
    row[1][i] ^= 1 + rng() % 255;
    row[2][i] ^= 1 + rng() % 255;
  }
  EXPECT_EQ(Check(**two, row), -1) << "two wrong chunks";
}

}  // namespace
}  // namespace sfs::ec
