// EC write planning (ec_plan.h): which rows a write covers whole, which
// columns and old bytes a partial row needs, and that the read-modify-write
// math (old columns + new bytes, parity of the touched columns encoded
// again) gives exactly the parity of the whole new row, with the real codec.
#include "client/lib/ec_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "common/ec/rs_codec.h"

namespace sfs::client::ecplan {
namespace {

TEST(EcPlan, WriteIsCutIntoAPartialHeadFullMiddleAndPartialTail) {
  const ec::Geometry g{8, 3, 2};                     // rows of 24 bytes
  std::vector<RowWrite> rows = PlanWrite(g, 5, 60);  // [5, 65)
  ASSERT_EQ(rows.size(), 3u);

  EXPECT_EQ(rows[0].row, 0u);
  EXPECT_FALSE(rows[0].full);
  ASSERT_EQ(rows[0].parts.size(), 3u);
  EXPECT_EQ(rows[0].parts[0].chunk, 0u);
  EXPECT_EQ(rows[0].parts[0].col, 5u);
  EXPECT_EQ(rows[0].parts[0].len, 3u);
  EXPECT_EQ(rows[0].parts[0].buf_off, 0u);
  EXPECT_EQ(rows[0].parts[1].buf_off, 3u);
  EXPECT_EQ(rows[0].col_begin, 0u);
  EXPECT_EQ(rows[0].col_end, 8u);
  EXPECT_TRUE(NeedsOld(rows[0], 0));   // columns 0..4 of chunk 0 are old bytes
  EXPECT_FALSE(NeedsOld(rows[0], 1));  // replaced whole
  EXPECT_FALSE(NeedsOld(rows[0], 2));

  EXPECT_TRUE(rows[1].full);
  EXPECT_EQ(rows[1].width(), 8u);
  EXPECT_EQ(rows[1].parts[0].buf_off, 19u);  // file byte 24

  EXPECT_FALSE(rows[2].full);
  ASSERT_EQ(rows[2].parts.size(), 3u);
  EXPECT_EQ(rows[2].parts[2].col, 0u);
  EXPECT_EQ(rows[2].parts[2].len, 1u);  // file byte 64
  EXPECT_FALSE(NeedsOld(rows[2], 0));
  EXPECT_TRUE(NeedsOld(rows[2], 2));
}

TEST(EcPlan, SmallWriteTouchesOnlyItsColumnsAndNeedsTheOtherChunks) {
  const ec::Geometry g{16, 4, 2};
  std::vector<RowWrite> rows = PlanWrite(g, 64 + 16 + 3, 5);  // row 1, chunk 1, columns 3..7
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].row, 1u);
  EXPECT_EQ(rows[0].col_begin, 3u);
  EXPECT_EQ(rows[0].col_end, 8u);
  ASSERT_EQ(rows[0].parts.size(), 1u);
  EXPECT_EQ(rows[0].parts[0].chunk, 1u);
  EXPECT_FALSE(NeedsOld(rows[0], 1));
  EXPECT_TRUE(NeedsOld(rows[0], 0));
  EXPECT_TRUE(NeedsOld(rows[0], 3));
}

TEST(EcPlan, KeptInLastRowClampsEachDataChunk) {
  const ec::Geometry g{10, 3, 1};  // rows of 30
  EXPECT_EQ(KeptInLastRow(g, 30 + 14, 0), 10u);
  EXPECT_EQ(KeptInLastRow(g, 30 + 14, 1), 4u);
  EXPECT_EQ(KeptInLastRow(g, 30 + 14, 2), 0u);
  EXPECT_EQ(KeptInLastRow(g, 60, 0), 0u);  // a row boundary: nothing cut
}

// A file as K data chunks + M parity chunks per row, kept in memory.
struct Rows {
  ec::Geometry g;
  std::vector<uint8_t> file;                 // rows * row_bytes
  std::vector<std::vector<uint8_t>> parity;  // per row: M * S

  std::span<const uint8_t> Chunk(uint64_t row, uint32_t c) const {
    return std::span<const uint8_t>(file).subspan(row * g.row_bytes() + c * g.chunk_size,
                                                  g.chunk_size);
  }
  // Parity of the whole row from its data.
  std::vector<uint8_t> Encode(const ec::RsCodec& codec, uint64_t row) const {
    std::vector<uint8_t> out(g.m * g.chunk_size);
    std::vector<std::span<const uint8_t>> data;
    std::vector<std::span<uint8_t>> par;
    for (uint32_t c = 0; c < g.k; ++c) data.push_back(Chunk(row, c));
    for (uint32_t p = 0; p < g.m; ++p) {
      par.push_back(std::span<uint8_t>(out).subspan(p * g.chunk_size, g.chunk_size));
    }
    EXPECT_TRUE(codec.Encode(data, par).ok());
    return out;
  }
};

