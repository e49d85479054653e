// MdsClient: typed calls to the metadata service over one rpc::Channel.
//
// Each method builds one MdsRequest (client id, a fresh xid from a per-client
// atomic counter, the caller's credentials), makes one RPC and turns the
// MdsResponse into the libsfs structs of client.h. All protobuf <-> struct
// conversion lives in mds_client.cc, so no protobuf header leaks out of it.
//
// Errors: an MDS status code is returned as is (it is an errno). A transport
// failure (timeout, connection refused or lost, garbled reply) is retried with
// the same (client id, xid) — so the MDS applies the request once, also across
// its own restart — until the recovery timeout has passed since the call
// began; then it becomes EIO with a message naming the MDS. Ping() neither
// retries nor maps: it keeps the transport code so that Connect() can tell
// ECONNREFUSED from ETIMEDOUT.
//
// Recovery: every MdsResponse carries the MDS's boot epoch. When a reply shows
// an epoch other than the last one seen, the listener given to
// SetEpochListener runs (on the calling thread, with no lock held) and
// TakeEpochChange() turns true once; libsfs then re-opens its open files.
//
// Replay (mds.proto ReplayReq; docs/durability.md): a change's reply may
// carry a transno; the request is kept (with the inode number and layout the
// reply chose) until a reply's last_committed passes it. When a reply shows a
// new boot epoch, the first thread to see it sends every kept request in one
// ReplayReq (the MDS holds it until all its clients have reported) before
// the epoch listener runs; other threads that get "recovering" wait for that
// and send their request again.
//
// Deferred closes (mds.proto; close_queue.h): after EnableDeferredCloses,
// DeferClose queues a close instead of sending it, and every request but a LockReq or a
// Watch carries up to kMaxCarriedCloses queued closes; FlushCloses sends
// what is left. Closes are deferred only while the MDS's last reply said it
// applies them (MDS_FEATURE_CLOSES); those a request took and the reply did
// not count (a lost connection, an older MDS) go back to the queue, and
// FlushCloses sends them as CloseReqs of their own if the MDS does not know
// the feature.
//
// Kept opens (open_cache.h): after EnableOpenCache, KeepOpen keeps a
// read-only open past its close while its lease lasts and TakeKeptOpen hands
// it to the next open of the same file by the same credentials, without a
// request. Every request of its own that may change something (once the MDS
// may have applied it), every invalidation and a new boot epoch end them
// (released kept opens become deferred closes, carried by the next request).
//
// Thread safety: every method may be called from many threads at once; calls
// share the channel and are in flight together.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <utility>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "client/lib/client.h"
#include "client/lib/close_queue.h"
#include "common/rpc/rpc.h"
#include "common/status.h"

namespace sfs::proto {
class MdsRequest;
class MdsResponse;
}  // namespace sfs::proto

namespace sfs::client {

struct OpenResult {
  Attr attr;
  LayoutSpec layout;
  bool created = false;
  uint64_t open_id = 0;
  // OpenResp.write_opens / data_versioned (mds.proto): the client cache's
  // rule for this open.
  bool write_opens = false;
  bool data_versioned = false;
  // OpenCache::Gen() before the request was sent (0 without the open cache):
  // KeepOpen keeps the open only if nothing began to change since.
  uint64_t cache_gen = 0;
};

class OpenCache;

// One LockReq (mds.proto): a lock, unlock, test, cancel or reclaim.
struct LockArgs {
  uint64_t ino = 0;
  uint64_t owner = 0;
  bool flock = false;
  LockSpec lock;
  bool wait = false;
  bool reclaim = false;
  bool test = false;
  bool cancel = false;
  bool ec_rows = false;  // libsfs's own lock over EC rows (LockReq.ec_rows)
  bool cache = false;    // ec_rows: may be kept until recalled (LockReq.cache)
};

enum class PoolOp { kList, kCreate, kAdd, kRemove, kDestroy };

// What MigrateBegin answers: the file's attributes and both layouts.
struct MigratePlan {
  Attr attr;
  LayoutSpec old_layout;
  LayoutSpec new_layout;
};

// What Close/SetSize report about this client's writes.
struct SizeReport {
  bool has_size = false;
  uint64_t size = 0;       // highest byte written + 1
  int64_t mtime_ns = 0;    // 0 = none
  bool has_blocks = false;
  uint64_t blocks = 0;     // sum of the objects' st_blocks
};

class MdsClient {
 public:
  MdsClient(std::unique_ptr<rpc::Channel> channel, uint64_t client_id,
            std::chrono::milliseconds timeout,
            std::chrono::milliseconds recovery_timeout = std::chrono::seconds(60));
  ~MdsClient();
  // The client is going away: from now on a call that fails in transport is
  // not retried (one attempt each), so the final closes and anything the
  // keepalive thread is doing end at once when the MDS is gone, instead of
  // retrying for the recovery timeout while the unmount waits.
  void BeginShutdown() { shutting_down_.store(true, std::memory_order_release); }

