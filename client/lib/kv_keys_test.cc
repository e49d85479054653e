// The KV tier's chained keys: a known answer (computed independently with
// Python's hashlib over the encoding kv_keys.h spells out), determinism, and
// that every input changes the key.
#include "client/lib/kv_keys.h"

#include <gtest/gtest.h>

namespace sfs::client::kv {
namespace {

ChainSpec Spec(std::string_view salt = "tenant-a") {
  ChainSpec s;
  s.salt = salt;
  s.model = "tiny";
  s.layout = "fp32 L8";
  s.chunk_tokens = 4;
  return s;
}

TEST(KvKeysTest, KnownAnswer) {
  const std::vector<uint32_t> tokens = {1, 2, 3, 4, 5, 6, 7, 8, 9};  // 9: a partial third chunk
  std::vector<Hash> keys = ChainKeys(Spec(), tokens);
  ASSERT_EQ(keys.size(), 2u);
  EXPECT_EQ(ToHex(AsBytes(keys[0])),
            "d003312f9e1e84116240e4a8b6bbfcb7860131a580d0e172949e494655076c65");
  EXPECT_EQ(ToHex(AsBytes(keys[1])),
            "2acba7374915cd04403da005f939b4c168b548a1304414e54a6c2d4c40ae6ae3");
}

TEST(KvKeysTest, ChainsFromTheParent) {
  const std::vector<uint32_t> tokens = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<Hash> keys = ChainKeys(Spec(), tokens);
  ASSERT_EQ(keys.size(), 2u);
  EXPECT_EQ(keys[0], ChunkKey(Spec(), Hash{}, std::span(tokens).subspan(0, 4)));
  EXPECT_EQ(keys[1], ChunkKey(Spec(), keys[0], std::span(tokens).subspan(4, 4)));
  // Continuing a chain from its last key gives the same keys as one long call.
  std::vector<Hash> tail = ChainKeys(Spec(), std::span(tokens).subspan(4), keys[0]);
  ASSERT_EQ(tail.size(), 1u);
  EXPECT_EQ(tail[0], keys[1]);
}

TEST(KvKeysTest, EveryInputChangesTheKey) {
  const std::vector<uint32_t> tokens = {1, 2, 3, 4};
  const Hash base = ChainKeys(Spec(), tokens)[0];
  EXPECT_NE(ChainKeys(Spec("tenant-b"), tokens)[0], base);
  ChainSpec model = Spec();
  model.model = "tinier";
  EXPECT_NE(ChainKeys(model, tokens)[0], base);
  ChainSpec layout = Spec();
  layout.layout = "fp16 L8";
  EXPECT_NE(ChainKeys(layout, tokens)[0], base);
  EXPECT_NE(ChainKeys(Spec(), std::vector<uint32_t>{1, 2, 3, 5})[0], base);
  Hash parent{};
  parent[0] = 1;
  EXPECT_NE(ChainKeys(Spec(), tokens, parent)[0], base);
  // Length-prefixed fields: moving a byte from salt to model is another key.
  ChainSpec a = Spec("ab");
  a.model = "c";
  ChainSpec b = Spec("a");
  b.model = "bc";
  EXPECT_NE(ChainKeys(a, tokens)[0], ChainKeys(b, tokens)[0]);
}

TEST(KvKeysTest, BlockKeyAppendsThePartBigEndian) {
  Hash h{};
  h[31] = 7;
  std::string k = BlockKey(h, 0x01020304);
  ASSERT_EQ(k.size(), 36u);
  EXPECT_EQ(k.substr(0, 32), std::string(AsBytes(h)));
  EXPECT_EQ(k.substr(32), std::string("\x01\x02\x03\x04", 4));
}

}  // namespace
}  // namespace sfs::client::kv
