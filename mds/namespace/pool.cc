// OST pools: named sets of OSTs that a layout may name (Lustre's
// lctl pool_new/pool_add/pool_remove/pool_list/pool_destroy).
//
// A pool is one P<name> key whose PoolRec lists its members sorted. Listing
// reads under the shared lock; every change is a normal mutation (one batch,
// replay-safe) reserved to root. Rules follow Lustre: adding a member twice is
// EEXIST, removing a non-member ENOENT, and a pool is destroyed only when
// empty (ENOTEMPTY). Layouts name pools by string, so destroying a pool does
// not touch files placed in it; directory defaults that still name it fall
// back to all OSTs at create (see layout.cc).
#include <algorithm>
#include <cctype>

#include "mds/namespace/keys.h"
#include "mds/namespace/namespace.h"

namespace sfs::mds {
namespace {

constexpr size_t kMaxPoolName = 64;

Status ValidatePoolName(const std::string& name) {
  if (name.empty() || name.size() > kMaxPoolName) {
    return Status::Errno(EINVAL, "pool name must be 1 to 64 characters");
  }
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') {
      return Status::Errno(EINVAL, "pool name may hold only letters, digits, '_', '-' and '.'");
    }
  }
  return Status::Ok();
}

Result<std::optional<proto::PoolRec>> LoadPool(KvStore* store, const std::string& name) {
  auto raw = store->Get(keys::Pool(name));
  if (!raw.ok()) {
    if (raw.status().code() == ENOENT) return std::optional<proto::PoolRec>();
    return raw.status();
  }
  proto::PoolRec rec;
  if (!rec.ParseFromString(*raw)) return Status::Errno(EIO, "corrupt pool record");
  return std::optional(std::move(rec));
}

}  // namespace

Result<std::vector<uint32_t>> Namespace::PoolMembers(const std::string& name) const {
  SFS_ASSIGN_OR_RETURN(auto rec, LoadPool(store_, name));
  if (!rec) return Status::Errno(EINVAL, "unknown pool '" + name + "'");
  return std::vector<uint32_t>(rec->osts().begin(), rec->osts().end());
}

Status Namespace::ListPools(const std::string& name, proto::PoolResp* out) {
  std::shared_lock lock(mu_);
  std::string p(1, keys::kPool);
  if (!name.empty()) {
    SFS_ASSIGN_OR_RETURN(auto rec, LoadPool(store_, name));
    if (!rec) return Status::Errno(ENOENT, "no pool '" + name + "'");
    proto::PoolInfo* info = out->add_pools();
    info->set_name(name);
    *info->mutable_osts() = rec->osts();
    return Status::Ok();
  }
  return store_->Scan(p, keys::PrefixEnd(p), [&](std::string_view k, std::string_view v) {
    proto::PoolRec rec;
    if (!rec.ParseFromArray(v.data(), static_cast<int>(v.size()))) return true;
    proto::PoolInfo* info = out->add_pools();
    info->set_name(std::string(k.substr(1)));
    *info->mutable_osts() = rec.osts();
    return true;
  });
}

Status Namespace::ChangePool(Txn& txn, const proto::PoolReq& req) {
  SFS_RETURN_IF_ERROR(ValidatePoolName(req.name()));
  SFS_ASSIGN_OR_RETURN(auto rec, LoadPool(store_, req.name()));
  if (req.op() == proto::POOL_CREATE) {
    if (rec) return Status::Errno(EEXIST, "pool '" + req.name() + "' exists");
    txn.batch().Put(keys::Pool(req.name()), proto::PoolRec().SerializeAsString());
    return Status::Ok();
  }
  if (!rec) return Status::Errno(ENOENT, "no pool '" + req.name() + "'");
  if (req.op() == proto::POOL_DESTROY) {
    if (rec->osts_size() > 0) {
      return Status::Errno(ENOTEMPTY, "pool '" + req.name() + "' is not empty; remove its OSTs first");
    }
    txn.batch().Delete(keys::Pool(req.name()));
    return Status::Ok();
  }
  if (req.osts_size() == 0) return Status::Errno(EINVAL, "no OST index given");
  std::vector<uint32_t> members(rec->osts().begin(), rec->osts().end());
  for (uint32_t ost : req.osts()) {
    bool member = std::find(members.begin(), members.end(), ost) != members.end();
    std::string which = "OST " + std::to_string(ost);
    if (req.op() == proto::POOL_ADD) {
      if (ost >= osts_->KnownCount()) return Status::Errno(EINVAL, "no " + which);
      if (member) return Status::Errno(EEXIST, which + " is already in pool '" + req.name() + "'");
      members.push_back(ost);
    } else if (req.op() == proto::POOL_REMOVE) {
      if (!member) return Status::Errno(ENOENT, which + " is not in pool '" + req.name() + "'");
      members.erase(std::find(members.begin(), members.end(), ost));
    } else {
      return Status::Errno(EINVAL, "unknown pool op");
    }
  }
  std::sort(members.begin(), members.end());
  proto::PoolRec updated;
  for (uint32_t ost : members) updated.add_osts(ost);
  txn.batch().Put(keys::Pool(req.name()), updated.SerializeAsString());
  return Status::Ok();
}

Status Namespace::Pool(const OpCtx& ctx, const proto::PoolReq& req, proto::PoolResp* out) {
  if (req.op() == proto::POOL_LIST) return ListPools(req.name(), out);
  if (!ctx.cred.root()) return Status::Errno(EPERM, "only root may change pools");
  return Mutate(ctx, nullptr, [&](Txn& txn) { return ChangePool(txn, req); });
}

}  // namespace sfs::mds
