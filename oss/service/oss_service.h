// OssService: the RPC handler of sfs-oss. Decodes an OssRequest, checks it,
// runs it on the ObjectStore of the OST index it names, and packs the reply.
//
// Errors (in the reply's status; the handler never fails otherwise):
//   payload that does not parse, wrong service, no op  -> EPROTO
//   OST index this OSS does not serve (yet)              -> ESTALE
//   object destroyed (a tombstone, see object_store.h)   -> ESTALE + object_destroyed
//   read length or write bulk over kMaxIo, empty write   -> EINVAL
//   destroy_batch of more than kMaxDestroyBatch oids     -> EINVAL (else OK, with
//                                                          one destroy_status per oid)
//   write_v with no extent, more than kMaxWriteV, an
//   empty one, or lengths that do not add up to the bulk -> EINVAL (else OK, with
//                                                          one write_status per extent:
//                                                          what that write alone gets)
//   fallocate of a mode other than 0, KEEP_SIZE,
//   PUNCH_HOLE|KEEP_SIZE, ZERO_RANGE[|KEEP_SIZE]         -> EOPNOTSUPP; length 0 -> EINVAL;
//                                                          past the largest object -> EFBIG
//   seek from past the largest object                    -> EINVAL (else OK: seek.found
//                                                          and seek.offset)
//   copy over kMaxIo, a source range past the largest
//   object or overlapping ranges of one object           -> EINVAL (destination: EFBIG);
//   a source OST not served here without src_address     -> EXDEV (copy_op.h)
//   anything the store reports (ENOSPC, EIO, EFBIG ...)  -> passed through
//   a kv op (kv_ops.h, docs/kv.md) on an OSS without a kv tier
//   (--kv-capacity)                                      -> EOPNOTSUPP; its own
//                                                          errors as kv_store.h says;
//                                                          a miss is OK, found false
//   a write, write_v, truncate, punch, fallocate or copy whose fence_epoch
//   is older than one its client sent since              -> ESTALE + fenced, nothing
//                                                          applied (write_fence.h)
// A read replies with exactly `length` bytes of bulk (zeros past the data) and
// read_size = bytes that exist; a failed read replies with no bulk.
//
// The OST index map is empty until the MDS has assigned indices (SetTargets),
// so requests that arrive before the first registration get ESTALE.
//
// Thread safety: Handle() runs concurrently on many worker threads;
// SetTargets() may be called at any time from another thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/auth/capability.h"
#include "common/auth/capability_cache.h"
#include "common/auth/revocation.h"
#include "common/rpc/rpc.h"
#include "oss/kv/kv_store.h"
#include "oss/service/copy_fence.h"
#include "oss/service/copy_op.h"
#include "oss/service/oss_metrics.h"
#include "oss/service/qos.h"
#include "oss/service/write_fence.h"
#include "oss/store/object_store.h"

namespace sfs::proto {
class OssRequest;
}  // namespace sfs::proto

namespace sfs::oss {

class OssService : public rpc::Handler {
 public:
  static constexpr uint64_t kMaxIo = 64ull << 20;
  // Most object ids in one destroy_batch (more: EINVAL).
  static constexpr uint64_t kMaxDestroyBatch = 4096;
  // Most extents in one write_v (more: EINVAL).
  static constexpr uint64_t kMaxWriteV = 4096;

  // Maps OST index -> store. REQUIRES: every store outlives this service.
  using Targets = std::unordered_map<uint32_t, ObjectStore*>;

  // fencing = false: every fence_epoch is admitted (sfs-oss --fencing=off,
  // for tests that show what the fence prevents).
  explicit OssService(bool fencing = true) : fence_(fencing) {}
  void SetTargets(Targets targets);
  // Channels to other OSSes, for copies whose source another OSS serves
  // (copy_op.h); without them such a copy is EXDEV. REQUIRES: peers
  // outlives this service.
  void SetPeers(PeerChannels* peers) { peers_.store(peers, std::memory_order_release); }

