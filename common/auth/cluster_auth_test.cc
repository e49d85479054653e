// The OSS <-> MDS handshake's MACs (cluster_auth.h): what binds a request
// to its key, challenge, client id and bytes, and a reply to both nonces.
#include "common/auth/cluster_auth.h"

#include <gtest/gtest.h>

#include "common/auth/tenant_auth.h"

namespace sfs::auth {
namespace {

TEST(ClusterAuth, RequestMacBindsKeyNonceClientAndBytes) {
  std::string key(32, 'k');
  std::string nonce = *RandomBytes(kClusterNonceBytes);
  std::string mac = OssRequestMac(key, nonce, 7, "register");
  EXPECT_EQ(mac.size(), 32u);
  EXPECT_TRUE(MacEqual(mac, OssRequestMac(key, nonce, 7, "register")));
  EXPECT_FALSE(MacEqual(mac, OssRequestMac(std::string(32, 'x'), nonce, 7, "register")));
  EXPECT_FALSE(MacEqual(mac, OssRequestMac(key, *RandomBytes(kClusterNonceBytes), 7, "register")));
  EXPECT_FALSE(MacEqual(mac, OssRequestMac(key, nonce, 8, "register")));
  EXPECT_FALSE(MacEqual(mac, OssRequestMac(key, nonce, 7, "registe")));
  EXPECT_EQ(mac.find(key), std::string::npos);
}

TEST(ClusterAuth, ReplyMacBindsBothNoncesAndIsNotARequestMac) {
  std::string key(32, 'k');
  std::string a = *RandomBytes(kClusterNonceBytes), b = *RandomBytes(kClusterNonceBytes);
  std::string mac = MdsReplyMac(key, a, b, 7, "indices");
  EXPECT_TRUE(MacEqual(mac, MdsReplyMac(key, a, b, 7, "indices")));
  EXPECT_FALSE(MacEqual(mac, MdsReplyMac(key, b, a, 7, "indices")));
  EXPECT_FALSE(MacEqual(mac, MdsReplyMac(key, a, b, 7, "other")));
  // Another prefix: a request's MAC never passes for a reply's.
  EXPECT_FALSE(MacEqual(OssRequestMac(key, a + b, 7, "x"), MdsReplyMac(key, a, b, 7, "x")));
}

}  // namespace
}  // namespace sfs::auth