  uint64_t client_id() const { return client_id_; }
  const std::string& address() const { return channel_->address(); }
  // A fresh request id (shared with the OSS calls of this client).
  uint64_t NextXid() { return xid_.fetch_add(1, std::memory_order_relaxed); }

  // Keeps transport error codes (see the file comment).
  Status Ping(std::chrono::milliseconds timeout);

  // mds_client_tenant.cc (issue 17; docs/security.md): proves to the MDS
  // that this client holds tenant's key (challenge-response, the key is not
  // sent); from then on every request names the tenant. EACCES with the
  // MDS's one-line reason on a wrong key. REQUIRES: before sharing the client.
  Status Authenticate(const std::string& tenant, const std::string& key);
  const std::string& tenant() const { return tenant_; }
  // Where a new handshake gets the tenant's key: called each time, so the
  // key file is read again and a key rotated at the MDS and installed in the
  // file is picked up. With one set, the client authenticates again by
  // itself after an MDS restart (before it replays) and when a reply says a
  // handshake may cure a refusal (MdsResponse.tenant_reauth: no session, or
  // the key rotated), then sends the refused request once more. Unset: no
  // re-handshake. REQUIRES: set before sharing the client.
  void SetKeySource(std::function<Result<std::string>()> load) { key_source_ = std::move(load); }
  // One TenantReq (`sfs tenant`): serialized TenantReq in, TenantResp out.
  Status TenantAdmin(const Cred& c, const std::string& req, std::string* resp);
  // CapKeyReq in, CapKeyResp out (serialized), as TenantAdmin.
  Status CapKeyAdmin(const Cred& c, const std::string& req, std::string* resp);
  // The MDS's KV-tier capability for this client's tenant (KvGrantReq): ""
  // when the MDS has no cluster key.
  Result<std::string> KvGrant();

  // REQUIRES: called before the client is shared between threads.
  void SetEpochListener(std::function<void()> fn) { on_new_epoch_ = std::move(fn); }
  // True once after a reply showed a new MDS boot epoch.
  bool TakeEpochChange() { return epoch_changed_.exchange(false); }
  uint64_t boot_epoch() const { return epoch_.load(); }
  // Acknowledged changes not yet known durable (kept for replay).
  size_t kept_requests() const;
  // The client goes away for good: once its kept changes are committed (a
  // SyncReq), tells the MDS to forget it, so that no recovery waits for it.
  void Leave();

  // absent_lease_ms: see Client::Lookup.
  Result<Attr> Lookup(const Cred& c, uint64_t parent, std::string_view name,
                      uint32_t* absent_lease_ms = nullptr);
  Result<Attr> GetAttr(const Cred& c, uint64_t ino);
  Result<Attr> SetAttr(const Cred& c, uint64_t ino, const SetAttrArgs& args);
  Result<OpenResult> Create(const Cred& c, uint64_t parent, std::string_view name, uint32_t mode,
                            int flags, const LayoutSpec* layout);
  Result<OpenResult> Open(const Cred& c, uint64_t ino, int flags);
  // OpenPathReq: names walked from parent and opened at the MDS, one round
  // trip. EPROTO from an MDS that predates the op.
  Result<OpenResult> OpenPath(const Cred& c, uint64_t parent,
                              const std::vector<std::string_view>& names, int flags);
  Status Close(const Cred& c, uint64_t ino, uint64_t open_id, const SizeReport& r);

