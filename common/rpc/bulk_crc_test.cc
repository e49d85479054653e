// BulkCrc: the body crc folded from piece crcs equals crc32c over the bytes.
#include "common/rpc/bulk_crc.h"

#include <gtest/gtest.h>

#include <random>

#include "common/crc32c.h"

namespace sfs::rpc {
namespace {

TEST(BulkCrcTest, PiecesFoldToTheCrcOfTheWholeBulkForEveryLength) {
  std::mt19937 rng(7);
  for (size_t n : {size_t{0}, size_t{1}, size_t{4095}, size_t{4096}, size_t{4097}, size_t{47008},
                   size_t{1} << 20, (size_t{1} << 20) + 123}) {
    std::vector<uint8_t> bulk(n);
    for (auto& b : bulk) b = static_cast<uint8_t>(rng());
    const uint32_t start = crc32c::Value("payload", 7);
    std::vector<uint32_t> pieces = PieceCrcs(bulk);
    ASSERT_EQ(pieces.size(), BulkCrcPieces(n));
    EXPECT_EQ(ExtendByPieces(start, pieces, n), crc32c::Extend(start, bulk.data(), n)) << n;
  }
}

TEST(BulkCrcTest, EachPieceCrcIsTheCrcOfItsBytes) {
  std::vector<uint8_t> bulk(3 * kBulkCrcPiece + 10, 0x5a);
  bulk[kBulkCrcPiece + 3] = 1;
  std::vector<uint32_t> pieces = PieceCrcs(bulk);
  ASSERT_EQ(pieces.size(), 4u);
  EXPECT_EQ(pieces[1], crc32c::Value(bulk.data() + kBulkCrcPiece, kBulkCrcPiece));
  EXPECT_EQ(pieces[3], crc32c::Value(bulk.data() + 3 * kBulkCrcPiece, 10));
  EXPECT_NE(pieces[0], pieces[1]);
}

TEST(BulkCrcTest, AChangedByteChangesTheFoldedCrc) {
  std::vector<uint8_t> bulk(1 << 20, 3);
  uint32_t before = ExtendByPieces(0, PieceCrcs(bulk), bulk.size());
  bulk[777777] ^= 0x10;
  EXPECT_NE(ExtendByPieces(0, PieceCrcs(bulk), bulk.size()), before);
}

TEST(BulkCrcTest, ExtendByValueEqualsExtendOverTheBytesForEveryLength) {
  std::mt19937 rng(11);
  for (size_t n : {size_t{0}, size_t{1}, size_t{4095}, size_t{4096}, size_t{47008},
                   size_t{64} << 10, (size_t{1} << 20) + 4096 + 5, size_t{3} << 20}) {
    std::vector<uint8_t> bulk(n);
    for (auto& b : bulk) b = static_cast<uint8_t>(rng());
    const uint32_t start = crc32c::Value("payload", 7);
    EXPECT_EQ(ExtendByValue(start, crc32c::Value(bulk.data(), n), n),
              crc32c::Extend(start, bulk.data(), n))
        << n;
  }
}

}  // namespace
}  // namespace sfs::rpc
