// Lost OSTs and the layout side of rebuild (docs/redundancy.md "Rebuild"):
// `sfs ost lost` marks every object on the OST lost and queues its files on
// the resync list; the MDS's resyncer rebuilds each object onto another OST
// and swaps it in here.
#include <sys/stat.h>

#include <algorithm>

#include "common/log.h"
#include "mds/namespace/keys.h"
#include "mds/namespace/namespace.h"
#include "mds/namespace/txn.h"
#include "mds_store.pb.h"

namespace sfs::mds {

Status Namespace::OstLost(const OpCtx& ctx, uint32_t ost, uint64_t* files) {
  if (!ctx.cred.root()) return Status::Errno(EPERM, "only root may declare an OST lost");
  // Durable first: from here the OST is never allocated and never read, and a
  // restart that interrupted the marking below finds it lost and marks again
  // (the command is idempotent).
  SFS_RETURN_IF_ERROR(osts_->MarkLost(ost));
  *files = 0;
  Status st = Mutate(ctx, nullptr, [&](Txn& txn) -> Status {
    // A full scan of the inode table: an OST's objects are not indexed by OST.
    std::vector<uint64_t> hit;
    std::string prefix(1, keys::kInode);
    SFS_RETURN_IF_ERROR(store_->Scan(prefix, keys::PrefixEnd(prefix),
                                     [&](std::string_view k, std::string_view v) {
                                       proto::InodeRec rec;
                                       if (!rec.ParseFromArray(v.data(), v.size())) return true;
                                       if (!S_ISREG(rec.attr().mode())) return true;
                                       for (const proto::StripeObject& o : rec.layout().objects()) {
                                         if (o.ost() == ost && o.state() != proto::OBJECT_LOST) {
                                           hit.push_back(keys::IdOf(k));
                                           break;
                                         }
                                       }
                                       return true;
                                     }));
    for (uint64_t ino : hit) {
      SFS_ASSIGN_OR_RETURN(proto::InodeRec * node, txn.Inode(ino));
      for (proto::StripeObject& o : *node->mutable_layout()->mutable_objects()) {
        if (o.ost() == ost) o.set_state(proto::OBJECT_LOST);
      }
      txn.Dirty(ino);
      txn.batch().Put(keys::Resync(ino), "");
      txn.OnCommit([this, ino, after = node->layout()] { NoteCopyStates(ino, after); });
    }
    *files = hit.size();
    txn.OnCommit([this, hit] {
      std::lock_guard<std::mutex> lock(resync_mu_);
      resync_wanted_.insert(hit.begin(), hit.end());
    });
    return Status::Ok();
  });
  SFS_RETURN_IF_ERROR(st);
  LOG_WARN("OST " << ost << " lost: " << *files << " file(s) with objects on it to rebuild");
  return committer_.Commit();
}

Result<uint64_t> Namespace::NewObjectId() {
  std::unique_lock lock(mu_);
  return AllocOid();
}

Status Namespace::ReplaceObject(uint64_t ino, uint32_t old_ost, uint64_t old_oid,
                                uint32_t new_ost, uint64_t new_oid, uint64_t size,
                                int64_t mtime_ns) {
  Status st = Mutate(OpCtx{}, nullptr, [&](Txn& txn) -> Status {
    SFS_ASSIGN_OR_RETURN(proto::InodeRec * node, txn.Inode(ino));
    if (opens_.WriteOpenCount(ino) > 0) {
      return Status::Errno(EBUSY, "file is open for write; rebuilt once it is closed");
    }
    if (node->attr().size() != size || node->attr().mtime_ns() != mtime_ns) {
      return Status::Errno(EBUSY, "file was written during the rebuild; run it again");
    }
    proto::Layout* l = node->mutable_layout();
    auto it = std::find_if(l->mutable_objects()->begin(), l->mutable_objects()->end(),
                           [&](const proto::StripeObject& o) {
                             return o.ost() == old_ost && o.oid() == old_oid;
                           });
    if (it == l->mutable_objects()->end()) {
      return Status::Errno(ESTALE, "object " + std::to_string(old_oid) + " on OST " +
                                       std::to_string(old_ost) + " is not in the layout");
    }
    it->set_ost(new_ost);
    it->set_oid(new_oid);
    it->set_state(proto::OBJECT_OK);
    if (std::all_of(l->objects().begin(), l->objects().end(),
                    [](const proto::StripeObject& o) { return o.state() == proto::OBJECT_OK; })) {
      txn.batch().Delete(keys::Resync(ino));
    }
    node->mutable_attr()->set_ctime_ns(txn.now());
    txn.Dirty(ino);
    return Status::Ok();
  });
  SFS_RETURN_IF_ERROR(st);
  return committer_.Commit();
}

}  // namespace sfs::mds
