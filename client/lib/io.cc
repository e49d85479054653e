// Striper: splits file I/O into per-object OSS calls, starts them all, then
// waits for them all. See io.h for the retry and error rules.
#include "client/lib/io.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <thread>
#include <utility>

#include "client/lib/fence_epoch.h"
#include "client/lib/io_piece.h"
#include "client/lib/job_id.h"
#include "client/lib/oss_pool.h"
#include "common/ec/rs_codec.h"
#include "common/layout/stripe.h"
#include "common/log.h"
#include "common/rpc/rpc.h"
#include "oss.pb.h"

namespace sfs::client {

using Clock = std::chrono::steady_clock;

namespace {

using Piece = Striper::Piece;

constexpr int kMaxRounds = 16;

// Owners of the cluster-wide range locks of mirrored writes: one per write
// (or per file of a batch), apart from the EC rows' (ec_io.cc) and the
// kernel's lock owners.
constexpr uint64_t kMirrorOwnerBase = uint64_t{0x4D} << 56;

// Ops a late copy of could undo a later one: they carry the fence epoch.
bool Mutates(const Piece& p) {
  return p.op == Piece::Op::kWrite || p.op == Piece::Op::kTruncate || p.op == Piece::Op::kWriteV ||
         (p.op == Piece::Op::kCustom && p.custom->mutates);
}

// True iff a call that failed with st may have reached the OSS and still be
// applied: it ended without a reply (EBADMSG came with one; EMSGSIZE never left).
bool MayLandLate(const Status& st) {
  return !st.ok() && st.code() != EBADMSG && st.code() != EMSGSIZE;
}

// The pieces the OSS refused as fenced, to be sent again at once: their
// calls were answered, so nothing of them was applied and none timed out.
std::vector<Piece*> TakeFenced(const std::vector<Piece*>& pieces) {
  std::vector<Piece*> again;
  for (Piece* p : pieces) {
    if (std::exchange(p->fenced, false)) again.push_back(p);
  }
  return again;
}

// A read whose reply failed its frame crc (the channel's EBADMSG): with
// client_checks the OSS sent the bytes without verifying them.
bool BadCrc(const Piece& p) {
  return p.op == Piece::Op::kRead && p.transport_error && p.status.code() == EBADMSG;
}

// The reads of `pieces` whose reply failed its crc and that were not yet
// asked again, marked to be asked again with the OSS checking the bytes
// against its stored crcs: a transient mismatch (a write raced with the send)
// then reads right, and a chunk that rotted on disk comes back as the OSS's
// EIO naming it (docs/durability.md).
std::vector<Piece*> TakeBadCrcReads(const std::vector<Piece*>& pieces) {
  std::vector<Piece*> again;
  for (Piece* p : pieces) {
    if (!BadCrc(*p) || p->oss_verifies) continue;
    LOG_WARN("OST " << p->ost << " object " << p->oid << " offset " << p->offset << ": "
                    << p->status.message() << "; reading it again, verified by the OSS");
    p->oss_verifies = true;
    again.push_back(p);
  }
  return again;
}

// Refused for a key the OSS does not hold, with a token already renewed.
bool KeyNotYetKnown(const Piece& p) { return p.unknown_key && p.renewed; }

// The OSS could not be reached or does not serve the OST: a fresh map may help.
bool Unreachable(const Piece& p) {
  if (KeyNotYetKnown(p)) return true;  // as ESTALE: the same call again, after a backoff
  if (p.destroyed) return false;  // no map can bring a destroyed object back
  if (p.stale_copy) return false;  // the OSS answered: another copy is the cure
  if (BadCrc(p)) return false;    // it answered; another map will not change the bytes
  if (p.status.code() == ESTALE) return true;
  return p.transport_error && p.status.code() != EPROTO && p.status.code() != EMSGSIZE;
}

Result<layout::Geometry> GeometryOf(const LayoutSpec& l) {
  if (l.objects.empty() || l.stripe_size == 0) {
    return Status(EIO, "file layout has no objects");
  }
  return layout::Geometry{l.stripe_size, l.Stripes()};
}

// Pieces for [off, off + len): one per stripe unit, merged while contiguous in
// both the object and the file (stripe_count 1), cut at max_piece bytes.
std::vector<Piece> SplitRange(const LayoutSpec& l, const layout::Geometry& g, Piece::Op op,
                              uint64_t off, uint64_t len, uint64_t max_piece = Striper::kMaxPiece) {
  std::vector<Piece> out;
  for (const layout::Extent& e : layout::MapRange(g, off, len)) {
    uint64_t done = 0;
    while (done < e.length) {
      uint64_t obj_off = e.obj_offset + done;
      uint64_t file_off = e.file_offset + done;
      Piece* last = out.empty() ? nullptr : &out.back();
      bool joins = last != nullptr && last->ost == l.objects[e.stripe].ost &&
                   last->oid == l.objects[e.stripe].oid &&
                   last->offset + last->length == obj_off &&
                   last->file_offset + last->length == file_off &&
                   last->length < max_piece;
      if (!joins) {
        Piece p;
        p.op = op;
        p.ost = l.objects[e.stripe].ost;
        p.oid = l.objects[e.stripe].oid;
        p.stripe = e.stripe;
        if (!l.capability.empty()) p.caps.emplace_back(l.ino, l.capability);
        p.offset = obj_off;
        p.file_offset = file_off;
        out.push_back(p);
        last = &out.back();
      }
      uint64_t n = std::min(e.length - done, max_piece - last->length);
      last->length += n;
      done += n;
    }
  }
  return out;
}

// One piece per stripe of the layout (its first copy's object).
std::vector<Piece> PerObject(const LayoutSpec& l, Piece::Op op) {
  std::vector<Piece> out(l.Stripes());
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].op = op;
    out[i].ost = l.objects[i].ost;
    out[i].oid = l.objects[i].oid;
    out[i].stripe = static_cast<uint32_t>(i);
    if (!l.capability.empty()) out[i].caps.emplace_back(l.ino, l.capability);
  }
  return out;
}

}  // namespace

// A copy's failure that another copy may stand in for: its OSS did not
// answer, does not serve the OST, or failed the I/O. Not a destroyed object
// (a stale layout: every copy is gone) nor a refusal of the request itself.
bool CopyFailed(const Piece& p) {
  if (p.status.ok() || p.destroyed) return false;
  if (p.transport_error) return p.status.code() != EPROTO && p.status.code() != EMSGSIZE;
  return p.status.code() == ESTALE || p.status.code() == EIO;
}

