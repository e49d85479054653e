#include "common/auth/revocation.h"

#include <algorithm>

namespace sfs::auth {
namespace {

constexpr int64_t kLifetimeMs = kCapabilityLifetimeSec * 1000;

void Raise(int64_t* slot, int64_t v) { *slot = std::max(*slot, v); }

}  // namespace

uint64_t RevocationList::Add(Revocation r) {
  std::lock_guard<std::mutex> lock(mu_);
  switch (r.scope) {
    case Revocation::Scope::kInode:
      Raise(&inodes_[r.ino], r.before_ms);
      r.before_ms = inodes_[r.ino];
      break;
    case Revocation::Scope::kTenant:
      Raise(&tenants_[r.tenant], r.before_ms);
      r.before_ms = tenants_[r.tenant];
      break;
    case Revocation::Scope::kAll:
      Raise(&all_before_ms_, r.before_ms);
      r.before_ms = all_before_ms_;
      break;
  }
  r.seq = ++seq_;
  log_.push_back(std::move(r));
  return seq_;
}

std::vector<Revocation> RevocationList::Since(uint64_t seq, size_t max) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Revocation> out;
  auto it = std::lower_bound(log_.begin(), log_.end(), seq + 1,
                             [](const Revocation& r, uint64_t s) { return r.seq < s; });
  for (; it != log_.end() && out.size() < max; ++it) out.push_back(*it);
  return out;
}

uint64_t RevocationList::last_seq() const {
  std::lock_guard<std::mutex> lock(mu_);
  return seq_;
}

uint64_t RevocationList::applied_seq() const { return last_seq(); }

int64_t RevocationList::MintFloorMs(uint64_t ino, std::string_view tenant) const {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t floor = all_before_ms_;
  if (auto it = inodes_.find(ino); ino != 0 && it != inodes_.end()) floor = std::max(floor, it->second);
  if (auto it = tenants_.find(std::string(tenant)); it != tenants_.end()) {
    floor = std::max(floor, it->second);
  }
  return floor;
}

void RevocationList::Apply(std::span<const Revocation> entries) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const Revocation& r : entries) {
    if (r.seq <= seq_) continue;  // had it
    seq_ = r.seq;
    switch (r.scope) {
      case Revocation::Scope::kInode:
        Raise(&inodes_[r.ino], r.before_ms);
        break;
      case Revocation::Scope::kTenant:
        Raise(&tenants_[r.tenant], r.before_ms);
        break;
      case Revocation::Scope::kAll:
        Raise(&all_before_ms_, r.before_ms);
        break;
    }
  }
}

void RevocationList::Reset() {
  std::lock_guard<std::mutex> lock(mu_);
  inodes_.clear();
  tenants_.clear();
  all_before_ms_ = 0;
  log_.clear();
  seq_ = 0;
}

bool RevocationList::Voids(const Capability& cap) const {
  if (cap.all_objects) return false;  // a server's own
  std::lock_guard<std::mutex> lock(mu_);
  if (cap.issued_ms < all_before_ms_) return true;
  if (cap.ino != 0) {
    auto it = inodes_.find(cap.ino);
    if (it != inodes_.end() && cap.issued_ms < it->second) return true;
  }
  auto it = tenants_.find(cap.tenant);
  return it != tenants_.end() && cap.issued_ms < it->second;
}

void RevocationList::Prune(int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  auto old = [now_ms](int64_t before_ms) { return before_ms + kLifetimeMs < now_ms; };
  std::erase_if(inodes_, [&](const auto& e) { return old(e.second); });
  std::erase_if(tenants_, [&](const auto& e) { return old(e.second); });
  if (old(all_before_ms_)) all_before_ms_ = 0;
  while (!log_.empty() && old(log_.front().before_ms)) log_.pop_front();
}

size_t RevocationList::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return inodes_.size() + tenants_.size() + (all_before_ms_ != 0 ? 1 : 0);
}

}  // namespace sfs::auth
