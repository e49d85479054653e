// OssService: request decoding, validation and one thin function per op.
//
// File data is never copied here: a write hands the request's bulk to the
// store as a span, and a read takes its reply bulk once and has the store
// pread straight into it. On the TCP server both live in pooled buffers
// (rpc::BulkPool): 4 KiB-aligned, so the store can use O_DIRECT on them, and
// not zero-filled, since the store writes every byte of a read's dest.
// Servers without a pool (RDMA) use Request::bulk and Reply::bulk vectors.
// A read whose client checks the frame crc end to end (client_checks) takes
// the bulk's crc from the store's stored chunk crcs (ReadWithStoredCrc): the
// OSS makes no crc pass over the data. If the object is small and all of the
// range is in the page cache, not even the copy: the server sends the range
// from the object's file by sendfile (OpenCachedRange), as kv gets go.
#include "oss/service/oss_service.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <optional>

#include "common/log.h"
#include "common/rpc/bulk_crc.h"
#include "oss.pb.h"
#include "oss/service/kv_ops.h"

namespace sfs::oss {
namespace {

using proto::OssRequest;
using proto::OssResponse;

constexpr uint64_t kMaxObjectOffset = static_cast<uint64_t>(std::numeric_limits<off_t>::max());

// A read the server sends from the object's file by sendfile, with the
// stored crcs' value (ObjectStore::OpenCachedRange): no copy, no pass. ENOTSUP
// when it cannot (the caller reads). probed: the range as
// OssService::SendsCached opened it for this request, or null (open it here).
Status SendCachedRange(ObjectStore& store, const OssRequest& req, CachedRange* probed,
                       OssResponse* resp, rpc::Reply* reply) {
  Result<CachedRange> r = probed != nullptr ? Result<CachedRange>(std::move(*probed))
                                            : store.OpenCachedRange(req.oid(), req.read().offset(),
                                                                    req.read().length());
  if (!r.ok()) return r.status();
  reply->file_bulk = std::make_shared<rpc::FileBulk>(
      r->fd, r->offset, static_cast<uint32_t>(r->length), r->crc, std::move(r->owner));
  resp->set_read_size(r->length);
  return Status::Ok();
}

Status DoRead(ObjectStore& store, const OssRequest& req, const rpc::Request& rreq,
              CachedRange* probed, OssResponse* resp, rpc::Reply* reply) {
  uint64_t len = req.read().length();
  if (len > OssService::kMaxIo) return Status::Errno(EINVAL, "read length over 64 MiB");
  if (rreq.file_bulk_ok && req.read().client_checks()) {
    Status sent = SendCachedRange(store, req, probed, resp, reply);
    if (sent.code() != ENOTSUP) return sent;
  }
  std::span<uint8_t> dest;
  if (rreq.pool != nullptr) {
    reply->pooled_bulk = rreq.pool->Get(len);
    dest = reply->pooled_bulk.span();
    if (req.read().client_checks()) {  // no crc pass: the client checks (stored_crc_read.h)
      uint32_t value = 0;
      Result<uint64_t> got = store.ReadWithStoredCrc(req.oid(), req.read().offset(), dest, &value);
      if (got.ok()) {
        reply->bulk_value = value;
        resp->set_read_size(*got);
        return Status::Ok();
      }
      if (got.status().code() != ENOTSUP) {
        reply->pooled_bulk.Reset();
        return got.status();
      }
    }
  } else {
    reply->bulk.resize(len);
    dest = reply->bulk;
  }
  // The store's chunk crcs let the server skip its own pass over the bulk.
  std::vector<uint32_t>* pieces = rreq.pool != nullptr ? &reply->bulk_piece_crcs : nullptr;
  Result<uint64_t> got = store.Read(req.oid(), req.read().offset(), dest, pieces);
  if (!got.ok()) {
    reply->bulk.clear();
    reply->pooled_bulk.Reset();
    reply->bulk_piece_crcs.clear();
    return got.status();
  }
  resp->set_read_size(*got);
  return Status::Ok();
}

Status DoWrite(ObjectStore& store, const OssRequest& req, const rpc::Request& rreq) {
  std::span<const uint8_t> bulk = rreq.bulk_bytes();
  if (bulk.empty()) return Status::Errno(EINVAL, "write without bulk data");
  if (bulk.size() > OssService::kMaxIo) return Status::Errno(EINVAL, "write bulk over 64 MiB");
  // The bulk's pieces are the object's chunks only at an aligned offset.
  const uint64_t off = req.write().offset();
  std::span<const uint32_t> pieces;
  if (off % rpc::kBulkCrcPiece == 0) pieces = rreq.bulk_piece_crcs;
  return store.Write(req.oid(), off, bulk, req.write().sync(), pieces);
}

// With write_v's sync: one Sync per object an extent wrote; a failed sync
// fails that object's extents.
void SyncWritten(ObjectStore& store, const proto::ObjWriteVReq& wv, std::vector<Status>& results) {
  std::vector<uint64_t> oids;
  for (int i = 0; i < wv.extents_size(); ++i) {
    if (results[i].ok()) oids.push_back(wv.extents(i).oid());
  }
  std::sort(oids.begin(), oids.end());
  oids.erase(std::unique(oids.begin(), oids.end()), oids.end());
  for (uint64_t oid : oids) {
    Status st = store.Sync(oid);
    if (st.ok()) continue;
    for (int i = 0; i < wv.extents_size(); ++i) {
      if (wv.extents(i).oid() == oid && results[i].ok()) results[i] = st;
    }
  }
}

// The piece crcs (bulk_crc.h) of the object chunks an extent at bulk offset
// `at` and object offset `off` touches (ObjectStore::Write), or none: only
// where the bulk's pages line up with the object's (at and off agree modulo
// 4 KiB, as a client's padding makes them) is a bulk piece an object chunk.
std::span<const uint32_t> PiecesOf(const rpc::Request& rreq, uint64_t at, uint64_t off,
                                   uint64_t len) {
  const std::span<const uint32_t> all = rreq.bulk_piece_crcs;
  constexpr uint64_t kPiece = rpc::kBulkCrcPiece;
  if (all.empty() || at % kPiece != off % kPiece) return {};
  const size_t first = at / kPiece, n = (off + len - 1) / kPiece - off / kPiece + 1;
  return first + n <= all.size() ? all.subspan(first, n) : std::span<const uint32_t>();
}

// EINVAL unless the extents are 1..kMaxWriteV non-empty writes whose lengths
// and skips (each under a 4 KiB page) add up to the bulk's size (at most kMaxIo).
Status CheckExtents(const proto::ObjWriteVReq& wv, uint64_t bulk_size) {
  const int n = wv.extents_size();
  if (n == 0 || n > static_cast<int>(OssService::kMaxWriteV)) {
    return Status::Errno(EINVAL, "write_v needs 1 to " + std::to_string(OssService::kMaxWriteV) +
                                     " extents");
  }
  if (bulk_size > OssService::kMaxIo) return Status::Errno(EINVAL, "write bulk over 64 MiB");
  uint64_t total = 0;
  for (const proto::ObjExtent& e : wv.extents()) {
    if (e.length() == 0 || e.length() > OssService::kMaxIo || e.skip() >= rpc::kBulkCrcPiece) {
      return Status::Errno(EINVAL, "write_v extent of length 0 or over 64 MiB, or skip over 4095");
    }
    total += e.skip() + e.length();  // at most kMaxWriteV * (kMaxIo + 4 KiB): no overflow
  }
  if (total != bulk_size) return Status::Errno(EINVAL, "write_v extents do not match the bulk");
  return Status::Ok();
}

// Each extent as its own `write` would be (a failure stops none of the others:
// they are independent writes, maybe of other files), in order; then, with
// sync, one sync per object written. One write_status per extent.
Status DoWriteV(ObjectStore& store, const OssRequest& req, const rpc::Request& rreq,
                OssResponse* resp) {
  const proto::ObjWriteVReq& wv = req.write_v();
  std::span<const uint8_t> bulk = rreq.bulk_bytes();
  SFS_RETURN_IF_ERROR(CheckExtents(wv, bulk.size()));
  std::vector<Status> results;
  results.reserve(wv.extents_size());
  uint64_t at = 0;
  for (const proto::ObjExtent& e : wv.extents()) {
    at += e.skip();
    results.push_back(store.Write(e.oid(), e.offset(), bulk.subspan(at, e.length()), false,
                                  PiecesOf(rreq, at, e.offset(), e.length())));
    at += e.length();
  }
  if (wv.sync()) SyncWritten(store, wv, results);
  for (const Status& st : results) {
    proto::Status* out = resp->add_write_status();
    out->set_code(st.code());
    if (!st.ok()) out->set_message(st.message());
    if (st.code() == EIO) LOG_ERROR("ost " << req.ost() << " write_v: " << st.ToString());
  }
  return Status::Ok();
}

Status DoStat(ObjectStore& store, const OssRequest& req, OssResponse* resp) {
  SFS_ASSIGN_OR_RETURN(ObjectAttr attr, store.Stat(req.oid()));
  proto::ObjStatResp* out = resp->mutable_stat();
  out->set_exists(attr.exists);
  out->set_size(attr.size);
  out->set_blocks(attr.blocks);
  return Status::Ok();
}

// Every oid of the batch, committed together; the per-oid outcomes go in
// destroy_status (the call itself is OK).
Status DoDestroyBatch(ObjectStore& store, const OssRequest& req, OssResponse* resp) {
  const auto& oids = req.destroy_batch().oids();
  if (oids.size() > static_cast<int>(OssService::kMaxDestroyBatch)) {
    return Status::Errno(EINVAL, "destroy batch over " +
                                     std::to_string(OssService::kMaxDestroyBatch) + " objects");
  }
  std::vector<Status> results = store.DestroyMany({oids.data(), static_cast<size_t>(oids.size())});
  for (const Status& st : results) {
    proto::Status* out = resp->add_destroy_status();
    out->set_code(st.code());
    if (!st.ok()) out->set_message(st.message());
  }
  return Status::Ok();
}

// The modes a FUSE fallocate may bring (FuseOps::OnFallocate), nothing else.
bool KnownFallocateMode(uint32_t mode) {
  switch (mode) {
    case 0:
    case FALLOC_FL_KEEP_SIZE:
    case FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE:
    case FALLOC_FL_ZERO_RANGE:
    case FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE:
      return true;
    default:
      return false;
  }
}

Status DoFallocate(ObjectStore& store, const OssRequest& req) {
  const proto::ObjFallocateReq& f = req.fallocate();
  if (!KnownFallocateMode(f.mode())) {
    return Status::Errno(EOPNOTSUPP, "fallocate mode not supported");
  }
  if (f.length() == 0) return Status::Errno(EINVAL, "fallocate of length 0");
  if (f.offset() > kMaxObjectOffset || f.length() > kMaxObjectOffset - f.offset()) {
    return Status::Errno(EFBIG, "fallocate past the largest object");
  }
  return store.Fallocate(req.oid(), static_cast<int>(f.mode()), f.offset(), f.length());
}

Status DoSeek(ObjectStore& store, const OssRequest& req, OssResponse* resp) {
  if (req.seek().offset() > kMaxObjectOffset) return Status::Errno(EINVAL, "seek offset too large");
  SFS_ASSIGN_OR_RETURN(std::optional<uint64_t> at,
                       store.Seek(req.oid(), req.seek().offset(), req.seek().hole()));
  resp->mutable_seek()->set_found(at.has_value());
  if (at) resp->mutable_seek()->set_offset(*at);
  return Status::Ok();
}

// EINVAL / EFBIG unless the copy's ranges are addressable, its length at most
// kMaxIo and, within one object, the ranges disjoint (as copy_file_range(2)).
Status CheckCopy(const OssRequest& req) {
  const proto::ObjCopyReq& c = req.copy();
  if (c.length() > OssService::kMaxIo) return Status::Errno(EINVAL, "copy length over 64 MiB");
  if (c.src_offset() > kMaxObjectOffset || c.length() > kMaxObjectOffset - c.src_offset()) {
    return Status::Errno(EINVAL, "copy source past the largest object");
  }
  if (c.offset() > kMaxObjectOffset || c.length() > kMaxObjectOffset - c.offset()) {
    return Status::Errno(EFBIG, "copy destination past the largest object");
  }
  const bool same = c.src_ost() == req.ost() && c.src_oid() == req.oid();
  const bool overlap =
      c.src_offset() < c.offset() + c.length() && c.offset() < c.src_offset() + c.length();
  if (same && overlap) {
    return Status::Errno(EINVAL, "overlapping copy within one object");
  }
  return Status::Ok();
}

Status DoStatfs(ObjectStore& store, OssResponse* resp) {
  SFS_ASSIGN_OR_RETURN(OstSpace space, store.Statfs());
  proto::OstStatfsResp* out = resp->mutable_statfs();
  out->set_total_bytes(space.total_bytes);
  out->set_free_bytes(space.free_bytes);
  out->set_avail_bytes(space.avail_bytes);
  out->set_total_inodes(space.total_inodes);
  out->set_free_inodes(space.free_inodes);
  return Status::Ok();
}

// probed: a read's range as SendsCached opened it on store, or null.
Status Dispatch(ObjectStore& store, const OssRequest& req, const rpc::Request& rreq,
                CachedRange* probed, OssResponse* resp, rpc::Reply* reply) {
  switch (req.op_case()) {
    case OssRequest::kRead: return DoRead(store, req, rreq, probed, resp, reply);
    case OssRequest::kWrite: return DoWrite(store, req, rreq);
    case OssRequest::kTruncate: return store.Truncate(req.oid(), req.truncate().size());
    case OssRequest::kPunch:
      return store.Punch(req.oid(), req.punch().offset(), req.punch().length());
    case OssRequest::kStat: return DoStat(store, req, resp);
    case OssRequest::kDestroy: return store.Destroy(req.oid());
    case OssRequest::kSync: return store.Sync(req.oid());
    case OssRequest::kStatfs: return DoStatfs(store, resp);
    case OssRequest::kDestroyBatch: return DoDestroyBatch(store, req, resp);
    case OssRequest::kWriteV: return DoWriteV(store, req, rreq, resp);
    case OssRequest::kFallocate: return DoFallocate(store, req);
    case OssRequest::kSeek: return DoSeek(store, req, resp);
    case OssRequest::kCopy: break;  // OssService::Copy (it needs the other targets)
    default: break;  // kv ops: OssService::HandleKv; OP_NOT_SET
  }
  return Status::Errno(EPROTO, "request has no known op");
}

// The ops that change an object's bytes or size: a late one could undo a
// newer one, so they pass the write fence (write_fence.h).
bool Mutates(OssRequest::OpCase op) {
  return op == OssRequest::kWrite || op == OssRequest::kWriteV || op == OssRequest::kTruncate ||
         op == OssRequest::kPunch || op == OssRequest::kFallocate || op == OssRequest::kCopy;
}

void Finish(const Status& st, OssResponse* resp, rpc::Reply* reply) {
  if (!st.ok()) {
    resp->mutable_status()->set_code(st.code());
    resp->mutable_status()->set_message(st.message());
  }
  resp->SerializeToString(&reply->payload);
}

// The right an op needs on the objects it names; 0: none (statfs reveals
// only space figures, which df needs from any client).
uint32_t NeededRight(OssRequest::OpCase op) {
  switch (op) {
    case OssRequest::kRead:
    case OssRequest::kStat:
    case OssRequest::kSync:
    case OssRequest::kSeek: return auth::kRead;
    case OssRequest::kWrite:
    case OssRequest::kWriteV:
    case OssRequest::kTruncate:
    case OssRequest::kPunch:
    case OssRequest::kFallocate:
    case OssRequest::kCopy: return auth::kWrite;
    case OssRequest::kDestroy:
    case OssRequest::kDestroyBatch: return auth::kAdmin;
    case OssRequest::kStatfs: return 0;
    default: break;  // kv ops: KvTenant; OP_NOT_SET
  }
  return auth::kAdmin;  // an op this check does not know: only the servers' own capabilities
}

// One line per second at most: a client probing object ids must not flood the log.
void LogDenied(const OssRequest& req, const Status& st) {
  static std::atomic<int64_t> last{0};
  static std::atomic<uint64_t> quiet{0};
  int64_t now = auth::NowUnix();
  int64_t prev = last.load(std::memory_order_relaxed);
  if (prev == now || !last.compare_exchange_strong(prev, now, std::memory_order_relaxed)) {
    quiet.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  uint64_t more = quiet.exchange(0, std::memory_order_relaxed);
  LOG_WARN("EACCES client " << req.client_id() << " ost " << req.ost() << " oid " << req.oid()
                            << " op " << req.op_case() << ": " << st.message()
                            << (more > 0 ? " (and " + std::to_string(more) + " more denied)"
                                         : std::string()));
}

}  // namespace

Status OssService::CheckCapabilities(const OssRequest& oreq) const {
  uint32_t right = NeededRight(oreq.op_case());
  if (right == 0) return Status::Ok();
  if (oreq.capabilities_size() == 0) return Status::Errno(EACCES, "no capability");
  int64_t now = auth::NowUnix();
  std::vector<std::shared_ptr<const auth::Capability>> caps;
  caps.reserve(static_cast<size_t>(oreq.capabilities_size()));
  Status last;
  for (const std::string& token : oreq.capabilities()) {
    Result<std::shared_ptr<const auth::Capability>> cap = verified_.Verify(token, keys_, now);
    if (cap.ok() && revoked_.Voids(**cap)) {
      last = Status::Errno(EACCES, "capability revoked");
    } else if (cap.ok()) {
      caps.push_back(std::move(*cap));
    } else {
      last = cap.status();
    }
  }
  auto allowed = [&](uint32_t ost, uint64_t oid, uint32_t need) {
    for (const auto& c : caps) {
      bool rights = (c->rights & need) == need || (c->rights & auth::kAdmin) != 0;
      if (rights && c->Covers(ost, oid)) return true;
    }
    return false;
  };
  auto deny = [&](uint32_t ost, uint64_t oid) {
    if (caps.empty()) return last;
    const char* what = right == auth::kRead    ? "reading"
                       : right == auth::kWrite ? "writing"
                                               : "administering";
    return Status::Errno(EACCES, std::string("no capability for ") + what + " ost " +
                                     std::to_string(ost) + " oid " + std::to_string(oid));
  };
  switch (oreq.op_case()) {
    case OssRequest::kWriteV:
      for (const proto::ObjExtent& e : oreq.write_v().extents()) {
        if (!allowed(oreq.ost(), e.oid(), right)) return deny(oreq.ost(), e.oid());
      }
      return Status::Ok();
    case OssRequest::kDestroyBatch:
      for (uint64_t oid : oreq.destroy_batch().oids()) {
        if (!allowed(oreq.ost(), oid, right)) return deny(oreq.ost(), oid);
      }
      return Status::Ok();
    case OssRequest::kCopy:
      if (!allowed(oreq.copy().src_ost(), oreq.copy().src_oid(), auth::kRead)) {
        return deny(oreq.copy().src_ost(), oreq.copy().src_oid());
      }
      break;
    default:
      break;
  }
  if (!allowed(oreq.ost(), oreq.oid(), right)) return deny(oreq.ost(), oreq.oid());
  return Status::Ok();
}

OssService::QosWho OssService::WhoForQos(const OssRequest& oreq) const {
  QosWho who{kDefaultTenant, oreq.job_id()};
  if (!keyed_) return who;
  bool server = false;
  const int64_t now = auth::NowUnix();
  for (const std::string& token : oreq.capabilities()) {
    // The cache: CheckCapabilities verifies the same bytes again, for free.
    Result<std::shared_ptr<const auth::Capability>> cap = verified_.Verify(token, keys_, now);
    if (!cap.ok()) continue;
    server = (*cap)->all_objects || ((*cap)->rights & auth::kAdmin) != 0;
    if (!(*cap)->tenant.empty()) who.tenant = (*cap)->tenant;
    break;
  }
  if (who.job == kResyncJob && !server) who.job.clear();
  return who;
}

Result<uint32_t> OssService::KvTenant(const OssRequest& oreq) const {
  constexpr uint32_t kDefaultTenant = 0;
  if (!keyed_) return kDefaultTenant;
  if (oreq.capabilities_size() == 0) return Status::Errno(EACCES, "no capability for the kv tier");
  const int64_t now = auth::NowUnix();
  Status last;
  for (const std::string& token : oreq.capabilities()) {
    Result<std::shared_ptr<const auth::Capability>> cap = verified_.Verify(token, keys_, now);
    if (!cap.ok()) {
      last = cap.status();
    } else if (revoked_.Voids(**cap)) {
      last = Status::Errno(EACCES, "capability revoked");
    } else if ((*cap)->all_objects || ((*cap)->rights & auth::kAdmin) != 0) {
      return kDefaultTenant;
    } else if (((*cap)->rights & auth::kKv) != 0) {
      return (*cap)->kv_tenant;  // the MDS's grant (MdsService::GrantKv): the tenant's alone
    }
  }
  return last.ok() ? Status::Errno(EACCES, "no capability grants the kv tier") : last;
}

kv::KvStore* OssService::KvFor(uint32_t ost) const {
  ObjectStore* store = Find(ost);
  auto it = store == nullptr ? kv_.end() : kv_.find(store);
  return it == kv_.end() ? nullptr : it->second;
}

void OssService::HandleKv(const OssRequest& oreq, rpc::Request& req, rpc::Reply* reply) {
  OssResponse resp;
  Result<uint32_t> tenant = KvTenant(oreq);
  if (!tenant.ok()) {
    LogDenied(oreq, tenant.status());
    resp.set_unknown_key(auth::IsUnknownKey(tenant.status()));
    return Finish(tenant.status(), &resp, reply);
  }
  ObjectStore* store = Find(oreq.ost());
  if (store == nullptr) {
    return Finish(Status::Errno(ESTALE, "OST index not served here"), &resp, reply);
  }
  auto it = kv_.find(store);
  if (it == kv_.end()) {
    return Finish(Status::Errno(EOPNOTSUPP, "no kv tier on this OSS (sfs-oss --kv-capacity)"),
                  &resp, reply);
  }
  Status st = DispatchKv(*it->second, *tenant, oreq, req, &resp, reply);
  if (st.code() == EIO) LOG_ERROR("ost " << oreq.ost() << " kv: " << st.ToString());
  Finish(st, &resp, reply);
}

// The source from this OSS's own store when it serves src_ost, else pulled
// from src_address (copy_op.h).
Status OssService::Copy(ObjectStore& dst, const OssRequest& req) const {
  SFS_RETURN_IF_ERROR(CheckCopy(req));
  const proto::ObjCopyReq& c = req.copy();
  CopySource src;
  src.ost = c.src_ost();
  src.oid = c.src_oid();
  src.offset = c.src_offset();
  src.local = Find(c.src_ost());
  if (keyed_) {
    // The pull is this OSS's own read, checked by the peer like any other,
    // under the MDS's current signing key.
    std::optional<auth::ClusterKey> key = keys_.Current();
    if (!key.has_value()) return Status::Errno(EAGAIN, "no signing key from the MDS yet");
    auth::Capability own;
    own.rights = auth::kRead;
    own.all_objects = true;
    own.key_id = key->id;
    own.expiry = auth::NowUnix() + auth::kCapabilityLifetimeSec;
    src.capability = auth::Sign(own, *key);
  }
  if (src.local == nullptr) {
    PeerChannels* peers = peers_.load(std::memory_order_acquire);
    if (peers == nullptr || c.src_address().empty()) {
      return Status::Errno(EXDEV, "copy source OST " + std::to_string(c.src_ost()) +
                                      " not served here and no address to pull it from");
    }
    src.remote = peers->Get(c.src_address());
  }
  return CopyRange(src, dst, req.oid(), c.offset(), c.length());
}

void OssService::SetTargets(Targets targets) {
  auto fresh = std::make_shared<const Targets>(std::move(targets));
  std::lock_guard<std::mutex> lock(mu_);
  targets_ = std::move(fresh);
}

ObjectStore* OssService::Find(uint32_t ost) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = targets_->find(ost);
  return it == targets_->end() ? nullptr : it->second;
}

uint64_t OssService::ReplyBulkHint(std::string_view payload) {
  OssRequest oreq;
  if (!oreq.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) return 0;
  if (oreq.op_case() == OssRequest::kKvGet) return std::min(oreq.kv_get().block_size(), kMaxIo);
  if (oreq.op_case() != OssRequest::kRead || oreq.read().length() > kMaxIo) return 0;
  return oreq.read().length();
}

// The data bytes a request moves: a read's length in, a write's out (write_v:
// its extents, not the alignment padding of its bulk).
static void DataBytes(const OssRequest& oreq, const rpc::Request& req, uint64_t* read,
                      uint64_t* written) {
  *read = *written = 0;
  if (oreq.op_case() == OssRequest::kRead) *read = oreq.read().length();
  if (oreq.op_case() == OssRequest::kWrite) *written = req.bulk_bytes().size();
  if (oreq.op_case() == OssRequest::kKvPut) *written = req.bulk_bytes().size();
  if (oreq.op_case() == OssRequest::kKvGet) *read = oreq.kv_get().block_size();
  if (oreq.op_case() == OssRequest::kWriteV) {
    for (const proto::ObjExtent& e : oreq.write_v().extents()) *written += e.length();
  }
}

// The reply's errno. Its status is field 1, which protobuf serializes first,
// and Finish sets it only when not OK: so an OK reply costs no parse.
static int ReplyCode(const rpc::Reply& reply) {
  if (reply.payload.empty() || static_cast<uint8_t>(reply.payload[0]) != 0x0a) return 0;
  OssResponse resp;
  if (!resp.ParseFromString(reply.payload)) return EPROTO;
  return resp.status().code();
}

template <typename Fn>
void OssService::Counted(const OssRequest& oreq, const rpc::Request& req, rpc::Reply* reply,
                         Fn&& handle) {
  if (metrics_ == nullptr) return handle();
  uint64_t read = 0, written = 0;
  DataBytes(oreq, req, &read, &written);
  metrics_->Begin(read + written);
  auto start = std::chrono::steady_clock::now();
  handle();
  uint64_t ns = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                          std::chrono::steady_clock::now() - start)
                                          .count());
  metrics_->End(read + written);
  int code = ReplyCode(*reply);
  if (code != 0) read = written = 0;  // nothing (or not all: unknown) moved
  metrics_->Record(oreq.op_case(), code, ns, read, written, oreq.job_id());
}