  // Deferred closes (see the file comment). REQUIRES: EnableDeferredCloses
  // is called before the client is shared between threads, at most once.
  static constexpr size_t kMaxCarriedCloses = 64;
  void EnableDeferredCloses(std::chrono::milliseconds max_delay, size_t max_queued);
  // Queues a close with nothing to report; false (nothing queued: send it
  // with Close) iff deferral is off or the MDS does not apply deferred closes.
  bool DeferClose(uint64_t ino, uint64_t open_id);
  // Sends every queued close: carried by Pings, or as CloseReqs to an MDS
  // without the feature. One try per call with a short deadline (1 s; 2 s
  // with final): a stopping client must not hang on a dead MDS, which drops
  // our opens after its client timeout anyway. The first failure, with the
  // closes queued again.
  Status FlushCloses(bool final = false);
  // For the flusher thread: CloseQueue::WaitDue, or false at once without
  // deferral. StopCloses ends it.
  bool WaitClosesDue();
  void StopCloses();
  size_t queued_closes() const { return closes_ ? closes_->size() : 0; }

  // Kept opens (see the file comment). REQUIRES: EnableDeferredCloses first,
  // both before the client is shared between threads; capacity > 0.
  void EnableOpenCache(size_t capacity);
  bool open_cache_on() const { return open_cache_ != nullptr; }
  // OpenCache::Gen() (0 without the open cache): moves on every
  // invalidation, every change of this client's own and every new MDS
  // instance; OpenResult::cache_gen is its value before an open was sent.
  uint64_t lease_gen() const;
  // Keeps r, opened by c, whose lease lasts until `until`; false (close it)
  // if the open cache is off, the MDS takes no deferred closes, or
  // r.cache_gen is no longer current.
  bool KeepOpen(const Cred& c, OpenResult r, std::chrono::steady_clock::time_point until);
  // A kept open of ino by c, now the caller's; its attr.lease_ms is what is
  // left of its lease.
  std::optional<OpenResult> TakeKeptOpen(const Cred& c, uint64_t ino);
  // Whether TakeKeptOpen(c, ino) would still hand an open out `ahead` from
  // now (false without the open cache). The open may be gone by then.
  bool HoldsKeptOpen(const Cred& c, uint64_t ino, std::chrono::milliseconds ahead) const;
  // Queues the closes of kept opens whose lease nears its end (all with
  // all: the client stops).
  void ReleaseKeptOpens(bool all = false);
  size_t kept_opens() const;
  Status SetSize(const Cred& c, uint64_t ino, const SizeReport& r);
  // AppendReq: the offset at which len bytes are reserved at end of file.
  // want_token: ask for the append token; *token_ms (if not null) is how
  // long it lasts from before the call (0: none, or an invalidation began
  // meanwhile).
  Result<uint64_t> Append(const Cred& c, uint64_t ino, uint64_t len, uint64_t min_offset,
                          int64_t mtime_ns, bool want_token = false,
                          uint32_t* token_ms = nullptr);

