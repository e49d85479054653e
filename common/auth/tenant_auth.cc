#include "common/auth/tenant_auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

namespace sfs::auth {

Result<std::string> RandomBytes(size_t n) {
  std::string out(n, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n)) != 1) {
    return Status::Errno(EIO, "no random bytes");
  }
  return out;
}

std::string TenantMac(std::string_view key, std::string_view nonce, uint64_t client_id,
                      std::string_view tenant) {
  std::string msg = "sfs-tenant-v1";
  msg.append(nonce);
  for (int i = 0; i < 8; ++i) msg.push_back(static_cast<char>((client_id >> (8 * i)) & 0xff));
  msg.append(tenant);
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(msg.data()), msg.size(), out, &len);
  return std::string(reinterpret_cast<char*>(out), len);
}

bool MacEqual(std::string_view a, std::string_view b) {
  return a.size() == b.size() && !a.empty() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace sfs::auth
