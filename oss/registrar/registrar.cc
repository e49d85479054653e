// Registrar: registration and heartbeat loop of an OSS (see registrar.h).
#include "oss/registrar/registrar.h"

#include <algorithm>
#include <random>

#include <openssl/crypto.h>

#include "common/auth/cluster_auth.h"
#include "common/auth/key_wrap.h"
#include "common/auth/tenant_auth.h"
#include "common/log.h"
#include "mds.pb.h"

namespace sfs::oss {
namespace {

using Clock = std::chrono::steady_clock;

uint64_t RandomId() {
  std::random_device rd;
  return (uint64_t{rd()} << 32) | rd();
}

// The OstInfo list both RegisterOssReq and HeartbeatReq carry.
void FillOsts(const std::vector<ObjectStore*>& stores, const std::vector<uint32_t>& indices,
              const std::string& address, const std::string& metrics_address,
              google::protobuf::RepeatedPtrField<proto::OstInfo>* out) {
  for (size_t i = 0; i < stores.size(); ++i) {
    proto::OstInfo* info = out->Add();
    info->set_uuid(stores[i]->uuid());
    info->set_address(address);
    info->set_metrics_address(metrics_address);
    info->set_up(true);
    if (i < indices.size()) info->set_index(indices[i]);
    Result<OstSpace> space = stores[i]->Statfs();
    if (!space.ok()) {
      LOG_WARN("statfs of OST " << stores[i]->uuid() << ": " << space.status().ToString());
      continue;  // zeros: the MDS sees no free space and places nothing there
    }
    info->set_total_bytes(space->total_bytes);
    info->set_free_bytes(space->free_bytes);
    info->set_avail_bytes(space->avail_bytes);
    info->set_total_inodes(space->total_inodes);
    info->set_free_inodes(space->free_inodes);
  }
}

// A refusal of the MDS's that no retry cures: it wants a key we lack or
// ours is wrong (EACCES; also our check of its reply), or it has none and
// we do (EOPNOTSUPP). ESTALE (our challenge was lost: the MDS restarted
// between the two calls) and transport errors are retried.
bool Final(const Status& st) { return st.code() == EACCES || st.code() == EOPNOTSUPP; }

}  // namespace

Registrar::Registrar(RegistrarOptions opts, std::vector<ObjectStore*> stores,
                     std::unique_ptr<rpc::Channel> mds, OnRegistered on_registered)
    : opts_(std::move(opts)),
      stores_(std::move(stores)),
      mds_(std::move(mds)),
      on_registered_(std::move(on_registered)),
      client_id_(RandomId()) {}

Registrar::~Registrar() { Stop(); }

void Registrar::Start() { thread_ = std::thread([this] { Run(); }); }

void Registrar::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool Registrar::SleepFor(std::chrono::milliseconds d) {
  std::unique_lock<std::mutex> lock(mu_);
  return !cv_.wait_for(lock, d, [this] { return stopping_; });
}

void Registrar::Run() {
  bool registered = false;
  std::chrono::milliseconds backoff = opts_.min_backoff;
  CopyFence* fence = opts_.copy_fence;
  if (fence != nullptr) fence->Arm();
  // Each wait or call should be over within d (plus slack for a loaded
  // machine); a later return means the process was away (copy_fence.h).
  auto expect = [&](std::chrono::milliseconds d) {
    if (fence != nullptr) fence->Expect(d + std::chrono::seconds(2));
  };
  auto back = [&] {
    if (fence != nullptr) fence->Back();
  };
  auto sleep_for = [&](std::chrono::milliseconds d) {
    expect(d);
    bool more = SleepFor(d);
    back();
    return more;
  };
  // Registration and a heartbeat are at most two MDS calls each.
  const std::chrono::milliseconds call = 2 * opts_.rpc_timeout;
  for (;;) {
    if (!registered) {
      expect(call);
      Status st = Register();
      back();
      if (Final(st)) return Refused("registration", st);
      registered = st.ok();
      if (!registered) LogFailure("registration", st);
      // Registered: the first heartbeat at once, so that the stale-copy
      // fence is synced before this OSS serves copies.
      std::chrono::milliseconds wait =
          registered ? std::chrono::milliseconds(0) : backoff;
      backoff = registered ? opts_.min_backoff : std::min(backoff * 2, opts_.max_backoff);
      if (!sleep_for(wait)) return;
      continue;
    }
    expect(call);
    Status st = Heartbeat();
    back();
    if (Final(st)) return Refused("heartbeat", st);
    if (!st.ok()) {
      // ENOENT/ESTALE: the MDS forgot us. A transport error: it may have
      // restarted. Anything else: it is confused. Registration is idempotent
      // on the MDS, so every case is handled by registering afresh, now.
      LogFailure("heartbeat", st);
      registered = false;
      continue;
    }
    if (!sleep_for(opts_.heartbeat_interval)) return;
  }
}

Status Registrar::CallMds(const std::string& payload, std::string* response_payload) {
  rpc::Response resp;
  rpc::CallOptions call_opts;
  call_opts.timeout = opts_.rpc_timeout;
  SFS_RETURN_IF_ERROR(mds_->Call(rpc::kServiceMds, payload, {}, {}, &resp, call_opts));
  proto::MdsResponse parsed;
  if (!parsed.ParseFromString(resp.payload)) return Status::Errno(EPROTO, "unparsable MDS reply");
  if (parsed.status().code() != 0) {
    return Status::Errno(parsed.status().code(), parsed.status().message());
  }
  *response_payload = std::move(resp.payload);
  return Status::Ok();
}

void Registrar::Refused(const char* what, const Status& st) {
  if (opts_.on_refused) {
    opts_.on_refused(Status::Errno(st.code(), std::string(what) + ": " + st.message()));
  } else {
    LOG_ERROR(what << " with MDS " << mds_->address() << " refused: " << st.message());
  }
}

Status Registrar::CallAuthenticated(proto::MdsRequest* req, proto::MdsResponse* resp) {
  SFS_ASSIGN_OR_RETURN(std::string oss_nonce, auth::RandomBytes(auth::kClusterNonceBytes));
  proto::MdsRequest hello;
  hello.set_client_id(client_id_);
  hello.set_xid(next_xid_++);
  hello.mutable_oss_hello()->set_oss_nonce(oss_nonce);
  std::string reply;
  SFS_RETURN_IF_ERROR(CallMds(hello.SerializeAsString(), &reply));
  proto::MdsResponse challenge;
  if (!challenge.ParseFromString(reply)) return Status::Errno(EPROTO, "unparsable MDS reply");
  const std::string& nonce = challenge.oss_hello().nonce();
  bool reg = req->op_case() == proto::MdsRequest::kRegisterOss;
  std::string op = reg ? req->register_oss().SerializeAsString() : req->heartbeat().SerializeAsString();
  req->mutable_oss_auth()->set_nonce(nonce);
  req->mutable_oss_auth()->set_mac(auth::OssRequestMac(opts_.cluster_key, nonce, client_id_, op));
  SFS_RETURN_IF_ERROR(CallMds(req->SerializeAsString(), &reply));
  if (!resp->ParseFromString(reply)) return Status::Errno(EPROTO, "unparsable MDS reply");
  std::string result =
      reg ? resp->register_oss().SerializeAsString() : resp->heartbeat().SerializeAsString();
  std::string want = auth::MdsReplyMac(opts_.cluster_key, oss_nonce, nonce, client_id_, result);
  if (!auth::MacEqual(want, resp->oss_reply_mac())) {
    return Status::Errno(EACCES, "the MDS's answer is not sealed with this OSS's cluster key "
                                 "(not the cluster's MDS, or another key)");
  }
  return InstallKeys(oss_nonce, nonce, reg ? resp->register_oss().cap_keys()
                                           : resp->heartbeat().cap_keys());
}

Status Registrar::InstallKeys(const std::string& oss_nonce, const std::string& nonce,
                              const std::string& sealed) {
  if (opts_.signing_keys == nullptr) return Status::Ok();
  if (sealed.empty()) {
    return Status::Errno(EPROTO, "the MDS sent no capability signing keys (an older MDS: "
                                 "keep servers of one release)");
  }
  std::string wrap = auth::KeyWrapKey(opts_.cluster_key, oss_nonce, nonce, client_id_);
  Result<std::vector<auth::PublishedKey>> keys = auth::OpenKeys(wrap, sealed);
  OPENSSL_cleanse(wrap.data(), wrap.size());
  if (!keys.ok()) return keys.status();
  std::vector<uint32_t> before = opts_.signing_keys->ids();
  opts_.signing_keys->Install(std::move(*keys));
  if (opts_.signing_keys->ids() != before) {
    std::string ids;
    for (uint32_t id : opts_.signing_keys->ids()) ids += " " + std::to_string(id);
    LOG_INFO("capability signing keys from the MDS:" << ids);
  }
  return Status::Ok();
}

Status Registrar::Register() {
  proto::MdsRequest req;
  req.set_client_id(client_id_);
  req.set_xid(next_xid_++);
  proto::RegisterOssReq* reg = req.mutable_register_oss();
  reg->set_address(opts_.self_address);
  FillOsts(stores_, {}, opts_.self_address, opts_.metrics_address, reg->mutable_osts());
  proto::MdsResponse resp;
  if (!opts_.cluster_key.empty()) {
    SFS_RETURN_IF_ERROR(CallAuthenticated(&req, &resp));
  } else {
    std::string reply;
    SFS_RETURN_IF_ERROR(CallMds(req.SerializeAsString(), &reply));
    resp.ParseFromString(reply);
  }
  const auto& got = resp.register_oss().indices();
  if (static_cast<size_t>(got.size()) != stores_.size()) {
    return Status::Errno(EPROTO, "MDS returned " + std::to_string(got.size()) + " indices for " +
                                     std::to_string(stores_.size()) + " OSTs");
  }
  std::vector<uint32_t> indices(got.begin(), got.end());
  if (indices != indices_) {
    for (size_t i = 0; i < stores_.size(); ++i) {
      LOG_INFO("OST " << stores_[i]->uuid() << " is index " << indices[i]);
    }
  }
  indices_ = indices;
  registrations_.fetch_add(1);
  LOG_INFO("registered with MDS " << mds_->address() << " as " << opts_.self_address);
  on_registered_(indices_);
  return Status::Ok();
}

Status Registrar::Heartbeat() {
  proto::MdsRequest req;
  req.set_client_id(client_id_);
  req.set_xid(next_xid_++);
  proto::HeartbeatReq* hb = req.mutable_heartbeat();
  hb->set_address(opts_.self_address);
  FillOsts(stores_, indices_, opts_.self_address, opts_.metrics_address, hb->mutable_osts());
  if (opts_.revocations != nullptr) {
    hb->set_revocations_seen(opts_.revocations->applied_seq());
    hb->set_revocations_epoch(revocations_epoch_);
  }
  if (opts_.copy_fence != nullptr) {
    hb->set_fences_epoch(opts_.copy_fence->epoch());
    hb->set_fences_version(opts_.copy_fence->version());
  }
  proto::MdsResponse resp;
  if (!opts_.cluster_key.empty()) {
    SFS_RETURN_IF_ERROR(CallAuthenticated(&req, &resp));
  } else {
    std::string reply;
    SFS_RETURN_IF_ERROR(CallMds(req.SerializeAsString(), &reply));
    if (!resp.ParseFromString(reply)) return Status::Errno(EPROTO, "heartbeat reply does not parse");
  }
  if (opts_.copy_fence != nullptr) {
    const proto::HeartbeatResp& h = resp.heartbeat();
    if (h.fences_sent()) {
      std::vector<CopyFence::Object> set;
      set.reserve(static_cast<size_t>(h.fences_size()));
      for (const proto::FencedObject& f : h.fences()) set.emplace_back(f.ost(), f.oid());
      opts_.copy_fence->Synced(h.fences_epoch(), h.fences_version(), &set);
    } else {
      // Our set is the MDS's (or an MDS from before the fence: none).
      opts_.copy_fence->Synced(h.fences_epoch(), h.fences_version(), nullptr);
    }
  }
  heartbeats_.fetch_add(1);
  if (opts_.revocations != nullptr && resp.heartbeat().revocations_epoch() != 0) {
    const proto::HeartbeatResp& h = resp.heartbeat();
    if (h.revocations_epoch() != revocations_epoch_) {
      opts_.revocations->Reset();  // another MDS run: its entries start over
      revocations_epoch_ = h.revocations_epoch();
    }
    std::vector<auth::Revocation> got;
    got.reserve(static_cast<size_t>(h.revocations_size()));
    for (const proto::RevocationEntry& e : h.revocations()) {
      got.push_back({.scope = static_cast<auth::Revocation::Scope>(std::min<uint32_t>(e.scope(), 2)),
                     .ino = e.ino(),
                     .tenant = e.tenant(),
                     .before_ms = e.before_ms(),
                     .seq = e.seq()});
    }
    opts_.revocations->Apply(got);
    opts_.revocations->Prune(auth::NowUnixMs());
  }
  if (opts_.on_qos) {
    QosRules rules;
    constexpr double kMiB = 1024.0 * 1024.0;
    for (const proto::QosEntry& e : resp.heartbeat().qos()) {
      const proto::QosRule& r = e.rule();
      rules[e.name()] = QosRule{.read_bps = r.read_mibps() * kMiB,
                                .write_bps = r.write_mibps() * kMiB,
                                .iops = r.iops(),
                                .reserve_bps = r.reserve_mibps() * kMiB,
                                .reserve_iops = r.reserve_iops(),
                                .weight = r.weight() > 0 ? r.weight() : 1.0};
    }
    opts_.on_qos(std::move(rules));
  }
  return Status::Ok();
}

// While the MDS is away, one line every few seconds is plenty.
void Registrar::LogFailure(const char* what, const Status& st) {
  Clock::time_point now = Clock::now();
  if (now - last_failure_log_ < std::chrono::seconds(5)) return;
  last_failure_log_ = now;
  LOG_WARN(what << " with MDS " << mds_->address() << " failed: " << st.ToString()
                << " (retrying)");
}

}  // namespace sfs::oss
