// Reed–Solomon codec: random round trips through every erasure pattern up to M,
// rejection beyond M, parity delta updates, bad arguments.
#include "common/ec/rs_codec.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <thread>

namespace sfs::ec {
namespace {

using Bytes = std::vector<uint8_t>;

struct Row {
  std::vector<Bytes> chunks;  // k data then m parity

  std::vector<std::span<uint8_t>> Spans() {
    std::vector<std::span<uint8_t>> s;
    for (Bytes& c : chunks) s.emplace_back(c);
    return s;
  }
};

Bytes RandomBytes(std::mt19937_64& rng, size_t n) {
  Bytes b(n);
  for (auto& x : b) x = static_cast<uint8_t>(rng());
  return b;
}

Row EncodedRow(const RsCodec& codec, std::mt19937_64& rng, size_t len) {
  Row row;
  for (int i = 0; i < codec.k(); ++i) row.chunks.push_back(RandomBytes(rng, len));
  for (int i = 0; i < codec.m(); ++i) row.chunks.push_back(Bytes(len, 0xEE));
  std::vector<std::span<const uint8_t>> data(row.chunks.begin(), row.chunks.begin() + codec.k());
  std::vector<std::span<uint8_t>> parity;
  for (int i = 0; i < codec.m(); ++i) parity.emplace_back(row.chunks[codec.k() + i]);
  EXPECT_TRUE(codec.Encode(data, parity).ok());
  return row;
}

// Every subset of {0..n-1} with 1..max_size members, as index lists.
std::vector<std::vector<int>> Subsets(int n, int max_size) {
  std::vector<std::vector<int>> out;
  for (uint32_t mask = 1; mask < (1u << n); ++mask) {
    if (std::popcount(mask) > max_size) continue;
    std::vector<int> s;
    for (int i = 0; i < n; ++i)
      if (mask & (1u << i)) s.push_back(i);
    out.push_back(s);
  }
  return out;
}

struct Shape {
  int k, m;
};

class RsCodecShapes : public ::testing::TestWithParam<Shape> {};

TEST_P(RsCodecShapes, EveryErasurePatternUpToMRoundTrips) {
  auto [k, m] = GetParam();
  auto codec = RsCodec::Create(k, m);
  ASSERT_TRUE(codec.ok());
  std::mt19937_64 rng(k * 100 + m);
  for (size_t len : {size_t{1}, size_t{31}, size_t{4096 + 7}, size_t{65536}}) {
    Row row = EncodedRow(**codec, rng, len);
    auto patterns = Subsets(k + m, m);
    for (const auto& erased : patterns) {
      Row damaged = row;
      for (int e : erased) std::fill(damaged.chunks[e].begin(), damaged.chunks[e].end(), 0x5A);
      auto spans = damaged.Spans();
      Status st = (*codec)->Reconstruct(spans, erased);
      ASSERT_TRUE(st.ok()) << st.ToString();
      for (int e : erased) ASSERT_EQ(damaged.chunks[e], row.chunks[e]) << "chunk " << e;
    }
  }
  // Patterns are cached: repeating them builds no new tables.
  size_t cached = (*codec)->CachedPatterns();
  EXPECT_EQ(cached, Subsets(k + m, m).size());
  Row row = EncodedRow(**codec, rng, 64);
  std::vector<int> erased = {0};
  auto spans = row.Spans();
  ASSERT_TRUE((*codec)->Reconstruct(spans, erased).ok());
  EXPECT_EQ((*codec)->CachedPatterns(), cached);
}

TEST_P(RsCodecShapes, AbsentChunksAreNeitherReadNorWritten) {
  auto [k, m] = GetParam();
  auto codec = RsCodec::Create(k, m);
  ASSERT_TRUE(codec.ok());
  std::mt19937_64 rng(k * 7 + m);
  Row row = EncodedRow(**codec, rng, 1000);
  // Rebuild one chunk while every other lost chunk (up to M in all) is simply absent.
  for (int want = 0; want < k + m; ++want) {
    for (int absent_n = 0; absent_n < m; ++absent_n) {
      Row damaged = row;
      std::fill(damaged.chunks[want].begin(), damaged.chunks[want].end(), 0);
      auto spans = damaged.Spans();
      for (int a = 0; a < absent_n; ++a) spans[(want + 1 + a) % (k + m)] = {};
      std::vector<int> erased = {want};
      ASSERT_TRUE((*codec)->Reconstruct(spans, erased).ok());
      ASSERT_EQ(damaged.chunks[want], row.chunks[want]);
    }
  }
}

TEST_P(RsCodecShapes, MoreThanMLossesFailWithEioAndWriteNothing) {
  auto [k, m] = GetParam();
  auto codec = RsCodec::Create(k, m);
  ASSERT_TRUE(codec.ok());
  std::mt19937_64 rng(99);
  Row row = EncodedRow(**codec, rng, 512);
  for (uint32_t mask = 1; mask < (1u << (k + m)); ++mask) {
    if (std::popcount(mask) != m + 1) continue;
    Row damaged = row;
    std::vector<int> erased;
    for (int i = 0; i < k + m; ++i) {
      if (!(mask & (1u << i))) continue;
      erased.push_back(i);
      std::fill(damaged.chunks[i].begin(), damaged.chunks[i].end(), 0x77);
    }
    auto spans = damaged.Spans();
    Status st = (*codec)->Reconstruct(spans, erased);
    ASSERT_EQ(st.code(), EIO) << st.ToString();
    for (int e : erased) ASSERT_EQ(damaged.chunks[e], Bytes(512, 0x77));
    // The same loss expressed as M erased plus one absent chunk fails too.
    std::vector<int> fewer(erased.begin() + 1, erased.end());
    spans[erased[0]] = {};
    ASSERT_EQ((*codec)->Reconstruct(spans, fewer).code(), EIO);
  }
}

TEST_P(RsCodecShapes, ParityDeltaUpdateMatchesFullReencode) {
  auto [k, m] = GetParam();
  auto codec = RsCodec::Create(k, m);
  ASSERT_TRUE(codec.ok());
  std::mt19937_64 rng(k + m);
  const size_t len = 8192;
  Row row = EncodedRow(**codec, rng, len);
  for (int iter = 0; iter < 20; ++iter) {
    int idx = static_cast<int>(rng() % k);
    size_t off = rng() % len;
    size_t n = 1 + rng() % (len - off);
    Bytes fresh = RandomBytes(rng, n);
    std::vector<std::span<uint8_t>> parity;
    for (int p = 0; p < m; ++p) parity.emplace_back(row.chunks[k + p].data() + off, n);
    std::span<const uint8_t> old_data(row.chunks[idx].data() + off, n);
    ASSERT_TRUE((*codec)->UpdateParity(idx, old_data, fresh, parity).ok());
    std::copy(fresh.begin(), fresh.end(), row.chunks[idx].begin() + off);
    Row expect = row;
    std::vector<std::span<const uint8_t>> data(expect.chunks.begin(), expect.chunks.begin() + k);
    std::vector<std::span<uint8_t>> eparity;
    for (int p = 0; p < m; ++p) eparity.emplace_back(expect.chunks[k + p]);
    ASSERT_TRUE((*codec)->Encode(data, eparity).ok());
    for (int p = 0; p < m; ++p) ASSERT_EQ(row.chunks[k + p], expect.chunks[k + p]) << iter;
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, RsCodecShapes,
                         ::testing::Values(Shape{2, 1}, Shape{4, 2}, Shape{8, 2}, Shape{8, 3}),
                         [](const auto& info) {
                           return std::to_string(info.param.k) + "p" +
                                  std::to_string(info.param.m);
                         });

TEST(RsCodecTest, BadShapesAreEinval) {
  for (auto [k, m] : {Shape{0, 2}, Shape{4, 0}, Shape{-1, 2}, Shape{30, 3}, Shape{32, 1}}) {
    auto c = RsCodec::Create(k, m);
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().code(), EINVAL) << k << "+" << m;
  }
  EXPECT_TRUE(RsCodec::Create(31, 1).ok());
  EXPECT_TRUE(RsCodec::Create(16, 16).ok());
}

TEST(RsCodecTest, WrongCountsAndSizesAreEinval) {
  auto codec = RsCodec::Create(4, 2);
  ASSERT_TRUE(codec.ok());
  std::mt19937_64 rng(1);
  Row row = EncodedRow(**codec, rng, 100);
  std::vector<std::span<const uint8_t>> data(row.chunks.begin(), row.chunks.begin() + 4);
  std::vector<std::span<uint8_t>> parity = {row.chunks[4], row.chunks[5]};
  // Too few data chunks, too few parity chunks.
  EXPECT_EQ((*codec)->Encode(std::span(data).first(3), parity).code(), EINVAL);
  EXPECT_EQ((*codec)->Encode(data, std::span(parity).first(1)).code(), EINVAL);
  // One data chunk shorter than the others; one parity chunk shorter.
  auto short_data = data;
  short_data[2] = short_data[2].first(99);
  EXPECT_EQ((*codec)->Encode(short_data, parity).code(), EINVAL);
  auto short_parity = parity;
  short_parity[1] = short_parity[1].first(50);
  EXPECT_EQ((*codec)->Encode(data, short_parity).code(), EINVAL);

  auto spans = row.Spans();
  std::vector<int> out_of_range = {6};
  EXPECT_EQ((*codec)->Reconstruct(spans, out_of_range).code(), EINVAL);
  std::vector<int> twice = {1, 1};
  EXPECT_EQ((*codec)->Reconstruct(spans, twice).code(), EINVAL);
  std::vector<int> one = {1};
  auto bad = spans;
  bad[3] = bad[3].first(10);
  EXPECT_EQ((*codec)->Reconstruct(bad, one).code(), EINVAL);
  bad = spans;
  bad[1] = bad[1].first(10);  // the output buffer is too short
  EXPECT_EQ((*codec)->Reconstruct(bad, one).code(), EINVAL);
  EXPECT_EQ((*codec)->Reconstruct(std::span(spans).first(5), one).code(), EINVAL);

  Bytes a(10), b(11);
  std::vector<std::span<uint8_t>> p10 = {std::span(row.chunks[4]).first(10),
                                         std::span(row.chunks[5]).first(10)};
  EXPECT_EQ((*codec)->UpdateParity(4, a, a, p10).code(), EINVAL);  // 4 is parity, not data
  EXPECT_EQ((*codec)->UpdateParity(0, a, b, p10).code(), EINVAL);
  EXPECT_EQ((*codec)->UpdateParity(0, a, a, std::span(p10).first(1)).code(), EINVAL);
}

TEST(RsCodecTest, ConcurrentReconstructionsShareOneCodec) {
  auto codec = RsCodec::Create(8, 3);
  ASSERT_TRUE(codec.ok());
  std::mt19937_64 rng(5);
  const Row row = EncodedRow(**codec, rng, 4096);
  auto patterns = Subsets(11, 3);
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (size_t i = t; i < patterns.size(); i += 2) {
        Row damaged = row;
        for (int e : patterns[i]) damaged.chunks[e].assign(4096, 0);
        auto spans = damaged.Spans();
        if (!(*codec)->Reconstruct(spans, patterns[i]).ok()) ++mismatches;
        for (int e : patterns[i])
          if (damaged.chunks[e] != row.chunks[e]) ++mismatches;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

}  // namespace
}  // namespace sfs::ec
