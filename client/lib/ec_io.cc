// Striper: erasure-coded layouts (io.h's EC paragraph, docs/redundancy.md).
//
// Write protocol. A write is cut into rows (ec_plan.h). Rows it covers
// whole are encoded from the caller's buffer and their K+M chunks written at
// once: nothing is read back, which is what checkpoints do. A row it covers
// in part is read-modify-written over the columns it touches: the old bytes
// of the data chunks it does not replace in those columns are read (rebuilt
// from other chunks if their OSS is down), the new bytes laid over them, the
// parity of those columns encoded again, and the new data bytes and parity
// columns written. Parity is never updated from a delta, so a parity chunk
// that missed a write cannot poison later ones.
//
// Consistency: the rows a write touches are locked for the whole
// read-modify-write, first in this Striper (LockRows: this client's threads,
// the FUSE loop and write-behind workers, in turn), then cluster-wide at the
// MDS (LockRange: a byte-range lock over the rows, in a lock space of its
// own), so no two updates of one row interleave, from any client. A lone
// writer keeps the file's whole range (the cached lock mirrors use, io.h)
// until another client's request recalls it, so its rows cost no MDS round
// trips.
//
// Failures. Reads go to data chunks only, fail-fast with a short timeout
// (io.h's mirror rule); a chunk that fails (or is stale) is rebuilt from any
// K other chunks of its row in the same call. Mutations skip stale objects;
// an object whose OSS missed one is marked stale at the MDS before the call
// returns, while that leaves at most M stale (else EIO, and the MDS refuses
// more than M too): an acknowledged write is on every object the MDS holds
// good, and any K of those rebuild every row.
#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <utility>

#include "client/lib/ec_plan.h"
#include "client/lib/io.h"
#include "client/lib/io_piece.h"
#include "common/ec/ec_geometry.h"
#include "common/ec/rs_codec.h"
#include "common/log.h"

namespace sfs::client {

using Piece = Striper::Piece;

struct Striper::ChunkRead {
  uint64_t row = 0;
  uint32_t chunk = 0;  // < K: data, else parity chunk - K
  uint64_t col = 0;    // first column (offset in the chunk)
  std::span<uint8_t> out;
};

namespace {

// Owners of the cluster-wide EC row locks: one per write, kept apart from
// the kernel's lock owners (which live in another lock space anyway).
constexpr uint64_t kRowOwnerBase = uint64_t{0xEC} << 56;

// Data a batch of rows of one write carries at most (bounds the parity and
// read-modify-write buffers of one round of calls).
constexpr uint64_t kRowBatchBytes = 16 << 20;

ec::Geometry GeometryOfEc(const LayoutSpec& l) {
  return ec::Geometry{l.stripe_size, l.ec_data, l.ec_parity};
}

Status CheckEc(const LayoutSpec& l) {
  if (l.stripe_size == 0 || l.objects.size() != size_t{l.ec_data} + l.ec_parity) {
    return Status(EIO, "EC layout of inode " + std::to_string(l.ino) + " has " +
                           std::to_string(l.objects.size()) + " objects, not K+M");
  }
  return ec::Validate(GeometryOfEc(l));
}

std::pair<uint32_t, uint64_t> RowKey(const LayoutSpec& l) {
  return {l.objects[0].ost, l.objects[0].oid};
}

// A piece on object `obj` of l at object offset `offset`; op and buffers by the caller.
Piece PieceOn(const LayoutSpec& l, uint32_t obj, Piece::Op op, uint64_t offset, uint64_t length) {
  Piece p;
  p.op = op;
  p.ost = l.objects[obj].ost;
  p.oid = l.objects[obj].oid;
  p.stripe = obj;
  p.offset = offset;
  p.length = length;
  p.mirror_copy = op == Piece::Op::kRead;  // a stale chunk is refused: rebuilt from others
  if (!l.capability.empty()) p.caps.emplace_back(l.ino, l.capability);
  return p;
}

// Write pieces of `data` to object obj from offset on, cut at kMaxPiece.
void AddWrites(const LayoutSpec& l, uint32_t obj, uint64_t offset, std::span<const uint8_t> data,
               std::vector<Piece>* out) {
  for (uint64_t done = 0; done < data.size();) {
    const uint64_t n = std::min<uint64_t>(data.size() - done, Striper::kMaxPiece);
    Piece p = PieceOn(l, obj, Piece::Op::kWrite, offset + done, n);
    p.out = data.subspan(done, n);
    p.fail_fast = true;  // M other chunks can stand in: a refused connection fails at once
    out->push_back(std::move(p));
    done += n;
  }
}

}  // namespace

Striper::~Striper() = default;

Result<const ec::RsCodec*> Striper::CodecOf(const LayoutSpec& l) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = codecs_[{l.ec_data, l.ec_parity}];
  if (slot == nullptr) {
    SFS_ASSIGN_OR_RETURN(
        slot, ec::RsCodec::Create(static_cast<int>(l.ec_data), static_cast<int>(l.ec_parity)));
  }
  return static_cast<const ec::RsCodec*>(slot.get());
}

