// The MDS's key rotator and an OSS's key ring: which keys sign and which are
// accepted across periodic and forced rotations; tokens of unknown or
// retired keys refused.
#include "common/auth/signing_keys.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>

namespace sfs::auth {
namespace {

constexpr int64_t kPeriod = 60'000, kLifetime = 10'000, kPublish = 3'000;

bool Has(const std::vector<PublishedKey>& keys, uint32_t id) {
  return std::any_of(keys.begin(), keys.end(), [&](const auto& k) { return k.key.id == id; });
}

uint32_t CurrentOf(const std::vector<PublishedKey>& keys) {
  for (const auto& k : keys) {
    if (k.current) return k.key.id;
  }
  return 0;
}

std::string TokenFor(const ClusterKey& key, int64_t expiry) {
  Capability c;
  c.ino = 5;
  c.rights = kRead;
  c.expiry = expiry;
  c.objects = {{0, 1}};
  return Sign(c, key);
}

TEST(KeyRotatorTest, PublishesTheCurrentAndTheNextKeyBeforeItSigns) {
  KeyRotator r(kPeriod, kLifetime, kPublish);
  ClusterKey first = r.Current(0);
  EXPECT_EQ(first.bytes.size(), 32u);
  std::vector<PublishedKey> pub = r.Published(0);
  ASSERT_EQ(pub.size(), 2u);
  EXPECT_EQ(CurrentOf(pub), first.id);
  uint32_t next = pub[0].key.id == first.id ? pub[1].key.id : pub[0].key.id;
  EXPECT_NE(next, first.id);
  EXPECT_NE(pub[0].key.bytes, pub[1].key.bytes);
  EXPECT_EQ(r.Current(kPeriod - 1).id, first.id);
  // At the period the published next key signs, and a new next is published.
  EXPECT_EQ(r.Current(kPeriod).id, next);
  EXPECT_EQ(r.Published(kPeriod).size(), 3u);
}

TEST(KeyRotatorTest, KeepsThePreviousKeyUntilItsTokensExpireThenRetiresIt) {
  KeyRotator r(kPeriod, kLifetime, kPublish);
  uint32_t first = r.Current(0).id;
  r.Current(kPeriod);
  EXPECT_TRUE(Has(r.Published(kPeriod + kLifetime - 1), first));
  EXPECT_FALSE(Has(r.Published(kPeriod + kLifetime), first));
  EXPECT_EQ(r.Published(kPeriod + kLifetime).size(), 2u);
}

TEST(KeyRotatorTest, AForcedRotationPublishesAFreshKeyThenRetiresAllOlderAtOnce) {
  KeyRotator r(kPeriod, kLifetime, kPublish);
  uint32_t first = r.Current(0).id;
  std::vector<PublishedKey> before = r.Published(0);
  KeyRotator::Rotation rot = r.RotateNow(1000);
  EXPECT_FALSE(Has(before, rot.new_id));  // not the next key published before it
  EXPECT_EQ(rot.signs_from_ms, 1000 + kPublish);
  EXPECT_EQ(rot.retiring, std::vector<uint32_t>{first});
  std::vector<PublishedKey> pub = r.Published(1000);
  EXPECT_TRUE(Has(pub, rot.new_id));
  EXPECT_EQ(pub.size(), 2u);  // the old next key is gone
  EXPECT_EQ(r.Current(1000 + kPublish - 1).id, first);  // the OSSes learn it first
  EXPECT_EQ(r.Current(1000 + kPublish).id, rot.new_id);
  EXPECT_FALSE(Has(r.Published(1000 + kPublish), first));
}

TEST(KeyRotatorTest, TwoRotatorsUseDifferentKeyIds) {
  KeyRotator a(kPeriod, kLifetime, kPublish), b(kPeriod, kLifetime, kPublish);
  EXPECT_NE(a.Current(0).id, b.Current(0).id);
  EXPECT_NE(a.Current(0).bytes, b.Current(0).bytes);
}

TEST(KeyRingTest, VerifiesWithTheNamedKeyAndRefusesUnknownOrRetiredOnes) {
  KeyRotator r(kPeriod, kLifetime, kPublish);
  KeyRing ring;
  ClusterKey first = r.Current(0);
  std::string token = TokenFor(first, 100);
  EXPECT_EQ(TokenKeyId(token), first.id);
  Result<Capability> none = Verify(token, ring, 1);  // nothing installed yet
  ASSERT_FALSE(none.ok());
  EXPECT_TRUE(IsUnknownKey(none.status()));
  ring.Install(r.Published(0));
  ASSERT_TRUE(ring.Current().has_value());
  EXPECT_EQ(ring.Current()->id, first.id);
  ASSERT_TRUE(Verify(token, ring, 1).ok());
  EXPECT_EQ(Verify(token, ring, 100).status().code(), EACCES);  // expired
  r.RotateNow(0);
  ring.Install(r.Published(kPublish));
  Result<Capability> retired = Verify(token, ring, 1);
  EXPECT_EQ(retired.status().code(), EACCES);
  EXPECT_TRUE(IsUnknownKey(retired.status()));
  EXPECT_TRUE(Verify(TokenFor(r.Current(kPublish), 100), ring, 1).ok());
}

TEST(KeyRingTest, AKeyOfTheSameIdButOtherBytesDoesNotVerify) {
  KeyRing ring;
  ring.Install({{ClusterKey{std::string(32, 'a'), 7}, true}});
  EXPECT_FALSE(IsUnknownKey(Verify(TokenFor({std::string(32, 'b'), 7}, 100), ring, 1).status()));
  EXPECT_EQ(Verify(TokenFor({std::string(32, 'b'), 7}, 100), ring, 1).status().code(), EACCES);
}

TEST(KeyRingTest, KeepsAtMostTheNewestFewKeys) {
  std::vector<PublishedKey> many;  // oldest first, as the MDS publishes them
  for (uint32_t i = 0; i < 20; ++i) many.push_back({ClusterKey{std::string(32, 'x'), i + 2}, i == 18});
  KeyRing ring;
  ring.Install(many);
  EXPECT_EQ(ring.ids().size(), KeyRing::kMaxKeys);
  EXPECT_FALSE(ring.Has(2));
  EXPECT_TRUE(ring.Has(21));  // the next key
  ASSERT_TRUE(ring.Current().has_value());
  EXPECT_EQ(ring.Current()->id, 20u);
}

}  // namespace
}  // namespace sfs::auth
