#include "common/auth/revocation.h"

#include <gtest/gtest.h>

namespace sfs::auth {
namespace {

Capability Cap(uint64_t ino, int64_t issued_ms, std::string tenant = "") {
  Capability c;
  c.ino = ino;
  c.issued_ms = issued_ms;
  c.tenant = std::move(tenant);
  c.rights = kRead;
  return c;
}

Revocation OfInode(uint64_t ino, int64_t before_ms) {
  Revocation r;
  r.scope = Revocation::Scope::kInode;
  r.ino = ino;
  r.before_ms = before_ms;
  return r;
}

// An entry voids its inode's capabilities minted before it, and no others;
// one minted at the floor it gives is not voided.
TEST(RevocationListTest, AnInodeEntryVoidsOnlyWhatWasMintedBeforeIt) {
  RevocationList l;
  EXPECT_FALSE(l.Voids(Cap(7, 100)));
  l.Add(OfInode(7, 1000));
  EXPECT_TRUE(l.Voids(Cap(7, 999)));
  EXPECT_TRUE(l.Voids(Cap(7, 0)));  // a token from before mint times
  EXPECT_FALSE(l.Voids(Cap(8, 999)));
  EXPECT_EQ(l.MintFloorMs(7, ""), 1000);
  EXPECT_FALSE(l.Voids(Cap(7, l.MintFloorMs(7, ""))));
  EXPECT_EQ(l.MintFloorMs(8, ""), 0);
  Capability server = Cap(0, 0);
  server.all_objects = true;
  l.Add(Revocation{.scope = Revocation::Scope::kAll, .before_ms = 5000});
  EXPECT_FALSE(l.Voids(server));
  EXPECT_TRUE(l.Voids(Cap(9, 4999)));
  EXPECT_EQ(l.MintFloorMs(9, ""), 5000);
}

TEST(RevocationListTest, ATenantEntryVoidsItsKvAndFileCapabilitiesAlone) {
  RevocationList l;
  l.Add(Revocation{.scope = Revocation::Scope::kTenant, .tenant = "a", .before_ms = 1000});
  EXPECT_TRUE(l.Voids(Cap(0, 500, "a")));  // a KV grant covers no inode
  EXPECT_TRUE(l.Voids(Cap(3, 500, "a")));
  EXPECT_FALSE(l.Voids(Cap(3, 500, "b")));
  EXPECT_FALSE(l.Voids(Cap(3, 500, "")));
  EXPECT_EQ(l.MintFloorMs(3, "a"), 1000);
}

// An earlier time for the same inode never lowers what a later one said.
TEST(RevocationListTest, EntriesOnlyRaiseAnInodesTime) {
  RevocationList l;
  l.Add(OfInode(7, 2000));
  l.Add(OfInode(7, 1000));
  EXPECT_TRUE(l.Voids(Cap(7, 1500)));
  EXPECT_EQ(l.MintFloorMs(7, ""), 2000);
}

// An OSS gets the entries after the last it saw, applies each once, and
// forgets them all on Reset (another MDS).
TEST(RevocationListTest, AnOssCatchesUpBySeqAndStartsOverOnReset) {
  RevocationList mds, oss;
  for (uint64_t i = 1; i <= 5; ++i) mds.Add(OfInode(i, 1000));
  std::vector<Revocation> first = mds.Since(oss.applied_seq(), 3);
  ASSERT_EQ(first.size(), 3u);
  EXPECT_EQ(first.back().seq, 3u);
  oss.Apply(first);
  oss.Apply(first);  // again: nothing new
  EXPECT_EQ(oss.applied_seq(), 3u);
  EXPECT_TRUE(oss.Voids(Cap(3, 10)));
  EXPECT_FALSE(oss.Voids(Cap(4, 10)));
  oss.Apply(mds.Since(oss.applied_seq(), 100));
  EXPECT_EQ(oss.applied_seq(), 5u);
  EXPECT_TRUE(oss.Voids(Cap(5, 10)));
  EXPECT_TRUE(mds.Since(5, 100).empty());
  oss.Reset();
  EXPECT_EQ(oss.applied_seq(), 0u);
  EXPECT_FALSE(oss.Voids(Cap(5, 10)));
}

// An entry outlives every capability it could void, and no longer.
TEST(RevocationListTest, PruneDropsEntriesOnceWhatTheyVoidHasExpired) {
  RevocationList l;
  l.Add(OfInode(1, 1000));
  l.Add(OfInode(2, 1000 + kCapabilityLifetimeSec * 1000));
  l.Prune(1000 + kCapabilityLifetimeSec * 1000);
  EXPECT_EQ(l.size(), 2u);
  l.Prune(1001 + kCapabilityLifetimeSec * 1000);
  EXPECT_EQ(l.size(), 1u);
  EXPECT_FALSE(l.Voids(Cap(1, 10)));
  EXPECT_TRUE(l.Voids(Cap(2, 10)));
  EXPECT_EQ(l.Since(0, 100).size(), 1u);
}

// Version 3 tokens carry the mint time; it round-trips and is inside the MAC.
TEST(RevocationListTest, TheMintTimeRoundTripsInTheToken) {
  ClusterKey key{std::string(32, 'k'), 1};
  Capability c = Cap(7, 123456789012);
  c.expiry = NowUnix() + 60;
  c.key_id = 1;
  c.objects = {{1, 2}};
  std::string token = Sign(c, key);
  Result<Capability> got = Verify(token, key, NowUnix());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->issued_ms, 123456789012);
  token[36] ^= 1;  // inside the mint time: 30 header bytes, the KV number, then it
  EXPECT_FALSE(Verify(token, key, NowUnix()).ok());
}

}  // namespace
}  // namespace sfs::auth
