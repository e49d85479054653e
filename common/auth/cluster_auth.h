// OSS <-> MDS authentication with the cluster key (issue 17;
// docs/security.md "OSS <-> MDS"; the wire is mds.proto's OssHelloReq).
// Shared by the MDS (mds/service/oss_gate.cc) and the OSS's registrar.
//
// Before each registration or heartbeat the OSS sends a fresh nonce of its
// own and gets one of the MDS's; its request then carries OssRequestMac
// over the MDS's nonce, its client id and the request's bytes, and the
// MDS's OK answer carries MdsReplyMac over both nonces, the client id and
// the result's bytes. So neither side's key travels, an answer cannot be
// replayed (the MDS spends its nonce on the first use; the OSS's nonce is
// new each time), and neither a request nor a reply can be altered or moved
// to another client id. The prefixes keep these MACs apart from the
// tenant handshake's ("sfs-tenant-v1") and from capability tokens (whose
// first byte is their version, 1 or 2), all made with HMAC-SHA256.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sfs::auth {

inline constexpr size_t kClusterNonceBytes = 32;

// HMAC-SHA256(key, "sfs-oss-v1" || nonce || client_id (8 bytes LE) || op).
std::string OssRequestMac(std::string_view key, std::string_view nonce, uint64_t client_id,
                          std::string_view op);
// HMAC-SHA256(key, "sfs-mds-v1" || oss_nonce || nonce || client_id (8 bytes LE) || result).
std::string MdsReplyMac(std::string_view key, std::string_view oss_nonce, std::string_view nonce,
                        uint64_t client_id, std::string_view result);

}  // namespace sfs::auth