// Applies a write as ec_io.cc does: full rows from the buffer, partial rows
// from old columns with the new bytes laid over, parity of the touched
// columns only spliced into the old parity.
void ApplyWrite(const ec::RsCodec& codec, Rows& f, uint64_t off, std::span<const uint8_t> buf) {
  const ec::Geometry& g = f.g;
  for (const RowWrite& w : PlanWrite(g, off, buf.size())) {
    const uint64_t width = w.width();
    std::vector<uint8_t> cols(g.k * width), par(g.m * width);
    std::vector<std::span<uint8_t>> mut;
    std::vector<std::span<const uint8_t>> data;
    std::vector<std::span<uint8_t>> pspans;
    for (uint32_t c = 0; c < g.k; ++c) {
      std::span<uint8_t> col = std::span<uint8_t>(cols).subspan(c * width, width);
      if (w.full) {
        data.push_back(buf.subspan(w.parts[c].buf_off, width));
        continue;
      }
      if (NeedsOld(w, c)) {
        auto old = f.Chunk(w.row, c).subspan(w.col_begin, width);
        std::copy(old.begin(), old.end(), col.begin());
      }
      mut.push_back(col);
      data.push_back(col);
    }
    if (!w.full) Overlay(w, buf, mut);
    for (uint32_t p = 0; p < g.m; ++p)
      pspans.push_back(std::span<uint8_t>(par).subspan(p * width, width));
    ASSERT_TRUE(codec.Encode(data, pspans).ok());
    for (uint32_t p = 0; p < g.m; ++p) {
      std::copy(pspans[p].begin(), pspans[p].end(),
                f.parity[w.row].begin() + p * g.chunk_size + w.col_begin);
    }
    for (const RowWrite::Part& part : w.parts) {
      std::copy(buf.begin() + part.buf_off, buf.begin() + part.buf_off + part.len,
                f.file.begin() + w.row * g.row_bytes() + part.chunk * g.chunk_size + part.col);
    }
  }
}

TEST(EcPlan, ReadModifyWriteGivesTheParityOfTheWholeNewRow) {
  for (const ec::Geometry g :
       {ec::Geometry{32, 2, 1}, ec::Geometry{16, 4, 2}, ec::Geometry{8, 3, 3}}) {
    auto codec = ec::RsCodec::Create(static_cast<int>(g.k), static_cast<int>(g.m));
    ASSERT_TRUE(codec.ok());
    const uint64_t nrows = 6;
    std::mt19937_64 rng(g.k * 100 + g.m);
    Rows f{g, std::vector<uint8_t>(nrows * g.row_bytes()),
           std::vector<std::vector<uint8_t>>(nrows)};
    for (auto& b : f.file) b = static_cast<uint8_t>(rng());
    for (uint64_t r = 0; r < nrows; ++r) f.parity[r] = f.Encode(**codec, r);
    for (int i = 0; i < 200; ++i) {
      const uint64_t off = rng() % f.file.size();
      const uint64_t len = 1 + rng() % std::min<uint64_t>(f.file.size() - off, 3 * g.row_bytes());
      std::vector<uint8_t> buf(len);
      for (auto& b : buf) b = static_cast<uint8_t>(rng());
      ApplyWrite(**codec, f, off, buf);
      for (uint64_t r = 0; r < nrows; ++r) {
        ASSERT_EQ(f.parity[r], f.Encode(**codec, r))
            << g.k << "+" << g.m << " row " << r << " after write " << i << " [" << off << ", +"
            << len << ")";
      }
    }
  }
}

TEST(EcPlan, ARowWrittenInPartsRebuildsALostChunkFromAnyK) {
  const ec::Geometry g{64, 4, 2};
  auto codec = ec::RsCodec::Create(4, 2);
  ASSERT_TRUE(codec.ok());
  Rows f{g, std::vector<uint8_t>(g.row_bytes()), {std::vector<uint8_t>(g.m * g.chunk_size)}};
  std::mt19937_64 rng(7);
  // Three unaligned writes fill the row out of order (zeros = holes before).
  std::vector<uint8_t> all(g.row_bytes());
  for (auto& b : all) b = static_cast<uint8_t>(rng());
  const std::vector<std::pair<uint64_t, uint64_t>> writes{{100, 77}, {0, 100}, {177, 79}};
  for (auto [o, n] : writes) {
    ApplyWrite(**codec, f, o, std::span<const uint8_t>(all).subspan(o, n));
  }
  ASSERT_EQ(f.file, all);
  // Lose data chunks 1 and 3; rebuild them from chunks 0, 2 and the parity.
  std::vector<uint8_t> d1(g.chunk_size), d3(g.chunk_size);
  std::vector<std::vector<uint8_t>> keep{
      std::vector<uint8_t>(f.Chunk(0, 0).begin(), f.Chunk(0, 0).end()),
      std::vector<uint8_t>(f.Chunk(0, 2).begin(), f.Chunk(0, 2).end())};
  std::vector<std::span<uint8_t>> chunks(6);
  chunks[0] = keep[0];
  chunks[1] = d1;
  chunks[2] = keep[1];
  chunks[3] = d3;
  chunks[4] = std::span<uint8_t>(f.parity[0]).subspan(0, g.chunk_size);
  chunks[5] = std::span<uint8_t>(f.parity[0]).subspan(g.chunk_size, g.chunk_size);
  const int erased[] = {1, 3};
  ASSERT_TRUE((*codec)->Reconstruct(chunks, erased).ok());
  EXPECT_TRUE(std::equal(d1.begin(), d1.end(), f.Chunk(0, 1).begin()));
  EXPECT_TRUE(std::equal(d3.begin(), d3.end(), f.Chunk(0, 3).begin()));
}

}  // namespace
}  // namespace sfs::client::ecplan
