// TenantGate (issue 17; docs/security.md): the MDS side of tenants. It
// answers the handshake (TenantHelloReq/TenantAuthReq), keeps which client id
// holds a session of which tenant, and turns every request of a tenant's
// client into a request on the real tree before the Namespace sees it:
//   - inode 1 (the mount's /) becomes the fileset's directory, every inode a
//     request names must lie inside the fileset (by the parent links), else
//     ENOENT, the same answer as for an inode that does not exist, so that
//     nothing outside can be told apart from nothing; ".." of the fileset's
//     directory is the directory itself (as chroot's), in an OpenPathReq's
//     walk too (its ceiling, which the gate sets whatever the client sent);
//   - the credentials are root-squashed and uid/gid-mapped;
//   - admin ops (pools, QoS, tenants, OSS registration) are EPERM, except
//     for an admin tenant (fileset /, no root squash).
// With TENANT_REQUIRE on, the default tenant's requests are EACCES but for
// the OSSes' own (register, heartbeat, ping, OST map).
// Outbound() maps the reply back: the fileset's inode shows as 1, mapped ids
// as the client's ids. Requests of the default tenant (MdsRequest.tenant
// empty) pass untouched, so a file system without tenants runs as before.
// Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "mds.pb.h"
#include "mds/namespace/namespace.h"

namespace sfs::mds {

class TenantGate {
 public:
  explicit TenantGate(Namespace* ns) : ns_(ns) {}

  // A tenant request's view: what Outbound needs (the record, without key).
  struct View {
    proto::TenantRec rec;
  };
  // How long a nonce waits for its answer.
  static constexpr int64_t kNonceLifetimeMs = 30000;

  // Before the dispatch. True: *resp is the whole answer (the handshake, or
  // a refusal). False: go on with *r, rewritten into the real tree when
  // *view was set.
  bool Admit(proto::MdsRequest* r, proto::MdsResponse* resp, std::optional<View>* view);
  // After the dispatch of a request Admit gave a view.
  static void Outbound(const View& view, proto::MdsResponse* resp);

 private:
  Status Hello(const proto::MdsRequest& r, proto::MdsResponse* resp);
  Status Auth(const proto::MdsRequest& r, proto::MdsResponse* resp);
  // *reauth: the refusal is one a new handshake may cure (no session, or
  // the key rotated); MdsResponse.tenant_reauth tells the client so.
  Status Enter(proto::MdsRequest* r, View* view, bool* reauth);
  // TENANT_REQUIRE, applied here so that required_ changes with it.
  Status Require(const proto::MdsRequest& r, proto::MdsResponse* resp);
  // Whether the default tenant is refused (read once, then kept here).
  bool Required();

  struct Pending {
    std::string tenant;
    std::string nonce;
    int64_t expires_ms = 0;
  };
  struct Session {
    std::string tenant;
    uint64_t key_generation = 0;
  };
  Namespace* const ns_;
  std::atomic<int> required_{-1};  // -1: not read yet
  std::mutex mu_;
  std::unordered_map<uint64_t, Pending> pending_;   // GUARDED_BY(mu_), by client id
  std::unordered_map<uint64_t, Session> sessions_;  // GUARDED_BY(mu_), by client id
};

}  // namespace sfs::mds
