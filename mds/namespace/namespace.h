// Namespace: the metadata server's file system — inodes, directories,
// xattrs, layouts, open files and orphans — on top of a KvStore.
//
// Consistency: every mutating operation runs under the exclusive side of
// mu_, validates against the committed state, and commits all its changes as
// ONE KvBatch written with sync=false. It replies once the batch is written:
// then it survives the death of sfs-mds (LevelDB's log is in the page cache).
// The Committer makes it durable against power loss before the reply (the
// default, commit_interval_ms 0: the op syncs before it returns, or inside a
// Committer::DeferScope notes the write for the caller to wait on), or, with
// an interval, within commit_interval_ms and at once for Sync() (a client's
// fsync/fsyncdir); see committer.h.
// Reads take the shared side.
//
// Idempotence: a mutation whose OpCtx carries (client_id, xid), both
// non-zero, is applied at most once; a repeat returns the saved outcome. The
// outcome of a successful op is kept in a bounded in-memory ReplyCache and,
// when the op changed the store, persisted as an R key in the same batch.
// Failed ops change nothing, so they are simply re-run.
//
// Errors are errnos as Linux returns them. Ops addressed by a name report a
// missing parent or name as ENOENT; GetAttr and Open of an inode that no
// longer exists report ESTALE.
//
// Thread-safe. Lock order: mu_, then OpenTable's, then OstRegistry's mutex.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <unordered_map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <utility>
#include <shared_mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "mds.pb.h"
#include "mds/namespace/committer.h"
#include "mds/namespace/kv_store.h"
#include "mds/namespace/open_table.h"
#include "mds/namespace/ost_registry.h"
#include "mds/namespace/perm.h"
#include "mds/namespace/reply_cache.h"
#include "mds/namespace/txn.h"

namespace sfs::mds {

// The two names of a rename and what they resolve to (rename.cc).
struct RenameEnds {
  proto::InodeRec* sdir = nullptr;
  proto::InodeRec* ddir = nullptr;
  proto::InodeRec* src = nullptr;
  proto::InodeRec* dst = nullptr;  // null iff the target name is free
  uint64_t src_ino = 0;
  uint64_t dst_ino = 0;
  bool src_dir = false;
  bool dst_dir = false;
};

// Who asks, and the request's identity for replay detection.
struct OpCtx {
  Cred cred;
  uint64_t client_id = 0;
  uint64_t xid = 0;
  // A replayed request (mds.proto ReplayReq): a new inode takes replay->ino
  // and a created file replay->layout, as the original reply said.
  const proto::ReplayInfo* replay = nullptr;
};

// (boot epoch, transno): a change's place in the MDS's apply order.
using TransId = std::pair<uint64_t, uint64_t>;

// Places mirror copies (layout.cc): copy 0 of stripe s on picks[s], copy m
// on the OST m places after it in ring (all candidate OSTs), skipping OSTs
// its stripe already uses and, with `oss` (the OSS of each ring entry, in
// ring order), OSTs on an OSS its stripe already uses. Returns mirrors *
// picks.size() OSTs, copy-major; EINVAL when ring has fewer than `mirrors`
// OSTs (or OSSes).
Result<std::vector<uint32_t>> PlaceMirrors(const std::vector<uint32_t>& picks,
                                           const std::vector<uint32_t>& ring, uint32_t mirrors,
                                           const std::vector<std::string>& oss = {});

struct NamespaceOptions {
  size_t reply_cache_entries = 65536;
  int64_t client_timeout_ms = 30000;
  // How often written ops are made durable (fdatasync); 0 = before every reply.
  int64_t commit_interval_ms = kDefaultCommitIntervalMs;
};

// With replay on (the sfs-mds default), replies go out before their commit
// and the commit thread runs this often unless told otherwise. It bounds
// what clients keep and replay, not what a power cut loses; 200 ms cost a
// third of mdtest's create rate here (fdatasyncs competing with the ops).
inline constexpr int64_t kReplayCommitIntervalMs = 1000;

inline constexpr uint64_t kRootIno = 1;
inline constexpr uint64_t kDefaultStripeSize = 1 << 20;
inline constexpr uint64_t kStripeUnit = 64 << 10;
inline constexpr size_t kMaxXattrValue = 64 << 10;
inline constexpr uint64_t kSyntheticInodes = uint64_t{1} << 32;

int64_t NowNs();
int64_t NowMs();

class Namespace {
 public:
  // REQUIRES: store and osts outlive the Namespace.
  Namespace(KvStore* store, OstRegistry* osts, NamespaceOptions opts);