namespace {

// How long an OST that failed a call is tried last among a stripe's copies.
constexpr auto kSuspectFor = std::chrono::seconds(10);

std::string Serialize(const Piece& p, uint64_t client_id) {
  proto::OssRequest req;
  req.set_ost(p.ost);
  req.set_oid(p.oid);
  req.set_client_id(client_id);
  req.set_xid(p.xid);
  if (Mutates(p)) req.set_fence_epoch(p.epoch);
  if (!CurrentJob().empty()) req.set_job_id(CurrentJob());  // jobstats (job_id.h)
  for (const auto& [ino, token] : p.caps) req.add_capabilities(token);
  switch (p.op) {
    case Piece::Op::kRead:
      req.mutable_read()->set_offset(p.offset);
      req.mutable_read()->set_length(p.length);
      req.mutable_read()->set_client_checks(!p.oss_verifies);
      if (p.mirror_copy) req.set_mirror_copy(true);
      break;
    case Piece::Op::kWrite:
      req.mutable_write()->set_offset(p.offset);
      break;
    case Piece::Op::kTruncate:
      req.mutable_truncate()->set_size(p.offset);
      break;
    case Piece::Op::kStat:
      req.mutable_stat();
      break;
    case Piece::Op::kSync:
      req.mutable_sync();
      break;
    case Piece::Op::kCustom:
      p.custom->fill(req);
      break;
    case Piece::Op::kWriteV:
      for (const Piece::Extent& e : p.extents) {
        proto::ObjExtent* x = req.mutable_write_v()->add_extents();
        x->set_oid(e.oid);
        x->set_offset(e.offset);
        x->set_length(e.length);
        x->set_skip(static_cast<uint32_t>(e.skip));
      }
      break;
  }
  return req.SerializeAsString();
}

// A write_v's per-extent statuses; a reply without one per extent is taken
// as EPROTO (the caller then sends the writes one by one).
void DecodeWriteV(Piece& p, const proto::OssResponse& r) {
  if (r.write_status_size() != static_cast<int>(p.extents.size())) {
    p.status = Status(EPROTO, "write_v reply with " + std::to_string(r.write_status_size()) +
                                  " statuses for " + std::to_string(p.extents.size()) +
                                  " extents");
    return;
  }
  for (size_t i = 0; i < p.extents.size(); ++i) {
    const proto::Status& st = r.write_status(static_cast<int>(i));
    p.extents[i].status = st.code() == 0 ? Status::Ok() : Status(st.code(), st.message());
  }
}

void Decode(Piece& p, Status st, const rpc::Response& resp) {
  p.transport_error = !st.ok();
  p.destroyed = false;
  p.fenced = false;
  p.stale_copy = false;
  p.unknown_key = false;
  if (!st.ok()) {
    p.status = std::move(st);
    return;
  }
  proto::OssResponse r;
  if (!r.ParseFromString(resp.payload)) {
    p.transport_error = true;
    p.status = Status(EBADMSG, "unparsable OSS reply");
    return;
  }
  if (r.status().code() != 0) {
    p.status = Status(r.status().code(), r.status().message());
    p.destroyed = r.status().code() == ESTALE && r.object_destroyed();
    p.fenced = r.status().code() == ESTALE && r.fenced();
    p.stale_copy = r.status().code() == ESTALE && r.stale_copy();
    p.unknown_key = r.status().code() == EACCES && r.unknown_key();
    return;
  }
  // The OSS sends exactly `length` bytes; should it send fewer, the rest are
  // zeros by the protocol (read_size says how many exist).
  if (p.op == Piece::Op::kRead && resp.bulk_len < p.in.size()) {
    std::memset(p.in.data() + resp.bulk_len, 0, p.in.size() - resp.bulk_len);
  }
  if (p.op == Piece::Op::kStat) p.blocks = r.stat().blocks();
  p.status = Status::Ok();
  if (p.op == Piece::Op::kWriteV) DecodeWriteV(p, r);
  if (p.op == Piece::Op::kCustom && p.custom->on_reply) p.custom->on_reply(r);
}

}  // namespace

// The first failing piece in order; transport trouble and stale OSTs become
// EIO. A destroyed object stays ESTALE, as NFS reports a file removed by
// another client: the application's handle is stale, not its disk failing,
// and only re-opening the path can help (retrying, as after EIO, cannot).
Status FirstError(std::span<const Piece> pieces) {
  for (const Piece& p : pieces) {
    if (p.status.ok()) continue;
    std::string where = "OST " + std::to_string(p.ost) + " object " + std::to_string(p.oid);
    if (p.channel != nullptr) where += " at " + p.channel->address();
    if (p.transport_error || (p.status.code() == ESTALE && !p.destroyed)) {
      return Status(EIO, where + ": " + p.status.ToString());
    }
    return Status(p.status.code(), where + ": " + p.status.message());
  }
  return Status::Ok();
}

