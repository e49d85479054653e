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
//
// Mirrors: mirror_count N (1..3; 0 = inherit) keeps N copies of every stripe
// object, the copies of one stripe on N distinct OSTs of N distinct OSSes (an
// OSS serving several OSTs holds one copy of a stripe at most; copy m of stripe s is
// objects[m * stripe_count + s]). Copy 0 takes the allocator's picks; copy m
// of a stripe takes the OST m places after copy 0's in the ring of all
// candidate OSTs, skipping any its stripe already uses, so that copies spread
// as evenly as the stripes do. N larger than the OSTs up (or the pool's) is
// EINVAL at setstripe and at create; changing N on a file with data is
// EINVAL (the copies would not hold the data).
//
// Erasure codes: ec_data K and ec_parity M (both 0 = not erasure-coded) make
// a file of K+M objects on K+M distinct OSSes (stripe_count is K+M), written
// by the client as rows of K data chunks of stripe_size bytes plus M
// Reed-Solomon parity chunks, parity rotating over the objects
// (common/ec/ec_geometry.h, docs/redundancy.md). EC excludes mirrors; a
// later mirror_count or stripe_count without EC (e.g. -N 1 or -c 4 on a
// subdirectory of an EC directory) turns EC off, and a later EC turns
// mirrors off. K+M larger than the OSSes up (or the pool's) is EINVAL, as is
// making a file with data erasure-coded (sfs migrate does that).
#include <sys/stat.h>

#include <algorithm>
#include <optional>
#include <string>

#include "common/log.h"
#include "mds/namespace/keys.h"
#include "mds/namespace/namespace.h"

