// Where a rebuilt object goes, and what the rebuild does when that OST is
// full (docs/redundancy.md "A full OST during rebuild"): a lost object's new
// home must have room for it (by the avail its OSS last reported in a
// heartbeat); when no OST that would do has room, or a write fails ENOSPC,
// the object waits ("paused"), the pause is shown by `sfs rebuild status`
// and logged once, and the rebuild goes on by itself in the first pass that
// finds room (a freed or grown OST reports it within a heartbeat).
#include <algorithm>
#include <cstdio>
#include <string>

#include "common/ec/ec_geometry.h"
#include "common/layout/stripe.h"
#include "common/log.h"
#include "mds.pb.h"
#include "mds/service/mirror_resyncer.h"
#include "oss.pb.h"

namespace sfs::mds {
namespace {

// After a write to an OST failed ENOSPC, the rebuild tries it again only once
// its avail has grown by this much (or by the object's size, if smaller)
// over what it reported at the failure: the heartbeat's avail then was not
// what the disk took.
constexpr uint64_t kRegrowth = uint64_t{64} << 20;

std::string Mib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f MiB", static_cast<double>(bytes) / 1048576.0);
  return buf;
}

}  // namespace

uint64_t MirrorResyncer::NeededBytes(const proto::Layout& l, uint64_t size, int target) {
  if (l.ec_data() != 0) {
    const ec::Geometry g{l.stripe_size(), l.ec_data(), l.ec_parity()};
    return ec::ObjectSize(g, static_cast<uint32_t>(target), size);
  }
  const int stripes = std::max(l.stripe_count(), 1);
  const layout::Geometry g{l.stripe_size() > 0 ? l.stripe_size() : (uint64_t{1} << 20),
                           static_cast<uint32_t>(stripes)};
  return layout::ObjectSize(g, static_cast<uint32_t>(target % stripes), size);
}

bool MirrorResyncer::HasRoom(uint32_t ost, uint64_t needed) {
  const std::vector<OstState> all = osts_->Snapshot();
  if (ost >= all.size()) return false;
  const OstStats& s = all[ost].stats;
  if (s.total_bytes == 0) return true;  // no report yet: the write will tell
  // The crc sidecar takes 8 bytes per 4 KiB, file systems round up to blocks.
  uint64_t want = needed + needed / 256 + (uint64_t{64} << 10);
  std::lock_guard<std::mutex> lock(pause_mu_);
  auto failed = enospc_avail_.find(ost);
  if (failed != enospc_avail_.end()) {
    want = std::max(want, failed->second + std::min(needed, kRegrowth));
  }
  return s.avail_bytes >= want;
}

void MirrorResyncer::NotePause(uint32_t ost, uint64_t needed, bool enospc) {
  const std::vector<OstState> all = osts_->Snapshot();
  const uint64_t avail = ost < all.size() ? all[ost].stats.avail_bytes : 0;
  std::lock_guard<std::mutex> lock(pause_mu_);
  Pause& p = pass_paused_[ost];
  p.needed = std::max(p.needed, needed);
  p.avail = avail;
  if (enospc) enospc_avail_[ost] = avail;
}

void MirrorResyncer::NoteRoom(uint32_t ost) {
  std::lock_guard<std::mutex> lock(pause_mu_);
  enospc_avail_.erase(ost);
}

bool MirrorResyncer::WasFull(uint32_t ost) const {
  std::lock_guard<std::mutex> lock(pause_mu_);
  return enospc_avail_.count(ost) != 0;
}

