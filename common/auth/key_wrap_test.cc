// Sealing signing keys for the wire: HKDF against RFC 5869's test vector;
// AES-256-GCM round trip; a flipped bit anywhere, another key, another
// exchange's nonces or client id: refused.
#include "common/auth/key_wrap.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace sfs::auth {
namespace {

std::string Unhex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

std::vector<PublishedKey> TwoKeys() {
  return {{ClusterKey{std::string(32, 'p'), 41}, false}, {ClusterKey{std::string(32, 'q'), 42}, true}};
}

TEST(KeyWrapTest, HkdfMatchesRfc5869TestCase1) {
  std::string okm = Hkdf(Unhex("0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b"),
                         Unhex("000102030405060708090a0b0c"), Unhex("f0f1f2f3f4f5f6f7f8f9"), 42);
  EXPECT_EQ(okm, Unhex("3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf"
                       "34007208d5b887185865"));
}

TEST(KeyWrapTest, SealedKeysOpenToTheSameKeysAndDoNotContainThem) {
  std::string wrap = KeyWrapKey(std::string(32, 'c'), std::string(32, 'o'), std::string(32, 'n'), 9);
  std::string sealed = SealKeys(wrap, TwoKeys());
  EXPECT_EQ(sealed.find(std::string(32, 'p')), std::string::npos);
  EXPECT_EQ(sealed.find(std::string(32, 'q')), std::string::npos);
  Result<std::vector<PublishedKey>> keys = OpenKeys(wrap, sealed);
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  ASSERT_EQ(keys->size(), 2u);
  EXPECT_EQ((*keys)[0].key.id, 41u);
  EXPECT_FALSE((*keys)[0].current);
  EXPECT_EQ((*keys)[1].key.bytes, std::string(32, 'q'));
  EXPECT_TRUE((*keys)[1].current);
  EXPECT_NE(SealKeys(wrap, TwoKeys()), sealed);  // a fresh IV each time
}

TEST(KeyWrapTest, AnyFlippedBitIsRefused) {
  std::string wrap = KeyWrapKey(std::string(32, 'c'), "o", "n", 9);
  std::string sealed = SealKeys(wrap, TwoKeys());
  for (size_t i = 0; i < sealed.size(); ++i) {
    std::string bad = sealed;
    bad[i] = static_cast<char>(bad[i] ^ 0x01);
    EXPECT_EQ(OpenKeys(wrap, bad).status().code(), EACCES) << "byte " << i;
  }
  EXPECT_EQ(OpenKeys(wrap, sealed.substr(0, sealed.size() - 1)).status().code(), EACCES);
  EXPECT_EQ(OpenKeys(wrap, "").status().code(), EACCES);
}

TEST(KeyWrapTest, AnotherClusterKeyNonceOrClientIdCannotOpen) {
  std::string wrap = KeyWrapKey(std::string(32, 'c'), "o", "n", 9);
  std::string sealed = SealKeys(wrap, TwoKeys());
  EXPECT_EQ(OpenKeys(KeyWrapKey(std::string(32, 'd'), "o", "n", 9), sealed).status().code(), EACCES);
  EXPECT_EQ(OpenKeys(KeyWrapKey(std::string(32, 'c'), "x", "n", 9), sealed).status().code(), EACCES);
  EXPECT_EQ(OpenKeys(KeyWrapKey(std::string(32, 'c'), "o", "x", 9), sealed).status().code(), EACCES);
  EXPECT_EQ(OpenKeys(KeyWrapKey(std::string(32, 'c'), "o", "n", 8), sealed).status().code(), EACCES);
}

TEST(KeyWrapTest, OtherAssociatedDataIsRefused) {
  std::string key(32, 'k');
  std::string sealed = SealAead(key, "secret", "aad-1");
  ASSERT_TRUE(OpenAead(key, sealed, "aad-1").ok());
  EXPECT_EQ(*OpenAead(key, sealed, "aad-1"), "secret");
  EXPECT_EQ(OpenAead(key, sealed, "aad-2").status().code(), EACCES);
}

}  // namespace
}  // namespace sfs::auth
