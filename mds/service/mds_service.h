// MdsService: the metadata server's RPC handler. It parses an MdsRequest,
// notes the client as alive, calls the Namespace or the OST registry once,
// and packs the MdsResponse. No business rules here: every check lives in
// the domain objects. A payload that does not parse as an MdsRequest, or
// names no op, gets status EPROTO. Thread-safe.
//
// With a LeaseTable (lease_ops.cc), HandleAsync also grants metadata leases
// on replies carrying a regular file's attributes, holds Watch long polls,
// and answers a change only after the leases of other clients on what it
// changed are revoked. It never waits while inside the Namespace: the op is
// applied first, then the reply is held (without a worker) until revoked.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <set>
#include <thread>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/auth/capability.h"
#include "common/auth/revocation.h"
#include "common/auth/signing_keys.h"
#include "common/rpc/rpc.h"
#include "mds/lease/lease_table.h"
#include "mds/lock/lock_table.h"
#include "mds/namespace/namespace.h"
#include "mds/namespace/ost_registry.h"
#include "mds/service/mds_metrics.h"
#include "mds/service/oss_gate.h"
#include "mds/service/tenant_gate.h"

namespace sfs::mds {

class MdsService : public rpc::Handler {
 public:
  // REQUIRES: ns, osts and leases (if not null) outlive the service.
  // Without leases no lease is granted and no reply waits.
  MdsService(Namespace* ns, OstRegistry* osts, LeaseTable* leases = nullptr)
      : ns_(ns), osts_(osts), leases_(leases), tenants_(ns) {}
  ~MdsService() override;

  // Replay (replay_ops.cc; mds.proto ReplayReq): changes are answered before
  // their commit, with a transno the client keeps until last_committed
  // passes it. REQUIRES: set before serving, with a Namespace that commits
  // on an interval.
  void set_replay(bool on) { replay_ = on; }
  // After a start that was not clean: until every client in `expected` has
  // sent its ReplayReq, or `window` has passed, client requests get EAGAIN
  // (recovering) and replays wait; then all of them are applied in their
  // original order, committed, and answered. REQUIRES: before serving.
  void BeginRecovery(std::vector<uint64_t> expected, std::chrono::milliseconds window);
  bool recovering() const { return recovering_.load(std::memory_order_acquire); }
  // What is answered while recovering: the OSSes' registry calls and pings
  // (a ping's reply tells an idle client the MDS restarted).
  static bool ServedDuringRecovery(int op_case);
  // The changes clients keep and replay (replay_ops.cc).
  static bool Replayable(int op_case);

  // With inline on, every request but SyncReq (which waits for the disk) is
  // answered on the server's I/O thread: metadata ops only touch memory and
  // LevelDB's unsynced log write, a change that must wait for other clients'
  // leases is held by the LeaseTable, and one that must wait for its commit
  // by the Committer, not by the thread.
  void set_inline(bool on) { inline_ = on; }
  // Cluster-wide file locks (LockReq; lock_ops.cc). Without a table every
  // lock request is ENOLCK. REQUIRES: set before serving; locks outlives us.
  void set_locks(LockTable* locks) { locks_ = locks; }
  // Counts every request there (mds_metrics.h); null = none. REQUIRES: set
  // before serving; m outlives the service.
  void set_metrics(MdsMetrics* m) { metrics_ = m; }
  // Listed by GET_OST_MAP (`sfs stats --mds`). REQUIRES: set before serving.
  void set_metrics_address(std::string a) { metrics_address_ = std::move(a); }
  // With a cluster key every file layout a reply carries gets a capability
  // for its objects (sign_layouts.cc, docs/protocol.md "Capabilities").
  // The OSSes must then prove the key at every registration and heartbeat
  // (oss_gate.h). REQUIRES: set before serving.
  // Capabilities minted before the MDS started are void from its start (it
  // does not know its predecessor's revocations): clients renew them.
  // signing: the rotating keys that sign capabilities (the cluster key signs
  // none; it seals them for the OSSes). REQUIRES: signing outlives us.
  void set_cluster_key(const auth::ClusterKey& key, auth::KeyRotator* signing) {
    SFS_CHECK(signing != nullptr);
    oss_gate_.set_key(key.bytes, signing);
    signing_ = signing;
    revocation_epoch_ = auth::NowUnixMs();
    revocations_.Add({.scope = auth::Revocation::Scope::kAll, .before_ms = revocation_epoch_});
  }
  // How long those capabilities last (tests shorten it to see renewal).
  void set_capability_lifetime_s(int64_t s) { capability_lifetime_s_ = s; }
  // Answers RebuildStatusReq (the MDS's MirrorResyncer::FillStatus); unset: ENOSYS.
  void set_rebuild_status(std::function<void(proto::RebuildStatusResp*)> fn) {
    rebuild_status_ = std::move(fn);
  }
  // Called after an OST was declared lost (new rebuild work); unset: nothing.
  void set_rebuild_kick(std::function<void()> fn) { rebuild_kick_ = std::move(fn); }
  // Answers ScrubReq (root only; MirrorResyncer::ScrubFile); unset: ENOSYS.
  void set_scrub(std::function<Status(const proto::ScrubReq&, proto::ScrubResp*)> fn) {
    scrub_ = std::move(fn);
  }

