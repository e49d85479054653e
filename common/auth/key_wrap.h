// Sealing capability signing keys for the wire (issue 17; docs/security.md
// "Rotating signing keys"): the MDS sends its published keys (signing_keys.h)
// to each OSS inside the sealed answer of every registration and heartbeat,
// encrypted so that nothing on the path learns them.
//
// The wrapping key is HKDF-SHA256 (RFC 5869) of the cluster key, salted with
// the exchange's two nonces (the OSS's and the MDS's, cluster_auth.h) and
// bound to the OSS's client id by the info string: a fresh key per answer,
// which no other exchange can open. The keys are then sealed with
// AES-256-GCM (a random 96-bit IV per message; the 128-bit tag authenticates
// the ciphertext and the associated data). All from OpenSSL's libcrypto.
// Wire form of a sealed set: iv (12) || ciphertext || tag (16); the
// plaintext is a count byte, then per key: id (4, big-endian), a flag byte
// (1 = current), the key (32).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/auth/signing_keys.h"
#include "common/status.h"

namespace sfs::auth {

// HKDF-SHA256(ikm, salt, info) -> len bytes. SFS_CHECKs libcrypto's success.
std::string Hkdf(std::string_view ikm, std::string_view salt, std::string_view info, size_t len);

// AES-256-GCM. key: 32 bytes. Seal -> iv || ciphertext || tag.
std::string SealAead(std::string_view key, std::string_view plaintext, std::string_view aad);
// The plaintext, or EACCES if sealed was altered, cut, or sealed under
// another key or aad (the tag does not verify).
Result<std::string> OpenAead(std::string_view key, std::string_view sealed, std::string_view aad);

// The wrapping key of one OSS <-> MDS exchange (above).
std::string KeyWrapKey(std::string_view cluster_key, std::string_view oss_nonce,
                       std::string_view nonce, uint64_t client_id);
// The published keys, sealed under wrap_key / opened (EACCES as OpenAead,
// EPROTO if the plaintext is malformed).
std::string SealKeys(std::string_view wrap_key, const std::vector<PublishedKey>& keys);
Result<std::vector<PublishedKey>> OpenKeys(std::string_view wrap_key, std::string_view sealed);

}  // namespace sfs::auth
