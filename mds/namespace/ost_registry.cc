// OST registry and stripe allocator; the policy is described in ost_registry.h.
#include "mds/namespace/ost_registry.h"

#include <algorithm>

#include "common/log.h"
#include "mds/namespace/keys.h"
#include "mds_store.pb.h"

namespace sfs::mds {
namespace {

int64_t Weight(const OstStats& s) {
  if (s.total_bytes == 0) return 1;
  return std::clamp<int64_t>(static_cast<int64_t>(s.avail_bytes >> 30), 1, int64_t{1} << 30);
}

}  // namespace

bool OstRegistry::IsFull(const OstStats& s) {
  if (s.total_bytes == 0) return false;  // no statistics yet
  return s.avail_bytes < s.total_bytes / 100 || s.avail_bytes < (uint64_t{64} << 20);
}

Status OstRegistry::Load(int64_t now_ms) {
  std::vector<OstState> loaded;
  Status st = store_->Scan(std::string(1, keys::kOst), keys::PrefixEnd(std::string(1, keys::kOst)),
                           [&](std::string_view, std::string_view value) {
                             proto::OstRec rec;
                             if (!rec.ParseFromArray(value.data(), value.size())) return true;
                             OstState o;
                             o.index = rec.index();
                             o.uuid = rec.uuid();
                             o.address = rec.address();
                             o.lost = rec.lost();
                             o.up = !o.lost;
                             o.last_heartbeat_ms = now_ms;
                             loaded.push_back(std::move(o));
                             return true;
                           });
  SFS_RETURN_IF_ERROR(st);
  std::sort(loaded.begin(), loaded.end(),
            [](const OstState& a, const OstState& b) { return a.index < b.index; });
  std::lock_guard<std::mutex> lock(mu_);
  osts_.clear();
  for (OstState& o : loaded) {
    if (o.index != osts_.size()) {
      return Status::Errno(EIO, "OST table has a gap at index " + std::to_string(osts_.size()));
    }
    osts_.push_back(std::move(o));
  }
  LOG_INFO("loaded " << osts_.size() << " OSTs");
  return Status::Ok();
}

Status OstRegistry::PersistLocked(const OstState& ost) {
  proto::OstRec rec;
  rec.set_index(ost.index);
  rec.set_uuid(ost.uuid);
  rec.set_address(ost.address);
  rec.set_lost(ost.lost);
  KvBatch batch;
  batch.Put(keys::Ost(ost.uuid), rec.SerializeAsString());
  return store_->Write(batch, /*sync=*/true);
}

Result<std::vector<uint32_t>> OstRegistry::Register(const std::string& address,
                                                    const std::vector<OstReport>& osts,
                                                    int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<uint32_t> indices;
  for (const OstReport& r : osts) {
    if (r.uuid.empty() || r.uuid.size() > 128) return Status::Errno(EINVAL, "bad OST uuid");
    auto it = std::find_if(osts_.begin(), osts_.end(),
                           [&](const OstState& o) { return o.uuid == r.uuid; });
    OstState* o = nullptr;
    if (it == osts_.end()) {
      osts_.push_back(OstState{});
      o = &osts_.back();
      o->index = static_cast<uint32_t>(osts_.size() - 1);
      o->uuid = r.uuid;
      LOG_INFO("new OST " << r.uuid << " -> index " << o->index << " at " << address);
    } else {
      o = &*it;
    }
    bool changed = o->address != address || it == osts_.end();
    o->address = address;
    o->metrics_address = r.metrics_address;
    o->stats = r.stats;
    o->up = !o->lost;  // a lost OST's disk came back: its objects are rebuilt elsewhere anyway
    o->last_heartbeat_ms = now_ms;
    if (changed) SFS_RETURN_IF_ERROR(PersistLocked(*o));
    indices.push_back(o->index);
  }
  return indices;
}

Status OstRegistry::Heartbeat(const std::string& address, const std::vector<OstReport>& osts,
                              int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const OstReport& r : osts) {
    auto it = std::find_if(osts_.begin(), osts_.end(),
                           [&](const OstState& o) { return o.uuid == r.uuid; });
    if (it == osts_.end()) return Status::Errno(ENOENT, "unknown OST " + r.uuid);
    if (it->address != address) return Status::Errno(ENOENT, "OST moved; register again");
    if (it->lost) continue;  // declared lost: what it holds is being rebuilt elsewhere
    if (!it->up) LOG_INFO("OST " << it->index << " is up again");
    it->stats = r.stats;
    it->metrics_address = r.metrics_address;
    it->up = true;
    it->last_heartbeat_ms = now_ms;
  }
  return Status::Ok();
}

void OstRegistry::CheckTimeouts(int64_t now_ms, int64_t timeout_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  for (OstState& o : osts_) {
    if (o.up && now_ms - o.last_heartbeat_ms > timeout_ms) {
      o.up = false;
      LOG_WARN("OST " << o.index << " (" << o.address << ") is down: no heartbeat");
    }
  }
}

std::vector<OstState> OstRegistry::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return osts_;
}

std::optional<std::string> OstRegistry::UpAddress(uint32_t index) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (index >= osts_.size() || !osts_[index].up) return std::nullopt;
  return osts_[index].address;
}