  void Handle(rpc::Request& req, rpc::Reply* reply) override;
  void HandleAsync(rpc::Request& req, rpc::ReplyFn done) override;
  bool TryHandleInline(rpc::Request& req, rpc::ReplyFn& done) override;
  // The serialized MdsResponse for a serialized MdsRequest (what Handle does).
  std::string HandlePayload(const std::string& payload);

 private:
  // replay_ops.cc
  struct PendingReplay {
    uint64_t client = 0;
    proto::ReplayReq req;
    rpc::ReplyFn done;
  };
  void Replay(const proto::MdsRequest& req, rpc::ReplyFn done);
  // True (and answered) if req must wait for the recovery to end.
  bool RefuseWhileRecovering(const proto::MdsRequest& req, const rpc::ReplyFn& done);
  std::string RecoveringReply() const;
  void FinishRecovery(const char* why);
  void ApplyReplays(std::vector<PendingReplay> batch);
  int ApplyReplayed(uint64_t client, proto::MdsRequest item, bool* applied);
  void RecoveryTimer(std::chrono::steady_clock::time_point deadline);
  // The reply's transno for a change of write `seq` (the no-lease path).
  // A mknod's layout for its replay (MdsResponse.replay_layout).
  void AddReplayLayout(const proto::MdsRequest& r, proto::MdsResponse* resp);
  void StampTransno(const proto::MdsRequest& r, proto::MdsResponse* resp, uint64_t seq);
  // Applies one parsed request (no leases involved).
  void Dispatch(const proto::MdsRequest& req, proto::MdsResponse* resp);
  // sign_layouts.cc: the capabilities of resp's file layouts.
  void SignLayouts(const proto::MdsRequest& req, proto::MdsResponse* resp) const;
  // sign_layouts.cc: a KV-tier capability for the requester's tenant
  // (KvGrantReq); an empty one without a cluster key.
  Status GrantKv(const proto::MdsRequest& req, proto::KvGrantResp* out) const;
  // sign_layouts.cc: `sfs key status|rotate` (CapKeyReq): root only; ENOTSUP
  // without a cluster key.
  Status CapKey(const proto::MdsRequest& req, proto::CapKeyResp* out);
  // lock_ops.cc: answers through done, maybe later (a blocking lock).
  void Lock(const proto::MdsRequest& req, rpc::ReplyFn done);
  // lease_ops.cc
  void Watch(const proto::MdsRequest& req, rpc::ReplyFn done);
  // append_ops.cc: an AppendReq, recalling another client's token first.
  void Append(const proto::MdsRequest& req, rpc::ReplyFn done);
  // Grants the reply's leases (unless granted already) and answers after
  // the revocations of `changed`.
  // durable_seq: the metadata write the op made (Committer::DeferScope);
  // the reply waits until it is durable, unless the op is exempt.
  void Reply(const proto::MdsRequest& r, uint64_t tick, proto::MdsResponse resp,
             std::vector<LeaseInval> changed, rpc::ReplyFn done, bool granted = false,
             uint64_t durable_seq = 0);
  // done, held until write `seq` is durable (or with the commit's error).
  // With replay, sets resp's transno instead and answers at once.
  rpc::ReplyFn Durably(const proto::MdsRequest& r, proto::MdsResponse* resp, uint64_t seq,
                       rpc::ReplyFn done);
  void HandleParsed(const proto::MdsRequest& req, rpc::ReplyFn done);
  // tenant_gate.cc: the handshake and a tenant's view (TenantGate). True
  // iff done was called; else r is what to apply and done maps the reply.
  bool GateTenant(proto::MdsRequest& r, rpc::ReplyFn& done);
  // oss_gate.cc: the OSSes' handshake (OssGate). True iff done was called;
  // else done seals an authenticated OSS request's answer.
  bool GateOss(const proto::MdsRequest& r, rpc::ReplyFn& done);
  std::vector<LeaseInval> ApplyLocked(const proto::MdsRequest& req, proto::MdsResponse* resp,
                                      uint64_t* durable_seq);
  std::vector<LeaseInval> NamesChanged(const proto::MdsRequest& req);
  void GrantLease(const proto::MdsRequest& req, uint64_t tick, proto::MdsResponse* resp);

