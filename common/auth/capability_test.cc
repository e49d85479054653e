// Capability tokens: a signed one verifies to the same fields; one flipped
// bit anywhere, an expired one, a wrong or rotated key are EACCES; key files
// with loose modes are refused.
#include "common/auth/capability.h"
#include "common/auth/capability_cache.h"
#include "common/auth/signing_keys.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <string>

namespace sfs::auth {
namespace {

ClusterKey TestKey(char fill = 'k', uint32_t id = 1) {
  ClusterKey k;
  k.bytes.assign(32, fill);
  k.id = id;
  return k;
}

Capability TestCap() {
  Capability c;
  c.ino = 42;
  c.tenant = "team-a";
  c.kv_tenant = 7;
  c.rights = kRead | kWrite;
  c.expiry = 1000;
  c.key_id = 1;
  c.objects = {{0, 7}, {3, 9}};
  return c;
}

TEST(CapabilityTest, RoundTrip) {
  std::string token = Sign(TestCap(), TestKey());
  Result<Capability> got = Verify(token, TestKey(), 999);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->ino, 42u);
  EXPECT_EQ(got->tenant, "team-a");
  EXPECT_EQ(got->kv_tenant, 7u);
  EXPECT_EQ(got->rights, kRead | kWrite);
  EXPECT_EQ(got->expiry, 1000);
  EXPECT_TRUE(got->Covers(0, 7));
  EXPECT_TRUE(got->Covers(3, 9));
  EXPECT_FALSE(got->Covers(0, 9));
  EXPECT_FALSE(got->Covers(1, 7));
}

TEST(CapabilityTest, TheDefaultTenantAndALongNameRoundTrip) {
  for (std::string tenant : {std::string(), std::string(255, 't')}) {
    Capability cap = TestCap();
    cap.tenant = tenant;
    Result<Capability> got = Verify(Sign(cap, TestKey()), TestKey(), 999);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(got->tenant, tenant);
    EXPECT_TRUE(got->Covers(3, 9));
  }
}

// A token an MDS signed before capabilities carried the tenant (version 1:
// no tenant bytes) still verifies, as the default tenant's.
TEST(CapabilityTest, AVersionOneTokenIsTheDefaultTenants) {
  std::string body;
  auto put = [&](uint64_t v, int bytes) {
    for (int i = bytes - 1; i >= 0; --i) body.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  };
  put(1, 1);     // version
  put(1, 4);     // key id
  put(42, 8);    // ino
  put(kRead, 4);
  put(1000, 8);  // expiry
  put(0, 1);     // all_objects
  put(1, 4);     // one object
  put(3, 4);
  put(9, 8);
  ClusterKey key = TestKey();
  unsigned char mac[32];
  unsigned int len = sizeof mac;
  HMAC(EVP_sha256(), key.bytes.data(), static_cast<int>(key.bytes.size()),
       reinterpret_cast<const unsigned char*>(body.data()), body.size(), mac, &len);
  std::string token = body + std::string(reinterpret_cast<const char*>(mac), len);
  Result<Capability> got = Verify(token, key, 999);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->tenant, "");
  EXPECT_EQ(got->kv_tenant, 0u);
  EXPECT_TRUE(got->Covers(3, 9));
  EXPECT_EQ(got->rights, kRead);
}

TEST(CapabilityTest, EveryFlippedBitFails) {
  std::string token = Sign(TestCap(), TestKey());
  for (size_t i = 0; i < token.size() * 8; ++i) {
    std::string bad = token;
    bad[i / 8] = static_cast<char>(bad[i / 8] ^ (1 << (i % 8)));
    Result<Capability> got = Verify(bad, TestKey(), 999);
    ASSERT_FALSE(got.ok()) << "bit " << i;
    EXPECT_EQ(got.status().code(), EACCES);
  }
}

TEST(CapabilityTest, TruncatedOrExtendedFails) {
  std::string token = Sign(TestCap(), TestKey());
  EXPECT_EQ(Verify(token.substr(0, token.size() - 1), TestKey(), 999).status().code(), EACCES);
  EXPECT_EQ(Verify(token + "x", TestKey(), 999).status().code(), EACCES);
  EXPECT_EQ(Verify("", TestKey(), 999).status().code(), EACCES);
}