namespace {

// Write calls for a batch's write pieces (GroupWrites).
struct GroupedWrites {
  static constexpr size_t kVector = SIZE_MAX;
  std::vector<Piece> calls;
  std::vector<size_t> piece_of;  // calls[i] is pieces[piece_of[i]], or a write_v (kVector)
};

// Most extents and bytes one write_v carries (the OSS takes 4096 and 64 MiB).
constexpr size_t kMaxVectorExtents = 1024;
constexpr uint64_t kMaxVectorBytes = 8 << 20;
// The OSS's page (and crc chunk) size, and the smallest write it sends
// O_DIRECT (oss/store/direct_io.h).
constexpr uint64_t kPage = 4096;
constexpr uint64_t kAlignFrom = 64 * 1024;

// True iff p covers an object page whole: padded to line up with the
// object's pages, its bytes let the OSS take that page's crc from the bulk's
// piece crcs (one crc pass) and, when large, write it O_DIRECT.
bool WorthPadding(const Piece& p) {
  return (p.offset + kPage - 1) / kPage * kPage + kPage <= p.offset + p.length;
}

// True iff p is worth a write_v of its own: large enough to go O_DIRECT on
// the OSS but at an unaligned offset, which only a padded extent lines up.
bool NeedsPadding(const Piece& p) { return p.length >= kAlignFrom && p.offset % kPage != 0; }

// Adds write piece `index` to write_v call v: as its own extent, or as more
// of the last one when it continues it (same object, next offset).
void AppendExtent(Piece& v, const Piece& p, size_t index) {
  for (const auto& cap : p.caps) {  // a batch may span files: each one's token, once
    if (std::find(v.caps.begin(), v.caps.end(), cap) == v.caps.end()) v.caps.push_back(cap);
  }
  Piece::Extent* last = v.extents.empty() ? nullptr : &v.extents.back();
  if (last != nullptr && last->oid == p.oid && last->offset + last->length == p.offset) {
    last->length += p.length;
  } else {
    const uint64_t skip =
        WorthPadding(p) ? (p.offset + kPage - v.gathered.size() % kPage) % kPage : 0;
    v.extents.push_back(Piece::Extent{p.oid, p.offset, p.length, skip, {}, Status::Ok()});
    v.gathered.resize(v.gathered.size() + skip);
    last = &v.extents.back();
  }
  last->members.push_back(index);
  v.gathered.insert(v.gathered.end(), p.out.begin(), p.out.end());
  v.length += p.length;
}

// One write_v call per OST that has two or more pieces (or one that
// NeedsPadding), copying their bytes into one bulk (an extent that covers a
// page whole padded to line up with the object's pages): the pieces in
// (object, offset) order, so that adjacent ones merge (the order of arrival is
// not the file's: strided writers race for the inode lock), cut at
// kMaxVectorExtents / kMaxVectorBytes. Reordering is safe because no two
// pieces of a batch overlap (WriteBatch's REQUIRES). Plain write calls for
// the rest and where may_vector says no.
GroupedWrites GroupWrites(const std::vector<Piece>& pieces,
                          const std::function<bool(uint32_t)>& may_vector) {
  std::map<uint32_t, std::vector<size_t>> per_ost;
  for (size_t i = 0; i < pieces.size(); ++i) per_ost[pieces[i].ost].push_back(i);
  GroupedWrites g;
  for (auto& [ost, members] : per_ost) {
    const bool worth = members.size() > 1 || NeedsPadding(pieces[members[0]]);
    if (!worth || !may_vector(ost)) {
      for (size_t i : members) {
        g.calls.push_back(pieces[i]);
        g.piece_of.push_back(i);
      }
      continue;
    }
    std::stable_sort(members.begin(), members.end(), [&](size_t a, size_t b) {
      const Piece& x = pieces[a];
      const Piece& y = pieces[b];
      return std::pair(x.oid, x.offset) < std::pair(y.oid, y.offset);
    });
    uint64_t left = 0;  // bytes of this OST's pieces not yet appended
    for (size_t i : members) left += pieces[i].length;
    Piece* v = nullptr;
    for (size_t i : members) {
      if (v == nullptr || v->extents.size() >= kMaxVectorExtents ||
          v->length + pieces[i].length > kMaxVectorBytes) {
        g.calls.emplace_back().op = Piece::Op::kWriteV;
        g.calls.back().ost = ost;
        g.calls.back().fail_fast = true;  // unless a member may not (below)
        g.piece_of.push_back(GroupedWrites::kVector);
        v = &g.calls.back();
        // Room for the data and some padding at once: no copy on growth.
        v->gathered.reserve(std::min(left, kMaxVectorBytes) + 16 * kPage);
      }
      AppendExtent(*v, pieces[i], i);
      v->fail_fast = v->fail_fast && pieces[i].fail_fast;
      left -= pieces[i].length;
    }
  }
  for (Piece& c : g.calls) {
    if (c.op == Piece::Op::kWriteV) c.out = c.gathered;
  }
  return g;
}

// A finished write_v's outcome on the write pieces it carried: the call's
// own failure (unreachable, timed out, ...) on all, else each extent's status.
void SpreadOutcome(const Piece& call, std::vector<Piece>& pieces) {
  for (const Piece::Extent& e : call.extents) {
    for (size_t m : e.members) {
      Piece& p = pieces[m];
      p.channel = call.channel;
      if (!call.status.ok()) {
        p.status = call.status;
        p.transport_error = call.transport_error;
        p.destroyed = call.destroyed;
      } else {
        p.status = e.status;
        p.transport_error = false;
        p.destroyed = e.status.code() == ESTALE;  // the store's only ESTALE
      }
    }
  }
}

}  // namespace

Striper::Striper(OssPool* pool, uint64_t client_id, std::function<uint64_t()> next_xid,
                 std::chrono::milliseconds timeout)
    : pool_(pool), client_id_(client_id), next_xid_(std::move(next_xid)), timeout_(timeout) {}

void Striper::StartAll(const std::vector<Piece*>& pieces, std::chrono::milliseconds timeout) {
  // Every call is started before any is awaited: all stripes' OSSes work at once.
  rpc::CallOptions opts;
  for (Piece* p : pieces) {
    opts.timeout = p->timeout.count() > 0 ? p->timeout : timeout;
    opts.fail_fast = p->fail_fast;
    p->call.reset();
    Result<OssPool::Route> route = pool_->RouteFor(p->ost);
    if (!route.ok()) {
      p->channel = nullptr;
      p->fence = nullptr;
      p->status = route.status();
      p->transport_error = false;
      continue;
    }
    p->channel = route->channel;
    p->fence = route->fence;
    p->epoch = p->fence->current();
    p->call = p->channel->Start(rpc::kServiceOss, Serialize(*p, client_id_), p->out, p->in, opts);
  }
}

void Striper::WaitAll(const std::vector<Piece*>& pieces) {
  for (Piece* p : pieces) {
    if (p->call == nullptr) continue;
    rpc::Response resp;
    Status st = p->channel->Wait(p->call, &resp);
    p->call.reset();
    // Before the failure is reported or retried: a retry or a later write
    // carries the raised epoch, which fences this copy should it land late.
    // A call the channel re-sent on a new connection: its first copy may too.
    if (Mutates(*p) && (MayLandLate(st) || resp.resent)) p->fence->Abandoned(p->epoch);
    Decode(*p, std::move(st), resp);
  }
}