Status OstRegistry::MarkLost(uint32_t index) {
  std::lock_guard<std::mutex> lock(mu_);
  if (index >= osts_.size()) {
    return Status::Errno(ENOENT, "no OST " + std::to_string(index) + " (the MDS knows " +
                                     std::to_string(osts_.size()) + ")");
  }
  OstState& o = osts_[index];
  if (o.lost) return Status::Ok();
  o.lost = true;
  Status st = PersistLocked(o);
  if (!st.ok()) {
    o.lost = false;
    return st;
  }
  o.up = false;
  LOG_WARN("OST " << index << " (" << o.address << ") declared lost");
  return Status::Ok();
}

std::vector<uint32_t> OstRegistry::LostOsts() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<uint32_t> out;
  for (const OstState& o : osts_) {
    if (o.lost) out.push_back(o.index);
  }
  return out;
}

size_t OstRegistry::UpCount() const {
  std::lock_guard<std::mutex> lock(mu_);
  return std::count_if(osts_.begin(), osts_.end(), [](const OstState& o) { return o.up; });
}

size_t OstRegistry::KnownCount() const {
  std::lock_guard<std::mutex> lock(mu_);
  return osts_.size();
}

size_t OstRegistry::UpCountIn(const std::vector<uint32_t>& set) const {
  std::lock_guard<std::mutex> lock(mu_);
  return std::count_if(set.begin(), set.end(),
                       [&](uint32_t i) { return i < osts_.size() && osts_[i].up; });
}

std::vector<OstState*> OstRegistry::CandidatesLocked(const std::vector<uint32_t>* only) {
  std::vector<OstState*> good, up, all;
  for (OstState& o : osts_) {
    if (only != nullptr && std::find(only->begin(), only->end(), o.index) == only->end()) continue;
    if (o.lost) continue;
    all.push_back(&o);
    if (!o.up) continue;
    up.push_back(&o);
    if (!IsFull(o.stats)) good.push_back(&o);
  }
  if (!good.empty()) return good;
  return up.empty() ? all : up;
}

namespace {

std::string OssKey(const OstState& o) {
  return o.address.empty() ? "#" + std::to_string(o.index) : o.address;
}

template <class Ptr>  // OstState* or const OstState*
size_t DistinctOss(const std::vector<Ptr>& cands) {
  std::vector<std::string> seen;
  for (const OstState* o : cands) {
    if (std::find(seen.begin(), seen.end(), OssKey(*o)) == seen.end()) seen.push_back(OssKey(*o));
  }
  return seen.size();
}

}  // namespace

std::vector<uint32_t> OstRegistry::Pick(int32_t count, int32_t start_ost,
                                        const std::vector<uint32_t>* only, bool distinct_oss) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<OstState*> cands = CandidatesLocked(only);
  if (cands.empty()) return {};
  const size_t avail = distinct_oss ? DistinctOss(cands) : cands.size();
  size_t n = count < 0 ? avail : std::min<size_t>(std::max(count, 1), avail);
  auto start = std::find_if(cands.begin(), cands.end(), [&](const OstState* o) {
    return start_ost >= 0 && o->index == static_cast<uint32_t>(start_ost);
  });
  size_t first = 0;
  if (start != cands.end()) {
    first = start - cands.begin();
  } else if (n == avail) {
    first = rr_cursor_++ % cands.size();  // all stripes: only rotate stripe 0
  } else {
    return PickWeightedLocked(std::move(cands), n, distinct_oss);
  }
  std::vector<uint32_t> out;
  std::vector<std::string> used;  // OSSes taken (distinct_oss)
  for (size_t i = 0; i < cands.size() && out.size() < n; ++i) {
    const OstState* o = cands[(first + i) % cands.size()];
    if (distinct_oss) {
      if (std::find(used.begin(), used.end(), OssKey(*o)) != used.end()) continue;
      used.push_back(OssKey(*o));
    }
    out.push_back(o->index);
  }
  return out;
}

// Smooth weighted round-robin: every pick adds each remaining candidate's
// weight to its credit, takes the largest credit and charges it the total.
std::vector<uint32_t> OstRegistry::PickWeightedLocked(std::vector<OstState*> cands, size_t n,
                                                      bool distinct_oss) {
  std::vector<uint32_t> out;
  while (out.size() < n && !cands.empty()) {
    int64_t total = 0;
    OstState* best = nullptr;
    for (OstState* o : cands) {
      o->credit += Weight(o->stats);
      total += Weight(o->stats);
      if (best == nullptr || o->credit > best->credit) best = o;
    }
    best->credit -= total;
    out.push_back(best->index);
    const std::string oss = OssKey(*best);
    std::erase_if(cands, [&](const OstState* o) {
      return o == best || (distinct_oss && OssKey(*o) == oss);
    });
  }
  return out;
}

size_t OstRegistry::UpOssCount(const std::vector<uint32_t>* set) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<const OstState*> up;
  for (const OstState& o : osts_) {
    if (!o.up || o.lost) continue;
    if (set != nullptr && std::find(set->begin(), set->end(), o.index) == set->end()) continue;
    up.push_back(&o);
  }
  return DistinctOss(up);
}

std::string OstRegistry::OssOf(uint32_t index) const {
  std::lock_guard<std::mutex> lock(mu_);
  return index < osts_.size() ? OssKey(osts_[index]) : std::string();
}

}  // namespace sfs::mds
