// Chained SHA-256 keys of the KV-cache tier (kv_keys.h).
#include "client/lib/kv_keys.h"

#include <openssl/evp.h>

#include <memory>

namespace sfs::client::kv {
namespace {

constexpr char kDomain[16] = "sfs-kv-chain-v1";  // 15 characters and the NUL: 16 bytes

void PutBe32(std::string* out, uint32_t v) {
  const char b[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                     static_cast<char>(v >> 8), static_cast<char>(v)};
  out->append(b, 4);
}

void PutField(std::string* out, std::string_view s) {
  PutBe32(out, static_cast<uint32_t>(s.size()));
  out->append(s);
}

}  // namespace

Hash ChunkKey(const ChainSpec& spec, const Hash& parent, std::span<const uint32_t> tokens) {
  std::string msg(kDomain, sizeof(kDomain));
  msg.reserve(sizeof(kDomain) + 12 + spec.salt.size() + spec.model.size() + spec.layout.size() +
              kHashSize + 4 + 4 * tokens.size());
  PutField(&msg, spec.salt);
  PutField(&msg, spec.model);
  PutField(&msg, spec.layout);
  msg.append(AsBytes(parent));
  PutBe32(&msg, static_cast<uint32_t>(tokens.size()));
  for (uint32_t t : tokens) PutBe32(&msg, t);
  Hash h{};
  unsigned int len = 0;
  // One-shot EVP digest: cannot fail for SHA-256 short of an allocation failure.
  EVP_Digest(msg.data(), msg.size(), h.data(), &len, EVP_sha256(), nullptr);
  return h;
}

std::vector<Hash> ChainKeys(const ChainSpec& spec, std::span<const uint32_t> tokens,
                            const Hash& parent) {
  std::vector<Hash> keys;
  const size_t n = spec.chunk_tokens;
  keys.reserve(tokens.size() / n);
  Hash prev = parent;
  for (size_t at = 0; at + n <= tokens.size(); at += n) {
    prev = ChunkKey(spec, prev, tokens.subspan(at, n));
    keys.push_back(prev);
  }
  return keys;
}

std::string BlockKey(const Hash& chunk, uint32_t part) {
  std::string k(AsBytes(chunk));
  PutBe32(&k, part);
  return k;
}

std::string ToHex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

}  // namespace sfs::client::kv