Status Striper::Run(std::vector<Piece>& pieces) {
  const std::chrono::milliseconds timeout = timeout_;
  std::vector<Piece*> pending;
  pending.reserve(pieces.size());
  for (Piece& p : pieces) {
    p.xid = next_xid_();
    pending.push_back(&p);
  }
  const Clock::time_point start = Clock::now();
  auto backoff = std::chrono::milliseconds(50);
  UseRenewed(pending);
  for (int round = 1;; ++round) {
    uint64_t generation = pool_->generation();
    StartAll(pending, timeout);
    WaitAll(pending);
    // A capability expired (or its key rotated): new ones from the MDS, and
    // those calls once more. The OSS refused them unapplied.
    if (Renew(pending)) {
      std::vector<Piece*> again;
      for (Piece* p : pending) {
        if (p->renewed && p->status.code() == EACCES) again.push_back(p);
      }
      StartAll(again, timeout);
      WaitAll(again);
    }
    if (std::vector<Piece*> again = TakeBadCrcReads(pending); !again.empty()) {
      StartAll(again, timeout);
      WaitAll(again);
    }
    // Refused as fenced (sent before another call's timeout raised the
    // epoch): again at once, with the epoch now; bounded, in case the
    // epoch keeps rising (each pass is an answered call).
    for (int pass = 0; pass < kMaxRounds; ++pass) {
      std::vector<Piece*> again = TakeFenced(pending);
      if (again.empty()) break;
      StartAll(again, timeout);
      WaitAll(again);
    }
    std::vector<Piece*> failed;
    for (Piece* p : pending) {
      if (Unreachable(*p)) failed.push_back(p);
    }
    if (failed.empty() || round == kMaxRounds) break;
    Status st = pool_->RefreshIfStale(generation);
    if (!st.ok()) LOG_WARN("cannot refresh the OST map: " << st.ToString());
    bool moved_any = false;
    pending.clear();
    for (Piece* p : failed) {
      bool moved = pool_->Find(p->ost) != p->channel;
      // A renewed capability of a key the OSS has not learnt yet (the MDS
      // restarted or rotated since its last heartbeat): it will, within a
      // heartbeat or two (docs/security.md "Rotating signing keys").
      bool early = (p->status.code() == ESTALE || KeyNotYetKnown(*p)) &&
                   Clock::now() - start < timeout;
      if (moved || early) pending.push_back(p);
      moved_any |= moved;
    }
    if (pending.empty()) break;
    LOG_DEBUG("re-sending " << pending.size() << " OSS calls after "
                            << pending[0]->status.ToString());
    if (!moved_any) {
      std::this_thread::sleep_for(backoff);
      backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
    }
  }
  return FirstError(pieces);
}

void Striper::UseRenewed(const std::vector<Piece*>& pieces) {
  std::lock_guard<std::mutex> lock(mu_);
  if (renewed_.empty()) return;
  for (Piece* p : pieces) {
    for (auto& [ino, token] : p->caps) {
      auto it = renewed_.find(ino);
      if (it != renewed_.end() && it->second.first == token) token = it->second.second;
    }
  }
}

bool Striper::Renew(const std::vector<Piece*>& pieces) {
  if (!hooks_.refresh && !hooks_.renew) return false;
  std::map<uint64_t, std::string> fresh;  // one MDS call per inode
  bool any = false;
  for (Piece* p : pieces) {
    if (p->status.code() != EACCES || p->transport_error || p->renewed || p->caps.empty()) continue;
    p->renewed = true;
    for (auto& [ino, token] : p->caps) {
      if (ino == 0) continue;
      auto it = fresh.find(ino);
      if (it == fresh.end()) {
        Result<std::string> l = std::string();
        if (hooks_.renew) {
          l = hooks_.renew(ino, token);
        } else {
          Result<LayoutSpec> r = hooks_.refresh(ino);
          l = r.ok() ? Result<std::string>(r->capability) : Result<std::string>(r.status());
        }
        std::string renewed = l.ok() ? *l : std::string();
        if (!l.ok()) LOG_WARN("renewing the capability of inode " << ino << ": "
                                                                 << l.status().ToString());
        it = fresh.emplace(ino, renewed).first;
        if (!renewed.empty()) {
          std::lock_guard<std::mutex> lock(mu_);
          renewed_[ino] = {token, renewed};
        }
      }
      if (!it->second.empty()) {
        token = it->second;
        any = true;
      }
    }
  }
  return any;
}

Status Striper::Read(const LayoutSpec& l, uint64_t off, std::span<uint8_t> buf) {
  if (buf.empty()) return Status::Ok();
  if (l.IsEc()) return ReadEc(l, off, buf);
  SFS_ASSIGN_OR_RETURN(layout::Geometry g, GeometryOf(l));
  std::vector<Piece> pieces = SplitRange(l, g, Piece::Op::kRead, off, buf.size(), kMaxReadPiece);
  for (Piece& p : pieces) p.in = buf.subspan(p.file_offset - off, p.length);
  if (l.Copies() > 1) return ReadMirrored(l, pieces);
  return Run(pieces);
}

Status Striper::Write(const LayoutSpec& l, uint64_t off, std::span<const uint8_t> buf) {
  if (buf.empty()) return Status::Ok();
  if (l.IsEc()) return WriteEc(l, off, buf);
  SFS_ASSIGN_OR_RETURN(layout::Geometry g, GeometryOf(l));
  std::vector<Piece> pieces = SplitRange(l, g, Piece::Op::kWrite, off, buf.size());
  for (Piece& p : pieces) p.out = buf.subspan(p.file_offset - off, p.length);
  if (l.Copies() > 1) return RunMirroredLocked(l, pieces, off, off + buf.size() - 1);
  return Run(pieces);
}

