// Tenants (issue 17; docs/security.md): the MDS keeps them, one E<name> key
// each, as QoS rules are kept (qos.cc). A list reads under the shared lock;
// create, remove and rotate-key are one normal mutation each (durable before
// the reply, de-duplicated on re-send), reserved to root.
//
// The key is made by `sfs tenant` (auth::GenerateKey, written 0600 to the
// admin's --key-out file) and handed in req.rec.key; this file only keeps it.
// The handshake and the per-request checks are mds/service/tenant_gate.cc.
#include <sys/stat.h>

#include <cctype>
#include <cstdint>
#include <cstdlib>

#include "mds/namespace/keys.h"
#include "mds/namespace/namespace.h"
#include "mds/namespace/txn.h"

namespace sfs::mds {
namespace {

constexpr size_t kMaxTenantName = 64;
constexpr size_t kMaxTenants = 1024;
constexpr size_t kMaxIdMaps = 256;
constexpr size_t kKeyBytes = 32;
// A fileset's ancestors are walked on every tenant request: bound the walk
// (a loop in the parent links would be corruption, not a deep tree).
constexpr int kMaxDepth = 4096;

Status ValidateTenantName(const std::string& name) {
  if (name.empty() || name.size() > kMaxTenantName) {
    return Status::Errno(EINVAL, "a tenant name must be 1 to 64 characters");
  }
  if (name == "default") return Status::Errno(EINVAL, "'default' is the unauthenticated tenant");
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') {
      return Status::Errno(EINVAL, "a tenant name may hold only letters, digits, '-', '_', '.'");
    }
  }
  return Status::Ok();
}

Status ValidateMaps(const google::protobuf::RepeatedPtrField<proto::TenantIdMap>& maps,
                    const char* what) {
  if (static_cast<size_t>(maps.size()) > kMaxIdMaps) {
    return Status::Errno(EINVAL, std::string("at most 256 ") + what + " maps");
  }
  for (int i = 0; i < maps.size(); ++i) {
    for (int j = 0; j < i; ++j) {
      if (maps[i].from() == maps[j].from()) {
        return Status::Errno(EINVAL, std::string(what) + " " + std::to_string(maps[i].from()) +
                                         " is mapped twice");
      }
    }
  }
  return Status::Ok();
}

// The next KV number (TenantRec.kv_id), noted in txn: one past the last
// given, whatever was removed since.
Result<uint32_t> NextKvId(KvStore* store, Txn* txn) {
  const std::string key(1, keys::kTenantKvSeq);
  uint64_t last = 0;
  auto v = store->Get(key);
  if (v.ok()) {
    last = std::strtoull(v->c_str(), nullptr, 10);
  } else if (v.status().code() != ENOENT) {
    return v.status();
  }
  if (last >= UINT32_MAX) return Status::Errno(ENOSPC, "no KV tenant numbers left");
  txn->batch().Put(key, std::to_string(last + 1));
  return static_cast<uint32_t>(last + 1);
}

}  // namespace

Result<proto::TenantRec> Namespace::GetTenant(const std::string& name) const {
  std::shared_lock lock(mu_);
  auto v = store_->Get(keys::Tenant(name));
  if (!v.ok()) {
    if (v.status().code() == ENOENT) return Status::Errno(ENOENT, "no tenant '" + name + "'");
    return v.status();
  }
  proto::TenantRec rec;
  if (!rec.ParseFromString(*v)) return Status::Errno(EIO, "corrupt record of tenant '" + name + "'");
  return rec;
}

Result<bool> Namespace::TenantsRequired() const {
  std::shared_lock lock(mu_);
  auto v = store_->Get(std::string(1, keys::kTenantsRequired));
  if (v.ok()) return true;
  if (v.status().code() == ENOENT) return false;
  return v.status();
}

Status Namespace::InSubtree(uint64_t ino, uint64_t root) const {
  std::shared_lock lock(mu_);
  return InSubtreeLocked(ino, root);
}

Status Namespace::InSubtreeLocked(uint64_t ino, uint64_t root) const {
  for (int depth = 0; depth < kMaxDepth; ++depth) {
    if (ino == root) return Status::Ok();
    if (ino == kRootIno || ino == 0) break;
    auto rec = LoadInodeRec(store_, ino);
    if (!rec.ok()) break;
    ino = rec->parent();
  }
  return Status::Errno(ENOENT, "no such file or directory");
}

