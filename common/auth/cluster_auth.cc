#include "common/auth/cluster_auth.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

namespace sfs::auth {
namespace {

void AppendLe64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

std::string Hmac(std::string_view key, const std::string& msg) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(msg.data()), msg.size(), out, &len);
  return std::string(reinterpret_cast<char*>(out), len);
}

}  // namespace

std::string OssRequestMac(std::string_view key, std::string_view nonce, uint64_t client_id,
                          std::string_view op) {
  std::string msg = "sfs-oss-v1";
  msg.append(nonce);
  AppendLe64(&msg, client_id);
  msg.append(op);
  return Hmac(key, msg);
}

std::string MdsReplyMac(std::string_view key, std::string_view oss_nonce, std::string_view nonce,
                        uint64_t client_id, std::string_view result) {
  std::string msg = "sfs-mds-v1";
  msg.append(oss_nonce);
  msg.append(nonce);
  AppendLe64(&msg, client_id);
  msg.append(result);
  return Hmac(key, msg);
}

}  // namespace sfs::auth
