// Capabilities (issue 17, docs/protocol.md "Capabilities"): the MDS's signed
// word that a holder may read (or write) the objects of one file until an
// expiry time. Every OSS checks one on every object request without asking
// the MDS; the MDS and the OSSes share the cluster key.
//
// A capability travels as an opaque token: a canonical big-endian encoding of
// its fields followed by HMAC-SHA256 (OpenSSL libcrypto) of those bytes under
// the cluster key. The client never parses it, so its format can change
// without touching the client.
//
// The tenant in it is the one the client authenticated as at the MDS (the
// handshake, mds/service/tenant_gate.h): an OSS takes a request's tenant, for
// its QoS class and its KV tier, from here and from nowhere else.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace sfs::auth {

enum Rights : uint32_t {
  kRead = 1,
  kWrite = 2,  // write, write_v, truncate, punch, fallocate, copy into
  // Server-side work (destroy, resync copies): only the MDS and the OSSes,
  // which hold the key, mint capabilities with it.
  kAdmin = 4,
  // The KV-cache tier (docs/kv.md) as tenant kv_tenant: covers no objects.
  kKv = 8,
};

// How long a capability the MDS hands out is good for. Also the revocation
// window: a capability cannot be recalled, so a chmod or unlink takes at most
// this long to bind a client that held one.
constexpr int64_t kCapabilityLifetimeSec = 600;

struct Capability {
  uint64_t ino = 0;          // the file (0 = a server's own, all_objects)
  std::string tenant;        // "" = the default tenant (and servers'); at most 255 bytes
  uint32_t kv_tenant = 0;    // the tenant's number in the KV tier (TenantRec.kv_id)
  uint32_t rights = 0;       // Rights bits
  int64_t expiry = 0;        // unix seconds; invalid at and after
  // Unix milliseconds when the MDS minted it (token version 3; 0 in older
  // tokens): what a revocation (revocation.h) compares.
  int64_t issued_ms = 0;
  uint32_t key_id = 0;       // which cluster key generation signed it
  bool all_objects = false;  // covers every object (servers' own capabilities)
  std::vector<std::pair<uint32_t, uint64_t>> objects;  // (ost, oid) covered

  bool Covers(uint32_t ost, uint64_t oid) const;
};

struct ClusterKey {
  std::string bytes;  // 32 bytes
  uint32_t id = 1;
};

// Reads a key file: 32 raw bytes, or 64 hex digits (whitespace around them
// ignored). Refuses a file group or others may read or write (EPERM) and
// any other content (EINVAL).
Result<ClusterKey> LoadKey(const std::string& path);
// Writes 32 random bytes as hex to path, mode 0600; EEXIST if it exists.
Status GenerateKey(const std::string& path);

// The token: canonical encoding + MAC.
std::string Sign(const Capability& cap, const ClusterKey& key);
// Checks the MAC (constant time), the key id and the expiry against now
// (unix seconds). EACCES on any failure, with a short reason.
Result<Capability> Verify(std::string_view token, const ClusterKey& key, int64_t now);
int64_t NowUnix();
int64_t NowUnixMs();
// A server's own token (the MDS's destroys and resync copies, an OSS's
// pulls): every object, every right, for kCapabilityLifetimeSec.
std::string ServerToken(const ClusterKey& key);

}  // namespace sfs::auth