Status Namespace::Tenant(const OpCtx& ctx, const proto::TenantReq& req, proto::TenantResp* out) {
  if (!ctx.cred.root()) return Status::Errno(EPERM, "only root may manage tenants");
  if (req.op() == proto::TENANT_REQUIRE) {
    return Mutate(ctx, out, [&](Txn& txn) -> Status {
      std::string key(1, keys::kTenantsRequired);
      if (req.require()) {
        txn.batch().Put(key, "1");
      } else {
        txn.batch().Delete(key);
      }
      out->set_required(req.require());
      return Status::Ok();
    });
  }
  if (req.op() == proto::TENANT_LIST) {
    SFS_ASSIGN_OR_RETURN(bool required, TenantsRequired());
    out->set_required(required);
    std::shared_lock lock(mu_);
    std::string p(1, keys::kTenant);
    SFS_RETURN_IF_ERROR(store_->Scan(p, keys::PrefixEnd(p), [&](std::string_view, std::string_view v) {
      proto::TenantRec* r = out->add_tenants();
      if (!r->ParseFromArray(v.data(), static_cast<int>(v.size()))) {
        out->mutable_tenants()->RemoveLast();
      } else {
        r->clear_key();
        if (!req.name().empty() && r->name() != req.name()) out->mutable_tenants()->RemoveLast();
      }
      return true;
    }));
    if (!req.name().empty() && out->tenants_size() == 0) {
      return Status::Errno(ENOENT, "no tenant '" + req.name() + "'");
    }
    return Status::Ok();
  }
  SFS_RETURN_IF_ERROR(ValidateTenantName(req.name()));
  if ((req.op() == proto::TENANT_CREATE || req.op() == proto::TENANT_ROTATE) &&
      req.rec().key().size() != kKeyBytes) {
    return Status::Errno(EINVAL, "a tenant key is 32 bytes");
  }
  if (req.op() == proto::TENANT_CREATE) {
    SFS_RETURN_IF_ERROR(ValidateMaps(req.rec().uid_map(), "uid"));
    SFS_RETURN_IF_ERROR(ValidateMaps(req.rec().gid_map(), "gid"));
  }
  return Mutate(ctx, out, [&](Txn& txn) -> Status {
    auto existing = store_->Get(keys::Tenant(req.name()));
    bool exists = existing.ok();
    if (!exists && existing.status().code() != ENOENT) return existing.status();
    switch (req.op()) {
      case proto::TENANT_REMOVE:
        if (!exists) return Status::Errno(ENOENT, "no tenant '" + req.name() + "'");
        txn.batch().Delete(keys::Tenant(req.name()));
        return Status::Ok();
      case proto::TENANT_ROTATE: {
        if (!exists) return Status::Errno(ENOENT, "no tenant '" + req.name() + "'");
        proto::TenantRec rec;
        if (!rec.ParseFromString(*existing)) return Status::Errno(EIO, "corrupt tenant record");
        rec.set_key(req.rec().key());
        rec.set_key_generation(rec.key_generation() + 1);
        txn.batch().Put(keys::Tenant(req.name()), rec.SerializeAsString());
        out->set_key(rec.key());
        rec.clear_key();
        *out->add_tenants() = std::move(rec);
        return Status::Ok();
      }
      case proto::TENANT_CREATE: {
        if (exists) return Status::Errno(EEXIST, "tenant '" + req.name() + "' exists");
        size_t n = 0;
        std::string p(1, keys::kTenant);
        SFS_RETURN_IF_ERROR(store_->Scan(p, keys::PrefixEnd(p), [&](std::string_view, std::string_view) {
          return ++n < kMaxTenants;
        }));
        if (n >= kMaxTenants) return Status::Errno(ENOSPC, "too many tenants (1024)");
        // The fileset: an absolute path of directories, resolved now; the
        // tenant keeps its inode, so a later rename of it moves the fileset.
        const std::string& path = req.rec().fileset();
        if (path.empty() || path[0] != '/') {
          return Status::Errno(EINVAL, "a fileset is an absolute path on the file system");
        }
        uint64_t ino = kRootIno;
        size_t pos = 1;
        while (pos < path.size()) {
          size_t end = path.find('/', pos);
          if (end == std::string::npos) end = path.size();
          std::string_view part(path.data() + pos, end - pos);
          pos = end + 1;
          if (part.empty() || part == ".") continue;
          if (part == "..") return Status::Errno(EINVAL, "a fileset path may not hold '..'");
          SFS_ASSIGN_OR_RETURN(auto d, LoadDentry(store_, ino, part));
          if (!d) return Status::Errno(ENOENT, "fileset " + path + " does not exist");
          ino = d->ino();
        }
        SFS_ASSIGN_OR_RETURN(proto::InodeRec dir, LoadInodeRec(store_, ino));
        if (!S_ISDIR(dir.attr().mode())) {
          return Status::Errno(ENOTDIR, "fileset " + path + " is not a directory");
        }
        proto::TenantRec rec = req.rec();
        rec.set_name(req.name());
        rec.set_fileset_ino(ino);
        rec.set_key_generation(1);
        SFS_ASSIGN_OR_RETURN(uint32_t kv_id, NextKvId(store_, &txn));
        rec.set_kv_id(kv_id);
        txn.batch().Put(keys::Tenant(req.name()), rec.SerializeAsString());
        out->set_key(rec.key());
        rec.clear_key();
        *out->add_tenants() = std::move(rec);
        return Status::Ok();
      }
      default:
        return Status::Errno(EINVAL, "unknown tenant op");
    }
  });
}

}  // namespace sfs::mds
