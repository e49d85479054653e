// sfs scrub, run by the MDS on one file (mds.proto ScrubReq;
// docs/redundancy.md "Scrub"): every copy or chunk object is read back
// through its OSS, which checks each 4 KiB chunk's crc32c against its sidecar
// (rot reads as EIO); mirror copies are compared with each other and EC
// parity is re-encoded from the row's data and compared with the stored
// parity. Bad objects are marked stale (MirrorStateReq) so that the
// resyncer rewrites them from the good ones: scrub finds, resync heals.
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "common/ec/ec_geometry.h"
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

Status MirrorResyncer::ScrubFile(uint64_t ino, bool repair, proto::ScrubResp* out) {
  SFS_ASSIGN_OR_RETURN(proto::Attr attr, ns_->GetAttr(ino));
  if (!S_ISREG(attr.mode())) return Status::Ok();
  if (ns_->WriteOpenCount(ino) > 0) {
    out->set_busy(true);  // its copies may differ for a moment: not judged now
    return Status::Ok();
  }
  proto::GetLayoutResp got;
  SFS_RETURN_IF_ERROR(ns_->GetLayout(ino, &got));
  const proto::Layout& l = got.layout();
  const uint64_t size = attr.size();
  const std::string who = "inode " + std::to_string(ino);
  std::set<int> bad;  // object indices found bad
  auto problem = [&](const std::string& what) { out->add_problems(who + ": " + what); };
  auto read_failed = [&](int i, const Status& st) {
    if (st.code() == EIO) {
      bad.insert(i);
      problem("object " + std::to_string(i) + " (OST " + std::to_string(l.objects(i).ost()) +
              " oid " + std::to_string(l.objects(i).oid()) + ") unreadable: " + st.message());
    } else {
      problem("object " + std::to_string(i) + " not checked: " + st.ToString());
    }
  };
  std::vector<std::vector<uint8_t>> bufs;
  if (l.ec_data() != 0) {
    const ec::Geometry g{l.stripe_size(), l.ec_data(), l.ec_parity()};
    SFS_RETURN_IF_ERROR(ec::Validate(g));
    SFS_ASSIGN_OR_RETURN(auto codec, ec::RsCodec::Create(static_cast<int>(g.k), static_cast<int>(g.m)));
    std::vector<const proto::StripeObject*> objs;
    for (const proto::StripeObject& o : l.objects()) objs.push_back(&o);
    const uint64_t rows = ec::RowCount(g, size);
    const uint64_t batch = std::max<uint64_t>(1, kBatch / g.chunk_size);
    std::vector<std::vector<uint8_t>> parity(g.m);
    std::set<int> unreadable;  // this file: not ok, down, or EIO
    for (int i = 0; i < l.objects_size(); ++i) {
      if (l.objects(i).state() != proto::OBJECT_OK) unreadable.insert(i);
    }
    for (uint64_t r0 = 0; r0 < rows; r0 += batch) {
      const uint64_t r1 = std::min(rows, r0 + batch);
      const uint64_t len = (r1 - r0) * g.chunk_size;
      std::vector<Status> st = ReadAll(objs, r0 * g.chunk_size, len, &bufs);
      for (int i = 0; i < l.objects_size(); ++i) {
        if (unreadable.count(i)) continue;
        if (!st[i].ok()) {
          read_failed(i, st[i]);
          unreadable.insert(i);
          continue;
        }
        out->set_bytes_checked(out->bytes_checked() + len);
      }
      if (!unreadable.empty()) continue;  // parity agreement needs every chunk
      for (uint64_t r = r0; r < r1; ++r) {
        const uint64_t at = (r - r0) * g.chunk_size;
        const uint64_t lr = ec::ChunkLength(g, r, 0, size);
        const std::vector<uint32_t> row = ec::RowObjects(g, r);
        std::vector<std::span<const uint8_t>> data;
        std::vector<std::span<uint8_t>> par;
        for (uint32_t c = 0; c < g.k; ++c) data.emplace_back(bufs[row[c]].data() + at, lr);
        for (uint32_t p = 0; p < g.m; ++p) {
          parity[p].assign(lr, 0);
          par.emplace_back(parity[p]);
        }
        SFS_RETURN_IF_ERROR(codec->Encode(data, par));
        bool mismatch = false;
        for (uint32_t p = 0; p < g.m; ++p) {
          const uint32_t obj = row[g.k + p];
          if (std::memcmp(parity[p].data(), bufs[obj].data() + at, lr) != 0) {
            mismatch = true;
            bad.insert(static_cast<int>(obj));
          }
        }
        if (mismatch) {
          out->set_mismatched_rows(out->mismatched_rows() + 1);
          problem("row " + std::to_string(r) + ": parity disagrees with the data");
        }
      }
    }
  } else {
    const int stripes = std::max(l.stripe_count(), 1);
    for (int s = 0; s < stripes; ++s) {
      std::vector<const proto::StripeObject*> copies;
      std::vector<int> index;
      for (int i = s; i < l.objects_size(); i += stripes) {
        if (l.objects(i).state() != proto::OBJECT_OK) continue;
        copies.push_back(&l.objects(i));
        index.push_back(i);
      }
      // The longest a stripe object can be: its RAID-0 share rounded up.
      const uint64_t unit = l.stripe_size() > 0 ? l.stripe_size() : (1 << 20);
      const uint64_t span = (size / (unit * stripes) + 1) * unit;
      std::set<size_t> dead;
      for (uint64_t off = 0; off < span; off += kBatch) {
        const uint64_t len = std::min(kBatch, span - off);
        std::vector<Status> st = ReadAll(copies, off, len, &bufs);
        int ref = -1;
        for (size_t c = 0; c < copies.size(); ++c) {
          if (dead.count(c)) continue;
          if (!st[c].ok()) {
            read_failed(index[c], st[c]);
            dead.insert(c);
            continue;
          }
          out->set_bytes_checked(out->bytes_checked() + len);
          if (ref < 0) {
            ref = static_cast<int>(c);
          } else if (bufs[c] != bufs[ref]) {
            bad.insert(index[c]);  // the first good copy wins
            out->set_mismatched_rows(out->mismatched_rows() + 1);
            problem("stripe " + std::to_string(s) + " copy " + std::to_string(l.objects(index[c]).mirror()) +
                    " differs from copy " + std::to_string(l.objects(index[ref]).mirror()) +
                    " in [" + std::to_string(off) + ", " + std::to_string(off + len) + ")");
          }
        }
      }
    }
  }
  out->set_objects_checked(out->objects_checked() + l.objects_size());
  out->set_bad_objects(out->bad_objects() + bad.size());
  const bool redundant = l.ec_data() != 0 || l.mirror_count() >= 2;
  if (!repair || bad.empty()) return Status::Ok();
  if (!redundant) {
    problem("not redundant: nothing to repair from");
    return Status::Ok();
  }
  proto::MirrorStateReq mark;
  mark.set_ino(ino);
  mark.set_state(proto::OBJECT_STALE);
  for (int i : bad) *mark.add_objects() = l.objects(i);
  proto::GetLayoutResp after;
  Status st = ns_->MirrorState(OpCtx{}, mark, &after);
  if (!st.ok()) {
    problem("not repaired: " + st.ToString());
    return Status::Ok();
  }
  out->set_repairs_queued(out->repairs_queued() + bad.size());
  LOG_WARN("scrub of " << who << ": " << bad.size()
                       << " bad object(s) marked stale; the resyncer rewrites them");
  return Status::Ok();
}

}  // namespace sfs::mds