  // Loads the superblock, reply records and orphans; creates the superblock
  // and the root directory (0755, uid 0) on an empty store.
  Status Start(int64_t now_ms);
  // Returns once every op that returned before this call is durable (the
  // SyncReq: group-committed with concurrent callers).
  Status Sync() { return committer_.Commit(); }
  // Stops the commit thread after a last commit (for a clean shutdown), and
  // marks the stop clean: the next start needs no replay window.
  Status StopCommits();
  // --- replay (mds.proto ReplayReq; docs/durability.md) ---
  // The last stop was clean (every acknowledged op was committed).
  bool clean_start() const { return clean_start_; }
  // Clients that may hold requests to replay (K keys), as found at Start.
  std::vector<uint64_t> KnownClients() const;
  // True iff the client's K key is written (not necessarily durable yet).
  bool ClientRecorded(uint64_t client) const;
  // Writes the client's K key (unsynced; the caller waits for its commit).
  Status RecordClient(uint64_t client);
  void ForgetClient(uint64_t client);
  // A replayed request older than every reply record kept survived (its
  // record was trimmed long after it was committed): it is not applied again.
  TransId oldest_reply() const { return oldest_reply_; }
  // A reply record of (client, xid) is kept: the request was applied.
  bool HasReply(uint64_t client, uint64_t xid) const {
    std::shared_lock lock(mu_);
    return replies_.Find(client, xid) != nullptr;
  }
  const Committer& committer() const { return committer_; }
  // fn(status) once write `seq` (from a Committer::DeferScope) is durable.
  void WhenDurable(uint64_t seq, std::function<void(const Status&)> fn) {
    committer_.WhenDurable(seq, std::move(fn));
  }
  // Called (outside any lock) after new destroy records were committed.
  void SetDestroyNotifier(std::function<void()> fn) { notify_destroy_ = std::move(fn); }

  // --- reads (lookup_getattr.cc, xattr.cc, layout.cc) ---
  Result<proto::Attr> Lookup(const Cred& cred, uint64_t parent, const std::string& name);
  Result<proto::Attr> GetAttr(uint64_t ino);
  Result<std::string> Readlink(uint64_t ino);
  Status Readdir(const Cred& cred, const proto::ReaddirReq& req, proto::ReaddirResp* out);
  proto::StatfsResp Statfs();
  Result<std::string> GetXattr(const Cred& cred, uint64_t ino, const std::string& name);
  Result<std::vector<std::string>> ListXattr(const Cred& cred, uint64_t ino);
  Status GetLayout(uint64_t ino, proto::GetLayoutResp* out);