TEST(CapabilityTest, ExpiredFails) {
  std::string token = Sign(TestCap(), TestKey());
  EXPECT_EQ(Verify(token, TestKey(), 1000).status().code(), EACCES);
  EXPECT_EQ(Verify(token, TestKey(), 5000).status().code(), EACCES);
}

TEST(CapabilityTest, WrongKeyFails) {
  std::string token = Sign(TestCap(), TestKey());
  EXPECT_EQ(Verify(token, TestKey('x'), 999).status().code(), EACCES);
  // Same bytes, another generation: a rotated-away key.
  EXPECT_EQ(Verify(token, TestKey('k', 2), 999).status().code(), EACCES);
}

TEST(CapabilityTest, KeyFiles) {
  std::string dir = ::testing::TempDir();
  std::string path = dir + "/cap_test_key." + std::to_string(::getpid());
  std::remove(path.c_str());
  ASSERT_TRUE(GenerateKey(path).ok());
  EXPECT_EQ(GenerateKey(path).code(), EEXIST);
  Result<ClusterKey> key = LoadKey(path);
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  EXPECT_EQ(key->bytes.size(), 32u);
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  EXPECT_EQ(LoadKey(path).status().code(), EPERM);
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  { std::ofstream(path) << "not a key"; }
  EXPECT_EQ(LoadKey(path).status().code(), EINVAL);
  std::remove(path.c_str());
}

TEST(CapabilityCacheTest, AHitSaysWhatVerifyingAgainWouldAndChecksExpiry) {
  CapabilityCache cache;
  KeyRing ring;
  ring.Install({{TestKey(), true}});
  std::string token = Sign(TestCap(), TestKey());
  auto first = cache.Verify(token, ring, 999);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(cache.hits(), 0u);
  auto second = cache.Verify(token, ring, 999);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(cache.hits(), 1u);
  EXPECT_EQ(second->get(), first->get());
  EXPECT_TRUE((*second)->Covers(3, 9));
  // Expired: refused from the cache too, and forgotten.
  auto late = cache.Verify(token, ring, 1000);
  EXPECT_EQ(late.status().code(), EACCES);
  EXPECT_EQ(cache.size(), 0u);
}

TEST(CapabilityCacheTest, AForgedTokenIsNeverCachedAndAlwaysRefused) {
  CapabilityCache cache;
  KeyRing ring;
  ring.Install({{TestKey(), true}});
  std::string token = Sign(TestCap(), TestKey());
  ASSERT_TRUE(cache.Verify(token, ring, 1).ok());
  std::string forged = token;
  forged[5] ^= 1;  // the ino, under the same MAC
  for (int i = 0; i < 3; ++i) EXPECT_EQ(cache.Verify(forged, ring, 1).status().code(), EACCES);
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(cache.hits(), 0u);
}

TEST(CapabilityCacheTest, ACachedTokenOfARetiredKeyIsRefused) {
  CapabilityCache cache;
  KeyRing ring;
  ring.Install({{TestKey(), true}});
  std::string token = Sign(TestCap(), TestKey());
  ASSERT_TRUE(cache.Verify(token, ring, 1).ok());
  ring.Install({{TestKey('n', 2), true}});  // the MDS retired key 1
  Result<std::shared_ptr<const Capability>> refused = cache.Verify(token, ring, 1);
  EXPECT_EQ(refused.status().code(), EACCES);
  EXPECT_TRUE(IsUnknownKey(refused.status()));
  EXPECT_EQ(cache.size(), 0u);
}

TEST(CapabilityCacheTest, StaysBounded) {
  CapabilityCache cache;
  KeyRing ring;
  ring.Install({{TestKey(), true}});
  Capability c = TestCap();
  for (uint64_t i = 0; i < CapabilityCache::kShards * CapabilityCache::kPerShard * 2; ++i) {
    c.ino = i;
    ASSERT_TRUE(cache.Verify(Sign(c, TestKey()), ring, 1).ok());
  }
  EXPECT_LE(cache.size(), CapabilityCache::kShards * CapabilityCache::kPerShard);
}

}  // namespace
}  // namespace sfs::auth