  Result<Attr> Mknod(const Cred& c, uint64_t parent, std::string_view name, uint32_t mode,
                     uint64_t rdev);
  Result<Attr> Mkdir(const Cred& c, uint64_t parent, std::string_view name, uint32_t mode);
  // dir_attr: see Client::Unlink.
  Status Unlink(const Cred& c, uint64_t parent, std::string_view name, Attr* dir_attr = nullptr);
  Status Rmdir(const Cred& c, uint64_t parent, std::string_view name, Attr* dir_attr = nullptr);
  Status Rename(const Cred& c, uint64_t parent, std::string_view name, uint64_t new_parent,
                std::string_view new_name, uint32_t flags, Attr* dir_attr = nullptr);
  Result<Attr> Link(const Cred& c, uint64_t ino, uint64_t new_parent, std::string_view new_name);
  Result<Attr> Symlink(const Cred& c, uint64_t parent, std::string_view name,
                       std::string_view target);
  Result<std::string> Readlink(const Cred& c, uint64_t ino);
  Result<DirPage> Readdir(const Cred& c, uint64_t ino, std::string_view after,
                          uint32_t max_entries, bool with_attrs);
  Result<FsStat> Statfs();
  // Returns once every change the MDS acknowledged before this call is
  // durable (SyncReq: the MDS otherwise commits within its commit interval).
  Status Sync();

  Result<std::string> GetXattr(const Cred& c, uint64_t ino, std::string_view name);
  Status SetXattr(const Cred& c, uint64_t ino, std::string_view name, std::string_view value,
                  int flags);
  Result<std::vector<std::string>> ListXattr(const Cred& c, uint64_t ino);
  Status RemoveXattr(const Cred& c, uint64_t ino, std::string_view name);

  Result<LayoutSpec> GetLayout(const Cred& c, uint64_t ino);
  Status SetLayout(const Cred& c, uint64_t ino, const LayoutSpec& spec, bool clear);
  // Marks copies of a mirrored file stale (or, resynced, ok); the layout after.
  // idle (marking ok only): refused (EBUSY) if the file is open for write or
  // no longer has idle's size and mtime.
  Result<LayoutSpec> MirrorState(const Cred& c, uint64_t ino, std::span<const StripeObject> objects,
                                 bool stale, const Attr* idle = nullptr);
  Result<std::vector<OstStatus>> GetOstMap(std::string* mds_metrics = nullptr);
  // rebuild_ops.cc: OstLostReq (files marked) and RebuildStatusReq.
  Result<uint64_t> OstLost(const Cred& c, uint32_t index);
  Result<RebuildStatus> GetRebuildStatus();
  Result<ScrubResult> Scrub(const Cred& c, uint64_t ino, bool repair);

  // One PoolReq; c may be null for kList. The pools listed (kList only).
  Result<std::vector<PoolInfo>> Pool(const Cred* c, PoolOp op, std::string_view name,
                                     const std::vector<uint32_t>& osts);
  // One QosReq (op: 0 list, 1 set, 2 remove); c may be null for a list. The
  // rules listed (list only).
  Result<std::vector<QosRuleInfo>> Qos(const Cred* c, int op, const QosRuleInfo& rule);
  // Metadata leases (lease_watch.h): one long poll; items with seq <= ack_seq
  // count as applied. Keeps transport error codes.
  struct WatchBatch {
    std::vector<Invalidation> items;
    uint64_t seq = 0;
  };
  // leaving: this client unmounts; the MDS drops its leases and answers at once.
  Result<WatchBatch> Watch(uint64_t ack_seq, std::chrono::milliseconds wait, bool leaving = false);
  // Called before invalidations are applied: a reply that arrives after this
  // carries no lease (it may have been read before the change).
  // Kept opens end here (nothing is kept from before the change).
  void NoteInvalidation();

  // A LockReq; a test returns the conflicting lock (type F_UNLCK: none).
  // A wait is held by the MDS for at most wait (then EINPROGRESS).
  // size_at_grant (optional): on a grant, the file's size then (else unset).
  Result<LockSpec> Lock(const LockArgs& a, std::chrono::milliseconds wait,
                        std::optional<uint64_t>* size_at_grant = nullptr);

  Result<MigratePlan> MigrateBegin(const Cred& c, uint64_t ino, const LayoutSpec& spec);
  // Swaps in plan's new layout (or with abort, frees its objects).
  Status MigrateCommit(const Cred& c, uint64_t ino, const LayoutSpec& new_layout, bool abort,
                       std::optional<uint64_t> blocks);

