// The client side of the tenant handshake (common/auth/tenant_auth.h,
// mds/service/tenant_gate.h): ask for a nonce, answer with the MAC.
#include "client/lib/mds_client.h"
#include "common/auth/tenant_auth.h"
#include "mds.pb.h"

namespace sfs::client {

Status MdsClient::Authenticate(const std::string& tenant, const std::string& key) {
  proto::MdsRequest hello;
  hello.mutable_tenant_hello()->set_tenant(tenant);
  proto::MdsResponse resp;
  SFS_RETURN_IF_ERROR(Call(nullptr, &hello, &resp));
  const std::string& nonce = resp.tenant_hello().nonce();
  if (nonce.size() != auth::kTenantNonceBytes) {
    return Status(EPROTO, "the MDS sent no handshake challenge");
  }
  proto::MdsRequest answer;
  proto::TenantAuthReq* a = answer.mutable_tenant_auth();
  a->set_tenant(tenant);
  a->set_nonce(nonce);
  a->set_mac(auth::TenantMac(key, nonce, client_id_, tenant));
  SFS_RETURN_IF_ERROR(Call(nullptr, &answer, &resp));
  tenant_ = tenant;
  return Status::Ok();
}

Status MdsClient::TenantAdmin(const Cred& c, const std::string& req, std::string* out) {
  proto::MdsRequest r;
  if (!r.mutable_tenant_admin()->ParseFromString(req)) return Status(EINVAL, "bad TenantReq");
  proto::MdsResponse resp;
  SFS_RETURN_IF_ERROR(Call(&c, &r, &resp));
  *out = resp.tenant_admin().SerializeAsString();
  return Status::Ok();
}

}  // namespace sfs::client
