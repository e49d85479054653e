// The client side of the tenant handshake (common/auth/tenant_auth.h,
// mds/service/tenant_gate.h): ask for a nonce, answer with the MAC; and
// again, by itself, when the MDS lost the session (a restart) or the key
// was rotated and the key file holds the new one.
#include "client/lib/mds_client.h"
#include "common/auth/tenant_auth.h"
#include "common/log.h"
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
  if (tenant_ != tenant) tenant_ = tenant;  // only at Connect (a re-handshake keeps it)
  return Status::Ok();
}

Status MdsClient::Reauthenticate(uint64_t seen) {
  // The handshake's own calls can see an MDS restart and come back here.
  static thread_local bool inside = false;
  if (inside || !key_source_ || tenant_.empty()) return Status(EACCES, "no re-handshake");
  std::lock_guard<std::mutex> l(reauth_mu_);
  if (auth_gen_.load() != seen) return Status::Ok();  // another thread made one meanwhile
  inside = true;
  Status st;
  Result<std::string> key = key_source_();
  if (!key.ok()) {
    st = key.status();
  } else {
    st = Authenticate(tenant_, *key);
  }
  inside = false;
  if (!st.ok()) {
    LOG_WARN("tenant '" << tenant_ << "': new handshake with MDS " << address()
                        << " failed: " << st.ToString());
    return st;
  }
  auth_gen_.fetch_add(1);
  LOG_INFO("tenant '" << tenant_ << "': authenticated again with MDS " << address());
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

Status MdsClient::CapKeyAdmin(const Cred& c, const std::string& req, std::string* out) {
  proto::MdsRequest r;
  if (!r.mutable_cap_key()->ParseFromString(req)) return Status(EINVAL, "bad CapKeyReq");
  proto::MdsResponse resp;
  SFS_RETURN_IF_ERROR(Call(&c, &r, &resp));
  *out = resp.cap_key().SerializeAsString();
  return Status::Ok();
}

Result<std::string> MdsClient::KvGrant() {
  proto::MdsRequest r;
  r.mutable_kv_grant();
  proto::MdsResponse resp;
  SFS_RETURN_IF_ERROR(Call(nullptr, &r, &resp));
  return resp.kv_grant().capability();
}

}  // namespace sfs::client