template <typename Fn>
bool OssService::RunInline(const OssRequest& oreq, rpc::Request& req, rpc::ReplyFn& done,
                           Fn&& handle) {
  rpc::Reply reply;
  if (qos_ != nullptr && qos_->enabled()) {
    QosWho who = WhoForQos(oreq);
    if (std::optional<std::string> cls = qos_->RuledClass(who.job, who.tenant)) {
      // A ruled class's read runs here only if the scheduler would dispatch
      // it at once anyway (a free slot, nothing of its own or ahead of it
      // queued): a quiet tenant's small reads skip the hand-off to an
      // executor thread, which on a loaded machine cost them as much as the
      // noisy neighbour QoS holds back.
      QosCost cost;
      DataBytes(oreq, req, &cost.read_bytes, &cost.write_bytes);
      if (!qos_->RunNow(*cls, cost, [&] { handle(&reply); })) return false;
      done(std::move(reply));
      return true;
    }
  }
  handle(&reply);
  done(std::move(reply));
  return true;
}

bool OssService::TryHandleInline(rpc::Request& req, rpc::ReplyFn& done) {
  if (inline_read_max_ == 0 || req.service != rpc::kServiceOss) return false;
  OssRequest oreq;
  if (!oreq.ParseFromString(req.payload)) return false;
  if (oreq.op_case() == OssRequest::kKvGet) return TryKvGetInline(oreq, req, done);
  if (oreq.op_case() != OssRequest::kRead) return false;
  std::optional<ProbedRange> probed;
  if (oreq.read().length() > inline_read_max_) {
    probed = SendsCached(oreq, req);
    if (!probed) return false;
  }
  return RunInline(oreq, req, done, [&](rpc::Reply* reply) {
    HandleCounted(oreq, req, reply, probed ? &*probed : nullptr);
  });
}

