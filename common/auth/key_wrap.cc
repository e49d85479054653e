#include "common/auth/key_wrap.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>

#include <cerrno>
#include <memory>

namespace sfs::auth {
namespace {

constexpr size_t kIvLen = 12;
constexpr size_t kTagLen = 16;
constexpr size_t kKeyLen = 32;
constexpr size_t kEntryLen = 4 + 1 + kKeyLen;
constexpr std::string_view kAad = "sfs-capkeys-v1";

struct CtxFree {
  void operator()(EVP_CIPHER_CTX* c) const { EVP_CIPHER_CTX_free(c); }
  void operator()(EVP_PKEY_CTX* c) const { EVP_PKEY_CTX_free(c); }
};

const unsigned char* U(std::string_view s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}

}  // namespace

std::string Hkdf(std::string_view ikm, std::string_view salt, std::string_view info, size_t len) {
  std::unique_ptr<EVP_PKEY_CTX, CtxFree> ctx(EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, nullptr));
  std::string out(len, '\0');
  size_t out_len = len;
  SFS_CHECK(ctx != nullptr && EVP_PKEY_derive_init(ctx.get()) == 1 &&
            EVP_PKEY_CTX_set_hkdf_md(ctx.get(), EVP_sha256()) == 1 &&
            EVP_PKEY_CTX_set1_hkdf_salt(ctx.get(), U(salt), static_cast<int>(salt.size())) == 1 &&
            EVP_PKEY_CTX_set1_hkdf_key(ctx.get(), U(ikm), static_cast<int>(ikm.size())) == 1 &&
            EVP_PKEY_CTX_add1_hkdf_info(ctx.get(), U(info), static_cast<int>(info.size())) == 1 &&
            EVP_PKEY_derive(ctx.get(), reinterpret_cast<unsigned char*>(out.data()), &out_len) ==
                1 &&
            out_len == len);
  return out;
}

std::string SealAead(std::string_view key, std::string_view plaintext, std::string_view aad) {
  SFS_CHECK(key.size() == kKeyLen);
  std::string out(kIvLen + plaintext.size() + kTagLen, '\0');
  auto* o = reinterpret_cast<unsigned char*>(out.data());
  SFS_CHECK(RAND_bytes(o, kIvLen) == 1);
  std::unique_ptr<EVP_CIPHER_CTX, CtxFree> ctx(EVP_CIPHER_CTX_new());
  int n = 0, fin = 0;
  SFS_CHECK(ctx != nullptr &&
            EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, U(key), o) == 1 &&
            EVP_EncryptUpdate(ctx.get(), nullptr, &n, U(aad), static_cast<int>(aad.size())) == 1 &&
            EVP_EncryptUpdate(ctx.get(), o + kIvLen, &n, U(plaintext),
                              static_cast<int>(plaintext.size())) == 1 &&
            EVP_EncryptFinal_ex(ctx.get(), o + kIvLen + n, &fin) == 1 &&
            static_cast<size_t>(n + fin) == plaintext.size() &&
            EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, kTagLen,
                                o + kIvLen + plaintext.size()) == 1);
  return out;
}

Result<std::string> OpenAead(std::string_view key, std::string_view sealed, std::string_view aad) {
  if (key.size() != kKeyLen) return Status::Errno(EINVAL, "an AES-256 key is 32 bytes");
  if (sealed.size() < kIvLen + kTagLen) return Status::Errno(EACCES, "sealed keys too short");
  const size_t len = sealed.size() - kIvLen - kTagLen;
  std::string plain(len, '\0');
  std::string tag(sealed.substr(kIvLen + len));
  std::unique_ptr<EVP_CIPHER_CTX, CtxFree> ctx(EVP_CIPHER_CTX_new());
  int n = 0, fin = 0;
  bool ok = ctx != nullptr &&
            EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, U(key), U(sealed)) == 1 &&
            EVP_DecryptUpdate(ctx.get(), nullptr, &n, U(aad), static_cast<int>(aad.size())) == 1 &&
            EVP_DecryptUpdate(ctx.get(), reinterpret_cast<unsigned char*>(plain.data()), &n,
                              U(sealed.substr(kIvLen)), static_cast<int>(len)) == 1 &&
            EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, kTagLen, tag.data()) == 1;
  // Final checks the tag: nothing decrypted is believed before it passes.
  ok = ok && EVP_DecryptFinal_ex(ctx.get(), reinterpret_cast<unsigned char*>(plain.data()) + n,
                                 &fin) == 1;
  if (!ok) return Status::Errno(EACCES, "sealed keys do not open (altered, or another key)");
  return plain;
}

std::string KeyWrapKey(std::string_view cluster_key, std::string_view oss_nonce,
                       std::string_view nonce, uint64_t client_id) {
  std::string salt(oss_nonce);
  salt.append(nonce);
  std::string info(kAad);
  for (int i = 0; i < 8; ++i) info.push_back(static_cast<char>((client_id >> (8 * i)) & 0xff));
  return Hkdf(cluster_key, salt, info, kKeyLen);
}

std::string SealKeys(std::string_view wrap_key, const std::vector<PublishedKey>& keys) {
  SFS_CHECK(keys.size() <= 255);
  std::string plain;
  plain.push_back(static_cast<char>(keys.size()));
  for (const PublishedKey& k : keys) {
    SFS_CHECK(k.key.bytes.size() == kKeyLen);
    for (int i = 3; i >= 0; --i) plain.push_back(static_cast<char>((k.key.id >> (8 * i)) & 0xff));
    plain.push_back(k.current ? 1 : 0);
    plain.append(k.key.bytes);
  }
  std::string sealed = SealAead(wrap_key, plain, kAad);
  OPENSSL_cleanse(plain.data(), plain.size());
  return sealed;
}

Result<std::vector<PublishedKey>> OpenKeys(std::string_view wrap_key, std::string_view sealed) {
  SFS_ASSIGN_OR_RETURN(std::string plain, OpenAead(wrap_key, sealed, kAad));
  if (plain.empty() || plain.size() != 1 + static_cast<uint8_t>(plain[0]) * kEntryLen) {
    return Status::Errno(EPROTO, "sealed keys: malformed");
  }
  std::vector<PublishedKey> keys(static_cast<uint8_t>(plain[0]));
  size_t at = 1;
  for (PublishedKey& k : keys) {
    uint32_t id = 0;
    for (int i = 0; i < 4; ++i) id = (id << 8) | static_cast<uint8_t>(plain[at++]);
    k.key.id = id;
    k.current = plain[at++] == 1;
    k.key.bytes = plain.substr(at, kKeyLen);
    at += kKeyLen;
  }
  OPENSSL_cleanse(plain.data(), plain.size());
  return keys;
}

}  // namespace sfs::auth
