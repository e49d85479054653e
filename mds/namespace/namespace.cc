// Namespace core: start-up, the mutation/commit/replay machinery, id
// allocation, and the pieces shared by several op families (new inodes,
// dropping links, freeing inodes onto the destroy queue). The ops themselves
// live in one .cc per family.
#include "mds/namespace/namespace.h"

#include <sys/stat.h>

#include <algorithm>
#include <ctime>
#include <random>

#include "common/log.h"
#include "mds/namespace/keys.h"

namespace sfs::mds {
namespace {

constexpr uint64_t kIdBatch = 4096;

int64_t ClockNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

}  // namespace

int64_t NowNs() { return ClockNs(); }
int64_t NowMs() { return ClockNs() / 1000000; }

Namespace::Namespace(KvStore* store, OstRegistry* osts, NamespaceOptions opts)
    : store_(store),
      osts_(osts),
      opts_(opts),
      committer_(store, opts.commit_interval_ms),
      replies_(opts.reply_cache_entries) {}

Status Namespace::Start(int64_t now_ms) {
  std::unique_lock lock(mu_);
  started_ms_ = now_ms;
  auto raw = store_->Get(keys::Super());
  if (!raw.ok() && raw.status().code() != ENOENT) return raw.status();
  if (!raw.ok()) {
    SFS_RETURN_IF_ERROR(Bootstrap());
  } else if (!super_.ParseFromString(*raw)) {
    return Status::Errno(EIO, "corrupt superblock");
  }
  next_ino_ = super_.ino_limit();
  next_oid_ = super_.oid_limit();
  boot_ino_limit_ = next_ino_;
  boot_oid_limit_ = next_oid_;
  super_.set_boot_epoch(super_.boot_epoch() + 1);
  KvBatch epoch;
  epoch.Put(keys::Super(), super_.SerializeAsString());
  SFS_RETURN_IF_ERROR(store_->Write(epoch, /*sync=*/true));
  boot_epoch_ = super_.boot_epoch();
  opens_.SetEpoch(super_.boot_epoch());
  SFS_RETURN_IF_ERROR(LoadRepliesAndCounters());
  SFS_RETURN_IF_ERROR(LoadResyncWanted());
  SFS_RETURN_IF_ERROR(LoadClients());
  committer_.Start();
  LOG_INFO("namespace fs_id=" << super_.fs_id() << " boot_epoch=" << boot_epoch_.load()
                              << " inodes=" << inode_count_.load()
                              << " next_ino=" << next_ino_ << " next_oid=" << next_oid_
                              << " commit_interval_ms=" << opts_.commit_interval_ms);
  return Status::Ok();
}

Status Namespace::Bootstrap() {
  std::random_device rd;
  super_.set_fs_id((uint64_t{rd()} << 32) | rd());
  super_.set_ino_limit(kRootIno + 1);
  super_.set_oid_limit(1);
  super_.set_created_ns(NowNs());
  proto::InodeRec root;
  proto::Attr* a = root.mutable_attr();
  int64_t now = NowNs();
  a->set_ino(kRootIno);
  a->set_mode(S_IFDIR | 0755);
  a->set_nlink(2);
  a->set_size(4096);
  a->set_atime_ns(now);
  a->set_mtime_ns(now);
  a->set_ctime_ns(now);
  a->set_generation(1);
  root.set_parent(kRootIno);
  KvBatch batch;
  batch.Put(keys::Super(), super_.SerializeAsString());
  batch.Put(keys::Inode(kRootIno), root.SerializeAsString());
  LOG_INFO("new file system: created the root directory");
  return store_->Write(batch, /*sync=*/true);
}

// The resync's to-do list as the last run left it (W keys).
Status Namespace::LoadResyncWanted() {
  std::string w(1, keys::kResync);
  std::lock_guard<std::mutex> lock(resync_mu_);
  SFS_RETURN_IF_ERROR(store_->Scan(w, keys::PrefixEnd(w), [&](std::string_view k, std::string_view) {
    resync_wanted_.insert(keys::IdOf(k));
    return true;
  }));
  if (!resync_wanted_.empty()) {
    LOG_INFO(resync_wanted_.size() << " mirrored file(s) with stale copies to resync");
  }
  // The fence: their copies that are not ok (docs/redundancy.md).
  for (uint64_t ino : resync_wanted_) {
    Result<std::string> v = store_->Get(keys::Inode(ino));
    proto::InodeRec rec;
    if (v.ok() && rec.ParseFromString(*v)) NoteCopyStates(ino, rec.layout());
  }
  return Status::Ok();
}

void Namespace::NoteCopyStates(uint64_t ino, const proto::Layout& l) {
  if (l.mirror_count() < 2 && l.ec_data() == 0) return;
  std::lock_guard<std::mutex> lock(fence_mu_);
  bool changed = false;
  for (const proto::StripeObject& o : l.objects()) {
    if (o.state() == proto::OBJECT_OK) {
      auto it = fenced_.find(o.ost());
      if (it != fenced_.end() && it->second.erase(o.oid()) != 0) {
        changed = true;
        if (it->second.empty()) fenced_.erase(it);
      }
    } else {
      changed |= fenced_[o.ost()].insert(o.oid()).second;
    }
  }
  if (!changed) return;
  ++fence_version_;
  uint64_t& gen = copy_gens_[ino];
  gen = gen == 0 ? (boot_epoch() << 32) | 1 : gen + 1;
}

uint64_t Namespace::CopyGen(uint64_t ino) const {
  std::lock_guard<std::mutex> lock(fence_mu_);
  auto it = copy_gens_.find(ino);
  return it == copy_gens_.end() ? 0 : it->second;
}

uint64_t Namespace::fence_version() const {
  std::lock_guard<std::mutex> lock(fence_mu_);
  return fence_version_;
}

uint64_t Namespace::FencedOn(const std::vector<uint32_t>& osts,
                             std::vector<std::pair<uint32_t, uint64_t>>* out) const {
  std::lock_guard<std::mutex> lock(fence_mu_);
  for (uint32_t ost : osts) {
    auto it = fenced_.find(ost);
    if (it == fenced_.end()) continue;
    for (uint64_t oid : it->second) out->emplace_back(ost, oid);
  }
  return fence_version_;
}

void Namespace::ResyncDone(uint64_t ino) {
  {
    std::lock_guard<std::mutex> lock(resync_mu_);
    resync_wanted_.erase(ino);
  }
  // Usually deleted already, with the mark that made the file whole
  // (MirrorState); this covers a file removed meanwhile. Not synced: a lost
  // delete only means one more look after a restart.
  KvBatch batch;
  batch.Delete(keys::Resync(ino));
  Status st = store_->Write(batch, /*sync=*/false);
  if (!st.ok()) LOG_WARN("dropping inode " << ino << " from the resync list: " << st.ToString());
}

// Counts inodes, finds the next destroy-queue seq and reloads reply records.
Status Namespace::LoadRepliesAndCounters() {
  uint64_t count = 0;
  std::string i(1, keys::kInode), q(1, keys::kQueue), r(1, keys::kReply);
  SFS_RETURN_IF_ERROR(store_->Scan(i, keys::PrefixEnd(i), [&](std::string_view, std::string_view) {
    ++count;
    return true;
  }));
  inode_count_ = count;
  SFS_RETURN_IF_ERROR(store_->Scan(q, keys::PrefixEnd(q), [&](std::string_view k, std::string_view) {
    next_queue_seq_ = keys::IdOf(k) + 1;
    return true;
  }));
  struct Saved {
    uint64_t client, xid;
    proto::ReplyRec rec;
  };
  std::vector<Saved> saved;
  SFS_RETURN_IF_ERROR(store_->Scan(r, keys::PrefixEnd(r), [&](std::string_view k, std::string_view v) {
    Saved s{keys::GetBe64(k, 1), keys::GetBe64(k, 9), {}};
    if (k.size() == 17 && s.rec.ParseFromArray(v.data(), v.size())) saved.push_back(std::move(s));
    return true;
  }));
  std::sort(saved.begin(), saved.end(),
            [](const Saved& a, const Saved& b) { return a.rec.seq() < b.rec.seq(); });
  // Only when some were trimmed (the cache is full) can a kept request be
  // older than every record and still have been applied.
  if (saved.size() >= opts_.reply_cache_entries && !saved.empty()) {
    oldest_reply_ = {saved.front().rec.epoch(), saved.front().rec.transno()};
    for (const Saved& s : saved) {
      oldest_reply_ = std::min(oldest_reply_, TransId{s.rec.epoch(), s.rec.transno()});
    }
  }
  KvBatch trim;
  for (Saved& s : saved) {
    for (auto& [c, x] : replies_.Insert(s.client, s.xid, std::move(s.rec), true)) {
      trim.Delete(keys::Reply(c, x));
    }
  }
  return trim.empty() ? Status::Ok() : store_->Write(trim, /*sync=*/false);
}

Status Namespace::Mutate(const OpCtx& ctx, google::protobuf::Message* result, const Body& body) {
  bool dedup = ctx.client_id != 0 && ctx.xid != 0;
  uint64_t seq = 0;  // the write to wait for (or to replay after)
  Status st;
  {
    std::unique_lock lock(mu_);
    const proto::ReplyRec* saved = dedup ? replies_.Find(ctx.client_id, ctx.xid) : nullptr;
    if (saved != nullptr) {
      // A repeat: answer as the first time. Its batch was written this boot
      // (then wait for what was written so far: it is among it) or survived
      // a restart (durable: LevelDB syncs what it recovers).
      if (saved->epoch() == 0 || saved->epoch() == boot_epoch_.load()) seq = committer_.written();
      st = Status(saved->code(), saved->message());
      if (result != nullptr && !result->ParseFromString(saved->result())) {
        st = Status::Errno(EIO, "corrupt saved reply");
      }
    } else {
      Txn txn(store_, NowNs());
      st = body(txn);
      if (st.ok()) st = CommitLocked(ctx, txn, result, &seq);
    }
  }
  // Otherwise the commit thread (or a client's SyncReq) makes it durable.
  if (st.ok() && seq != 0) {
    if (Committer::DeferScope* scope = Committer::DeferScope::Current()) {
      scope->Note(seq);  // the caller holds the reply until then, or replays after
    } else if (committer_.sync_each_op()) {
      SFS_RETURN_IF_ERROR(committer_.Commit());
    }
  }
  return st;
}

Status Namespace::CommitLocked(const OpCtx& ctx, Txn& txn, google::protobuf::Message* result,
                               uint64_t* seq) {
  KvBatch batch = txn.Finish();
  bool dedup = ctx.client_id != 0 && ctx.xid != 0;
  proto::ReplyRec rec;
  // Writes are numbered under mu_ held exclusively: the number is the apply order.
  const uint64_t next = committer_.written() + 1;
  if (dedup) {
    rec.set_seq(replies_.next_seq());
    if (result != nullptr) rec.set_result(result->SerializeAsString());
    rec.set_epoch(boot_epoch_.load());
    rec.set_transno(next);
    if (!batch.empty()) batch.Put(keys::Reply(ctx.client_id, ctx.xid), rec.SerializeAsString());
  }
  bool wrote = false;
  if (!batch.empty()) {
    SFS_RETURN_IF_ERROR(store_->Write(batch, /*sync=*/false));
    *seq = committer_.NoteWrite();
    wrote = true;
  }
  txn.RunCommitHooks();
  if (!dedup) return Status::Ok();
  KvBatch trim;
  for (auto& [c, x] : replies_.Insert(ctx.client_id, ctx.xid, std::move(rec), wrote)) {
    trim.Delete(keys::Reply(c, x));
  }
  if (!trim.empty()) {
    Status s = store_->Write(trim, /*sync=*/false);
    if (!s.ok()) LOG_WARN("trimming reply records: " << s.ToString());
  }
  return Status::Ok();
}

Status Namespace::StopCommits() {
  // Written before the last commit, which makes it durable with the rest: a
  // start that finds it knows every acknowledged op was committed.
  if (!clean_marked_.exchange(true)) {
    KvBatch mark;
    mark.Put(keys::CleanStop(), "");
    SFS_RETURN_IF_ERROR(store_->Write(mark, /*sync=*/false));
  }
  return committer_.Stop();
}

Status Namespace::LoadClients() {
  auto mark = store_->Get(keys::CleanStop());
  if (!mark.ok() && mark.status().code() != ENOENT) return mark.status();
  clean_start_ = mark.ok();
  if (clean_start_) {
    KvBatch drop;
    drop.Delete(keys::CleanStop());
    SFS_RETURN_IF_ERROR(store_->Write(drop, /*sync=*/true));
  }
  std::string k(1, keys::kClient);
  std::lock_guard<std::mutex> lock(clients_mu_);
  return store_->Scan(k, keys::PrefixEnd(k), [&](std::string_view key, std::string_view) {
    if (key.size() == 9) clients_.insert(keys::IdOf(key));
    return true;
  });
}

std::vector<uint64_t> Namespace::KnownClients() const {
  std::lock_guard<std::mutex> lock(clients_mu_);
  return {clients_.begin(), clients_.end()};
}

bool Namespace::ClientRecorded(uint64_t client) const {
  std::lock_guard<std::mutex> lock(clients_mu_);
  return clients_.count(client) != 0;
}

Status Namespace::RecordClient(uint64_t client) {
  {
    std::lock_guard<std::mutex> lock(clients_mu_);
    if (!clients_.insert(client).second) return Status::Ok();
  }
  KvBatch batch;
  batch.Put(keys::Client(client), "");
  Status st = store_->Write(batch, /*sync=*/false);
  if (st.ok()) {
    committer_.NoteWrite();
  } else {
    std::lock_guard<std::mutex> lock(clients_mu_);
    clients_.erase(client);
  }
  return st;
}

void Namespace::ForgetClient(uint64_t client) {
  {
    std::lock_guard<std::mutex> lock(clients_mu_);
    if (clients_.erase(client) == 0) return;
  }
  // Not synced: a record that comes back only makes a later recovery wait
  // for a client that will not come (until the recovery window ends).
  KvBatch batch;
  batch.Delete(keys::Client(client));
  Status st = store_->Write(batch, /*sync=*/false);
  if (!st.ok()) LOG_WARN("forgetting client " << client << ": " << st.ToString());
}

Status Namespace::PersistSuperLocked() {
  KvBatch batch;
  batch.Put(keys::Super(), super_.SerializeAsString());
  // Synced (once per kIdBatch ids): ops are no longer synced one by one, and
  // a limit lost to a power cut would hand out again ids whose objects may
  // already hold data on the OSTs.
  return store_->Write(batch, /*sync=*/true);
}

Result<uint64_t> Namespace::AllocIno(const OpCtx& ctx) {
  if (ctx.replay != nullptr && ctx.replay->ino() != 0) {
    // The number the original reply gave: handed out before this boot, so
    // nobody else has it (ids are reserved durably, never reused).
    uint64_t ino = ctx.replay->ino();
    if (ino <= kRootIno || ino >= boot_ino_limit_) {
      return Status::Errno(EINVAL, "replayed inode number " + std::to_string(ino) +
                                       " was not handed out before this boot");
    }
    auto rec = store_->Get(keys::Inode(ino));
    if (rec.ok()) return Status::Errno(EEXIST, "replayed inode " + std::to_string(ino) + " exists");
    return ino;
  }
  if (next_ino_ >= super_.ino_limit()) {
    uint64_t old_limit = super_.ino_limit();
    super_.set_ino_limit(next_ino_ + kIdBatch);
    Status st = PersistSuperLocked();
    if (!st.ok()) {
      // Not reserved on disk: ids past the old limit must not be handed out.
      super_.set_ino_limit(old_limit);
      return st;
    }
  }
  return next_ino_++;
}

Result<uint64_t> Namespace::AllocOid() {
  if (next_oid_ >= super_.oid_limit()) {
    uint64_t old_limit = super_.oid_limit();
    super_.set_oid_limit(next_oid_ + kIdBatch);
    Status st = PersistSuperLocked();
    if (!st.ok()) {
      // Not reserved on disk: ids past the old limit must not be handed out.
      super_.set_oid_limit(old_limit);
      return st;
    }
  }
  return next_oid_++;
}

proto::InodeRec Namespace::NewInode(Txn& txn, uint64_t ino, const Cred& cred,
                                    const proto::InodeRec& parent, uint32_t mode) {
  proto::InodeRec rec;
  proto::Attr* a = rec.mutable_attr();
  bool sgid_dir = (parent.attr().mode() & S_ISGID) != 0;
  uint32_t gid = sgid_dir ? parent.attr().gid() : cred.gid;
  if (S_ISDIR(mode) && sgid_dir) mode |= S_ISGID;
  if (!S_ISDIR(mode) && (mode & S_ISGID) && !cred.root() && !cred.InGroup(gid)) {
    mode &= ~S_ISGID;
  }
  a->set_ino(ino);
  a->set_mode(mode);
  a->set_uid(cred.uid);
  a->set_gid(gid);
  a->set_nlink(S_ISDIR(mode) ? 2 : 1);
  if (S_ISDIR(mode)) a->set_size(4096);
  a->set_atime_ns(txn.now());
  a->set_mtime_ns(txn.now());
  a->set_ctime_ns(txn.now());
  a->set_generation(1);
  return rec;
}

Status Namespace::MayModifyDir(const Cred& cred, const proto::InodeRec& dir) {
  return CheckAccess(cred, dir.attr(), kMayWrite | kMayExec);
}

Status Namespace::AddNode(Txn& txn, const OpCtx& ctx, uint64_t parent, const std::string& name,
                          uint32_t mode, proto::InodeRec** node, uint64_t* ino) {
  SFS_RETURN_IF_ERROR(ValidateName(name));
  SFS_ASSIGN_OR_RETURN(proto::InodeRec * dir, txn.Dir(parent));
  SFS_RETURN_IF_ERROR(CheckAccess(ctx.cred, dir->attr(), kMayExec));
  SFS_ASSIGN_OR_RETURN(auto existing, txn.Dentry(parent, name));
  if (existing) return Status::Errno(EEXIST, "name exists");
  SFS_RETURN_IF_ERROR(MayModifyDir(ctx.cred, *dir));
  SFS_ASSIGN_OR_RETURN(*ino, AllocIno(ctx));
  *node = txn.Add(*ino, NewInode(txn, *ino, ctx.cred, *dir, mode));
  // Every inode knows a directory holding it: a tenant's fileset check walks
  // these links up (tenant.cc InSubtree).
  (*node)->set_parent(parent);
  txn.PutDentry(parent, name, *ino, DirentType(mode));
  SFS_RETURN_IF_ERROR(txn.TouchDir(parent));
  txn.OnCommit([this] { ++inode_count_; });
  return Status::Ok();
}

Status Namespace::DropLink(Txn& txn, uint64_t ino) {
  SFS_ASSIGN_OR_RETURN(proto::InodeRec * rec, txn.Inode(ino));
  proto::Attr* a = rec->mutable_attr();
  a->set_nlink(a->nlink() > 0 ? a->nlink() - 1 : 0);
  a->set_ctime_ns(txn.now());
  txn.Dirty(ino);
  if (a->nlink() > 0) return Status::Ok();
  if (opens_.OpenCount(ino) > 0) {
    proto::OrphanRec orphan;
    orphan.set_since_ns(txn.now());
    txn.batch().Put(keys::Orphan(ino), orphan.SerializeAsString());
    return Status::Ok();
  }
  return FreeInode(txn, ino);
}

Status Namespace::FreeInode(Txn& txn, uint64_t ino) {
  SFS_ASSIGN_OR_RETURN(proto::InodeRec * rec, txn.Inode(ino));
  if (S_ISREG(rec->attr().mode())) EnqueueDestroy(txn, rec->layout());
  std::string prefix = keys::XattrPrefix(ino);
  SFS_RETURN_IF_ERROR(store_->Scan(prefix, keys::PrefixEnd(prefix),
                                   [&](std::string_view k, std::string_view) {
                                     txn.batch().Delete(std::string(k));
                                     return true;
                                   }));
  txn.batch().Delete(keys::Orphan(ino));
  SFS_RETURN_IF_ERROR(DropMigration(txn, ino));
  SFS_RETURN_IF_ERROR(ReleaseStaleLayout(txn, ino));
  txn.DeleteInode(ino);
  txn.OnCommit([this] { --inode_count_; });
  return Status::Ok();
}

void Namespace::EnqueueDestroy(Txn& txn, const proto::Layout& layout) {
  if (layout.objects_size() == 0) return;
  for (const proto::StripeObject& o : layout.objects()) {
    proto::DestroyRec rec;
    rec.set_ost(o.ost());
    rec.set_oid(o.oid());
    txn.batch().Put(keys::Queue(next_queue_seq_++), rec.SerializeAsString());
  }
  txn.OnCommit([this] {
    if (notify_destroy_) notify_destroy_();
  });
}

}  // namespace sfs::mds