void Striper::LockRows(const LayoutSpec& l, uint64_t first, uint64_t end) {
  const auto key = RowKey(l);
  std::unique_lock<std::mutex> lock(rows_mu_);
  rows_cv_.wait(lock, [&] {
    auto [b, e] = rows_held_.equal_range(key);
    return std::none_of(
        b, e, [&](const auto& h) { return h.second.first < end && first < h.second.second; });
  });
  rows_held_.emplace(key, std::pair(first, end));
}

void Striper::UnlockRows(const LayoutSpec& l, uint64_t first, uint64_t end) {
  {
    std::lock_guard<std::mutex> lock(rows_mu_);
    auto [b, e] = rows_held_.equal_range(RowKey(l));
    for (auto it = b; it != e; ++it) {
      if (it->second == std::pair(first, end)) {
        rows_held_.erase(it);
        break;
      }
    }
  }
  rows_cv_.notify_all();
}

namespace {

// Unlocks on every return path.
class RowGuard {
 public:
  RowGuard(Striper* s, const LayoutSpec& l, uint64_t first, uint64_t end,
           void (Striper::*unlock)(const LayoutSpec&, uint64_t, uint64_t))
      : s_(s), l_(l), first_(first), end_(end), unlock_(unlock) {}
  ~RowGuard() { (s_->*unlock_)(l_, first_, end_); }
  RowGuard(const RowGuard&) = delete;
  RowGuard& operator=(const RowGuard&) = delete;

 private:
  Striper* s_;
  const LayoutSpec& l_;
  uint64_t first_, end_;
  void (Striper::*unlock_)(const LayoutSpec&, uint64_t, uint64_t);
};

}  // namespace

Status Striper::ReadEc(const LayoutSpec& l, uint64_t off, std::span<uint8_t> buf) {
  SFS_RETURN_IF_ERROR(CheckEc(l));
  const ec::Geometry g = GeometryOfEc(l);
  SFS_ASSIGN_OR_RETURN(const ec::RsCodec* codec, CodecOf(l));
  std::vector<ChunkRead> reads;
  for (const ec::Extent& e : ec::MapRange(g, off, buf.size())) {
    reads.push_back(
        {e.row, e.chunk, e.obj_offset % g.chunk_size, buf.subspan(e.file_offset - off, e.length)});
  }
  return ReadChunks(l, g, *codec, reads);
}