  void Handle(rpc::Request& req, rpc::Reply* reply) override;
  // With QoS rules in force (set_qos), queues the request in its class
  // (qos.h) and returns: an executor thread runs it when the policy lets.
  // Otherwise runs it at once, as Handle().
  void HandleAsync(rpc::Request& req, rpc::ReplyFn done) override;
  // REQUIRES: set before serving; qos outlives this service and is Stop()ped
  // before the server that calls it.
  void set_qos(QosScheduler* qos) { qos_ = qos; }
  // A read's length (its reply bulk), so the server's memory budget counts it
  // from admission on (rpc.h).
  uint64_t ReplyBulkHint(std::string_view payload) override;
  // Write bulk arrives, and read replies go out, in pooled 4 KiB-aligned
  // buffers where the server has a pool (the store's O_DIRECT path needs the
  // alignment).
  bool UsesBulkPool() const override { return true; }
  // A read of at most inline_read_max bytes is served on the TCP server's I/O
  // thread, disk wait included: a small read's worker hand-off (two thread
  // wake-ups, request and reply) cost more than the read itself. Larger reads
  // and every other op go to the workers. Each connection is read by one I/O
  // thread, so a small read delays that connection's next request by its
  // disk time (clients keep several connections per OSS: tcp_channel.cc).
  // A kv get whose block is all in the page cache goes inline too, whatever
  // its size: it is sent by sendfile (kv_ops.h), so its work here is an index
  // lookup and an open, and it waits on no disk; one that is not goes to a
  // worker, which reads it. So does a longer read that the store can send
  // from the page cache (ObjectStore::OpenCachedRange: a small object's
  // cached range, for a client that checks the bytes). With inline_read_max
  // 0 none goes inline.
  // With QoS rules in force only an unruled class's reads go inline, so that
  // every limited or reserved class passes the scheduler.
  bool TryHandleInline(rpc::Request& req, rpc::ReplyFn& done) override;
  static constexpr uint64_t kDefaultInlineReadMax = 64 * 1024;
  // 0: every request goes to a worker. Call before serving.
  void set_inline_read_max(uint64_t n) { inline_read_max_ = n; }
  // Counts every request there (oss_metrics.h); null = none. REQUIRES: set
  // before serving; m outlives this service.
  void set_metrics(OssMetrics* m) { metrics_ = m; }
  // The OST index map now (for the metrics' space collector).
  Targets targets() const;
  // With a cluster key every object request must carry a capability covering
  // its objects with the op's right (docs/protocol.md "Capabilities"), signed
  // with one of the MDS's rotating keys (signing_keys()); without one nothing
  // is checked. REQUIRES: called before serving.
  void require_capabilities() { keyed_ = true; }
  // The signing keys the MDS published last (the registrar installs them
  // from every sealed registration and heartbeat answer).
  auth::KeyRing* signing_keys() { return &keys_; }
  // The MDS's revocations (the registrar fills it from heartbeats): a
  // capability one voids is refused as an expired one is.
  auth::RevocationList* revocations() { return &revoked_; }
  // The stale-copy fence (copy_fence.h; the registrar arms and fills it):
  // client reads of a mirror copy the MDS has not ok are refused.
  CopyFence* copy_fence() { return &copy_fence_; }
  // The KV-cache tier of each OST store (docs/kv.md); a store without one
  // answers kv ops EOPNOTSUPP. REQUIRES: set before serving; the stores
  // outlive this service.
  using KvTargets = std::unordered_map<const ObjectStore*, kv::KvStore*>;
  void set_kv(KvTargets kv) { kv_ = std::move(kv); }
  // The tenant a kv request acts for, or EACCES. The one place that decides
  // it. Without a cluster key every request is tenant 0. With one it must
  // carry a capability that verifies: a server's or operator's (kAdmin or
  // all_objects) acts as tenant 0; an MDS KV grant (auth::kKv, asked for by
  // an authenticated client: MdsService::GrantKv) as the grant's kv_tenant,
  // the tenant's number the MDS signed, which the client cannot choose.
  Result<uint32_t> KvTenant(const proto::OssRequest& oreq) const;