  // --- mutations ---
  Status SetAttr(const OpCtx& ctx, const proto::SetAttrReq& req, proto::Attr* out);
  Status Create(const OpCtx& ctx, const proto::CreateReq& req, proto::OpenResp* out);
  Status Open(const OpCtx& ctx, const proto::OpenReq& req, proto::OpenResp* out);
  // The walk of req.names from req.parent, one lookup's rules per name, and
  // the open of where it ends, in one transaction (mds.proto OpenPathReq).
  // ".." stops at req.ceiling (0: the root).
  Status OpenPath(const OpCtx& ctx, const proto::OpenPathReq& req, proto::OpenResp* out);
  Status Close(const OpCtx& ctx, const proto::CloseReq& req);
  Status SetSize(const OpCtx& ctx, const proto::SetSizeReq& req, proto::Attr* out);
  // O_APPEND: reserves req.len bytes at the end of file (mds.proto AppendReq).
  Status Append(const OpCtx& ctx, const proto::AppendReq& req, proto::Attr* out);
  Status Mknod(const OpCtx& ctx, const proto::MknodReq& req, proto::Attr* out);
  Status Mkdir(const OpCtx& ctx, const proto::MkdirReq& req, proto::Attr* out);
  Status Unlink(const OpCtx& ctx, const proto::UnlinkReq& req);
  Status Rmdir(const OpCtx& ctx, const proto::RmdirReq& req);
  Status Rename(const OpCtx& ctx, const proto::RenameReq& req);
  Status Link(const OpCtx& ctx, const proto::LinkReq& req, proto::Attr* out);
  Status Symlink(const OpCtx& ctx, const proto::SymlinkReq& req, proto::Attr* out);
  Status SetXattr(const OpCtx& ctx, const proto::SetXattrReq& req);
  Status RemoveXattr(const OpCtx& ctx, const proto::RemoveXattrReq& req);
  Status SetLayout(const OpCtx& ctx, const proto::SetLayoutReq& req);
  // Marks copies of a mirrored file stale or ok (mds.proto MirrorStateReq).
  Status MirrorState(const OpCtx& ctx, const proto::MirrorStateReq& req,
                     proto::GetLayoutResp* out);
  // --- lost OSTs and rebuild (rebuild.cc; docs/redundancy.md "Rebuild") ---
  // Root only. Declares the OST lost in the registry (durably) and marks every
  // object on it OBJECT_LOST, putting those files on the resync list, in one
  // commit. *files = how many files had an object there.
  Status OstLost(const OpCtx& ctx, uint32_t ost, uint64_t* files);
  // A fresh object id for a rebuilt object (not yet in any layout: an
  // object never swapped in is only an orphan on its OST).
  Result<uint64_t> NewObjectId();
  // Swaps the rebuilt object (new_ost, new_oid) in, OK, for the lost or stale
  // object (old_ost, old_oid) of ino, iff the file is not open for write and
  // its size and mtime are still `size`/`mtime_ns` (as MirrorStateReq.if_idle:
  // EBUSY otherwise). Drops the file from the resync list's key when nothing
  // is left to rebuild. Synced before it returns.
  Status ReplaceObject(uint64_t ino, uint32_t old_ost, uint64_t old_oid, uint32_t new_ost,
                       uint64_t new_oid, uint64_t size, int64_t mtime_ns);

  // --- OST pools (pool.cc): POOL_LIST reads, the other ops mutate (root only) ---
  Status Pool(const OpCtx& ctx, const proto::PoolReq& req, proto::PoolResp* out);
  // OSS QoS rules (qos.cc; docs/qos.md): list, set, remove (root only).
  Status Qos(const OpCtx& ctx, const proto::QosReq& req, proto::QosResp* out);
  // Every QoS rule, for the heartbeat replies that carry them to the OSSes.
  Status QosTable(google::protobuf::RepeatedPtrField<proto::QosEntry>* out) const;
  // Tenants (tenant.cc; docs/security.md): list, create, remove, rotate-key
  // (root only). A list never carries keys; create and rotate return the new
  // key in out->key.
  Status Tenant(const OpCtx& ctx, const proto::TenantReq& req, proto::TenantResp* out);
  // Whether every client must be a tenant's (TENANT_REQUIRE).
  Result<bool> TenantsRequired() const;
  // One tenant's record, key included (for the handshake). ENOENT if none.
  Result<proto::TenantRec> GetTenant(const std::string& name) const;
  // OK iff ino is root or below it (by the parent links); ENOENT otherwise,
  // also when ino does not exist, so that the answer reveals nothing.
  Status InSubtree(uint64_t ino, uint64_t root) const;

  // --- migrate (migrate.cc): restripe a file with data; see mds.proto ---
  Status MigrateBegin(const OpCtx& ctx, const proto::MigrateBeginReq& req,
                      proto::MigrateBeginResp* out);
  Status MigrateCommit(const OpCtx& ctx, const proto::MigrateCommitReq& req);