// The answer sends the range the probe opened (HandleParsed), so a read is
// opened once: an fstat, a cachestat and the end chunks' check.
std::optional<OssService::ProbedRange> OssService::SendsCached(const OssRequest& oreq,
                                                               const rpc::Request& req) const {
  if (!req.file_bulk_ok || !oreq.read().client_checks()) return std::nullopt;
  ObjectStore* store = Find(oreq.ost());
  if (store == nullptr) return std::nullopt;
  Result<CachedRange> r =
      store->OpenCachedRange(oreq.oid(), oreq.read().offset(), oreq.read().length());
  if (!r.ok()) return std::nullopt;
  return ProbedRange{store, std::move(r).value()};
}

// The get's one lookup and open happen here, before QoS is asked: a block
// that must come from the disk goes to a worker uncharged (which opens it
// again: the disk read dwarfs that), a cached one is answered from this open.
bool OssService::TryKvGetInline(const OssRequest& oreq, rpc::Request& req, rpc::ReplyFn& done) {
  if (!req.file_bulk_ok) return false;
  Result<uint32_t> tenant = KvTenant(oreq);
  kv::KvStore* store = KvFor(oreq.ost());
  if (!tenant.ok() || store == nullptr) return false;  // refused on a worker, and logged there
  const proto::KvGetReq& g = oreq.kv_get();
  Result<kv::KvStore::OpenBlock> b = OpenGet(*store, *tenant, g);
  if (!b.ok()) return false;  // the worker answers the error
  auto answer = [&](rpc::Reply* reply) {
    Counted(oreq, req, reply, [&] {
      OssResponse resp;
      Finish(AnswerGet(*store, *tenant, g, *b, req, &resp, reply), &resp, reply);
    });
  };
  if (AnswersWithoutDisk(*b, req) && RunInline(oreq, req, done, answer)) return true;
  if (b->fd >= 0) ::close(b->fd);
  return false;
}

