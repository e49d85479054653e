// EC geometry checked exhaustively, for small shapes, against a byte-by-byte
// model that lays the file out as the definition reads: rows of K chunks, the
// chunk-to-object assignment rotated by one object per row.
#include "common/ec/ec_geometry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>

namespace sfs::ec {
namespace {

struct ModelByte {
  uint64_t row;
  uint32_t chunk, object;
  uint64_t obj_offset;
};

// The model: assignment[row] is the objects of chunks 0..N-1, starting from
// 0..N-1 and rotated right by one (every chunk moves to the next object) per row.
struct Model {
  Geometry g;
  std::vector<std::vector<uint32_t>> assignment;

  Model(Geometry geo, uint64_t rows) : g(geo) {
    std::vector<uint32_t> a(g.width());
    std::iota(a.begin(), a.end(), 0u);
    for (uint64_t r = 0; r < rows; ++r) {
      assignment.push_back(a);
      for (auto& o : a) o = (o + 1 == g.width()) ? 0 : o + 1;
    }
  }
  // Walk the file byte by byte up to `off`.
  ModelByte Byte(uint64_t off) const {
    uint64_t row = 0, chunk = 0, in_chunk = 0;
    for (uint64_t i = 0; i < off; ++i) {
      if (++in_chunk == g.chunk_size) {
        in_chunk = 0;
        if (++chunk == g.k) chunk = 0, ++row;
      }
    }
    uint32_t c = static_cast<uint32_t>(chunk);
    return {row, c, assignment.at(row).at(c), row * g.chunk_size + in_chunk};
  }
};

std::vector<Geometry> SmallShapes() {
  std::vector<Geometry> out;
  for (uint64_t s : {1, 2, 3, 5})
    for (uint32_t k = 1; k <= 5; ++k)
      for (uint32_t m = 1; m <= 3; ++m) out.push_back({s, k, m});
  return out;
}

TEST(EcGeometryTest, LocateAndFileOffsetMatchModelForEveryByte) {
  for (const Geometry& g : SmallShapes()) {
    const uint64_t rows = 2 * g.width() + 1;  // more than a full rotation
    Model model(g, rows);
    for (uint64_t off = 0; off < rows * g.row_bytes(); ++off) {
      ModelByte b = model.Byte(off);
      Location l = Locate(g, off);
      ASSERT_EQ(l.row, b.row);
      ASSERT_EQ(l.chunk, b.chunk);
      ASSERT_EQ(l.object, b.object) << "S=" << g.chunk_size << " " << g.k << "+" << g.m;
      ASSERT_EQ(l.obj_offset, b.obj_offset);
      ASSERT_EQ(FileOffset(g, l.object, l.obj_offset), off);
    }
    // Every object byte is data of exactly one file byte, or parity; each row
    // has exactly M parity objects and all N objects are distinct.
    for (uint64_t r = 0; r < rows; ++r) {
      std::vector<uint32_t> objs = RowObjects(g, r);
      ASSERT_EQ(objs, model.assignment[r]);
      for (uint32_t c = 0; c < g.width(); ++c) ASSERT_EQ(ChunkOf(g, r, objs[c]), c);
      for (uint32_t o = 0; o < g.width(); ++o) {
        bool parity = ChunkOf(g, r, o) >= g.k;
        for (uint64_t i = 0; i < g.chunk_size; ++i) {
          ASSERT_EQ(FileOffset(g, o, r * g.chunk_size + i).has_value(), !parity);
        }
      }
    }
  }
}

TEST(EcGeometryTest, ParityLoadIsEvenOverAFullRotation) {
  Geometry g{1 << 20, 8, 2};
  std::vector<int> parity_rows(g.width());
  for (uint64_t r = 0; r < 10 * g.width(); ++r)
    for (uint32_t c = g.k; c < g.width(); ++c) ++parity_rows[ObjectOf(g, r, c)];
  for (int n : parity_rows) EXPECT_EQ(n, 10 * 2);
}

TEST(EcGeometryTest, ObjectAndChunkSizesMatchModel) {
  for (const Geometry& g : SmallShapes()) {
    const uint64_t rows = g.width() + 2;
    Model model(g, rows + 1);
    for (uint64_t fsize = 0; fsize <= rows * g.row_bytes(); ++fsize) {
      // Model: object size = 1 + the highest object offset of any file byte it
      // stores, or of any parity byte (parity spans the row's longest data chunk).
      std::vector<uint64_t> obj_size(g.width(), 0);
      std::map<std::pair<uint64_t, uint32_t>, uint64_t> chunk_len;  // (row, chunk) -> bytes
      for (uint64_t off = 0; off < fsize; ++off) {
        ModelByte b = model.Byte(off);
        obj_size[b.object] = std::max(obj_size[b.object], b.obj_offset + 1);
        ++chunk_len[{b.row, b.chunk}];
        if (b.chunk == 0) {
          for (uint32_t p = g.k; p < g.width(); ++p) {
            uint32_t o = model.assignment[b.row][p];
            obj_size[o] = std::max(obj_size[o], b.obj_offset + 1);
            ++chunk_len[{b.row, p}];
          }
        }
      }
      uint64_t expect_rows = 0;
      for (const auto& [key, n] : chunk_len) expect_rows = std::max(expect_rows, key.first + 1);
      ASSERT_EQ(RowCount(g, fsize), expect_rows);
      uint64_t data_sum = 0;
      for (uint32_t o = 0; o < g.width(); ++o) {
        ASSERT_EQ(ObjectSize(g, o, fsize), obj_size[o])
            << "S=" << g.chunk_size << " " << g.k << "+" << g.m << " size " << fsize << " obj "
            << o;
      }
      for (uint64_t r = 0; r <= expect_rows; ++r) {
        for (uint32_t c = 0; c < g.width(); ++c) {
          auto it = chunk_len.find({r, c});
          uint64_t want = it == chunk_len.end() ? 0 : it->second;
          ASSERT_EQ(ChunkLength(g, r, c, fsize), want);
          if (c < g.k) data_sum += want;
        }
      }
      ASSERT_EQ(data_sum, fsize);
    }
  }
}

TEST(EcGeometryTest, MapRangeMatchesModel) {
  for (const Geometry& g : SmallShapes()) {
    const uint64_t span = 2 * g.row_bytes() + 3;
    Model model(g, span / g.row_bytes() + 1);
    for (uint64_t off = 0; off < span; ++off) {
      for (uint64_t len = 0; off + len <= span; ++len) {
        auto extents = MapRange(g, off, len);
        uint64_t pos = off;
        for (const Extent& e : extents) {
          ASSERT_EQ(e.file_offset, pos);
          ASSERT_GT(e.length, 0u);
          for (uint64_t i = 0; i < e.length; ++i) {
            ModelByte b = model.Byte(pos + i);
            ASSERT_EQ(b.row, e.row);
            ASSERT_EQ(b.chunk, e.chunk);
            ASSERT_EQ(b.object, e.object);
            ASSERT_EQ(b.obj_offset, e.obj_offset + i);
          }
          pos += e.length;
        }
        ASSERT_EQ(pos, off + len);
        // Extents are maximal: consecutive ones are in different chunks.
        for (size_t i = 1; i < extents.size(); ++i) {
          ASSERT_TRUE(extents[i].row != extents[i - 1].row ||
                      extents[i].chunk != extents[i - 1].chunk);
        }
      }
    }
  }
}

TEST(EcGeometryTest, ClassifyRangeMatchesBruteForce) {
  for (const Geometry& g : SmallShapes()) {
    if (g.m > 1) continue;  // M does not enter the classification
    const uint64_t rb = g.row_bytes();
    const uint64_t span = 3 * rb + 1;
    std::vector<uint64_t> sizes = {kUnknownSize, 0, 1, rb - 1, rb, rb + 1, 2 * rb + rb / 2, span};
    for (uint64_t old_size : sizes) {
      for (uint64_t off = 0; off < span; ++off) {
        for (uint64_t len = 0; off + len <= span; ++len) {
          RowRange r = ClassifyRange(g, off, len, old_size);
          if (len == 0) {
            ASSERT_EQ(r.first, r.end);
            continue;
          }
          // Brute force: a touched row is full iff every byte of it is written or
          // lies at or past old_size.
          std::vector<uint64_t> touched, full;
          for (uint64_t row = 0; row * rb < off + len; ++row) {
            uint64_t start = row * rb;
            if (start + rb <= off) continue;
            touched.push_back(row);
            bool is_full = true;
            for (uint64_t b = start; b < start + rb; ++b) {
              bool written = b >= off && b < off + len;
              if (!written && b < old_size) is_full = false;
            }
            if (is_full) full.push_back(row);
          }
          ASSERT_EQ(r.first, touched.front());
          ASSERT_EQ(r.end, touched.back() + 1);
          std::vector<uint64_t> got_full;
          for (uint64_t row = r.full_first; row < r.full_end; ++row) got_full.push_back(row);
          ASSERT_EQ(got_full, full) << "off " << off << " len " << len << " old " << old_size;
          bool head_full = !full.empty() && full.front() == r.first;
          bool tail_full = !full.empty() && full.back() == r.end - 1;
          ASSERT_EQ(r.head_partial, !head_full);
          ASSERT_EQ(r.tail_partial, r.end - 1 != r.first && !tail_full);
        }
      }
    }
  }
}

TEST(EcGeometryTest, ValidateRejectsBadShapes) {
  EXPECT_TRUE(Validate({1 << 20, 4, 2}).ok());
  EXPECT_TRUE(Validate({1, 31, 1}).ok());
  EXPECT_EQ(Validate({0, 4, 2}).code(), EINVAL);
  EXPECT_EQ(Validate({4096, 0, 2}).code(), EINVAL);
  EXPECT_EQ(Validate({4096, 4, 0}).code(), EINVAL);
  EXPECT_EQ(Validate({4096, 30, 3}).code(), EINVAL);
}

}  // namespace
}  // namespace sfs::ec
