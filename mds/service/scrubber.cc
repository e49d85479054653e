// sfs scrub, run by the MDS on one file (mds.proto ScrubReq;
// docs/redundancy.md "Scrub"): every copy or chunk object is read back
// through its OSS, which checks each 4 KiB chunk's crc32c against its sidecar
// (rot reads as EIO); mirror copies are compared with each other (the
// majority wins) and EC parity is re-encoded from the row's data and
// compared with the stored parity (a disagreement that one chunk explains
// condemns that chunk). Bad objects are marked stale (MirrorStateReq) so that
// the resyncer rewrites them from the good ones: scrub finds, resync heals.
// A file is scrubbed in calls of about two seconds each (ScrubReq.offset).
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>

#include "common/ec/ec_geometry.h"
#include "common/ec/row_check.h"
#include "common/ec/rs_codec.h"
#include "common/log.h"
#include "mds.pb.h"
#include "mds/service/mirror_resyncer.h"
#include "oss.pb.h"

namespace sfs::mds {
namespace {

constexpr uint64_t kBatch = 16 << 20;  // bytes per object per read round
constexpr std::chrono::milliseconds kTimeout{30000};

}  // namespace

std::vector<Status> MirrorResyncer::ReadAll(const std::vector<const proto::StripeObject*>& objs,
                                            uint64_t off, uint64_t len,
                                            std::vector<std::vector<uint8_t>>* bufs) {
  bufs->resize(objs.size());
  std::vector<Status> out(objs.size());
  std::vector<std::shared_ptr<rpc::PendingCall>> calls(objs.size());
  std::vector<rpc::Channel*> chans(objs.size(), nullptr);
  rpc::CallOptions opts;
  opts.timeout = kTimeout;
  opts.fail_fast = true;
  for (size_t i = 0; i < objs.size(); ++i) {
    (*bufs)[i].assign(len, 0);
    auto addr = osts_->UpAddress(objs[i]->ost());
    if (!addr) {
      out[i] = Status::Errno(EHOSTDOWN, "OST " + std::to_string(objs[i]->ost()) + " is down");
      continue;
    }
    proto::OssRequest rd;
    rd.set_ost(objs[i]->ost());
    rd.set_oid(objs[i]->oid());
    rd.mutable_read()->set_offset(off);
    rd.mutable_read()->set_length(len);
    chans[i] = ChannelTo(*addr);
    calls[i] = chans[i]->Start(rpc::kServiceOss, Payload(rd), {},
                               std::span<uint8_t>((*bufs)[i]), opts);
  }
  for (size_t i = 0; i < objs.size(); ++i) {
    if (chans[i] == nullptr) continue;
    rpc::Response resp;
    Status st = chans[i]->Wait(calls[i], &resp);
    proto::OssResponse rr;
    if (st.ok() && !rr.ParseFromString(resp.payload)) st = Status::Errno(EPROTO, "bad OSS reply");
    if (st.ok()) st = Status(rr.status().code(), rr.status().message());
    out[i] = st;
  }
  return out;
}

namespace {

// The index (into bufs) of the copy most others agree with; the first of
// the largest group (so with two copies that differ, the first).
size_t MajorityCopy(const std::vector<std::vector<uint8_t>>& bufs, const std::set<size_t>& dead) {
  size_t best = bufs.size(), best_n = 0;
  for (size_t c = 0; c < bufs.size(); ++c) {
    if (dead.count(c)) continue;
    size_t n = 0;
    for (size_t d = 0; d < bufs.size(); ++d) n += !dead.count(d) && bufs[d] == bufs[c] ? 1 : 0;
    if (n > best_n) {
      best = c;
      best_n = n;
    }
  }
  return best;
}

}  // namespace

// One call scrubs every object of the file from object offset req.offset()
// for about scrub_call_ (2 s), then answers with more and next_offset, where
// the caller goes on (mds.proto ScrubReq): no call of a large file nears the
// client's RPC timeout (a call that timed out would be sent again, from its
// start, by the client's retry).
Status MirrorResyncer::ScrubFile(const proto::ScrubReq& req, proto::ScrubResp* out) {
  const uint64_t ino = req.ino();
  SFS_ASSIGN_OR_RETURN(proto::Attr attr, ns_->GetAttr(ino));
  if (!S_ISREG(attr.mode())) return Status::Ok();
  if (ns_->WriteOpenCount(ino) > 0) {
    out->set_busy(true);  // its copies may differ for a moment: not judged now
    return Status::Ok();
  }
  proto::GetLayoutResp got;
  SFS_RETURN_IF_ERROR(ns_->GetLayout(ino, &got));
  const proto::Layout& l = got.layout();
  ScrubState st{ino, l, attr.size(), {}, out};
  const auto until = std::chrono::steady_clock::now() + scrub_call_;
  if (l.ec_data() != 0) {
    SFS_RETURN_IF_ERROR(ScrubEc(&st, req.offset(), until));
  } else {
    SFS_RETURN_IF_ERROR(ScrubMirrors(&st, req.offset(), until));
  }
  if (req.offset() == 0) out->set_objects_checked(out->objects_checked() + l.objects_size());
  for (int i : st.bad) out->add_bad_indices(i);
  out->set_bad_objects(out->bad_objects() + st.bad.size());
  const bool redundant = l.ec_data() != 0 || l.mirror_count() >= 2;
  if (!req.repair() || st.bad.empty()) return Status::Ok();
  if (!redundant) {
    st.Problem("not redundant: nothing to repair from");
    return Status::Ok();
  }
  proto::MirrorStateReq mark;
  mark.set_ino(ino);
  mark.set_state(proto::OBJECT_STALE);
  for (int i : st.bad) *mark.add_objects() = l.objects(i);
  proto::GetLayoutResp after;
  Status marked = ns_->MirrorState(OpCtx{}, mark, &after);
  if (!marked.ok()) {
    st.Problem("not repaired: " + marked.ToString());
    return Status::Ok();
  }
  out->set_repairs_queued(out->repairs_queued() + st.bad.size());
  LOG_WARN("scrub of inode " << ino << ": " << st.bad.size()
                             << " bad object(s) marked stale; the resyncer rewrites them");
  return Status::Ok();
}

void MirrorResyncer::ScrubState::Problem(const std::string& what) {
  out->add_problems("inode " + std::to_string(ino) + ": " + what);
}

void MirrorResyncer::ScrubState::ReadFailed(int i, const Status& st) {
  const std::string obj = "object " + std::to_string(i) + " (OST " +
                          std::to_string(l.objects(i).ost()) + " oid " +
                          std::to_string(l.objects(i).oid()) + ")";
  if (st.code() == EIO) {
    bad.insert(i);
    Problem(obj + " unreadable: " + st.message());
  } else {
    Problem(obj + " not checked: " + st.ToString());
  }
}

// EC: every row's chunks are read (the OSS checks their crcs); a row whose
// parity disagrees with its data has its one wrong chunk found by trying
// each (M >= 2), else the data wins (its parity is rewritten).
Status MirrorResyncer::ScrubEc(ScrubState* st, uint64_t from,
                               std::chrono::steady_clock::time_point until) {
  const proto::Layout& l = st->l;
  proto::ScrubResp* out = st->out;
  const ec::Geometry g{l.stripe_size(), l.ec_data(), l.ec_parity()};
  SFS_RETURN_IF_ERROR(ec::Validate(g));
  SFS_ASSIGN_OR_RETURN(auto codec, ec::RsCodec::Create(static_cast<int>(g.k), static_cast<int>(g.m)));
  std::vector<const proto::StripeObject*> objs;
  for (const proto::StripeObject& o : l.objects()) objs.push_back(&o);
  const uint64_t rows = ec::RowCount(g, st->size);
  const uint64_t batch = std::max<uint64_t>(1, kBatch / g.chunk_size);
  std::vector<std::vector<uint8_t>> parity(g.m);
  std::set<int> unreadable;  // this file: not ok, down, or EIO
  for (int i = 0; i < l.objects_size(); ++i) {
    if (l.objects(i).state() != proto::OBJECT_OK) unreadable.insert(i);
  }
  std::vector<std::vector<uint8_t>> bufs;
  const uint64_t first = from / g.chunk_size;
  for (uint64_t r0 = first; r0 < rows; r0 += batch) {
    if (r0 != first && std::chrono::steady_clock::now() > until) {  // one round at least
      out->set_next_offset(r0 * g.chunk_size);
      out->set_more(true);
      return Status::Ok();
    }
    const uint64_t r1 = std::min(rows, r0 + batch);
    const uint64_t len = (r1 - r0) * g.chunk_size;
    std::vector<Status> rs = ReadAll(objs, r0 * g.chunk_size, len, &bufs);
    for (int i = 0; i < l.objects_size(); ++i) {
      if (unreadable.count(i)) continue;
      if (!rs[i].ok()) {
        st->ReadFailed(i, rs[i]);
        unreadable.insert(i);
        continue;
      }
      out->set_bytes_checked(out->bytes_checked() + len);
    }
    if (!unreadable.empty()) continue;  // parity agreement needs every chunk
    for (uint64_t r = r0; r < r1; ++r) {
      const uint64_t at = (r - r0) * g.chunk_size;
      const uint64_t lr = ec::ChunkLength(g, r, 0, st->size);
      const std::vector<uint32_t> row = ec::RowObjects(g, r);
      std::vector<std::span<const uint8_t>> data;
      std::vector<std::span<uint8_t>> par;
      for (uint32_t c = 0; c < g.k; ++c) data.emplace_back(bufs[row[c]].data() + at, lr);
      for (uint32_t p = 0; p < g.m; ++p) {
        parity[p].assign(lr, 0);
        par.emplace_back(parity[p]);
      }
      SFS_RETURN_IF_ERROR(codec->Encode(data, par));
      std::vector<uint32_t> wrong;  // parity chunks that disagree with the data
      for (uint32_t p = 0; p < g.m; ++p) {
        if (std::memcmp(parity[p].data(), bufs[row[g.k + p]].data() + at, lr) != 0) {
          wrong.push_back(g.k + p);
        }
      }
      if (wrong.empty()) continue;
      out->set_mismatched_rows(out->mismatched_rows() + 1);
      std::vector<std::span<uint8_t>> chunks;
      for (uint32_t c = 0; c < g.width(); ++c) chunks.emplace_back(bufs[row[c]].data() + at, lr);
      const int lone = ec::LoneBadChunk(*codec, chunks);
      if (lone >= 0) {
        st->bad.insert(static_cast<int>(row[lone]));
        st->Problem("row " + std::to_string(r) + ": chunk " + std::to_string(lone) + " (object " +
                    std::to_string(row[lone]) + ") disagrees with the other " +
                    std::to_string(g.width() - 1));
      } else {
        for (uint32_t c : wrong) st->bad.insert(static_cast<int>(row[c]));
        st->Problem("row " + std::to_string(r) +
                    ": parity disagrees with the data and no one chunk can be told wrong; the "
                    "data wins");
      }
    }
  }
  return Status::Ok();
}

// Mirrors: the copies of each stripe are read range by range and compared;
// a copy that differs from the majority (the first copy, with no majority)
// is bad.
Status MirrorResyncer::ScrubMirrors(ScrubState* st, uint64_t from,
                                    std::chrono::steady_clock::time_point until) {
  const proto::Layout& l = st->l;
  proto::ScrubResp* out = st->out;
  const int stripes = std::max(l.stripe_count(), 1);
  // The longest a stripe object can be: its RAID-0 share rounded up.
  const uint64_t unit = l.stripe_size() > 0 ? l.stripe_size() : (1 << 20);
  const uint64_t span = (st->size / (unit * stripes) + 1) * unit;
  std::vector<std::vector<const proto::StripeObject*>> copies(stripes);
  std::vector<std::vector<int>> index(stripes);
  std::vector<std::set<size_t>> dead(stripes);
  for (int i = 0; i < l.objects_size(); ++i) {
    if (l.objects(i).state() != proto::OBJECT_OK) continue;
    copies[i % stripes].push_back(&l.objects(i));
    index[i % stripes].push_back(i);
  }
  std::vector<std::vector<uint8_t>> bufs;
  for (uint64_t off = from; off < span; off += kBatch) {
    if (off != from && std::chrono::steady_clock::now() > until) {  // one round at least
      out->set_next_offset(off);
      out->set_more(true);
      return Status::Ok();
    }
    const uint64_t len = std::min(kBatch, span - off);
    for (int s = 0; s < stripes; ++s) {
      std::vector<Status> rs = ReadAll(copies[s], off, len, &bufs);
      for (size_t c = 0; c < copies[s].size(); ++c) {
        if (dead[s].count(c)) continue;
        if (!rs[c].ok()) {
          st->ReadFailed(index[s][c], rs[c]);
          dead[s].insert(c);
          continue;
        }
        out->set_bytes_checked(out->bytes_checked() + len);
      }
      const size_t ref = MajorityCopy(bufs, dead[s]);
      for (size_t c = 0; c < copies[s].size(); ++c) {
        if (c == ref || dead[s].count(c) || bufs[c] == bufs[ref]) continue;
        st->bad.insert(index[s][c]);
        out->set_mismatched_rows(out->mismatched_rows() + 1);
        st->Problem("stripe " + std::to_string(s) + " copy " +
                    std::to_string(l.objects(index[s][c]).mirror()) + " differs from copy " +
                    std::to_string(l.objects(index[s][ref]).mirror()) + " in [" +
                    std::to_string(off) + ", " + std::to_string(off + len) + ")");
      }
    }
  }
  return Status::Ok();
}

}  // namespace sfs::mds