void OssService::HandleAsync(rpc::Request& req, rpc::ReplyFn done) {
  auto oreq = std::make_shared<OssRequest>();
  if (qos_ == nullptr || !qos_->enabled() || req.service != rpc::kServiceOss ||
      !oreq->ParseFromString(req.payload)) {
    rpc::Reply reply;
    Handle(req, &reply);
    done(std::move(reply));
    return;
  }
  QosCost cost;
  DataBytes(*oreq, req, &cost.read_bytes, &cost.write_bytes);
  QosWho who = WhoForQos(*oreq);
  std::string cls = qos_->ClassOf(who.job, who.tenant);
  {
    // On this thread if the scheduler would dispatch it at once (RunNow).
    rpc::Reply reply;
    if (qos_->RunNow(cls, cost, [&] { HandleCounted(*oreq, req, &reply); })) {
      done(std::move(reply));
      return;
    }
  }
  // req is valid only during this call: the queued request owns its contents
  // (the bulk buffer too, which keeps counting against the admission budget
  // while it waits, so a throttled client's connection slows down by itself).
  auto held = std::make_shared<rpc::Request>(std::move(req));
  qos_->Submit(cls, cost, [this, held, oreq, done = std::move(done)]() {
    rpc::Reply reply;
    HandleCounted(*oreq, *held, &reply);
    done(std::move(reply));
  });
}

