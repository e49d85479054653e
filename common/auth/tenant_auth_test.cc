// The tenant handshake's MAC (tenant_auth.h): what binds an answer to its
// key, nonce, client id and tenant.
#include "common/auth/tenant_auth.h"

#include <gtest/gtest.h>

namespace sfs::auth {
namespace {

TEST(TenantAuth, MacBindsKeyNonceClientAndTenant) {
  std::string key(32, 'k'), other_key(32, 'x');
  std::string nonce = *RandomBytes(kTenantNonceBytes);
  std::string mac = TenantMac(key, nonce, 42, "a");
  EXPECT_EQ(mac.size(), 32u);
  EXPECT_TRUE(MacEqual(mac, TenantMac(key, nonce, 42, "a")));
  EXPECT_FALSE(MacEqual(mac, TenantMac(other_key, nonce, 42, "a")));
  EXPECT_FALSE(MacEqual(mac, TenantMac(key, *RandomBytes(kTenantNonceBytes), 42, "a")));
  EXPECT_FALSE(MacEqual(mac, TenantMac(key, nonce, 43, "a")));
  EXPECT_FALSE(MacEqual(mac, TenantMac(key, nonce, 42, "b")));
  // The key itself is not in the answer.
  EXPECT_EQ(mac.find(key), std::string::npos);
}

TEST(TenantAuth, NoncesAreFreshAndMacEqualRejectsSizes) {
  EXPECT_NE(*RandomBytes(kTenantNonceBytes), *RandomBytes(kTenantNonceBytes));
  EXPECT_FALSE(MacEqual("", ""));
  EXPECT_FALSE(MacEqual("abc", "abcd"));
}

}  // namespace
}  // namespace sfs::auth