  Namespace* const ns_;
  OstRegistry* const osts_;
  LeaseTable* const leases_;
  TenantGate tenants_;
  OssGate oss_gate_;
  LockTable* locks_ = nullptr;
  MdsMetrics* metrics_ = nullptr;
  std::string metrics_address_;
  std::function<void(proto::RebuildStatusResp*)> rebuild_status_;
  std::function<void()> rebuild_kick_;
  std::function<Status(const proto::ScrubReq&, proto::ScrubResp*)> scrub_;
  auth::KeyRotator* signing_ = nullptr;  // null: no cluster key, no capabilities
  int64_t capability_lifetime_s_ = auth::kCapabilityLifetimeSec;
  // Revocations (revocation_ops.cc): chmod/chown and tenant remove/rotate
  // void capabilities minted before them; the OSSes pull them in heartbeats.
  auth::RevocationList revocations_;
  int64_t revocation_epoch_ = 0;
  void NoteRevocations(const proto::MdsRequest& req, proto::MdsResponse* resp);
  int64_t MintTimeMs(uint64_t ino, const std::string& tenant) const;
  // Append tokens (append_ops.cc): who may append to an inode without asking.
  struct AppendToken {
    uint64_t client = 0;
    int64_t expires_ms = 0;    // the holder's lease ends (MDS clock, margin included)
  };
  struct LastAppend {
    uint64_t client = 0;
    int64_t at_ms = 0;
  };
  std::mutex tokens_mu_;
  std::unordered_map<uint64_t, AppendToken> tokens_;     // GUARDED_BY(tokens_mu_)
  std::unordered_map<uint64_t, LastAppend> last_append_; // GUARDED_BY(tokens_mu_)
  // Recalls in flight per inode: no token is granted on it meanwhile (the
  // holder may still be reporting what it appended under the old one).
  std::unordered_map<uint64_t, int> recalling_;          // GUARDED_BY(tokens_mu_)
  bool inline_ = false;
  // Stripes over (parent, name): held across "look the name up, apply the op"
  // by ops that remove or create a name of a file, so the looked-up inode is
  // the one the op changed. Never held while waiting for a revocation.
  std::array<std::mutex, 256> name_locks_;

  bool replay_ = false;
  std::atomic<bool> recovering_{false};
  std::mutex rec_mu_;
  std::condition_variable rec_cv_;
  std::set<uint64_t> expected_;            // GUARDED_BY(rec_mu_)
  std::set<uint64_t> checked_in_;          // GUARDED_BY(rec_mu_)
  std::vector<PendingReplay> pending_;     // GUARDED_BY(rec_mu_)
  bool finishing_ = false;                 // GUARDED_BY(rec_mu_)
  bool stopping_ = false;                  // GUARDED_BY(rec_mu_)
  std::thread rec_thread_;
};

}  // namespace sfs::mds
