// Stripe math checked against a naive byte-by-byte reference.
#include "common/layout/stripe.h"

#include <gtest/gtest.h>

#include <random>

namespace sfs::layout {
namespace {

struct Loc {
  uint32_t stripe;
  uint64_t obj_offset;
};

Loc NaiveLocate(const Geometry& g, uint64_t off) {
  // Walk stripe units one by one, as the definition reads.
  uint64_t unit = 0, pos = 0;
  while (pos + g.stripe_size <= off) {
    pos += g.stripe_size;
    ++unit;
  }
  return {static_cast<uint32_t>(unit % g.stripe_count),
          (unit / g.stripe_count) * g.stripe_size + (off - pos)};
}

TEST(StripeTest, MapRangeMatchesNaiveReferenceForRandomLayouts) {
  std::mt19937_64 rng(42);
  const uint64_t sizes[] = {65536, 131072, 1 << 20};
  for (int iter = 0; iter < 300; ++iter) {
    Geometry g{sizes[rng() % 3], static_cast<uint32_t>(1 + rng() % 6)};
    uint64_t off = rng() % (8 * g.stripe_size * g.stripe_count);
    uint64_t len = rng() % (3 * g.stripe_size * g.stripe_count) + 1;
    auto extents = MapRange(g, off, len);
    uint64_t covered = 0;
    uint64_t expect_off = off;
    for (const Extent& e : extents) {
      ASSERT_EQ(e.file_offset, expect_off);
      ASSERT_GT(e.length, 0u);
      ASSERT_LE(e.length, g.stripe_size);
      // Sample first, last and a middle byte of each extent.
      for (uint64_t d : {uint64_t{0}, e.length / 2, e.length - 1}) {
        Loc l = NaiveLocate(g, e.file_offset + d);
        ASSERT_EQ(l.stripe, e.stripe);
        ASSERT_EQ(l.obj_offset, e.obj_offset + d);
        ASSERT_EQ(FileOffset(g, e.stripe, e.obj_offset + d), e.file_offset + d);
      }
      expect_off += e.length;
      covered += e.length;
    }
    ASSERT_EQ(covered, len);
  }
}

TEST(StripeTest, ObjectSizesSumToFileSizeAndMatchReference) {
  std::mt19937_64 rng(7);
  for (int iter = 0; iter < 200; ++iter) {
    Geometry g{65536ull << (rng() % 3), static_cast<uint32_t>(1 + rng() % 5)};
    uint64_t fsize = rng() % (10 * g.stripe_size * g.stripe_count);
    uint64_t sum = 0;
    uint64_t max_from_objects = 0;
    for (uint32_t s = 0; s < g.stripe_count; ++s) {
      uint64_t os = ObjectSize(g, s, fsize);
      sum += os;
      max_from_objects = std::max(max_from_objects, FileSizeFromObject(g, s, os));
    }
    ASSERT_EQ(sum, fsize);
    ASSERT_EQ(max_from_objects, fsize);
    if (fsize > 0) {
      Loc last = NaiveLocate(g, fsize - 1);
      ASSERT_EQ(ObjectSize(g, last.stripe, fsize), last.obj_offset + 1);
    }
  }
}

}  // namespace
}  // namespace sfs::layout
