// OssGate (oss_gate.h) and MdsService::GateOss, which puts it before the
// tenants' gate on every path a request takes.
#include "mds/service/oss_gate.h"

#include <openssl/crypto.h>

#include "common/auth/cluster_auth.h"
#include "common/auth/key_wrap.h"
#include "common/auth/tenant_auth.h"
#include "common/log.h"
#include "mds/namespace/namespace.h"
#include "mds/service/mds_service.h"

namespace sfs::mds {
namespace {

using proto::MdsRequest;
using proto::MdsResponse;

// Bounds the challenges waiting for their request (one per client id).
constexpr size_t kMaxPending = 4096;

bool Guarded(MdsRequest::OpCase op) {
  return op == MdsRequest::kRegisterOss || op == MdsRequest::kHeartbeat;
}

// The bytes a request's MAC covers: its op, as serialized.
std::string OpBytes(const MdsRequest& r) {
  return r.op_case() == MdsRequest::kRegisterOss ? r.register_oss().SerializeAsString()
                                                 : r.heartbeat().SerializeAsString();
}

const std::string& AddressOf(const MdsRequest& r) {
  return r.op_case() == MdsRequest::kRegisterOss ? r.register_oss().address()
                                                 : r.heartbeat().address();
}

}  // namespace

Status OssGate::Hello(const MdsRequest& r, MdsResponse* resp) {
  if (!key_.has_value()) {
    return Status::Errno(EOPNOTSUPP, "this MDS has no cluster key: a keyed OSS may not join it "
                                     "(give sfs-mds --cluster-key, or no OSS one)");
  }
  if (r.oss_hello().oss_nonce().size() != auth::kClusterNonceBytes) {
    return Status::Errno(EINVAL, "an OSS nonce is 32 bytes");
  }
  SFS_ASSIGN_OR_RETURN(std::string nonce, auth::RandomBytes(auth::kClusterNonceBytes));
  int64_t now = NowMs();
  std::lock_guard lock(mu_);
  if (pending_.size() >= kMaxPending) {
    std::erase_if(pending_, [&](const auto& kv) { return kv.second.expires_ms <= now; });
    if (pending_.size() >= kMaxPending) return Status::Errno(EBUSY, "too many OSS handshakes");
  }
  pending_[r.client_id()] = Pending{r.oss_hello().oss_nonce(), nonce, now + kNonceLifetimeMs};
  resp->mutable_oss_hello()->set_nonce(nonce);
  return Status::Ok();
}

Status OssGate::Check(const MdsRequest& r, Seal* seal) {
  if (!r.has_oss_auth()) {
    return Status::Errno(EACCES, "OSS refused: this MDS has a cluster key and the OSS "
                                 "proved none (start sfs-oss with --cluster-key)");
  }
  Pending p;
  {
    std::lock_guard lock(mu_);
    auto it = pending_.find(r.client_id());
    if (it == pending_.end()) {
      return Status::Errno(ESTALE, "OSS refused: no challenge outstanding for this client "
                                   "(a replayed or late request)");
    }
    p = std::move(it->second);
    pending_.erase(it);  // one request per nonce, right or wrong
  }
  if (p.expires_ms <= NowMs() || !auth::MacEqual(p.nonce, r.oss_auth().nonce())) {
    return Status::Errno(ESTALE, "OSS refused: the request answers no challenge of this "
                                 "client's (a replayed or late request)");
  }
  std::string want = auth::OssRequestMac(*key_, p.nonce, r.client_id(), OpBytes(r));
  if (!auth::MacEqual(want, r.oss_auth().mac())) {
    return Status::Errno(EACCES, "OSS refused: wrong cluster key");
  }
  *seal = Seal{std::move(p.oss_nonce), std::move(p.nonce)};
  return Status::Ok();
}

bool OssGate::Admit(const MdsRequest& r, MdsResponse* resp, std::optional<Seal>* seal) {
  Status st;
  if (r.op_case() == MdsRequest::kOssHello) {
    st = Hello(r, resp);
  } else if (!key_.has_value() || !Guarded(r.op_case())) {
    return false;
  } else {
    seal->emplace();
    st = Check(r, &**seal);
    if (st.ok()) return false;
    seal->reset();
    LOG_WARN("OSS " << AddressOf(r) << " (client " << r.client_id() << "): " << st.message());
  }
  if (!st.ok()) resp->clear_result();
  resp->mutable_status()->set_code(st.code());
  resp->mutable_status()->set_message(st.message());
  return true;
}

void OssGate::Sign(const Seal& seal, const MdsRequest& r, MdsResponse* resp) const {
  if (resp->status().code() != 0) return;
  if (signing_ != nullptr) {
    // Fresh per answer: the nonces salt the wrapping key (key_wrap.h).
    std::string wrap = auth::KeyWrapKey(*key_, seal.oss_nonce, seal.nonce, r.client_id());
    std::string sealed = auth::SealKeys(wrap, signing_->Published(auth::NowUnixMs()));
    OPENSSL_cleanse(wrap.data(), wrap.size());
    if (r.op_case() == MdsRequest::kRegisterOss) {
      resp->mutable_register_oss()->set_cap_keys(std::move(sealed));
    } else {
      resp->mutable_heartbeat()->set_cap_keys(std::move(sealed));
    }
  }
  std::string result = r.op_case() == MdsRequest::kRegisterOss
                           ? resp->register_oss().SerializeAsString()
                           : resp->heartbeat().SerializeAsString();
  resp->set_oss_reply_mac(
      auth::MdsReplyMac(*key_, seal.oss_nonce, seal.nonce, r.client_id(), result));
}

}  // namespace sfs::mds

// ---- MdsService's use of it (mds_service.h) ----

namespace sfs::mds {

bool MdsService::GateOss(const proto::MdsRequest& r, rpc::ReplyFn& done) {
  proto::MdsResponse resp;
  std::optional<OssGate::Seal> seal;
  if (oss_gate_.Admit(r, &resp, &seal)) {
    resp.set_boot_epoch(ns_->boot_epoch());
    done(rpc::Reply{resp.SerializeAsString(), {}});
    return true;
  }
  if (seal.has_value()) {
    done = [this, seal = std::move(*seal), r, done = std::move(done)](rpc::Reply reply) mutable {
      proto::MdsResponse out;
      if (out.ParseFromString(reply.payload)) {
        oss_gate_.Sign(seal, r, &out);
        reply.payload = out.SerializeAsString();
      }
      done(std::move(reply));
    };
  }
  return false;
}

}  // namespace sfs::mds
