// KvIndex: SLRU order, whole-group eviction, pins and leases, tenant quotas,
// TTL, and the errors of a tier full of pinned blocks.
#include "oss/kv/kv_index.h"

#include <algorithm>

#include <gtest/gtest.h>

namespace sfs::oss::kv {
namespace {

constexpr uint64_t kB = 100;  // every block here is 100 bytes

KvIndex::Put Block(const std::string& id, const std::string& group = "", uint32_t tenant = 0,
                   int64_t expiry_ms = 0) {
  KvIndex::Put p;
  p.id = id;
  p.group = group.empty() ? "k" + id : group;
  p.tenant = tenant;
  p.size = kB;
  p.crc = 42;
  p.expiry_ms = expiry_ms;
  return p;
}

bool Has(KvIndex& ix, const std::string& id, int64_t now = 0) {
  std::vector<std::string> expired;
  return ix.Lookup(id, now, false, &expired).has_value();
}

std::vector<std::string> Sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(KvIndexTest, EvictsTheLeastRecentlyPutFirst) {
  KvIndex ix(3 * kB, 3 * kB);
  for (const char* id : {"a", "b", "c"}) ASSERT_TRUE(ix.Insert(Block(id), 0).status.ok());
  KvIndex::Inserted r = ix.Insert(Block("d"), 0);
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.evicted, std::vector<std::string>{"a"});
  EXPECT_FALSE(Has(ix, "a"));
  EXPECT_TRUE(Has(ix, "b") && Has(ix, "c") && Has(ix, "d"));
  EXPECT_EQ(ix.bytes(), 3 * kB);
}

TEST(KvIndexTest, AHitProtectsAGroupFromAScanOfNewOnes) {
  KvIndex ix(4 * kB, 4 * kB);
  ASSERT_TRUE(ix.Insert(Block("hot"), 0).status.ok());
  std::vector<std::string> expired;
  ASSERT_TRUE(ix.Lookup("hot", 0, true, &expired));  // a read: to protected
  EXPECT_TRUE(ix.IsProtected("hot"));
  // A scan of 10 one-off blocks cycles through probation only (plain LRU
  // would evict "hot" at the fourth).
  for (int i = 0; i < 10; ++i) {
    KvIndex::Inserted r = ix.Insert(Block("scan" + std::to_string(i)), 0);
    ASSERT_TRUE(r.status.ok());
    EXPECT_EQ(std::count(r.evicted.begin(), r.evicted.end(), "hot"), 0) << i;
  }
  EXPECT_TRUE(Has(ix, "hot"));
  // An exists is not a hit: it does not promote.
  ASSERT_TRUE(ix.Lookup("scan9", 0, false, &expired));
  EXPECT_FALSE(ix.IsProtected("scan9"));
}

TEST(KvIndexTest, ProtectedHoldsAtMostItsShareThenGivesBackItsOldest) {
  KvIndex ix(10 * kB, 10 * kB);  // protected: at most 8 blocks
  std::vector<std::string> expired;
  for (int i = 0; i < 9; ++i) {
    std::string id = "p" + std::to_string(i);
    ASSERT_TRUE(ix.Insert(Block(id), 0).status.ok());
    ASSERT_TRUE(ix.Lookup(id, 0, true, &expired));
  }
  EXPECT_FALSE(ix.IsProtected("p0"));  // demoted to probation's MRU end
  EXPECT_TRUE(ix.IsProtected("p8"));
  // p0 is probation's only group and the first victim.
  ASSERT_TRUE(ix.Insert(Block("x"), 0).status.ok());
  KvIndex::Inserted r = ix.Insert(Block("y"), 0);
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.evicted, std::vector<std::string>{"p0"});
}

TEST(KvIndexTest, AGroupIsEvictedWhole) {
  KvIndex ix(5 * kB, 5 * kB);
  for (const char* id : {"c0.l0", "c0.l1", "c0.l2"}) ASSERT_TRUE(ix.Insert(Block(id, "g0"), 0).status.ok());
  for (const char* id : {"c1.l0", "c1.l1"}) ASSERT_TRUE(ix.Insert(Block(id, "g1"), 0).status.ok());
  KvIndex::Inserted r = ix.Insert(Block("c2.l0", "g2"), 0);
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(Sorted(r.evicted), (std::vector<std::string>{"c0.l0", "c0.l1", "c0.l2"}));
  EXPECT_EQ(ix.evicted_groups(), 1u);
  EXPECT_TRUE(Has(ix, "c1.l0") && Has(ix, "c1.l1"));
}

TEST(KvIndexTest, APutNeverEvictsItsOwnGroup) {
  KvIndex ix(3 * kB, 3 * kB);
  ASSERT_TRUE(ix.Insert(Block("g.0", "g"), 0).status.ok());
  ASSERT_TRUE(ix.Insert(Block("other"), 0).status.ok());
  ASSERT_TRUE(ix.Insert(Block("g.1", "g"), 0).status.ok());
  // Full: the put joins g (which g.1 made the most recent), so "other" goes.
  KvIndex::Inserted r = ix.Insert(Block("g.2", "g"), 0);
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.evicted, std::vector<std::string>{"other"});
  // Only g is left: a fourth member cannot fit.
  r = ix.Insert(Block("g.3", "g"), 0);
  EXPECT_EQ(r.status.code(), ENOSPC);
  EXPECT_FALSE(Has(ix, "g.3"));
}