void Striper::WriteBatch(std::span<BatchWrite> writes) {
  // Mirrored files' writes go out under one cluster-wide range lock per file
  // (the span of its writes in the batch), taken in inode order so that two
  // batches never wait on each other in a cycle.
  struct Held {
    const LayoutSpec* layout = nullptr;
    uint64_t owner = 0, start = UINT64_MAX, last = 0;
    bool kept = false;  // under the file's cached lock
    Status status;
  };
  std::map<uint64_t, Held> held;  // ino -> its lock
  auto mirrored = [](const BatchWrite& w) {
    return !w.buf.empty() && !w.layout->IsEc() && w.layout->Copies() > 1;
  };
  for (BatchWrite& w : writes) {
    if (!mirrored(w)) continue;
    Held& h = held[w.layout->ino];
    h.layout = w.layout;
    h.start = std::min(h.start, w.off);
    h.last = std::max(h.last, w.off + w.buf.size() - 1);
  }
  for (auto& [ino, h] : held) {
    h.owner = kMirrorOwnerBase | ++row_owners_;
    h.status = LockRange(*h.layout, h.owner, h.start, h.last, &h.kept);
  }
  auto lock_of = [&](const BatchWrite& w) -> Held* {
    return mirrored(w) ? &held.at(w.layout->ino) : nullptr;
  };
  std::vector<Piece> pieces;
  std::vector<size_t> first(writes.size() + 1, 0);  // writes[i]'s pieces start at first[i]
  std::vector<bool> split(writes.size(), false);
  std::vector<std::vector<Status>> groups(writes.size());  // mirrored writes: per piece
  std::vector<size_t> ec;  // erasure-coded writes
  for (size_t i = 0; i < writes.size(); ++i) {
    BatchWrite& w = writes[i];
    first[i] = pieces.size();
    if (w.buf.empty()) continue;
    if (w.layout->IsEc()) {
      ec.push_back(i);  // its own rows' read-modify-write and encoding: after the others
      continue;
    }
    if (Held* h = lock_of(w); h != nullptr && !h->status.ok()) {
      w.status = h->status;
      continue;
    }
    Result<layout::Geometry> g = GeometryOf(*w.layout);
    if (!g.ok()) {
      w.status = g.status();
      continue;
    }
    split[i] = true;
    std::vector<Piece> mine = SplitRange(*w.layout, *g, Piece::Op::kWrite, w.off, w.buf.size());
    for (Piece& p : mine) p.out = w.buf.subspan(p.file_offset - w.off, p.length);
    if (w.layout->Copies() > 1) mine = FanOut(*w.layout, mine, &groups[i]);
    for (Piece& p : mine) pieces.push_back(std::move(p));
  }
  first[writes.size()] = pieces.size();
  RunWrites(pieces);
  const std::span<const Piece> all(pieces);
  std::vector<size_t> again;  // mirrored writes no good copy took
  for (size_t i = 0; i < writes.size(); ++i) {
    if (!split[i]) continue;
    std::span<const Piece> mine = all.subspan(first[i], first[i + 1] - first[i]);
    if (writes[i].layout->Copies() == 1) {
      writes[i].status = FirstError(mine);
      continue;
    }
    Settle(*writes[i].layout, mine, &groups[i]);
    writes[i].status = Status::Ok();
    for (const Status& st : groups[i]) {
      if (!st.ok()) {
        writes[i].status = st;
        break;
      }
    }
    if (!writes[i].status.ok()) again.push_back(i);
  }
  for (auto& [ino, h] : held) {
    if (!h.status.ok()) continue;
    Status un = UnlockRange(*h.layout, h.owner, h.start, h.last, h.kept);
    if (un.ok()) continue;
    for (size_t i = 0; i < writes.size(); ++i) {
      if (lock_of(writes[i]) == &h && writes[i].status.ok()) writes[i].status = un;
    }
  }
  // Once more as Write does it (asking the MDS for resynced copies, waiting
  // for a restarting OSS), each under its own lock now that the batch's are
  // released.
  for (size_t i : again) writes[i].status = Write(*writes[i].layout, writes[i].off, writes[i].buf);
  for (size_t i : ec) writes[i].status = WriteEc(*writes[i].layout, writes[i].off, writes[i].buf);
}

void Striper::RunWrites(std::vector<Piece>& pieces) {
  GroupedWrites g = GroupWrites(pieces, [this](uint32_t ost) { return MayVector(ost); });
  (void)Run(g.calls);
  std::vector<Piece> singles;  // the writes of calls refused as unknown: one by one
  std::vector<size_t> single_of;
  for (size_t c = 0; c < g.calls.size(); ++c) {
    Piece& call = g.calls[c];
    if (g.piece_of[c] != GroupedWrites::kVector) {
      pieces[g.piece_of[c]] = std::move(call);
    } else if (call.status.code() == EPROTO) {
      NoteNoVector(call);
      for (const Piece::Extent& e : call.extents) {
        for (size_t m : e.members) {
          singles.push_back(pieces[m]);
          single_of.push_back(m);
        }
      }
    } else {
      SpreadOutcome(call, pieces);
    }
  }
  if (singles.empty()) return;
  (void)Run(singles);
  for (size_t i = 0; i < singles.size(); ++i) pieces[single_of[i]] = std::move(singles[i]);
}

bool Striper::MayVector(uint32_t ost) const {
  rpc::Channel* ch = pool_->Find(ost);
  if (ch == nullptr) return true;
  std::lock_guard<std::mutex> lock(mu_);
  return !no_vector_.contains(ch->address());
}

