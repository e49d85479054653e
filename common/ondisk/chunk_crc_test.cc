// The crc sidecar's encoding and the chunk crc's reserved values, pinned:
// the OSS writes them and fsck reads them.
#include "common/ondisk/chunk_crc.h"

#include <gtest/gtest.h>

#include <vector>

namespace sfs::ondisk {
namespace {

TEST(ChunkCrcTest, AnEntryIsTwoLittleEndianSlotsStableFirst) {
  std::vector<CrcEntry> entries = {{0x04030201, 0x08070605}, {1, 2}};
  std::vector<uint8_t> raw = EncodeCrcEntries(entries);
  ASSERT_EQ(raw.size(), 2 * kCrcEntrySize);
  EXPECT_EQ(std::vector<uint8_t>(raw.begin(), raw.begin() + 8),
            (std::vector<uint8_t>{1, 2, 3, 4, 5, 6, 7, 8}));
  std::vector<CrcEntry> back = DecodeCrcEntries(raw, 2);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].stable, 0x04030201u);
  EXPECT_EQ(back[0].pending, 0x08070605u);
  EXPECT_EQ(back[1].pending, 2u);
}

TEST(ChunkCrcTest, EntriesPastTheSidecarsEndAreHoles) {
  std::vector<CrcEntry> one = {{5, 6}};
  std::vector<uint8_t> raw = EncodeCrcEntries(one);
  raw.push_back(9);  // a torn half entry counts as absent
  std::vector<CrcEntry> back = DecodeCrcEntries(raw, 3);
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back[0].stable, 5u);
  EXPECT_EQ(back[1].stable, 0u);
  EXPECT_EQ(back[1].pending, 0u);
  EXPECT_EQ(back[2].stable, 0u);
}

TEST(ChunkCrcTest, ZeroStandsForAChunkOfZerosAndNoChunkCrcIsZero) {
  std::vector<uint8_t> zeros(kCrcChunk, 0);
  const uint32_t zero_crc = ChunkCrc(zeros);
  EXPECT_NE(zero_crc, 0u);
  EXPECT_EQ(ChunkCrc({}), zero_crc) << "missing bytes count as zeros";
  EXPECT_TRUE(SlotMatches(0, zero_crc));
  std::vector<uint8_t> data(100, 7);
  EXPECT_FALSE(SlotMatches(0, ChunkCrc(data)));
  EXPECT_TRUE(SlotMatches(ChunkCrc(data), ChunkCrc(data)));
  EXPECT_EQ(WholeChunkCrc(0), 1u);
  EXPECT_EQ(ChunksFor(0), 0u);
  EXPECT_EQ(ChunksFor(kCrcChunk + 1), 2u);
  EXPECT_EQ(ChunkFloor(kCrcChunk + 1), kCrcChunk);
  EXPECT_EQ(ChunkCeil(kCrcChunk + 1), 2 * kCrcChunk);
}

}  // namespace
}  // namespace sfs::ondisk
