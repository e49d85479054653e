// Striping layouts: directory defaults, file layouts and their allocation.
//
// A directory's default applies to new files below it until a nearer
// directory sets its own: the effective default of a directory is found by
// walking up through '..' to the first directory with one, else the file
// system default (1 stripe of 1 MiB). Subdirectories therefore inherit
// dynamically: changing a parent's default changes every subdirectory that
// has none of its own.
//
// Fields: stripe_size 0 and stripe_count 0 mean "inherit" (from the
// effective default when creating or setting a directory default, from the
// file's current layout when re-striping an empty file); stripe_count -1 =
// all OSTs up at create; start_ost >= 0 puts stripe 0 on that OST (-1 lets
// the allocator choose). A stripe_size must be a positive multiple of 64 KiB.
//
// Pools: a layout naming a pool places its stripes only on the pool's OSTs
// (the allocator's rules apply within the pool). An explicit pool (setstripe,
// create with a layout, migrate) must exist and have members (EINVAL); at
// setstripe the count must not exceed the pool's OSTs up and start_ost must
// be a member. An inherited default is clamped to the pool's OSTs at create;
// if its pool was destroyed or emptied meanwhile, the file is placed on all
// OSTs without a pool, as Lustre does, rather than failing every create.
#include <sys/stat.h>

#include <algorithm>
#include <optional>

#include "common/log.h"
#include "mds/namespace/namespace.h"

