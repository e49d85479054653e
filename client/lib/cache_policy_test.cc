// CachePolicy: farthest next use over the order hint against LRU, on the
// workload the hint is for (a shuffled epoch order larger than the cache).
#include "client/lib/cache_policy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

namespace sfs::client {
namespace {

// Reads n items per epoch in a new seeded permutation through a cache of
// capacity items, one entry per item; with hint, each epoch's order is
// given first. Returns the hits of each epoch.
std::vector<int> Epochs(int n, int capacity, int epochs, bool hint) {
  CachePolicy p;
  std::mt19937 rng(42);
  std::vector<uint64_t> order(n);
  std::iota(order.begin(), order.end(), 1);
  std::vector<int> hits;
  for (int e = 0; e < epochs; ++e) {
    std::shuffle(order.begin(), order.end(), rng);
    if (hint) p.SetHint(order);
    int h = 0;
    for (uint64_t item : order) {
      if (p.Contains(item)) {
        ++h;
      } else {
        while (p.size() >= static_cast<size_t>(capacity)) p.Remove(*p.Victim());
        p.Touch(item, item);
      }
      p.Touch(item, item);
      p.Consume(item);
    }
    hits.push_back(h);
  }
  return hits;
}

TEST(CachePolicyTest, FarthestNextUseBeatsLruOnAShuffledOrderTwiceTheCache) {
  const int n = 2000, capacity = 1000;
  std::vector<int> lru = Epochs(n, capacity, 4, false);
  std::vector<int> hinted = Epochs(n, capacity, 4, true);
  EXPECT_EQ(lru[0], 0);
  EXPECT_EQ(hinted[0], 0);
  for (int e = 1; e < 4; ++e) {
    // Belady over a permutation keeps the whole cache until it is read:
    // about capacity hits; LRU loses what the new order reaches late.
    EXPECT_GE(hinted[e], capacity * 95 / 100) << "epoch " << e;
    EXPECT_LE(lru[e], capacity / 2) << "epoch " << e;
    EXPECT_GE(hinted[e], lru[e] * 2) << "epoch " << e;
  }
}

TEST(CachePolicyTest, WithoutAHintTheVictimIsTheLeastRecentlyUsed) {
  CachePolicy p;
  for (uint64_t k = 1; k <= 3; ++k) p.Touch(k, k);
  p.Touch(1, 1);
  EXPECT_EQ(*p.Victim(), 2u);
  p.Remove(2);
  EXPECT_EQ(*p.Victim(), 3u);
  p.Remove(3);
  p.Remove(1);
  EXPECT_FALSE(p.Victim().has_value());
}

TEST(CachePolicyTest, UnhintedEntriesGoFirstThenTheFarthestNextUse) {
  CachePolicy p;
  for (uint64_t k = 1; k <= 4; ++k) p.Touch(k, k);
  p.SetHint({3, 1, 2});  // 4 is not in the hint
  EXPECT_EQ(*p.Victim(), 4u);
  EXPECT_EQ(p.VictimNextUse(), CachePolicy::kNever);
  p.Remove(4);
  EXPECT_EQ(*p.Victim(), 2u);  // used last (position 2)
  EXPECT_EQ(p.VictimNextUse(), 2u);
  EXPECT_EQ(p.Consume(3), 0u);  // read: no next use left, so it goes first
  EXPECT_EQ(*p.Victim(), 3u);
  EXPECT_EQ(p.Consume(3), CachePolicy::kNever);
}

TEST(CachePolicyTest, AGroupListedTwiceKeepsItsSecondUse) {
  CachePolicy p;
  p.Touch(10, 1);
  p.Touch(20, 2);
  p.SetHint({1, 2, 1});
  EXPECT_EQ(*p.Victim(), 20u);  // next uses: group 1 at 0, group 2 at 1
  EXPECT_EQ(p.Consume(1), 0u);
  EXPECT_EQ(p.NextUse(1), 2u);
  EXPECT_EQ(*p.Victim(), 10u);  // now group 1 is needed last
}

}  // namespace
}  // namespace sfs::client