void Striper::NoteNoVector(const Piece& call) {
  if (call.channel == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (no_vector_.insert(call.channel->address()).second) {
    LOG_INFO("OSS " << call.channel->address() << " refused write_v (" << call.status.ToString()
                    << "): writing to it one call per write");
  }
}

Status Striper::Truncate(const LayoutSpec& l, uint64_t size) {
  if (l.IsEc()) return TruncateEc(l, size);
  SFS_ASSIGN_OR_RETURN(layout::Geometry g, GeometryOf(l));
  std::vector<Piece> pieces = PerObject(l, Piece::Op::kTruncate);
  for (size_t i = 0; i < pieces.size(); ++i) {
    pieces[i].offset = layout::ObjectSize(g, static_cast<uint32_t>(i), size);
  }
  if (l.Copies() > 1) return RunMirroredLocked(l, pieces, size, UINT64_MAX);
  return Run(pieces);
}

Status Striper::Sync(const LayoutSpec& l) {
  if (l.IsEc()) return SyncEc(l);
  std::vector<Piece> pieces = PerObject(l, Piece::Op::kSync);
  if (l.Copies() > 1) return RunMirrored(l, pieces);
  return Run(pieces);
}

Status Striper::Call(std::span<ObjectCall> calls) {
  std::vector<Piece> pieces(calls.size());
  for (size_t i = 0; i < calls.size(); ++i) {
    pieces[i].op = Piece::Op::kCustom;
    pieces[i].ost = calls[i].ost;
    pieces[i].oid = calls[i].oid;
    pieces[i].custom = &calls[i];
    pieces[i].caps = calls[i].caps;
  }
  Status first = Run(pieces);
  for (size_t i = 0; i < calls.size(); ++i) {
    calls[i].status = FirstError(std::span<const Piece>(&pieces[i], 1));
    calls[i].unknown_op = !pieces[i].transport_error && pieces[i].status.code() == EPROTO;
  }
  return first;
}

Status Striper::CallMirrored(const LayoutSpec& l, std::span<ObjectCall> calls, uint64_t start,
                             uint64_t last) {
  std::vector<Piece> pieces(calls.size());
  for (size_t i = 0; i < calls.size(); ++i) {
    pieces[i].op = Piece::Op::kCustom;
    pieces[i].stripe = calls[i].stripe;
    pieces[i].ost = l.objects[calls[i].stripe].ost;  // FanOut names each copy's own
    pieces[i].oid = l.objects[calls[i].stripe].oid;
    pieces[i].custom = &calls[i];  // shared by the copies: fill reads only the call
    pieces[i].caps = calls[i].caps;
  }
  return RunMirroredLocked(l, pieces, start, last);
}

std::string Striper::AddressOf(uint32_t ost) const {
  rpc::Channel* ch = pool_->Find(ost);
  return ch == nullptr ? std::string() : ch->address();
}

Result<uint64_t> Striper::Blocks(const LayoutSpec& l) {
  if (l.IsEc()) return BlocksEc(l);
  std::vector<Piece> pieces = PerObject(l, Piece::Op::kStat);
  if (l.Copies() > 1) {
    // Each stripe's blocks from the first good copy that answers, times the
    // copies (the space a mirrored file takes), so that stat works with an
    // OSS down. Reads are the fail-over path: a stat piece is a read.
    SFS_RETURN_IF_ERROR(ReadMirrored(l, pieces));
    uint64_t blocks = 0;
    for (const Piece& p : pieces) blocks += p.blocks;
    return blocks * l.Copies();
  }
  SFS_RETURN_IF_ERROR(Run(pieces));
  uint64_t blocks = 0;
  for (const Piece& p : pieces) blocks += p.blocks;
  return blocks;
}

bool Striper::IsStale(const LayoutSpec& l, size_t i) const {
  const StripeObject& o = l.objects[i];
  std::lock_guard<std::mutex> lock(mu_);
  auto it = states_.find({o.ost, o.oid});
  return it == states_.end() ? o.stale : it->second;
}

bool Striper::Absorb(const LayoutSpec& l) {
  bool healed = false;
  std::lock_guard<std::mutex> lock(mu_);
  for (const StripeObject& o : l.objects) {
    auto [it, added] = states_.try_emplace({o.ost, o.oid}, o.stale);
    if (!added) {
      healed |= it->second && !o.stale;
      it->second = o.stale;
    }
  }
  return healed;
}

bool Striper::Refresh(const LayoutSpec& l) {
  if (!hooks_.refresh || l.ino == 0) return false;
  Result<LayoutSpec> fresh = hooks_.refresh(l.ino);
  if (!fresh.ok()) {
    LOG_WARN("cannot refresh the layout of inode " << l.ino << ": " << fresh.status().ToString());
    return false;
  }
  // Objects the cached layout marks stale that the MDS now says are good.
  bool healed = Absorb(*fresh);
  for (const StripeObject& o : l.objects) {
    if (!o.stale) continue;
    for (const StripeObject& f : fresh->objects) healed |= f.ost == o.ost && f.oid == o.oid && !f.stale;
  }
  return healed;
}

void Striper::NoteCopyGen(const LayoutSpec& l, uint64_t gen) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = copy_gens_.find(l.ino);
    if (it == copy_gens_.end() ? gen == 0 : it->second == gen) return;
  }
  if (!hooks_.refresh) return;
  Result<LayoutSpec> fresh = hooks_.refresh(l.ino);
  if (!fresh.ok()) {  // the next grant tries again
    LOG_WARN("inode " << l.ino << ": the copy states moved and the layout cannot be fetched: "
                      << fresh.status().ToString());
    return;
  }
  Absorb(*fresh);
  std::lock_guard<std::mutex> lock(mu_);
  copy_gens_[l.ino] = gen;
}

void Striper::NoteCopyFailure(const Piece& p) {
  if (!p.stale_copy) return NoteFailed(p.ost);
  std::lock_guard<std::mutex> lock(mu_);
  states_[{p.ost, p.oid}] = true;
}

void Striper::NoteFailed(uint32_t ost) {
  std::lock_guard<std::mutex> lock(mu_);
  failed_[ost] = Clock::now();
}

bool Striper::RecentlyFailed(uint32_t ost) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = failed_.find(ost);
  return it != failed_.end() && Clock::now() - it->second < kSuspectFor;
}

std::vector<Piece> Striper::FanOut(const LayoutSpec& l, const std::vector<Piece>& pieces,
                                   std::vector<Status>* group_status, bool fail_fast) {
  const uint32_t stripes = l.Stripes();
  group_status->assign(pieces.size(), Status::Ok());
  std::vector<Piece> out;
  out.reserve(pieces.size() * l.Copies());
  for (size_t k = 0; k < pieces.size(); ++k) {
    bool any = false;
    const size_t begin = out.size();
    for (uint32_t m = 0; m < l.Copies(); ++m) {
      const size_t i = size_t{m} * stripes + pieces[k].stripe;
      if (IsStale(l, i)) continue;
      Piece c = pieces[k];
      c.ost = l.objects[i].ost;
      c.oid = l.objects[i].oid;
      c.copy = m;
      c.group = k;
      out.push_back(std::move(c));
      any = true;
    }
    // Several copies: one whose OSS refuses connections fails at once (and
    // is marked stale) rather than holding the write until the timeout.
    for (size_t c = begin; c < out.size(); ++c) out[c].fail_fast = fail_fast && out.size() - begin > 1;
    if (!any) {
      (*group_status)[k] = Status(EIO, "stripe " + std::to_string(pieces[k].stripe) +
                                           " of inode " + std::to_string(l.ino) +
                                           " has no good copy");
    }
  }
  return out;
}