Status Striper::ReadChunks(const LayoutSpec& l, const ec::Geometry& g, const ec::RsCodec& codec,
                           std::vector<ChunkRead>& reads) {
  // Objects not to read: stale ones, and those whose OST failed lately
  // while enough others are left.
  std::vector<uint32_t> bad;
  for (uint32_t i = 0; i < g.width(); ++i) {
    if (IsStale(l, i)) bad.push_back(i);
  }
  const size_t stale = bad.size();
  for (uint32_t i = 0; i < g.width(); ++i) {
    if (!IsStale(l, i) && RecentlyFailed(l.objects[i].ost)) bad.push_back(i);
  }
  if (bad.size() > g.m) bad.resize(stale);
  auto is_bad = [&](uint32_t obj) { return std::find(bad.begin(), bad.end(), obj) != bad.end(); };
  const auto quick = std::min<std::chrono::milliseconds>(kFailoverAfter, timeout_ / 2);
  std::vector<Piece> pieces;
  std::vector<size_t> read_of;  // pieces[i] reads part of reads[read_of[i]]
  std::vector<ChunkRead*> lost;
  for (size_t r = 0; r < reads.size(); ++r) {
    ChunkRead& cr = reads[r];
    const uint32_t obj = ec::ObjectOf(g, cr.row, cr.chunk);
    if (is_bad(obj)) {
      lost.push_back(&cr);
      continue;
    }
    for (uint64_t done = 0; done < cr.out.size();) {
      const uint64_t n = std::min<uint64_t>(cr.out.size() - done, kMaxPiece);
      Piece p = PieceOn(l, obj, Piece::Op::kRead, cr.row * g.chunk_size + cr.col + done, n);
      p.in = cr.out.subspan(done, n);
      p.fail_fast = true;
      p.timeout = quick;
      pieces.push_back(std::move(p));
      read_of.push_back(r);
      done += n;
    }
  }
  (void)Run(pieces);
  for (size_t i = 0; i < pieces.size(); ++i) {
    const Piece& p = pieces[i];
    if (p.status.ok()) continue;
    if (!CopyFailed(p)) return FirstError(std::span<const Piece>(&p, 1));
    NoteCopyFailure(p);
    if (!is_bad(p.stripe)) {
      LOG_WARN("inode " << l.ino << ": OST " << p.ost << " object " << p.oid << ": "
                        << p.status.ToString() << "; rebuilding its chunks from the others");
      bad.push_back(p.stripe);
    }
    ChunkRead* cr = &reads[read_of[i]];
    if (std::find(lost.begin(), lost.end(), cr) == lost.end()) lost.push_back(cr);
  }
  if (lost.empty()) return Status::Ok();
  return RebuildChunks(l, g, codec, reads, std::move(lost), &bad);
}