TEST(KvIndexTest, APinnedGroupIsSkippedUntilItsPinEnds) {
  KvIndex ix(2 * kB, 2 * kB);
  ASSERT_TRUE(ix.Insert(Block("old", "g"), 0).status.ok());
  ASSERT_TRUE(ix.Insert(Block("new"), 0).status.ok());
  ASSERT_TRUE(ix.Pin("old", 1000));  // until t = 1000 ms
  KvIndex::Inserted r = ix.Insert(Block("third"), 10);
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.evicted, std::vector<std::string>{"new"});
  EXPECT_TRUE(Has(ix, "old", 10));
  // Everything else pinned too: the put fails, nothing stored.
  ASSERT_TRUE(ix.Pin("third", 1000));
  r = ix.Insert(Block("fourth"), 20);
  EXPECT_EQ(r.status.code(), ENOSPC);
  EXPECT_FALSE(Has(ix, "fourth", 20));
  // Once the pins end, the oldest goes again.
  r = ix.Insert(Block("fifth"), 1000);
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.evicted, std::vector<std::string>{"old"});
}

TEST(KvIndexTest, UnpinAndRePutKeepOrDropThePin) {
  KvIndex ix(2 * kB, 2 * kB);
  ASSERT_TRUE(ix.Insert(Block("a"), 0).status.ok());
  ASSERT_TRUE(ix.Pin("a", 1000));
  ASSERT_TRUE(ix.Insert(Block("a"), 1).status.ok());  // a re-put keeps the pin
  ASSERT_TRUE(ix.Insert(Block("b"), 2).status.ok());
  KvIndex::Inserted r = ix.Insert(Block("c"), 3);
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.evicted, std::vector<std::string>{"b"});
  ASSERT_TRUE(ix.Pin("a", 0));  // unpinned: oldest (a, then c)
  r = ix.Insert(Block("d"), 4);
  EXPECT_EQ(r.evicted, std::vector<std::string>{"a"});
  EXPECT_FALSE(ix.Pin("nope", 10));
}

TEST(KvIndexTest, ATenantOverQuotaLosesItsOwnOldestBlocks) {
  KvIndex ix(10 * kB, 3 * kB);
  ASSERT_TRUE(ix.Insert(Block("a0", "", 1), 0).status.ok());  // tenant 1's oldest
  ASSERT_TRUE(ix.Insert(Block("b0", "", 2), 0).status.ok());  // tenant 2 older than a1, a2
  ASSERT_TRUE(ix.Insert(Block("a1", "", 1), 0).status.ok());
  ASSERT_TRUE(ix.Insert(Block("a2", "", 1), 0).status.ok());
  KvIndex::Inserted r = ix.Insert(Block("a3", "", 1), 0);
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.evicted, std::vector<std::string>{"a0"});
  EXPECT_TRUE(Has(ix, "b0"));
  EXPECT_EQ(ix.tenant_bytes(1), 3 * kB);
  EXPECT_EQ(ix.tenant_bytes(2), 1 * kB);
}

TEST(KvIndexTest, ExpiredBlocksAreMissesAndDropped) {
  KvIndex ix(10 * kB, 10 * kB);
  ASSERT_TRUE(ix.Insert(Block("t", "", 0, 500), 0).status.ok());
  std::vector<std::string> expired;
  EXPECT_TRUE(ix.Lookup("t", 499, true, &expired));
  EXPECT_FALSE(ix.Lookup("t", 500, true, &expired));
  EXPECT_EQ(expired, std::vector<std::string>{"t"});
  EXPECT_EQ(ix.bytes(), 0u);
  // A pin outlives the TTL.
  ASSERT_TRUE(ix.Insert(Block("p", "", 0, 500), 0).status.ok());
  ASSERT_TRUE(ix.Pin("p", 2000));
  EXPECT_TRUE(ix.Lookup("p", 1000, false, &expired));
}

TEST(KvIndexTest, TooLargeIsEfbigAndRemoveFreesBytes) {
  KvIndex ix(kB / 2, kB / 2);
  EXPECT_EQ(ix.Insert(Block("big"), 0).status.code(), EFBIG);
  KvIndex ix2(2 * kB, 2 * kB);
  ASSERT_TRUE(ix2.Insert(Block("a", "g"), 0).status.ok());
  ASSERT_TRUE(ix2.Insert(Block("b", "g"), 0).status.ok());
  EXPECT_TRUE(ix2.Remove("a"));
  EXPECT_FALSE(ix2.Remove("a"));
  EXPECT_EQ(ix2.bytes(), kB);
  EXPECT_TRUE(Has(ix2, "b"));
}

}  // namespace
}  // namespace sfs::oss::kv
