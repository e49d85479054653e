// Migrate: restriping a file that has data, in two steps around a copy done
// by the client (libsfs Client::Migrate).
//
// Begin allocates the new objects and records them in M<ino> together with a
// snapshot of the file's size, mtime and ctime; it refuses (EBUSY) while the
// file is open for write, since a writer would put data in the old objects
// behind the copy's back. Commit swaps the layouts in one batch iff the
// migration is the recorded one, nobody has the file open for write, and the
// snapshot still matches: every write is reported to the MDS (SetSize/Close
// set mtime; truncate sets mtime and ctime), so a write that slipped in
// between is seen. Otherwise the new objects are freed and the client gets
// EBUSY (the file is untouched and may simply be migrated again).
//
// The old objects: a client that opened the file before the swap keeps
// reading them, so they are destroyed at once only when the file has no open;
// else they wait in L<ino> until its last close (or, after an MDS restart,
// until clients had client_timeout_ms to come back, as orphans do).
// A migration abandoned by its client is dropped by the next Begin on that
// file, by the file's deletion, or after an MDS restart.
#include <sys/stat.h>

#include "common/log.h"
#include "mds/namespace/keys.h"
#include "mds/namespace/namespace.h"

namespace sfs::mds {
namespace {

template <typename Rec>
Result<std::optional<Rec>> LoadRec(KvStore* store, const std::string& key) {
  auto raw = store->Get(key);
  if (!raw.ok()) {
    if (raw.status().code() == ENOENT) return std::optional<Rec>();
    return raw.status();
  }
  Rec rec;
  if (!rec.ParseFromString(*raw)) return Status::Errno(EIO, "corrupt record " + key.substr(0, 1));
  return std::optional<Rec>(std::move(rec));
}

bool SameObjects(const proto::Layout& a, const proto::Layout& b) {
  if (a.objects_size() != b.objects_size()) return false;
  for (int i = 0; i < a.objects_size(); ++i) {
    if (a.objects(i).ost() != b.objects(i).ost() || a.objects(i).oid() != b.objects(i).oid()) {
      return false;
    }
  }
  return true;
}

bool Unchanged(const proto::MigrateRec& m, const proto::Attr& a) {
  return m.size() == a.size() && m.mtime_ns() == a.mtime_ns() && m.ctime_ns() == a.ctime_ns();
}

}  // namespace

Status Namespace::DropMigration(Txn& txn, uint64_t ino) {
  SFS_ASSIGN_OR_RETURN(auto m, LoadRec<proto::MigrateRec>(store_, keys::Migrate(ino)));
  if (!m) return Status::Ok();
  EnqueueDestroy(txn, m->new_layout());
  txn.batch().Delete(keys::Migrate(ino));
  return Status::Ok();
}

Status Namespace::ReleaseStaleLayout(Txn& txn, uint64_t ino) {
  SFS_ASSIGN_OR_RETURN(auto stale, LoadRec<proto::StaleLayoutRec>(store_, keys::StaleLayout(ino)));
  if (!stale) return Status::Ok();
  proto::Layout l;
  *l.mutable_objects() = stale->objects();
  EnqueueDestroy(txn, l);
  txn.batch().Delete(keys::StaleLayout(ino));
  return Status::Ok();
}

Status Namespace::MigrateBegin(const OpCtx& ctx, const proto::MigrateBeginReq& req,
                               proto::MigrateBeginResp* out) {
  return Mutate(ctx, out, [&](Txn& txn) -> Status {
    SFS_ASSIGN_OR_RETURN(proto::InodeRec * node, txn.Inode(req.ino()));
    if (!S_ISREG(node->attr().mode())) return Status::Errno(EINVAL, "not a regular file");
    if (!OwnerOrRoot(ctx.cred, node->attr())) return Status::Errno(EPERM, "not the owner");
    if (opens_.WriteOpenCount(req.ino()) > 0) {
      return Status::Errno(EBUSY, "file is open for write");
    }
    SFS_RETURN_IF_ERROR(ValidateLayout(req.layout(), true));
    SFS_RETURN_IF_ERROR(DropMigration(txn, req.ino()));  // an abandoned earlier one
    SFS_ASSIGN_OR_RETURN(proto::Layout fresh, AllocateLayout(req.layout(), node->layout()));
    proto::MigrateRec m;
    *m.mutable_new_layout() = fresh;
    m.set_size(node->attr().size());
    m.set_mtime_ns(node->attr().mtime_ns());
    m.set_ctime_ns(node->attr().ctime_ns());
    m.set_since_ns(txn.now());
    txn.batch().Put(keys::Migrate(req.ino()), m.SerializeAsString());
    *out->mutable_attr() = node->attr();
    *out->mutable_old_layout() = node->layout();
    *out->mutable_new_layout() = std::move(fresh);
    return Status::Ok();
  });
}

Status Namespace::SwapLayouts(Txn& txn, uint64_t ino, proto::InodeRec* node,
                              proto::Layout fresh) {
  proto::Layout old = std::move(*node->mutable_layout());
  *node->mutable_layout() = std::move(fresh);
  txn.Dirty(ino);
  txn.batch().Delete(keys::Migrate(ino));
  if (opens_.OpenCount(ino) == 0) {
    EnqueueDestroy(txn, old);
    return Status::Ok();
  }
  // Readers that opened before the swap still use the old objects.
  SFS_ASSIGN_OR_RETURN(auto stale, LoadRec<proto::StaleLayoutRec>(store_, keys::StaleLayout(ino)));
  proto::StaleLayoutRec rec = stale.value_or(proto::StaleLayoutRec());
  for (const proto::StripeObject& o : old.objects()) *rec.add_objects() = o;
  txn.batch().Put(keys::StaleLayout(ino), rec.SerializeAsString());
  return Status::Ok();
}

Status Namespace::MigrateCommit(const OpCtx& ctx, const proto::MigrateCommitReq& req) {
  proto::Layout fresh;
  auto recorded = [&](Txn& txn) -> Result<proto::InodeRec*> {
    SFS_ASSIGN_OR_RETURN(proto::InodeRec * node, txn.Inode(req.ino()));
    if (!OwnerOrRoot(ctx.cred, node->attr())) return Status::Errno(EPERM, "not the owner");
    SFS_ASSIGN_OR_RETURN(auto m, LoadRec<proto::MigrateRec>(store_, keys::Migrate(req.ino())));
    if (!m || !SameObjects(m->new_layout(), req.new_layout())) {
      return Status::Errno(EINVAL, "no such migration in progress (dropped or superseded)");
    }
    bool written = opens_.WriteOpenCount(req.ino()) > 0 || !Unchanged(*m, node->attr());
    if (written && !req.abort()) {
      return Status::Errno(EBUSY, "file was opened for write or written during migration");
    }
    fresh = m->new_layout();
    return node;
  };
  Status st = Mutate(ctx, nullptr, [&](Txn& txn) -> Status {
    SFS_ASSIGN_OR_RETURN(proto::InodeRec * node, recorded(txn));
    if (req.abort()) return DropMigration(txn, req.ino());
    if (req.has_blocks()) node->mutable_attr()->set_blocks(req.blocks());
    return SwapLayouts(txn, req.ino(), node, std::move(fresh));
  });
  if (st.code() != EBUSY) return st;
  // The copy is void: free the new objects (iff they are still the recorded ones).
  Status drop = Mutate(OpCtx{}, nullptr, [&](Txn& txn) -> Status {
    SFS_ASSIGN_OR_RETURN(auto m, LoadRec<proto::MigrateRec>(store_, keys::Migrate(req.ino())));
    if (!m || !SameObjects(m->new_layout(), req.new_layout())) return Status::Ok();
    return DropMigration(txn, req.ino());
  });
  if (!drop.ok()) LOG_WARN("dropping migration of " << req.ino() << ": " << drop.ToString());
  return st;
}

void Namespace::HousekeepMigrations(const std::set<uint64_t>& inos, bool startup) {
  std::set<uint64_t> stale(inos.begin(), inos.end());
  std::set<uint64_t> migrations;
  if (startup) {
    std::string l(1, keys::kStaleLayout), m(1, keys::kMigrate);
    Status st = store_->Scan(l, keys::PrefixEnd(l), [&](std::string_view k, std::string_view) {
      stale.insert(keys::IdOf(k));
      return true;
    });
    if (st.ok()) {
      st = store_->Scan(m, keys::PrefixEnd(m), [&](std::string_view k, std::string_view) {
        migrations.insert(keys::IdOf(k));
        return true;
      });
    }
    if (!st.ok()) LOG_WARN("scanning migration records: " << st.ToString());
  }
  for (uint64_t ino : stale) {
    Status st = Mutate(OpCtx{}, nullptr, [&](Txn& txn) {
      return opens_.OpenCount(ino) > 0 ? Status::Ok() : ReleaseStaleLayout(txn, ino);
    });
    if (!st.ok()) LOG_WARN("releasing old objects of " << ino << ": " << st.ToString());
  }
  for (uint64_t ino : migrations) {
    LOG_INFO("dropping migration of inode " << ino << " left from before the restart");
    Status st = Mutate(OpCtx{}, nullptr, [&](Txn& txn) { return DropMigration(txn, ino); });
    if (!st.ok()) LOG_WARN("dropping migration of " << ino << ": " << st.ToString());
  }
}

}  // namespace sfs::mds