Status Striper::RebuildChunks(const LayoutSpec& l, const ec::Geometry& g, const ec::RsCodec& codec,
                              std::vector<ChunkRead>& reads, std::vector<ChunkRead*> lost,
                              std::vector<uint32_t>* bad) {
  auto is_bad = [&](uint32_t obj) {
    return std::find(bad->begin(), bad->end(), obj) != bad->end();
  };
  const uint32_t n = g.width();
  // The call's reads by (row, chunk): one that is not lost holds its bytes
  // already (read, or rebuilt in an earlier round) and is a source for free.
  // A whole-row read with one chunk lost then reads one more chunk, not K.
  std::map<std::pair<uint64_t, uint32_t>, std::vector<ChunkRead*>> by_chunk;
  for (ChunkRead& cr : reads) by_chunk[{cr.row, cr.chunk}].push_back(&cr);
  auto in_memory = [&](const ChunkRead& t, uint32_t c) -> std::span<uint8_t> {
    auto it = by_chunk.find({t.row, c});
    if (it == by_chunk.end()) return {};
    for (ChunkRead* h : it->second) {
      if (h->col > t.col || h->col + h->out.size() < t.col + t.out.size()) continue;
      if (std::find(lost.begin(), lost.end(), h) != lost.end()) continue;
      return h->out.subspan(t.col - h->col, t.out.size());
    }
    return {};
  };
  // Each round reads K sources for every lost chunk; a source that fails
  // joins `bad` and its chunk tries again with others. At most M+1 rounds:
  // each failed round loses one more object, and more than M lost is EIO.
  for (uint32_t round = 0; round <= g.m && !lost.empty(); ++round) {
    struct Job {
      ChunkRead* target;
      std::vector<uint32_t> sources;       // chunk indices
      std::vector<std::span<uint8_t>> at;  // source s's bytes: in memory, or in bufs
      std::vector<bool> fetch;             // source s is read now (into bufs)
      std::vector<uint8_t> bufs;           // the sources read now, len each
    };
    std::vector<Job> jobs;
    std::vector<Piece> pieces;
    std::vector<size_t> job_of;
    for (ChunkRead* cr : lost) {
      Job j{cr, {}, {}, {}, {}};
      for (uint32_t c = 0; c < n && j.sources.size() < g.k; ++c) {  // held ones first
        if (c == cr->chunk || in_memory(*cr, c).empty()) continue;
        j.sources.push_back(c);
        j.at.push_back(in_memory(*cr, c));
        j.fetch.push_back(false);
      }
      for (uint32_t c = 0; c < n && j.sources.size() < g.k; ++c) {
        if (c == cr->chunk || is_bad(ec::ObjectOf(g, cr->row, c))) continue;
        if (std::find(j.sources.begin(), j.sources.end(), c) != j.sources.end()) continue;
        j.sources.push_back(c);
        j.at.emplace_back();  // in bufs, below
        j.fetch.push_back(true);
      }
      if (j.sources.size() < g.k) {
        return Status(EIO, "inode " + std::to_string(l.ino) + " row " + std::to_string(cr->row) +
                               ": more than " + std::to_string(g.m) +
                               " of its chunks cannot be read");
      }
      const uint64_t len = cr->out.size();
      j.bufs.resize(std::count(j.fetch.begin(), j.fetch.end(), true) * len);
      for (size_t s = 0, b = 0; s < j.at.size(); ++s) {
        if (j.fetch[s]) j.at[s] = std::span<uint8_t>(j.bufs).subspan(b++ * len, len);
      }
      jobs.push_back(std::move(j));
    }
    for (size_t ji = 0; ji < jobs.size(); ++ji) {
      Job& j = jobs[ji];
      const uint64_t len = j.target->out.size();
      for (size_t s = 0; s < j.sources.size(); ++s) {
        if (!j.fetch[s]) continue;
        const uint32_t obj = ec::ObjectOf(g, j.target->row, j.sources[s]);
        for (uint64_t done = 0; done < len;) {
          const uint64_t m = std::min<uint64_t>(len - done, kMaxPiece);
          Piece p = PieceOn(l, obj, Piece::Op::kRead,
                            j.target->row * g.chunk_size + j.target->col + done, m);
          p.in = j.at[s].subspan(done, m);
          p.fail_fast = true;
          pieces.push_back(std::move(p));
          job_of.push_back(ji);
          done += m;
        }
      }
    }
    (void)Run(pieces);
    std::vector<bool> failed(jobs.size(), false);
    for (size_t i = 0; i < pieces.size(); ++i) {
      const Piece& p = pieces[i];
      if (p.status.ok()) continue;
      if (!CopyFailed(p)) return FirstError(std::span<const Piece>(&p, 1));
      NoteCopyFailure(p);
      if (!is_bad(p.stripe)) bad->push_back(p.stripe);
      failed[job_of[i]] = true;
    }
    std::vector<ChunkRead*> again;
    for (size_t ji = 0; ji < jobs.size(); ++ji) {
      Job& j = jobs[ji];
      if (failed[ji]) {
        again.push_back(j.target);
        continue;
      }
      std::vector<std::span<uint8_t>> chunks(n);
      for (size_t s = 0; s < j.sources.size(); ++s) chunks[j.sources[s]] = j.at[s];
      chunks[j.target->chunk] = j.target->out;
      const int erased[] = {static_cast<int>(j.target->chunk)};
      SFS_RETURN_IF_ERROR(codec.Reconstruct(chunks, erased));
    }
    lost = std::move(again);
  }
  if (!lost.empty()) {
    return Status(EIO, "inode " + std::to_string(l.ino) + " row " + std::to_string(lost[0]->row) +
                           ": its chunks cannot be rebuilt");
  }
  return Status::Ok();
}

Status Striper::WriteEc(const LayoutSpec& l, uint64_t off, std::span<const uint8_t> buf) {
  SFS_RETURN_IF_ERROR(CheckEc(l));
  const ec::Geometry g = GeometryOfEc(l);
  SFS_ASSIGN_OR_RETURN(const ec::RsCodec* codec, CodecOf(l));
  const std::vector<ecplan::RowWrite> rows = ecplan::PlanWrite(g, off, buf.size());
  const std::span<const ecplan::RowWrite> all(rows);
  const size_t per_batch = std::max<uint64_t>(1, kRowBatchBytes / g.row_bytes());
  for (size_t b = 0; b < rows.size(); b += per_batch) {
    std::span<const ecplan::RowWrite> batch = all.subspan(b, std::min(per_batch, rows.size() - b));
    const uint64_t first = batch.front().row, end = batch.back().row + 1;
    LockRows(l, first, end);
    RowGuard guard(this, l, first, end, &Striper::UnlockRows);
    const uint64_t owner = kRowOwnerBase | ++row_owners_;
    const auto [start, last] = RowSpan(l, first, end);
    bool kept = false;
    SFS_RETURN_IF_ERROR(LockRange(l, owner, start, last, &kept));
    Status st = WriteRows(l, g, *codec, batch, buf);
    Status un = UnlockRange(l, owner, start, last, kept);
    SFS_RETURN_IF_ERROR(st);
    SFS_RETURN_IF_ERROR(un);
  }
  return Status::Ok();
}

