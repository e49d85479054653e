// The tenant handshake's crypto (issue 17; docs/security.md), shared by the
// MDS (mds/service/tenant_gate.cc) and libsfs (mds_client_tenant.cc).
//
// The MDS hands a client a fresh random nonce; the client answers
// HMAC-SHA256(key, "sfs-tenant-v1" || nonce || client_id (8 bytes LE) ||
// tenant). The key never travels; the nonce is good for one answer, so a
// captured answer cannot be replayed; the client id and tenant are bound in,
// so an answer cannot be moved to another session or tenant.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace sfs::auth {

inline constexpr size_t kTenantNonceBytes = 32;

// n bytes from OpenSSL's CSPRNG; EIO if it has none.
Result<std::string> RandomBytes(size_t n);
// The handshake's answer (32 bytes).
std::string TenantMac(std::string_view key, std::string_view nonce, uint64_t client_id,
                      std::string_view tenant);
// Constant-time comparison of two MACs (false if their sizes differ).
bool MacEqual(std::string_view a, std::string_view b);

}  // namespace sfs::auth