namespace sfs::mds {
namespace {

constexpr uint64_t kMaxStripeSize = uint64_t{4} << 30;
constexpr int32_t kMaxStripeCount = 2000;
constexpr int kMaxDepth = 4096;

proto::Layout RootDefault() {
  proto::Layout l;
  l.set_stripe_size(kDefaultStripeSize);
  l.set_stripe_count(1);
  l.set_start_ost(-1);
  return l;
}

bool SetsAnything(const proto::Layout& l) {
  return l.stripe_size() != 0 || l.stripe_count() != 0 || !l.pool().empty();
}

// want's non-zero fields over base's.
proto::Layout Merge(const proto::Layout& want, const proto::Layout& base) {
  proto::Layout l = base;
  l.clear_objects();
  if (!SetsAnything(want)) return l;
  if (want.stripe_size() != 0) l.set_stripe_size(want.stripe_size());
  if (want.stripe_count() != 0) l.set_stripe_count(want.stripe_count());
  if (!want.pool().empty()) l.set_pool(want.pool());
  l.set_start_ost(want.start_ost());
  return l;
}

}  // namespace

Result<proto::Layout> Namespace::EffectiveDefault(uint64_t dir_ino, bool* inherited) {
  uint64_t cur = dir_ino;
  for (int depth = 0; depth < kMaxDepth; ++depth) {
    SFS_ASSIGN_OR_RETURN(proto::InodeRec rec, LoadInodeRec(store_, cur));
    if (rec.has_layout()) {
      *inherited = cur != dir_ino;
      proto::Layout l = rec.layout();
      l.clear_objects();
      return l;
    }
    if (cur == kRootIno || rec.parent() == 0) break;
    cur = rec.parent();
  }
  *inherited = true;
  return RootDefault();
}

Status Namespace::ValidateLayout(const proto::Layout& l, bool for_setstripe) const {
  uint64_t size = l.stripe_size();
  if (size % kStripeUnit != 0 || size > kMaxStripeSize) {
    return Status::Errno(EINVAL, "stripe_size must be a positive multiple of 64 KiB");
  }
  int32_t count = l.stripe_count();
  if (count < -1 || count > kMaxStripeCount) return Status::Errno(EINVAL, "bad stripe_count");
  if (!for_setstripe) return Status::Ok();
  if (count > 0 && static_cast<size_t>(count) > osts_->UpCount()) {
    return Status::Errno(EINVAL, "stripe_count exceeds the OSTs up");
  }
  if (l.start_ost() >= 0 && static_cast<size_t>(l.start_ost()) >= osts_->KnownCount()) {
    return Status::Errno(EINVAL, "no such OST");
  }
  return l.pool().empty() ? Status::Ok() : ValidatePool(l);
}

Status Namespace::ValidatePool(const proto::Layout& l) const {
  SFS_ASSIGN_OR_RETURN(std::vector<uint32_t> members, PoolMembers(l.pool()));
  size_t up = osts_->UpCountIn(members);
  if (l.stripe_count() > 0 && static_cast<size_t>(l.stripe_count()) > up) {
    return Status::Errno(EINVAL, "stripe_count " + std::to_string(l.stripe_count()) +
                                     " exceeds the " + std::to_string(up) + " OSTs up in pool '" +
                                     l.pool() + "'");
  }
  if (up == 0) return Status::Errno(EINVAL, "pool '" + l.pool() + "' has no OST up");
  if (l.start_ost() >= 0 &&
      std::find(members.begin(), members.end(), static_cast<uint32_t>(l.start_ost())) ==
          members.end()) {
    return Status::Errno(EINVAL, "OST " + std::to_string(l.start_ost()) + " is not in pool '" +
                                     l.pool() + "'");
  }
  return Status::Ok();
}

// The OSTs a layout may use: its pool's members (null = all OSTs). See the
// file comment for an inherited pool that is gone.
Result<std::optional<std::vector<uint32_t>>> Namespace::AllowedOsts(proto::Layout* l,
                                                                     bool explicit_pool) {
  if (l->pool().empty()) return std::optional<std::vector<uint32_t>>();
  auto members = PoolMembers(l->pool());
  if (members.ok() && !members->empty()) return std::optional(std::move(*members));
  if (explicit_pool) {
    return members.ok() ? Status::Errno(EINVAL, "pool '" + l->pool() + "' has no OSTs")
                        : members.status();
  }
  LOG_WARN("inherited pool '" << l->pool() << "' is gone or empty; using all OSTs");
  l->clear_pool();
  return std::optional<std::vector<uint32_t>>();
}

Result<proto::Layout> Namespace::AllocateLayout(const proto::Layout& want,
                                                const proto::Layout& base) {
  if (SetsAnything(want)) SFS_RETURN_IF_ERROR(ValidateLayout(want, false));
  proto::Layout l = Merge(want, base);
  SFS_ASSIGN_OR_RETURN(auto allowed, AllowedOsts(&l, !want.pool().empty()));
  std::vector<uint32_t> picks =
      osts_->Pick(l.stripe_count(), l.start_ost(), allowed ? &*allowed : nullptr);
  if (picks.empty()) return Status::Errno(ENOSPC, "no OSTs registered");
  for (uint32_t ost : picks) {
    SFS_ASSIGN_OR_RETURN(uint64_t oid, AllocOid());
    proto::StripeObject* o = l.add_objects();
    o->set_ost(ost);
    o->set_oid(oid);
  }
  l.set_stripe_count(static_cast<int32_t>(picks.size()));
  return l;
}

Status Namespace::GetLayout(uint64_t ino, proto::GetLayoutResp* out) {
  std::shared_lock lock(mu_);
  SFS_ASSIGN_OR_RETURN(proto::InodeRec rec, LoadInodeRec(store_, ino));
  if (S_ISREG(rec.attr().mode())) {
    *out->mutable_layout() = rec.layout();
    out->set_inherited(false);
    return Status::Ok();
  }
  if (!S_ISDIR(rec.attr().mode())) return Status::Errno(ENODATA, "no layout");
  bool inherited = false;
  SFS_ASSIGN_OR_RETURN(*out->mutable_layout(), EffectiveDefault(ino, &inherited));
  out->set_inherited(inherited);
  return Status::Ok();
}

Status Namespace::SetLayout(const OpCtx& ctx, const proto::SetLayoutReq& req) {
  return Mutate(ctx, nullptr, [&](Txn& txn) -> Status {
    SFS_ASSIGN_OR_RETURN(proto::InodeRec * node, txn.Inode(req.ino()));
    if (!OwnerOrRoot(ctx.cred, node->attr())) return Status::Errno(EPERM, "not the owner");
    bool is_dir = S_ISDIR(node->attr().mode());
    if (!is_dir && !S_ISREG(node->attr().mode())) return Status::Errno(EINVAL, "no layout");
    if (req.clear()) {
      if (!is_dir) return Status::Errno(EINVAL, "only a directory default can be cleared");
      node->clear_layout();
    } else {
      SFS_RETURN_IF_ERROR(ValidateLayout(req.layout(), true));
      if (is_dir) {
        bool inherited = false;
        uint64_t up = req.ino() == kRootIno ? kRootIno : node->parent();
        SFS_ASSIGN_OR_RETURN(proto::Layout base, EffectiveDefault(up, &inherited));
        if (req.ino() == kRootIno) base = RootDefault();
        proto::Layout def = Merge(req.layout(), base);
        if (!SetsAnything(req.layout())) def = base;
        if (!def.pool().empty()) SFS_RETURN_IF_ERROR(ValidatePool(def));
        *node->mutable_layout() = def;
      } else {
        if (node->attr().size() > 0) return Status::Errno(EBUSY, "file has data");
        SFS_ASSIGN_OR_RETURN(proto::Layout fresh, AllocateLayout(req.layout(), node->layout()));
        EnqueueDestroy(txn, node->layout());
        *node->mutable_layout() = std::move(fresh);
      }
    }
    node->mutable_attr()->set_ctime_ns(txn.now());
    txn.Dirty(req.ino());
    return Status::Ok();
  });
}

}  // namespace sfs::mds