std::pair<uint64_t, uint64_t> Striper::RowSpan(const LayoutSpec& l, uint64_t first, uint64_t end) {
  const uint64_t rb = l.stripe_size * l.ec_data;
  return {first * rb, end > UINT64_MAX / rb ? UINT64_MAX : end * rb - 1};
}


Status Striper::LockClusterBytes(const LayoutSpec& l, uint64_t owner, uint64_t start,
                                 uint64_t last, bool lock) {
  if (!hooks_.row_lock || l.ino == 0 || no_cluster_locks_) return Status::Ok();
  Result<uint64_t> gen = hooks_.row_lock(l.ino, owner, start, last, lock);
  Status st = gen.status();
  if (gen.ok() && lock) NoteCopyGen(l, *gen);
  if (st.code() == ENOLCK) {
    if (!no_cluster_locks_.exchange(true)) {
      LOG_WARN(
          "the MDS grants no locks: EC rows are read-modify-written and mirror copies "
          "written without the cluster-wide range lock (concurrent writers from other "
          "clients may leave parity inconsistent or copies different)");
    }
    return Status::Ok();
  }
  if (!st.ok() && !lock) {
    LOG_WARN("inode " << l.ino << ": releasing the redundancy range lock: " << st.ToString());
  }
  return st.ok() ? st
                 : Status(EIO, std::string(l.IsEc() ? "EC row" : "mirror range") +
                                   " lock of inode " + std::to_string(l.ino) + ": " +
                                   st.ToString());
}

Status Striper::WriteRows(const LayoutSpec& l, const ec::Geometry& g, const ec::RsCodec& codec,
                          std::span<const ecplan::RowWrite> rows, std::span<const uint8_t> buf) {
  const uint32_t k = g.k, m = g.m;
  // Per row: the K data columns (partial rows: old bytes, new laid over;
  // full rows: spans of buf) and M parity columns, width() bytes each.
  struct Cols {
    std::vector<uint8_t> store;  // partial rows' data (K * width), then parity (M * width)
    std::vector<std::span<const uint8_t>> data;
    std::vector<std::span<uint8_t>> parity;
  };
  std::vector<Cols> cols(rows.size());
  std::vector<ChunkRead> reads;
  for (size_t i = 0; i < rows.size(); ++i) {
    const ecplan::RowWrite& w = rows[i];
    const uint64_t width = w.width();
    Cols& c = cols[i];
    c.store.resize((w.full ? 0 : k * width) + m * width);
    for (uint32_t p = 0; p < m; ++p) {
      c.parity.push_back(
          std::span<uint8_t>(c.store).subspan(((w.full ? 0 : k) + p) * width, width));
    }
    for (uint32_t d = 0; d < k; ++d) {
      if (w.full) {
        c.data.push_back(buf.subspan(w.parts[d].buf_off, width));
        continue;
      }
      std::span<uint8_t> col = std::span<uint8_t>(c.store).subspan(d * width, width);
      c.data.push_back(col);
      if (ecplan::NeedsOld(w, d)) reads.push_back({w.row, d, w.col_begin, col});
    }
  }
  if (!reads.empty()) SFS_RETURN_IF_ERROR(ReadChunks(l, g, codec, reads));
  std::vector<Piece> pieces;
  for (size_t i = 0; i < rows.size(); ++i) {
    const ecplan::RowWrite& w = rows[i];
    Cols& c = cols[i];
    if (!w.full) {
      std::vector<std::span<uint8_t>> mut;
      for (uint32_t d = 0; d < k; ++d) {
        mut.push_back(std::span<uint8_t>(c.store).subspan(d * w.width(), w.width()));
      }
      ecplan::Overlay(w, buf, mut);
    }
    SFS_RETURN_IF_ERROR(codec.Encode(c.data, c.parity));
    const uint64_t base = w.row * g.chunk_size;
    for (const ecplan::RowWrite::Part& p : w.parts) {
      const uint32_t obj = ec::ObjectOf(g, w.row, p.chunk);
      if (!IsStale(l, obj)) AddWrites(l, obj, base + p.col, buf.subspan(p.buf_off, p.len), &pieces);
    }
    for (uint32_t p = 0; p < m; ++p) {
      const uint32_t obj = ec::ObjectOf(g, w.row, k + p);
      if (!IsStale(l, obj)) AddWrites(l, obj, base + w.col_begin, c.parity[p], &pieces);
    }
  }
  return RunEcMutation(l, pieces, /*batched=*/true);
}