void Striper::Settle(const LayoutSpec& l, std::span<const Piece> copies,
                     std::vector<Status>* group_status) {
  struct Group {
    int ok = 0;
    const Piece* hard = nullptr;        // a failure no other copy can stand in for
    std::vector<const Piece*> failed;   // copies whose OSS failed them (CopyFailed)
  };
  std::vector<Group> groups(group_status->size());
  for (const Piece& c : copies) {
    Group& g = groups[c.group];
    if (c.status.ok()) {
      ++g.ok;
    } else if (CopyFailed(c)) {
      g.failed.push_back(&c);
      NoteFailed(c.ost);
    } else if (g.hard == nullptr) {
      g.hard = &c;
    }
  }
  std::vector<StripeObject> mark;
  std::vector<size_t> marked_groups;
  for (size_t k = 0; k < groups.size(); ++k) {
    Group& g = groups[k];
    if (!(*group_status)[k].ok()) continue;
    if (g.hard != nullptr) {
      (*group_status)[k] = FirstError(std::span<const Piece>(g.hard, 1));
    } else if (g.ok == 0 && !g.failed.empty()) {
      (*group_status)[k] = FirstError(std::span<const Piece>(g.failed[0], 1));
    } else if (!g.failed.empty()) {
      for (const Piece* p : g.failed) {
        bool known = false;
        for (const StripeObject& o : mark) known |= o.ost == p->ost && o.oid == p->oid;
        if (!known) mark.push_back(StripeObject{p->ost, p->oid, p->copy, true});
      }
      marked_groups.push_back(k);
    }
  }
  if (mark.empty()) return;
  Status st;
  if (!hooks_.mark_stale || l.ino == 0) {
    st = Status(EIO, "a copy failed and its file's inode is unknown: cannot mark it stale");
  } else {
    Result<LayoutSpec> after = hooks_.mark_stale(l.ino, mark);
    if (after.ok()) {
      Absorb(*after);
      for (const StripeObject& o : mark) {
        LOG_WARN("inode " << l.ino << ": copy " << o.mirror << " (OST " << o.ost << " object "
                          << o.oid << ") missed a write; marked stale");
      }
    } else {
      st = Status(EIO, "cannot mark a failed copy stale: " + after.status().ToString());
    }
  }
  if (st.ok()) return;
  for (size_t k : marked_groups) (*group_status)[k] = st;
}

Status Striper::RunMirroredLocked(const LayoutSpec& l, std::vector<Piece>& pieces,
                                  uint64_t start, uint64_t last) {
  const uint64_t owner = kMirrorOwnerBase | ++row_owners_;
  bool kept = false;
  SFS_RETURN_IF_ERROR(LockRange(l, owner, start, last, &kept));
  Status st = RunMirrored(l, pieces);
  Status un = UnlockRange(l, owner, start, last, kept);
  SFS_RETURN_IF_ERROR(st);
  return un;
}

Status Striper::LockRange(const LayoutSpec& l, uint64_t owner, uint64_t start, uint64_t last,
                           bool* kept) {
  *kept = false;
  if (!cache_locks_.load(std::memory_order_relaxed) || !hooks_.cached_lock || l.ino == 0 ||
      no_cluster_locks_) {
    return LockClusterBytes(l, owner, start, last, true);
  }
  auto overlaps = [&](const Cached& c) {
    for (const auto& [a, b] : c.users) {
      if (a <= last && start <= b) return true;
    }
    return false;
  };
  {
    std::unique_lock<std::mutex> lock(cached_mu_);
    for (;;) {
      auto it = cached_.find(l.ino);
      if (it == cached_.end()) break;
      Cached& c = it->second;
      if (c.held && !c.recalled && !overlaps(c)) {
        c.users.emplace_back(start, last);
        *kept = true;
        return Status::Ok();
      }
      cached_cv_.wait(lock);  // asked for, released, or a write of ours over the range
    }
    cached_[l.ino] = Cached{};  // asked for by this call
  }
  Result<MirrorHooks::Grant> g = hooks_.cached_lock(l.ino, owner, start, last);
  if (g.ok()) NoteCopyGen(l, g->copy_gen);
  {
    std::lock_guard<std::mutex> lock(cached_mu_);
    Cached& c = cached_[l.ino];
    if (g.ok() && g->cached) {
      c.held = true;
      c.owner = owner;
      c.users.emplace_back(start, last);  // recalled meanwhile: released by UnlockRange
      *kept = true;
      return Status::Ok();
    }
    cached_.erase(l.ino);
  }
  cached_cv_.notify_all();
  if (g.ok()) return Status::Ok();  // the range's alone (a contended file): unlocked as such
  // ENOLCK, or a failure: the plain lock's own handling and messages.
  return LockClusterBytes(l, owner, start, last, true);
}

Status Striper::UnlockRange(const LayoutSpec& l, uint64_t owner, uint64_t start, uint64_t last,
                             bool kept) {
  if (!kept) return LockClusterBytes(l, owner, start, last, false);
  uint64_t release = 0;
  {
    std::lock_guard<std::mutex> lock(cached_mu_);
    auto it = cached_.find(l.ino);
    if (it == cached_.end()) return Status::Ok();  // forgotten (an MDS restart)
    Cached& c = it->second;
    auto u = std::find(c.users.begin(), c.users.end(), std::make_pair(start, last));
    if (u != c.users.end()) c.users.erase(u);
    if (c.users.empty() && c.recalled && !c.releasing) {
      c.releasing = true;
      release = c.owner;
    }
  }
  cached_cv_.notify_all();
  if (release != 0) ReleaseCached(l.ino, release);
  return Status::Ok();
}

void Striper::ReleaseCached(uint64_t ino, uint64_t owner) {
  Result<uint64_t> un = hooks_.row_lock(ino, owner, 0, UINT64_MAX, false);
  if (!un.ok()) {
    LOG_WARN("inode " << ino << ": giving back the cached redundancy range lock: "
                      << un.status().ToString());
  }
  {
    std::lock_guard<std::mutex> lock(cached_mu_);
    auto it = cached_.find(ino);
    if (it != cached_.end() && it->second.owner == owner && it->second.releasing) cached_.erase(it);
  }
  cached_cv_.notify_all();
}

void Striper::RecallCached(uint64_t ino) {
  uint64_t release = 0;
  {
    std::lock_guard<std::mutex> lock(cached_mu_);
    auto it = cached_.find(ino);
    if (it == cached_.end()) return;
    Cached& c = it->second;
    c.recalled = true;  // asked for now: the grant's own user releases it
    if (!c.held || !c.users.empty() || c.releasing) return;
    c.releasing = true;
    release = c.owner;
  }
  ReleaseCached(ino, release);
}

void Striper::ForgetCachedLocks() {
  {
    std::lock_guard<std::mutex> lock(cached_mu_);
    for (auto it = cached_.begin(); it != cached_.end();) {
      Cached& c = it->second;
      if (c.held && c.users.empty() && !c.releasing) {
        it = cached_.erase(it);
        continue;
      }
      // Held and in use: its last user unlocks (nothing, at the new MDS).
      // Being asked for: the answer says.
      if (c.held) c.recalled = true;
      ++it;
    }
  }
  cached_cv_.notify_all();
}

