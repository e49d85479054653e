// OSS QoS rules (issue 17; docs/qos.md): the MDS keeps them, every OSS
// enforces them (oss/service/qos.h) and learns them from its heartbeat
// replies.
//
// One C<class> key per rule, as pools are kept (pool.cc): listing reads under
// the shared lock; a set or remove is one normal mutation (durable before the
// reply, de-duplicated on re-send) reserved to root.
#include <cctype>
#include <cmath>

#include "mds/namespace/keys.h"
#include "mds/namespace/namespace.h"

namespace sfs::mds {
namespace {

constexpr size_t kMaxQosName = 128;
constexpr size_t kMaxQosRules = 1024;
// Beyond any disk or network: a typo rather than a rule.
constexpr double kMaxRate = 1e9;

Status ValidateQosName(const std::string& name) {
  if (name == "resync") return Status::Ok();
  std::string_view rest;
  if (name.rfind("job:", 0) == 0) {
    rest = std::string_view(name).substr(4);
  } else if (name.rfind("tenant:", 0) == 0) {
    rest = std::string_view(name).substr(7);
  } else {
    return Status::Errno(EINVAL, "a QoS class is job:NAME, tenant:NAME or resync, not '" + name + "'");
  }
  if (rest.empty() || name.size() > kMaxQosName) {
    return Status::Errno(EINVAL, "a QoS class name must be 1 to 120 characters after its kind");
  }
  for (char c : rest) {
    if (!std::isgraph(static_cast<unsigned char>(c))) {
      return Status::Errno(EINVAL, "a QoS class name may not hold spaces or control characters");
    }
  }
  return Status::Ok();
}

Status ValidateRule(const proto::QosRule& r) {
  for (double v : {r.read_mibps(), r.write_mibps(), r.iops(), r.reserve_mibps(), r.reserve_iops()}) {
    if (!std::isfinite(v) || v < 0 || v > kMaxRate) {
      return Status::Errno(EINVAL, "QoS rates must be between 0 (none) and 1e9");
    }
  }
  if (!std::isfinite(r.weight()) || r.weight() < 0 || r.weight() > 1e6) {
    return Status::Errno(EINVAL, "a QoS weight must be above 0 and at most 1e6");
  }
  // A writer keeps up to its write-behind window (16 MiB) in flight: at a
  // lower limit its last request would wait past the RPC timeout (30 s).
  for (double v : {r.read_mibps(), r.write_mibps()}) {
    if (v > 0 && v < 1) return Status::Errno(EINVAL, "a bandwidth limit must be at least 1 MiB/s");
  }
  if (r.iops() > 0 && r.iops() < 10) return Status::Errno(EINVAL, "an IOPS limit must be at least 10");
  auto below = [](double limit, double reserve) { return limit > 0 && reserve > limit; };
  if (below(r.iops(), r.reserve_iops())) {
    return Status::Errno(EINVAL, "a reservation cannot exceed the class's own IOPS limit");
  }
  return Status::Ok();
}

}  // namespace

Status Namespace::QosTable(google::protobuf::RepeatedPtrField<proto::QosEntry>* out) const {
  std::shared_lock lock(mu_);
  std::string p(1, keys::kQos);
  return store_->Scan(p, keys::PrefixEnd(p), [&](std::string_view k, std::string_view v) {
    proto::QosEntry* e = out->Add();
    e->set_name(std::string(k.substr(1)));
    if (!e->mutable_rule()->ParseFromArray(v.data(), static_cast<int>(v.size()))) out->RemoveLast();
    return true;
  });
}

Status Namespace::Qos(const OpCtx& ctx, const proto::QosReq& req, proto::QosResp* out) {
  if (req.op() == proto::QOS_LIST) {
    SFS_RETURN_IF_ERROR(QosTable(out->mutable_rules()));
    if (req.name().empty()) return Status::Ok();
    for (const proto::QosEntry& e : out->rules()) {
      if (e.name() == req.name()) {
        proto::QosEntry keep = e;
        out->clear_rules();
        *out->add_rules() = std::move(keep);
        return Status::Ok();
      }
    }
    out->clear_rules();
    return Status::Errno(ENOENT, "no QoS rule for '" + req.name() + "'");
  }
  if (!ctx.cred.root()) return Status::Errno(EPERM, "only root may change QoS rules");
  SFS_RETURN_IF_ERROR(ValidateQosName(req.name()));
  if (req.op() == proto::QOS_SET) SFS_RETURN_IF_ERROR(ValidateRule(req.rule()));
  return Mutate(ctx, nullptr, [&](Txn& txn) -> Status {
    auto existing = store_->Get(keys::Qos(req.name()));
    bool exists = existing.ok();
    if (!exists && existing.status().code() != ENOENT) return existing.status();
    if (req.op() == proto::QOS_REMOVE) {
      if (!exists) return Status::Errno(ENOENT, "no QoS rule for '" + req.name() + "'");
      txn.batch().Delete(keys::Qos(req.name()));
      return Status::Ok();
    }
    if (req.op() != proto::QOS_SET) return Status::Errno(EINVAL, "unknown QoS op");
    if (!exists) {
      size_t n = 0;
      std::string p(1, keys::kQos);
      SFS_RETURN_IF_ERROR(store_->Scan(p, keys::PrefixEnd(p), [&](std::string_view, std::string_view) {
        return ++n < kMaxQosRules;
      }));
      if (n >= kMaxQosRules) return Status::Errno(ENOSPC, "too many QoS rules (1024)");
    }
    proto::QosRule rule = req.rule();
    if (rule.weight() == 0) rule.set_weight(1);
    txn.batch().Put(keys::Qos(req.name()), rule.SerializeAsString());
    return Status::Ok();
  });
}

}  // namespace sfs::mds