Status Striper::RunEcMutation(const LayoutSpec& l, std::vector<Piece>& pieces, bool batched) {
  const uint32_t m = l.ec_parity;
  for (Piece& p : pieces) p.fail_fast = true;
  for (int attempt = 0;; ++attempt) {
    if (batched) {
      RunWrites(pieces);  // one write_v per OST: a row's chunks on an object are adjacent
    } else {
      (void)Run(pieces);
    }
    std::vector<uint32_t> missed;  // object indices
    for (const Piece& p : pieces) {
      if (p.status.ok()) continue;
      if (!CopyFailed(p)) return FirstError(std::span<const Piece>(&p, 1));
      NoteCopyFailure(p);
      if (std::find(missed.begin(), missed.end(), p.stripe) == missed.end()) {
        missed.push_back(p.stripe);
      }
    }
    // Another writer may have marked a missed object stale meanwhile: it
    // counts once, and needs no mark.
    size_t stale = 0;
    for (uint32_t i = 0; i < l.objects.size(); ++i) {
      if (IsStale(l, i) && std::find(missed.begin(), missed.end(), i) == missed.end()) ++stale;
    }
    std::erase_if(missed, [&](uint32_t i) { return IsStale(l, i); });
    if (missed.empty()) return Status::Ok();
    if (stale + missed.size() <= m) {
      std::vector<StripeObject> mark;
      for (uint32_t i : missed)
        mark.push_back(StripeObject{l.objects[i].ost, l.objects[i].oid, 0, true});
      if (!hooks_.mark_stale || l.ino == 0) {
        return Status(EIO, "an EC chunk object missed a write and its inode is unknown");
      }
      Result<LayoutSpec> after = hooks_.mark_stale(l.ino, mark);
      if (!after.ok()) {
        return Status(EIO,
                      "cannot mark a missed EC chunk object stale: " + after.status().ToString());
      }
      Absorb(*after);
      for (const StripeObject& o : mark) {
        LOG_WARN("inode " << l.ino << ": EC chunk object on OST " << o.ost << " (object " << o.oid
                          << ") missed a write; marked stale");
      }
      return Status::Ok();
    }
    // More than M objects would be stale: once more, waiting for OSSes that
    // are restarting (no fail-fast), only the calls that failed.
    if (attempt > 0) {
      for (const Piece& p : pieces) {
        if (!p.status.ok()) return FirstError(std::span<const Piece>(&p, 1));
      }
    }
    std::vector<Piece> again;
    for (const Piece& p : pieces) {
      if (p.status.ok()) continue;
      again.push_back(p);
      again.back().fail_fast = false;
    }
    pieces = std::move(again);
  }
}

Status Striper::TruncateEc(const LayoutSpec& l, uint64_t size) {
  SFS_RETURN_IF_ERROR(CheckEc(l));
  const ec::Geometry g = GeometryOfEc(l);
  SFS_ASSIGN_OR_RETURN(const ec::RsCodec* codec, CodecOf(l));
  LockRows(l, 0, UINT64_MAX);
  RowGuard guard(this, l, 0, UINT64_MAX, &Striper::UnlockRows);
  const uint64_t owner = kRowOwnerBase | ++row_owners_;
  bool kept = false;
  SFS_RETURN_IF_ERROR(LockRange(l, owner, 0, UINT64_MAX, &kept));
  Status st = CutEc(l, g, *codec, size);
  Status un = UnlockRange(l, owner, 0, UINT64_MAX, kept);
  SFS_RETURN_IF_ERROR(st);
  return un;
}