 private:
  ObjectStore* Find(uint32_t ost) const;
  // A read's range as SendsCached opened it, and the store it opened it on.
  struct ProbedRange {
    ObjectStore* store = nullptr;
    CachedRange range;
  };
  // The range a read would be sent from the page cache by sendfile
  // (ObjectStore::OpenCachedRange), so it waits on no disk; nullopt if none.
  std::optional<ProbedRange> SendsCached(const proto::OssRequest& oreq,
                                         const rpc::Request& req) const;
  // The copy op: into dst, from a target of ours or a peer's.
  Status Copy(ObjectStore& dst, const proto::OssRequest& req) const;
  // Handle() of a request already decoded (TryHandleInline decodes it to
  // choose). A read sends probed's range, if it is for the store the request
  // names and the read still qualifies, instead of opening it again.
  // REQUIRES: reply holds no bulk.
  void HandleParsed(const proto::OssRequest& oreq, rpc::Request& req, rpc::Reply* reply,
                    ProbedRange* probed = nullptr);
  // HandleParsed, counted in metrics_.
  void HandleCounted(const proto::OssRequest& oreq, rpc::Request& req, rpc::Reply* reply,
                     ProbedRange* probed = nullptr);

  // EACCES unless oreq's capabilities allow it (require_capabilities).
  Status CheckCapabilities(const proto::OssRequest& oreq) const;

  // Who a request is for the QoS scheduler (qos.h). Without a cluster key:
  // kDefaultTenant and the request's job id, as told. With one: the tenant
  // of the first of its capabilities that verifies (kDefaultTenant when none
  // does; such a request is refused EACCES once it runs) and its job id,
  // except that the resync job id from anything but a server's capability
  // becomes "" (an unruled job): a tenant cannot borrow resync's share.
  struct QosWho {
    std::string tenant;
    std::string job;
  };
  QosWho WhoForQos(const proto::OssRequest& oreq) const;

  // The KvStore of OST ost, or null (not served here, or no kv tier).
  kv::KvStore* KvFor(uint32_t ost) const;
  // TryHandleInline of a kv get (oreq): answered here, from one lookup and
  // open of its block, iff the server can send from a file, the tenant is
  // allowed, and the block is a miss or all in the page cache.
  bool TryKvGetInline(const proto::OssRequest& oreq, rpc::Request& req, rpc::ReplyFn& done);
  // Runs handle(&reply) on this thread and sends the reply, unless QoS rules
  // oreq's class and would not dispatch it at once: then false, nothing ran.
  template <typename Fn>
  bool RunInline(const proto::OssRequest& oreq, rpc::Request& req, rpc::ReplyFn& done, Fn&& handle);
  // handle(), which fills reply, counted in metrics_ as oreq.
  template <typename Fn>
  void Counted(const proto::OssRequest& oreq, const rpc::Request& req, rpc::Reply* reply,
               Fn&& handle);
  // A kv op, on the OST store's KvStore, for KvTenant's tenant.
  void HandleKv(const proto::OssRequest& oreq, rpc::Request& req, rpc::Reply* reply);

  bool keyed_ = false;
  auth::KeyRing keys_;
  // Tokens verified once, found by their bytes after (capability_cache.h).
  mutable auth::CapabilityCache verified_;
  auth::RevocationList revoked_;
  CopyFence copy_fence_;
  QosScheduler* qos_ = nullptr;
  KvTargets kv_;
  uint64_t inline_read_max_ = kDefaultInlineReadMax;
  OssMetrics* metrics_ = nullptr;
  std::atomic<PeerChannels*> peers_{nullptr};
  WriteFence fence_;
  mutable std::mutex mu_;
  std::shared_ptr<const Targets> targets_ = std::make_shared<Targets>();  // guarded by mu_
};

}  // namespace sfs::oss