size_t Striper::CachedLockCount() {
  std::lock_guard<std::mutex> lock(cached_mu_);
  size_t n = 0;
  for (const auto& [ino, c] : cached_) n += c.held ? 1 : 0;
  return n;
}

Status Striper::RunMirrored(const LayoutSpec& l, std::vector<Piece>& pieces) {
  std::vector<Status> gs;
  std::vector<Piece> copies = FanOut(l, pieces, &gs);
  (void)Run(copies);
  Settle(l, copies, &gs);
  std::vector<size_t> failed;
  for (size_t k = 0; k < gs.size(); ++k) {
    if (!gs[k].ok()) failed.push_back(k);
  }
  // Every good copy of some stripe failed: the MDS may know a resynced one,
  // and without fail_fast a copy's OSS that is restarting may yet answer.
  if (!failed.empty()) {
    Refresh(l);
    std::vector<Piece> again;
    for (size_t k : failed) again.push_back(pieces[k]);
    std::vector<Status> gs2;
    std::vector<Piece> copies2 = FanOut(l, again, &gs2, /*fail_fast=*/false);
    (void)Run(copies2);
    Settle(l, copies2, &gs2);
    for (size_t j = 0; j < failed.size(); ++j) gs[failed[j]] = gs2[j];
  }
  for (const Status& st : gs) {
    if (!st.ok()) return st;
  }
  return Status::Ok();
}

Status Striper::ReadMirrored(const LayoutSpec& l, std::vector<Piece>& pieces) {
  const uint32_t stripes = l.Stripes(), copies = l.Copies();
  std::vector<uint32_t> tried(pieces.size(), 0);  // bit m: copy m was asked
  // Points p at its next good copy not yet asked; false if none is left.
  auto choose = [&](size_t k) {
    Piece& p = pieces[k];
    const uint32_t unit = l.stripe_size == 0 ? 0 : static_cast<uint32_t>(p.file_offset / l.stripe_size);
    int pick = -1;
    for (int pass = 0; pass < 2 && pick < 0; ++pass) {
      for (uint32_t j = 0; j < copies; ++j) {
        const uint32_t m = (unit / stripes + p.stripe + j) % copies;  // spread over the copies
        const size_t i = size_t{m} * stripes + p.stripe;
        if ((tried[k] >> m & 1) != 0 || IsStale(l, i)) continue;
        if (pass == 0 && RecentlyFailed(l.objects[i].ost)) continue;  // tried last
        pick = static_cast<int>(m);
        break;
      }
    }
    if (pick < 0) return false;
    const size_t i = static_cast<size_t>(pick) * stripes + p.stripe;
    p.ost = l.objects[i].ost;
    p.oid = l.objects[i].oid;
    p.copy = static_cast<uint32_t>(pick);
    p.mirror_copy = true;
    tried[k] |= 1u << pick;
    return true;
  };
  std::vector<size_t> pending;
  for (size_t k = 0; k < pieces.size(); ++k) {
    if (choose(k)) {
      pending.push_back(k);
    } else {
      pieces[k].status = Status(EIO, "stripe " + std::to_string(pieces[k].stripe) + " of inode " +
                                         std::to_string(l.ino) + " has no good copy");
    }
  }
  // How many good copies piece k has not been asked yet.
  auto left = [&](size_t k) {
    uint32_t n = 0;
    for (uint32_t m = 0; m < copies; ++m) {
      n += (tried[k] >> m & 1) == 0 && !IsStale(l, size_t{m} * stripes + pieces[k].stripe);
    }
    return n;
  };
  const auto quick = std::min<std::chrono::milliseconds>(kFailoverAfter, timeout_ / copies);
  bool refreshed = false;
  // Copies of piece k whose OSS refused them as stale (the fence), and those
  // of them the MDS has ok since: resynced, their OSS lifts the fence at its
  // next heartbeat at the latest (docs/redundancy.md "Fences"). They are
  // asked again after a pause, until the RPC timeout, not given up.
  std::vector<uint32_t> fenced(pieces.size(), 0), lagging(pieces.size(), 0);
  const Clock::time_point deadline = Clock::now() + timeout_;
  auto pause = std::chrono::milliseconds(50);
  while (!pending.empty()) {
    // Copies still to try after this one: wait `quick`, not the whole timeout.
    std::vector<Piece> round;
    for (size_t k : pending) {
      round.push_back(pieces[k]);
      round.back().timeout = left(k) > 0 ? quick : std::chrono::milliseconds(0);
      round.back().fail_fast = left(k) > 0;
    }
    (void)Run(round);
    std::vector<size_t> next, stuck, again;
    for (size_t j = 0; j < pending.size(); ++j) {
      const size_t k = pending[j];
      pieces[k] = std::move(round[j]);
      if (!CopyFailed(pieces[k])) continue;
      const uint32_t bit = 1u << pieces[k].copy;
      if (pieces[k].stale_copy && (lagging[k] & bit) != 0) {
        again.push_back(k);  // the MDS has it ok: the OSS's fence lags
        continue;
      }
      if (pieces[k].stale_copy) fenced[k] |= bit;
      NoteCopyFailure(pieces[k]);
      LOG_WARN("OST " << pieces[k].ost << " object " << pieces[k].oid << ": "
                      << pieces[k].status.ToString() << "; reading another copy");
      (choose(k) ? next : stuck).push_back(k);
    }
    // No copy left to try for some: the MDS may know of a resynced one.
    if (!stuck.empty() && !refreshed) {
      refreshed = true;
      if (Refresh(l)) {
        for (size_t k : stuck) {
          for (uint32_t m = 0; m < copies; ++m) {
            const uint32_t bit = 1u << m;
            if ((fenced[k] & bit) == 0 || IsStale(l, size_t{m} * stripes + pieces[k].stripe)) continue;
            lagging[k] |= bit;
            tried[k] &= ~bit;
          }
          if (choose(k)) next.push_back(k);
        }
      }
    }
    if (!again.empty()) {
      if (Clock::now() + pause < deadline) {
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::milliseconds(400));
        for (size_t k : again) {
          pieces[k].status = Status::Ok();
          next.push_back(k);
        }
      } else {
        for (size_t k : again) {
          LOG_WARN("OST " << pieces[k].ost << " object " << pieces[k].oid
                          << ": still fenced at its OSS though the MDS has it ok");
        }
      }
    }
    pending = std::move(next);
  }
  return FirstError(pieces);
}

}  // namespace sfs::client