  // --- sessions and orphans (create_open.cc) ---
  // Notes that a client was heard from (any request carrying its id).
  void TouchClient(uint64_t client_id) { opens_.Touch(client_id, NowMs()); }
  // Expires silent clients' opens and destroys orphans nobody holds open;
  // once client_timeout_ms has passed since Start, also orphans left from
  // before the restart. Call periodically.
  void Housekeep(int64_t now_ms);
  uint64_t inode_count() const { return inode_count_.load(); }
  // This run's boot epoch (1 at the first start, +1 at every later one);
  // every MdsResponse carries it so clients notice a restart.
  uint64_t boot_epoch() const { return boot_epoch_.load(); }
  int OpenCount(uint64_t ino) const { return opens_.OpenCount(ino); }
  const OpenTable& opens() const { return opens_; }  // metrics
  // Times every metadata commit's sync there (metrics); null = none.
  void set_commit_histogram(metrics::Histogram* h) { committer_.set_sync_histogram(h); }
  int WriteOpenCount(uint64_t ino) const { return opens_.WriteOpenCount(ino); }
  // Files with a copy marked stale and not yet resynced (MirrorResyncer),
  // kept across restarts as W keys.
  std::vector<uint64_t> ResyncWanted() const {
    std::lock_guard<std::mutex> lock(resync_mu_);
    return {resync_wanted_.begin(), resync_wanted_.end()};
  }
  // Off the list, in memory and on disk (its W key; docs/formats.md): the
  // file has nothing stale left, or is gone.
  void ResyncDone(uint64_t ino);
  // The stale-copy fence (docs/redundancy.md): every object of a mirrored or
  // EC file that is not ok (stale, lost, or replaced by a rebuilt one), by
  // OST, for the OSSes to refuse client reads of. Rebuilt from the resync
  // list at start; the version moves with every change.
  using FencedObjects = std::map<uint32_t, std::set<uint64_t>>;
  uint64_t fence_version() const;
  // The fenced objects on osts, and the version they are of.
  uint64_t FencedOn(const std::vector<uint32_t>& osts,
                    std::vector<std::pair<uint32_t, uint64_t>>* out) const;
  // Which copy states of ino's layout a client has (LockResp.copy_gen): 0
  // while they have not changed in this MDS run, else a number that moves
  // with each change (the boot epoch in its top bits). A mirror-range lock's
  // grant carries it, so a writer learns a resynced copy before it writes.
  uint64_t CopyGen(uint64_t ino) const;

 private:
  using Body = std::function<Status(Txn&)>;
  // Runs a mutation: replay check, body, one batch, then sync. `result` (may
  // be null) is what the op returns; it is saved for replays.
  Status Mutate(const OpCtx& ctx, google::protobuf::Message* result, const Body& body);
  // *seq: the write's number (0 if nothing was written).
  Status CommitLocked(const OpCtx& ctx, Txn& txn, google::protobuf::Message* result,
                      uint64_t* seq);
  Status LoadRepliesAndCounters();
  Status LoadResyncWanted();
  Status LoadClients();
  Status Bootstrap();

  // Id allocation. REQUIRES: mu_ held exclusively.
  Result<uint64_t> AllocIno(const OpCtx& ctx);
  Result<uint64_t> AllocOid();
  Status PersistSuperLocked();

  // Shared pieces of ops.
  proto::InodeRec NewInode(Txn& txn, uint64_t ino, const Cred& cred,
                           const proto::InodeRec& parent, uint32_t mode);
  // Checks that cred may add or remove names in dir (write + search).
  static Status MayModifyDir(const Cred& cred, const proto::InodeRec& dir);
  // Adds a new inode under parent/name after the common checks.
  Status AddNode(Txn& txn, const OpCtx& ctx, uint64_t parent, const std::string& name,
                 uint32_t mode, proto::InodeRec** node, uint64_t* ino);
  // Drops one link of a non-directory; frees or orphans it at zero.
  Status DropLink(Txn& txn, uint64_t ino);
  // Deletes an inode for good: record, xattrs, orphan key, objects.
  Status FreeInode(Txn& txn, uint64_t ino);
  void EnqueueDestroy(Txn& txn, const proto::Layout& layout);
  // A write open bumps the inode's data_version (proto Attr) in txn.
  Status RegisterOpen(const OpCtx& ctx, Txn& txn, uint64_t ino, proto::InodeRec* rec,
                      uint32_t flags, proto::OpenResp* out);
  // After a Create/Open answered with a saved reply from an earlier boot
  // (a request re-sent across a restart), registers the open again.
  void RenewReplayedOpen(const OpCtx& ctx, uint32_t flags, proto::OpenResp* out);
  void DropUncommittedOpen(proto::OpenResp* out);
  Status CreateOrReplay(const OpCtx& ctx, const proto::CreateReq& req, proto::OpenResp* out);
  // Lookup's body: name in parent, ".." of ceiling being ceiling itself.
  // REQUIRES: mu_ held (either side).
  Result<proto::Attr> LookupLocked(const Cred& cred, uint64_t parent, const std::string& name,
                                   uint64_t ceiling);
  // InSubtree's body. REQUIRES: mu_ held (either side).
  Status InSubtreeLocked(uint64_t ino, uint64_t root) const;
  Status ReapIfOrphan(uint64_t ino);
  Status RenameLocked(Txn& txn, const OpCtx& ctx, const proto::RenameReq& req);
  Status ApplyExchange(Txn& txn, const proto::RenameReq& req, RenameEnds& e);
  Status ApplyMove(Txn& txn, const proto::RenameReq& req, RenameEnds& e);