Status Striper::CutEc(const LayoutSpec& l, const ec::Geometry& g, const ec::RsCodec& codec,
                      uint64_t size) {
  // A cut inside a row leaves its data chunks with fewer bytes, so its
  // parity must be encoded again over what stays: read that first (the
  // old parity may be needed to rebuild a chunk), then cut, then write it.
  const uint64_t row = size / g.row_bytes();
  const uint64_t width = std::min(g.chunk_size, size % g.row_bytes());
  std::vector<uint8_t> store(size_t{g.width()} * width);
  std::vector<std::span<const uint8_t>> data;
  std::vector<std::span<uint8_t>> parity;
  if (width > 0) {
    std::vector<ChunkRead> reads;
    for (uint32_t d = 0; d < g.k; ++d) {
      std::span<uint8_t> col = std::span<uint8_t>(store).subspan(d * width, width);
      data.push_back(col);
      const uint64_t kept = ecplan::KeptInLastRow(g, size, d);
      if (kept > 0) reads.push_back({row, d, 0, col.first(kept)});
    }
    for (uint32_t p = 0; p < g.m; ++p) {
      parity.push_back(std::span<uint8_t>(store).subspan((g.k + p) * width, width));
    }
    SFS_RETURN_IF_ERROR(ReadChunks(l, g, codec, reads));
    SFS_RETURN_IF_ERROR(codec.Encode(data, parity));
  }
  std::vector<Piece> cuts;
  for (uint32_t i = 0; i < g.width(); ++i) {
    if (IsStale(l, i)) continue;
    Piece p = PieceOn(l, i, Piece::Op::kTruncate, ec::ObjectSize(g, i, size), 0);
    cuts.push_back(std::move(p));
  }
  SFS_RETURN_IF_ERROR(RunEcMutation(l, cuts, /*batched=*/false));
  if (width == 0) return Status::Ok();
  std::vector<Piece> writes;
  for (uint32_t p = 0; p < g.m; ++p) {
    const uint32_t obj = ec::ObjectOf(g, row, g.k + p);
    if (!IsStale(l, obj)) AddWrites(l, obj, row * g.chunk_size, parity[p], &writes);
  }
  return RunEcMutation(l, writes, /*batched=*/false);
}

Status Striper::SyncEc(const LayoutSpec& l) {
  SFS_RETURN_IF_ERROR(CheckEc(l));
  std::vector<Piece> pieces;
  for (uint32_t i = 0; i < l.objects.size(); ++i) {
    if (!IsStale(l, i)) pieces.push_back(PieceOn(l, i, Piece::Op::kSync, 0, 0));
  }
  return RunEcMutation(l, pieces, /*batched=*/false);
}

Result<uint64_t> Striper::BlocksEc(const LayoutSpec& l) {
  SFS_RETURN_IF_ERROR(CheckEc(l));
  std::vector<Piece> pieces;
  for (uint32_t i = 0; i < l.objects.size(); ++i) {
    if (IsStale(l, i)) continue;
    Piece p = PieceOn(l, i, Piece::Op::kStat, 0, 0);
    p.fail_fast = true;
    pieces.push_back(std::move(p));
  }
  (void)Run(pieces);
  // The objects that answered stand in for those that did not (all hold
  // about as much: parity rotates), so that stat works with OSSs down.
  uint64_t blocks = 0, answered = 0;
  for (const Piece& p : pieces) {
    if (p.status.ok()) {
      blocks += p.blocks;
      ++answered;
    } else if (!CopyFailed(p)) {
      return FirstError(std::span<const Piece>(&p, 1));
    }
  }
  if (answered == 0) {
    Status st = FirstError(pieces);
    if (!st.ok()) return st;
    return uint64_t{0};  // every object stale: cannot be (the MDS keeps K good)
  }
  return blocks * l.objects.size() / answered;
}

}  // namespace sfs::client