void OssService::Handle(rpc::Request& req, rpc::Reply* reply) {
  reply->bulk.clear();
  reply->pooled_bulk.Reset();
  reply->bulk_piece_crcs.clear();
  reply->bulk_value.reset();
  reply->file_bulk.reset();
  OssRequest oreq;
  if (req.service != rpc::kServiceOss || !oreq.ParseFromString(req.payload)) {
    LOG_WARN("malformed request from " << req.peer);
    OssResponse resp;
    if (metrics_ != nullptr) metrics_->Record(0, EPROTO, 0, 0, 0, {});
    return Finish(Status::Errno(EPROTO, "malformed OSS request"), &resp, reply);
  }
  HandleCounted(oreq, req, reply);
}

OssService::Targets OssService::targets() const {
  std::lock_guard<std::mutex> lock(mu_);
  return *targets_;
}

void OssService::HandleCounted(const OssRequest& oreq, rpc::Request& req, rpc::Reply* reply,
                               ProbedRange* probed) {
  Counted(oreq, req, reply, [&] { HandleParsed(oreq, req, reply, probed); });
}

void OssService::HandleParsed(const OssRequest& oreq, rpc::Request& req, rpc::Reply* reply,
                              ProbedRange* probed) {
  if (IsKvOp(oreq.op_case())) return HandleKv(oreq, req, reply);
  OssResponse resp;
  if (keyed_) {
    Status allowed = CheckCapabilities(oreq);
    if (!allowed.ok()) {
      LogDenied(oreq, allowed);
      resp.set_unknown_key(auth::IsUnknownKey(allowed));
      return Finish(allowed, &resp, reply);
    }
  }
  if (oreq.op_case() == OssRequest::kFenceLift) {
    const proto::FenceLiftReq& lift = oreq.fence_lift();
    if (lift.osts_size() != lift.oids_size()) {
      return Finish(Status::Errno(EINVAL, "fence_lift: osts and oids differ in number"), &resp, reply);
    }
    std::vector<CopyFence::Object> objects;
    for (int i = 0; i < lift.osts_size(); ++i) objects.emplace_back(lift.osts(i), lift.oids(i));
    copy_fence_.Lift(objects);
    return Finish(Status::Ok(), &resp, reply);
  }
  ObjectStore* store = Find(oreq.ost());
  if (store == nullptr) {
    return Finish(Status::Errno(ESTALE, "OST index not served here"), &resp, reply);
  }
  if (oreq.mirror_copy() && oreq.op_case() == OssRequest::kRead) {
    bool in_set = false;
    Status copy_ok = copy_fence_.CheckRead(oreq.ost(), oreq.oid(), &in_set);
    if (!copy_ok.ok()) {
      // Not in the set: the OSS is catching up; a bare ESTALE, which the
      // client asks again (until its timeout) or takes to another copy.
      resp.set_stale_copy(in_set);
      LOG_DEBUG("ost " << oreq.ost() << " oid " << oreq.oid() << ": " << copy_ok.ToString());
      return Finish(copy_ok, &resp, reply);
    }
  }
  Result<WriteFence::Admission> admitted =
      Mutates(oreq.op_case()) ? fence_.Admit(oreq.client_id(), oreq.fence_epoch())
                              : Result<WriteFence::Admission>(WriteFence::Admission());
  if (!admitted.ok()) {
    resp.set_fenced(true);
    LOG_DEBUG("ost " << oreq.ost() << " oid " << oreq.oid() << ": "
                     << admitted.status().ToString());
    return Finish(admitted.status(), &resp, reply);
  }
  // Only a range probed on the store found here (the targets may have changed
  // since), and only now that every check above passed.
  CachedRange* range = probed != nullptr && probed->store == store ? &probed->range : nullptr;
  // Applied while the admission holds the fence (released after the reply is packed).
  Status st = oreq.op_case() == OssRequest::kCopy
                  ? Copy(*store, oreq)
                  : Dispatch(*store, oreq, req, range, &resp, reply);
  // The store's only ESTALE: a client with an old layout (tells it apart
  // from the unknown-OST ESTALE above, which a fresh OST map may cure).
  if (st.code() == ESTALE) resp.set_object_destroyed(true);
  if (st.code() == EIO) {  // a failing disk or corrupt data is worth an operator's attention
    LOG_ERROR("ost " << oreq.ost() << " oid " << oreq.oid() << ": " << st.ToString());
  } else if (!st.ok()) {
    LOG_DEBUG("ost " << oreq.ost() << " oid " << oreq.oid() << " op " << oreq.op_case() << ": "
                     << st.ToString());
  }
  Finish(st, &resp, reply);
}

}  // namespace sfs::oss