  // Pools (pool.cc). The members of pool `name`; EINVAL "unknown pool" iff it does not exist.
  Result<std::vector<uint32_t>> PoolMembers(const std::string& name) const;
  Status ListPools(const std::string& name, proto::PoolResp* out);
  Status ChangePool(Txn& txn, const proto::PoolReq& req);

  // Migrations (migrate.cc). Frees the new objects of ino's migration in
  // progress, if any, and forgets it.
  Status DropMigration(Txn& txn, uint64_t ino);
  // Queues the objects of ino's replaced layouts (L key), if any, for destroy.
  Status ReleaseStaleLayout(Txn& txn, uint64_t ino);
  Status SwapLayouts(Txn& txn, uint64_t ino, proto::InodeRec* node, proto::Layout fresh);
  // Releases stale layouts of inos nobody holds open; at startup also those
  // and the migrations left from before the restart.
  void HousekeepMigrations(const std::set<uint64_t>& inos, bool startup);

  // Layouts (layout.cc).
  Result<proto::Layout> EffectiveDefault(uint64_t dir_ino, bool* inherited);
  Status ValidateLayout(const proto::Layout& l, bool for_setstripe) const;
  Status ValidatePool(const proto::Layout& l) const;
  Status ValidateEc(const proto::Layout& l) const;
  Result<std::optional<std::vector<uint32_t>>> AllowedOsts(proto::Layout* l, bool explicit_pool);
  // want's non-zero fields override base's; objects are allocated afresh.
  Result<proto::Layout> AllocateLayout(const proto::Layout& want, const proto::Layout& base);
  // AllocateLayout, or for a replay the layout its original reply had.
  Result<proto::Layout> NewFileLayout(const OpCtx& ctx, const proto::Layout& want,
                                      const proto::Layout& base);
  Result<bool> DirEmpty(uint64_t ino);
  Status CheckNotAncestor(Txn& txn, uint64_t dir, uint64_t start);

  mutable std::mutex resync_mu_;
  std::set<uint64_t> resync_wanted_;  // GUARDED_BY(resync_mu_)
  // The stale-copy fence (above): l's objects that are not ok go in, the ok
  // ones out (a replaced object stays in: old layouts still name it).
  void NoteCopyStates(uint64_t ino, const proto::Layout& l);
  mutable std::mutex fence_mu_;
  FencedObjects fenced_;       // GUARDED_BY(fence_mu_)
  std::unordered_map<uint64_t, uint64_t> copy_gens_;  // GUARDED_BY(fence_mu_)
  uint64_t fence_version_ = 1;  // GUARDED_BY(fence_mu_)
  KvStore* const store_;
  OstRegistry* const osts_;
  const NamespaceOptions opts_;
  Committer committer_;
  std::function<void()> notify_destroy_;

  mutable std::shared_mutex mu_;
  proto::SuperblockRec super_;      // GUARDED_BY(mu_)
  uint64_t next_ino_ = 0;           // GUARDED_BY(mu_)
  uint64_t next_oid_ = 0;           // GUARDED_BY(mu_)
  uint64_t next_queue_seq_ = 0;     // GUARDED_BY(mu_)
  ReplyCache replies_;              // GUARDED_BY(mu_)
  OpenTable opens_;
  std::atomic<uint64_t> inode_count_{0};
  std::atomic<uint64_t> boot_epoch_{0};
  int64_t started_ms_ = 0;
  bool startup_orphans_reaped_ = false;  // GUARDED_BY(mu_)
  // Replay: ids below these were handed out before this boot.
  uint64_t boot_ino_limit_ = 0;
  uint64_t boot_oid_limit_ = 0;
  bool clean_start_ = false;
  std::atomic<bool> clean_marked_{false};
  TransId oldest_reply_{0, 0};
  mutable std::mutex clients_mu_;
  std::set<uint64_t> clients_;  // GUARDED_BY(clients_mu_): K keys written
};

}  // namespace sfs::mds