namespace sfs::mds {
namespace {

constexpr uint64_t kMaxStripeSize = uint64_t{4} << 30;
constexpr int32_t kMaxStripeCount = 2000;
constexpr int kMaxDepth = 4096;
constexpr uint32_t kMaxMirrors = 3;
constexpr uint32_t kMaxEcChunks = 32;  // common/ec/rs_codec.h kMaxChunks

proto::Layout RootDefault() {
  proto::Layout l;
  l.set_stripe_size(kDefaultStripeSize);
  l.set_stripe_count(1);
  l.set_start_ost(-1);
  return l;
}

bool SetsAnything(const proto::Layout& l) {
  return l.stripe_size() != 0 || l.stripe_count() != 0 || !l.pool().empty() ||
         l.mirror_count() != 0 || l.ec_data() != 0;
}

uint32_t EcWidth(const proto::Layout& l) { return l.ec_data() + l.ec_parity(); }

// want's non-zero fields over base's.
proto::Layout Merge(const proto::Layout& want, const proto::Layout& base) {
  proto::Layout l = base;
  l.clear_objects();
  if (!SetsAnything(want)) return l;
  if (want.stripe_size() != 0) l.set_stripe_size(want.stripe_size());
  if (want.stripe_count() != 0) l.set_stripe_count(want.stripe_count());
  if (!want.pool().empty()) l.set_pool(want.pool());
  if (want.mirror_count() != 0) l.set_mirror_count(want.mirror_count());
  if (want.ec_data() != 0) {
    l.set_ec_data(want.ec_data());
    l.set_ec_parity(want.ec_parity());
    l.clear_mirror_count();
  } else if (want.mirror_count() != 0 || want.stripe_count() != 0) {
    l.clear_ec_data();  // plain or mirrored striping asked for: no EC
    l.clear_ec_parity();
  }
  if (l.ec_data() != 0) l.set_stripe_count(static_cast<int32_t>(EcWidth(l)));
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
  if (l.mirror_count() > kMaxMirrors) {
    return Status::Errno(EINVAL, "mirror_count must be 1, 2 or 3");
  }
  SFS_RETURN_IF_ERROR(ValidateEc(l));
  if (!for_setstripe) return Status::Ok();
  if (count > 0 && static_cast<size_t>(count) > osts_->UpCount()) {
    return Status::Errno(EINVAL, "stripe_count exceeds the OSTs up");
  }
  if (l.mirror_count() > 1 && l.mirror_count() > osts_->UpCount()) {
    return Status::Errno(EINVAL, "mirror_count " + std::to_string(l.mirror_count()) +
                                     " exceeds the " + std::to_string(osts_->UpCount()) +
                                     " OSTs up (each copy needs its own OST)");
  }
  if (l.mirror_count() > 1 && l.mirror_count() > osts_->UpOssCount()) {
    return Status::Errno(EINVAL, "mirror_count " + std::to_string(l.mirror_count()) +
                                     " exceeds the " + std::to_string(osts_->UpOssCount()) +
                                     " OSSes up (each copy needs its own OSS)");
  }
  if (l.ec_data() != 0 && EcWidth(l) > osts_->UpCount()) {
    return Status::Errno(EINVAL, "EC " + std::to_string(l.ec_data()) + "+" +
                                     std::to_string(l.ec_parity()) + " needs " +
                                     std::to_string(EcWidth(l)) + " OSTs, " +
                                     std::to_string(osts_->UpCount()) + " are up");
  }
  if (l.ec_data() != 0 && EcWidth(l) > osts_->UpOssCount()) {
    return Status::Errno(EINVAL, "EC " + std::to_string(l.ec_data()) + "+" +
                                     std::to_string(l.ec_parity()) + " needs " +
                                     std::to_string(EcWidth(l)) + " OSSes (one chunk each), " +
                                     std::to_string(osts_->UpOssCount()) + " are up");
  }
  if (l.start_ost() >= 0 && static_cast<size_t>(l.start_ost()) >= osts_->KnownCount()) {
    return Status::Errno(EINVAL, "no such OST");
  }
  return l.pool().empty() ? Status::Ok() : ValidatePool(l);
}

Status Namespace::ValidateEc(const proto::Layout& l) const {
  if (l.ec_data() == 0 && l.ec_parity() == 0) return Status::Ok();
  if (l.ec_data() < 1 || l.ec_parity() < 1 || EcWidth(l) > kMaxEcChunks) {
    return Status::Errno(EINVAL, "EC " + std::to_string(l.ec_data()) + "+" +
                                     std::to_string(l.ec_parity()) +
                                     ": need K >= 1, M >= 1, K+M <= 32");
  }
  if (l.mirror_count() > 1) {
    return Status::Errno(EINVAL, "a layout is mirrored or erasure-coded, not both");
  }
  if (l.stripe_count() != 0 && l.stripe_count() != static_cast<int32_t>(EcWidth(l))) {
    return Status::Errno(EINVAL, "an EC K+M layout has K+M stripes");
  }
  return Status::Ok();
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
  if (l.mirror_count() > 1 && l.mirror_count() > up) {
    return Status::Errno(EINVAL, "mirror_count " + std::to_string(l.mirror_count()) +
                                     " exceeds the " + std::to_string(up) + " OSTs up in pool '" +
                                     l.pool() + "'");
  }
  if (l.ec_data() != 0 && EcWidth(l) > up) {
    return Status::Errno(EINVAL, "EC " + std::to_string(l.ec_data()) + "+" +
                                     std::to_string(l.ec_parity()) + " needs " +
                                     std::to_string(EcWidth(l)) + " OSTs, " + std::to_string(up) +
                                     " are up in pool '" + l.pool() + "'");
  }
  const size_t oss_up = osts_->UpOssCount(&members);
  const uint32_t spread = l.ec_data() != 0 ? EcWidth(l) : l.mirror_count();  // one per OSS
  if (spread > 1 && spread > oss_up) {
    const std::string what = l.ec_data() != 0 ? "EC " + std::to_string(l.ec_data()) + "+" +
                                                    std::to_string(l.ec_parity())
                                              : "mirror_count " + std::to_string(spread);
    return Status::Errno(EINVAL, what + " needs " + std::to_string(spread) + " OSSes, " +
                                     std::to_string(oss_up) + " are up in pool '" + l.pool() +
                                     "'");
  }
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
  const bool ec = l.ec_data() != 0;
  std::vector<uint32_t> picks = osts_->Pick(l.stripe_count(), l.start_ost(),
                                            allowed ? &*allowed : nullptr, /*distinct_oss=*/ec);
  if (picks.empty()) return Status::Errno(ENOSPC, "no OSTs registered");
  if (ec && picks.size() != EcWidth(l)) {
    // Every chunk of a row on its own OSS, or one lost OSS could take two.
    return Status::Errno(EINVAL, "EC " + std::to_string(l.ec_data()) + "+" +
                                     std::to_string(l.ec_parity()) + " needs " +
                                     std::to_string(EcWidth(l)) + " OSSes, " +
                                     std::to_string(picks.size()) + " are available");
  }
  const uint32_t mirrors = std::max<uint32_t>(l.mirror_count(), 1);
  std::vector<uint32_t> ring;
  std::vector<std::string> ring_oss;
  if (mirrors > 1) ring = osts_->Pick(-1, -1, allowed ? &*allowed : nullptr);
  for (uint32_t ost : ring) ring_oss.push_back(osts_->OssOf(ost));
  SFS_ASSIGN_OR_RETURN(std::vector<uint32_t> all, PlaceMirrors(picks, ring, mirrors, ring_oss));
  for (size_t i = 0; i < all.size(); ++i) {
    SFS_ASSIGN_OR_RETURN(uint64_t oid, AllocOid());
    proto::StripeObject* o = l.add_objects();
    o->set_ost(all[i]);
    o->set_oid(oid);
    o->set_mirror(static_cast<uint32_t>(i / picks.size()));
  }
  l.set_stripe_count(static_cast<int32_t>(picks.size()));
  if (mirrors == 1) l.clear_mirror_count();
  return l;
}

Result<std::vector<uint32_t>> PlaceMirrors(const std::vector<uint32_t>& picks,
                                           const std::vector<uint32_t>& ring, uint32_t mirrors,
                                           const std::vector<std::string>& oss) {
  std::vector<uint32_t> out = picks;
  if (mirrors <= 1) return out;
  // The OSS of ring entry k; without `oss`, every OST is an OSS of its own.
  auto oss_at = [&](size_t k) {
    return oss.empty() ? "#" + std::to_string(ring[k]) : oss[k];
  };
  std::vector<std::string> all_oss;
  for (size_t k = 0; k < ring.size(); ++k) {
    if (std::find(all_oss.begin(), all_oss.end(), oss_at(k)) == all_oss.end()) {
      all_oss.push_back(oss_at(k));
    }
  }
  if (all_oss.size() < mirrors) {
    const std::string one = oss.empty() ? "OST" : "OSS", many = oss.empty() ? "OSTs" : "OSSes";
    return Status::Errno(EINVAL, "mirror_count " + std::to_string(mirrors) + " exceeds the " +
                                     std::to_string(all_oss.size()) + " " + many +
                                     " available (each copy needs its own " + one + ")");
  }
  out.resize(picks.size() * mirrors);
  for (size_t s = 0; s < picks.size(); ++s) {
    auto at = std::find(ring.begin(), ring.end(), picks[s]);
    size_t base = at == ring.end() ? s : static_cast<size_t>(at - ring.begin());
    std::vector<std::string> used{at == ring.end() ? "#" + std::to_string(picks[s])
                                                   : oss_at(base)};
    std::vector<uint32_t> used_osts{picks[s]};
    for (uint32_t m = 1; m < mirrors; ++m) {
      size_t k = base + m;
      // Terminates: all_oss.size() >= mirrors leaves an OSS unused.
      while (std::find(used.begin(), used.end(), oss_at(k % ring.size())) != used.end() ||
             std::find(used_osts.begin(), used_osts.end(), ring[k % ring.size()]) !=
                 used_osts.end()) {
        ++k;
      }
      used.push_back(oss_at(k % ring.size()));
      used_osts.push_back(ring[k % ring.size()]);
      out[m * picks.size() + s] = ring[k % ring.size()];
    }
  }
  return out;
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
        if (node->attr().size() > 0 && req.layout().mirror_count() != 0 &&
            std::max<uint32_t>(req.layout().mirror_count(), 1) !=
                std::max<uint32_t>(node->layout().mirror_count(), 1)) {
          return Status::Errno(EINVAL, "cannot change the mirror count of a file with data");
        }
        if (node->attr().size() > 0 && req.layout().ec_data() != 0) {
          return Status::Errno(EINVAL,
                               "cannot make a file with data erasure-coded; use sfs migrate");
        }
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

Status Namespace::MirrorState(const OpCtx& ctx, const proto::MirrorStateReq& req,
                              proto::GetLayoutResp* out) {
  if (req.state() != proto::OBJECT_OK && req.state() != proto::OBJECT_STALE) {
    return Status::Errno(EINVAL, "a copy can only be marked ok or stale");
  }
  return Mutate(ctx, out, [&](Txn& txn) -> Status {
    SFS_ASSIGN_OR_RETURN(proto::InodeRec * node, txn.Inode(req.ino()));
    if (!S_ISREG(node->attr().mode())) return Status::Errno(EINVAL, "not a regular file");
    proto::Layout* l = node->mutable_layout();
    const bool ec = l->ec_data() != 0;
    if (l->mirror_count() < 2 && !ec) return Status::Errno(EINVAL, "file is not mirrored");
    if (req.state() == proto::OBJECT_OK && !OwnerOrRoot(ctx.cred, node->attr())) {
      return Status::Errno(EPERM, "not the owner");
    }
    if (req.if_idle() && opens_.WriteOpenCount(req.ino()) > 0) {
      return Status::Errno(EBUSY, "file is open for write; resync it once it is closed");
    }
    if (req.if_idle() && (node->attr().size() != req.size() ||
                          node->attr().mtime_ns() != req.mtime_ns())) {
      return Status::Errno(EBUSY, "file was written during the resync; run it again");
    }
    const int stripes = l->stripe_count();
    bool changed = false;
    for (const proto::StripeObject& want : req.objects()) {
      int found = -1;
      for (int i = 0; i < l->objects_size(); ++i) {
        if (l->objects(i).ost() == want.ost() && l->objects(i).oid() == want.oid()) found = i;
      }
      if (found < 0) {
        return Status::Errno(ESTALE, "object " + std::to_string(want.oid()) + " on OST " +
                                         std::to_string(want.ost()) + " is not in the layout");
      }
      if (l->objects(found).state() == proto::OBJECT_LOST) {
        // On a lost OST: only the rebuild (ReplaceObject) brings it back.
        if (req.state() == proto::OBJECT_STALE) continue;
        return Status::Errno(EINVAL, "object " + std::to_string(want.oid()) + " is on lost OST " +
                                         std::to_string(want.ost()) + "; it is being rebuilt");
      }
      if (ec) {
        // Never more than M chunk objects stale: any K must still give the rows.
        int stale = 0;
        for (const proto::StripeObject& o : l->objects()) stale += o.state() != proto::OBJECT_OK;
        if (req.state() == proto::OBJECT_STALE && l->objects(found).state() == proto::OBJECT_OK &&
            stale + 1 > static_cast<int>(l->ec_parity())) {
          return Status::Errno(EIO, "object " + std::to_string(want.oid()) + " on OST " +
                                        std::to_string(want.ost()) + ": EC " +
                                        std::to_string(l->ec_data()) + "+" +
                                        std::to_string(l->ec_parity()) + " has " +
                                        std::to_string(stale) + " stale chunk objects already");
        }
      } else if (req.state() == proto::OBJECT_STALE) {
        // Never the last good copy of a stripe: that would lose the stripe.
        int good = 0;
        for (int i = found % stripes; i < l->objects_size(); i += stripes) {
          if (i != found && l->objects(i).state() == proto::OBJECT_OK) ++good;
        }
        if (good == 0 && l->objects(found).state() == proto::OBJECT_OK) {
          return Status::Errno(EIO, "object " + std::to_string(want.oid()) + " on OST " +
                                        std::to_string(want.ost()) +
                                        " is the last good copy of its stripe");
        }
      }
      if (l->objects(found).state() != req.state()) {
        l->mutable_objects(found)->set_state(req.state());
        changed = true;
      }
    }
    *out->mutable_layout() = *l;
    // EC chunks too: the resyncer rebuilds them from K other chunks.
    if (changed && req.state() == proto::OBJECT_STALE) {
      // Durably on the resync's list with the stale mark itself, so that an
      // MDS restart resyncs it too (Start loads the W keys).
      const uint64_t ino = req.ino();
      txn.batch().Put(keys::Resync(ino), "");
      txn.OnCommit([this, ino] {
        std::lock_guard<std::mutex> lock(resync_mu_);
        resync_wanted_.insert(ino);
      });
    }
    if (changed && req.state() == proto::OBJECT_OK &&
        std::none_of(l->objects().begin(), l->objects().end(), [](const proto::StripeObject& o) {
          return o.state() != proto::OBJECT_OK;
        })) {
      txn.batch().Delete(keys::Resync(req.ino()));  // nothing stale is left
    }
    if (changed) {
      node->mutable_attr()->set_ctime_ns(txn.now());
      txn.Dirty(req.ino());
      txn.OnCommit([this, ino = req.ino(), after = *l] { NoteCopyStates(ino, after); });
    }
    return Status::Ok();
  });
}

}  // namespace sfs::mds