 private:
  // Fills in the header fields of *req, sends it and parses the reply into
  // *resp. Returns the reply's status, or the transport failure (raw codes).
  // With retry, transport failures are retried until the recovery timeout.
  Status CallRaw(const Cred* c, proto::MdsRequest* req, proto::MdsResponse* resp,
                 std::chrono::milliseconds timeout, bool retry = false);
  void NoteEpoch(uint64_t epoch);
  // A new handshake with key_source_'s key, unless another thread made one
  // since auth_gen_ was `seen` (or this thread is inside one already).
  Status Reauthenticate(uint64_t seen);
  // Replay: sends every request kept from before boot epoch `epoch` once
  // (or waits for the thread that does).
  void EnsureReplayed(uint64_t epoch);
  Status SendReplay(const std::vector<std::string>& requests);
  void Keep(const proto::MdsRequest& req, const proto::MdsResponse& resp);
  void Prune(uint64_t epoch, uint64_t last_committed);
  // mds_client_closes.cc: hands queued closes to req (none for a Watch or a lock); after
  // the call, puts back those the reply (null: none came) did not count.
  std::vector<DeferredClose> AttachCloses(proto::MdsRequest* req);
  void SettleCloses(std::vector<DeferredClose> taken, const proto::MdsResponse* resp);
  // CallRaw with transport failures mapped to EIO.
  Status Call(const Cred* c, proto::MdsRequest* req, proto::MdsResponse* resp);
  Result<Attr> CallForAttr(const Cred* c, proto::MdsRequest* req);
  // The reply's attributes, with its leases iff no invalidation began since
  // invals was read.
  Result<Attr> AttrOf(const proto::MdsResponse& resp, uint64_t invals);
  // The reply's parent_attr with lease_ms = parent_lease_ms, or ino 0 (none,
  // or an invalidation began since invals was read).
  Attr DirAttrOf(const proto::MdsResponse& resp, uint64_t invals);
  // Call for an op that returns only a status and maybe the parent's attrs.
  Status CallForDir(const Cred& c, proto::MdsRequest* req, Attr* dir_attr);
  Result<OpenResult> CallForOpen(const Cred* c, proto::MdsRequest* req);
  // A reply's lease on a regular file (no invalidation began since its
  // request was sent) also covers this client's kept opens of it that are
  // still covered now (OpenCache::Extend).
  void ExtendKeptOpens(const Attr& a);

  std::unique_ptr<rpc::Channel> channel_;
  const uint64_t client_id_;
  std::string tenant_;  // "" = the default tenant (no handshake)
  std::function<Result<std::string>()> key_source_;  // SetKeySource
  std::mutex reauth_mu_;                             // one re-handshake at a time
  std::atomic<uint64_t> auth_gen_{0};                // re-handshakes made
  const std::chrono::milliseconds timeout_;
  const std::chrono::milliseconds recovery_timeout_;
  std::atomic<uint64_t> xid_{1};
  std::atomic<bool> shutting_down_{false};
  std::atomic<uint64_t> epoch_{0};
  std::atomic<bool> epoch_changed_{false};
  std::function<void()> on_new_epoch_;
  std::atomic<uint64_t> invalidations_{0};
  std::unique_ptr<CloseQueue> closes_;            // iff deferral is on
  std::atomic<bool> mds_applies_closes_{false};  // the last reply's MDS_FEATURE_CLOSES
  std::unique_ptr<OpenCache> open_cache_;        // iff EnableOpenCache
  // Replay state.
  mutable std::mutex replay_mu_;
  std::condition_variable replay_cv_;
  // (boot epoch, transno) -> the serialized request with its ReplayInfo.
  std::map<std::pair<uint64_t, uint64_t>, std::string> kept_;  // GUARDED_BY(replay_mu_)
  uint64_t replayed_epoch_ = 0;  // GUARDED_BY(replay_mu_): replays sent up to this epoch
  bool replaying_ = false;       // GUARDED_BY(replay_mu_)
  std::atomic<bool> recorded_{false};  // a reply carried a transno: the MDS knows us
};

}  // namespace sfs::client