void MirrorResyncer::EndPass(bool idle) {
  std::map<uint32_t, Pause> was;
  {
    std::lock_guard<std::mutex> lock(pause_mu_);
    was = paused_;
  }
  // A pause this pass did not meet (its file skipped for a writer, say)
  // holds until its OST has room or nothing is left to do.
  std::vector<uint32_t> still;
  for (const auto& [ost, p] : was) {
    if (!idle && !HasRoom(ost, p.needed)) still.push_back(ost);
  }
  std::lock_guard<std::mutex> lock(pause_mu_);
  for (uint32_t ost : still) pass_paused_.emplace(ost, was[ost]);
  for (const auto& [ost, p] : pass_paused_) {
    if (paused_.count(ost)) continue;
    LOG_WARN("rebuild paused: OST " << ost << " is full (" << Mib(p.avail) << " available, "
                                    << Mib(p.needed) << " needed); it resumes by itself when "
                                    << "the OST has space");
  }
  for (const auto& [ost, p] : paused_) {
    if (pass_paused_.count(ost) == 0) LOG_INFO("rebuild resumed: OST " << ost << " has space");
  }
  paused_ = std::move(pass_paused_);
  pass_paused_.clear();
  if (idle) enospc_avail_.clear();
}

void MirrorResyncer::FillPauses(proto::RebuildStatusResp* out) const {
  std::lock_guard<std::mutex> lock(pause_mu_);
  for (const auto& [ost, p] : paused_) {
    out->add_paused("OST " + std::to_string(ost) + " is full: " + Mib(p.avail) + " available, " +
                    Mib(p.needed) + " needed; paused until it has space");
  }
}

std::optional<uint32_t> MirrorResyncer::NewHome(const proto::Layout& l, int target,
                                                uint64_t needed, std::vector<uint32_t>* full) {
  const std::vector<OstState> all = osts_->Snapshot();
  if (all.empty()) return std::nullopt;
  const bool ec = l.ec_data() != 0;
  const int stripes = std::max(l.stripe_count(), 1);
  auto oss_of = [&](uint32_t ost) {
    return ost < all.size() && !all[ost].address.empty() ? all[ost].address
                                                         : "#" + std::to_string(ost);
  };
  // Whether ost (or, by_oss, its OSS) holds another object of the file
  // (stripe_only: of the target's stripe).
  auto used = [&](uint32_t ost, bool stripe_only, bool by_oss) {
    for (int i = 0; i < l.objects_size(); ++i) {
      if (stripe_only && i % stripes != target % stripes) continue;
      const uint32_t other = l.objects(i).ost();
      if (other == ost || (by_oss && i != target && oss_of(other) == oss_of(ost))) return true;
    }
    return false;
  };
  // Best first: an OSS the file does not use; for a mirror, then an OSS its
  // stripe's other copies do not use (a loss still leaves a copy). Last, an
  // OST of an OSS that already holds a chunk or copy: two of them are then
  // lost with that OSS, but a lost disk costs one, better than none rebuilt.
  struct Tier {
    bool stripe_only, by_oss;
  };
  std::vector<Tier> tiers{{false, true}};
  if (!ec) tiers.push_back({true, true});
  tiers.push_back({!ec, false});
  // Starts one further on every call, so rebuilt objects spread over the OSTs.
  const size_t start = home_cursor_.fetch_add(1, std::memory_order_relaxed);
  for (const Tier& t : tiers) {
    for (size_t k = 0; k < all.size(); ++k) {
      const OstState& o = all[(start + k) % all.size()];
      if (!o.up || o.lost || used(o.index, t.stripe_only, t.by_oss)) continue;
      if (HasRoom(o.index, needed)) {
        if (!t.by_oss) {
          LOG_WARN("rebuild of object " << target << " onto OST " << o.index << ": no OSS up "
                                        << "without another " << (ec ? "chunk" : "copy")
                                        << " has room; its OSS " << oss_of(o.index)
                                        << " now holds two");
        }
        return o.index;
      }
      if (full != nullptr && std::find(full->begin(), full->end(), o.index) == full->end()) {
        full->push_back(o.index);
      }
    }
  }
  return std::nullopt;
}

void MirrorResyncer::DropOrphan(uint32_t ost, uint64_t oid, const std::string& addr) {
  proto::OssRequest req;
  proto::OssResponse reply;
  req.set_ost(ost);
  req.set_oid(oid);
  req.mutable_destroy();
  Status st = CallOss(addr, req, &reply);
  if (!st.ok()) {
    LOG_INFO("rebuild: could not destroy the unfinished object " << oid << " on OST " << ost
                                                                 << ": " << st.ToString()
                                                                 << " (an orphan for fsck)");
  }
}

}  // namespace sfs::mds
