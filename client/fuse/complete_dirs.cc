// CompleteDirs (see complete_dirs.h).
#include "client/fuse/complete_dirs.h"

#include <algorithm>

namespace sfs::fuse {

uint64_t CompleteDirs::Epoch() const {
  std::lock_guard<std::mutex> l(mu_);
  return epoch_;
}

uint64_t CompleteDirs::NamesEpoch() const {
  std::lock_guard<std::mutex> l(mu_);
  return names_epoch_;
}

void CompleteDirs::Listed(uint64_t dir, std::vector<std::string> names,
                          Clock::time_point first_sent, uint32_t first_ms,
                          Clock::time_point last_sent, uint32_t last_ms, uint64_t epoch,
                          uint64_t names_epoch) {
  const auto now = Clock::now();
  if (first_ms == 0 || last_ms == 0 || names.size() > kMaxNames) return;
  if (names.size() > kMaxTotalNames) return;
  if (now >= first_sent + std::chrono::milliseconds(first_ms)) return;  // a gap is possible
  const auto expiry = last_sent + std::chrono::milliseconds(last_ms);
  std::lock_guard<std::mutex> l(mu_);
  if (epoch != epoch_ || names_epoch != names_epoch_) return;
  Erase(dir);
  if (dirs_.size() >= kMaxDirs || total_names_ + names.size() > kMaxTotalNames) SweepExpired(now);
  if (dirs_.size() >= kMaxDirs || total_names_ + names.size() > kMaxTotalNames) return;
  Dir& d = dirs_[dir];
  d.expiry = expiry;
  for (std::string& n : names) d.names.insert(std::move(n));
  total_names_ += d.names.size();
}

void CompleteDirs::Made(uint64_t dir, uint32_t lease_ms, Clock::time_point sent,
                        uint64_t epoch) {
  if (lease_ms == 0) return;
  const auto now = Clock::now();
  const auto expiry = sent + std::chrono::milliseconds(lease_ms);
  std::lock_guard<std::mutex> l(mu_);
  if (epoch != epoch_ || expiry <= now) return;
  Erase(dir);
  if (dirs_.size() >= kMaxDirs) SweepExpired(now);
  if (dirs_.size() >= kMaxDirs) return;
  dirs_[dir].expiry = expiry;
}

CompleteDirs::Dir* CompleteDirs::Live(uint64_t dir, Clock::time_point now) {
  auto it = dirs_.find(dir);
  if (it == dirs_.end()) return nullptr;
  if (it->second.expiry <= now) {
    Erase(dir);
    return nullptr;
  }
  return &it->second;
}

void CompleteDirs::Added(uint64_t dir, std::string_view name, uint32_t dir_lease_ms,
                         Clock::time_point sent) {
  const auto now = Clock::now();
  std::lock_guard<std::mutex> l(mu_);
  ++names_epoch_;
  Dir* d = Live(dir, now);
  if (d == nullptr) return;
  if (d->names.size() >= kMaxNames || total_names_ >= kMaxTotalNames) {
    Erase(dir);
    return;
  }
  total_names_ += d->names.emplace(name).second ? 1 : 0;
  if (dir_lease_ms > 0) d->expiry = std::max(d->expiry, sent + std::chrono::milliseconds(dir_lease_ms));
}

void CompleteDirs::Removed(uint64_t dir, std::string_view name) {
  std::lock_guard<std::mutex> l(mu_);
  ++names_epoch_;
  Dir* d = Live(dir, Clock::now());
  if (d != nullptr) total_names_ -= d->names.erase(std::string(name));
}

void CompleteDirs::Forget(uint64_t dir) {
  std::lock_guard<std::mutex> l(mu_);
  ++epoch_;
  ++names_epoch_;
  Erase(dir);
  attrs_.erase(dir);
}

void CompleteDirs::SetAttr(const client::Attr& a, Clock::time_point sent, uint64_t epoch) {
  if (a.lease_ms == 0 || a.ino == 0) return;
  const auto now = Clock::now();
  const auto expiry = sent + std::chrono::milliseconds(a.lease_ms);
  std::lock_guard<std::mutex> l(mu_);
  if (epoch != epoch_ || expiry <= now) {
    attrs_.erase(a.ino);
    return;
  }
  if (attrs_.size() >= kMaxDirs) {
    std::erase_if(attrs_, [now](const auto& d) { return d.second.expiry <= now; });
    if (attrs_.size() >= kMaxDirs) return;
  }
  attrs_[a.ino] = Attrs{expiry, a};
}

double CompleteDirs::CachedAttr(uint64_t dir, client::Attr* out) {
  const auto now = Clock::now();
  std::lock_guard<std::mutex> l(mu_);
  auto it = attrs_.find(dir);
  if (it == attrs_.end()) return 0;
  if (it->second.expiry <= now) {
    attrs_.erase(it);
    return 0;
  }
  *out = it->second.attr;
  return std::chrono::duration<double>(it->second.expiry - now).count();
}

// No epoch move: this mount's changes to one directory (name ops in it,
// setattr, xattrs) are serialised by the kernel's lock on it, so no other
// reply of ours about dir is in flight to store older attributes.
void CompleteDirs::DropAttr(uint64_t dir) {
  std::lock_guard<std::mutex> l(mu_);
  attrs_.erase(dir);
}

void CompleteDirs::DropAllAttrs() {
  std::lock_guard<std::mutex> l(mu_);
  ++epoch_;
  attrs_.clear();
}

double CompleteDirs::AbsentFor(uint64_t dir, std::string_view name) {
  const auto now = Clock::now();
  std::lock_guard<std::mutex> l(mu_);
  Dir* d = Live(dir, now);
  if (d == nullptr || d->names.count(std::string(name)) != 0) return 0;
  return std::chrono::duration<double>(d->expiry - now).count();
}

size_t CompleteDirs::size() const {
  std::lock_guard<std::mutex> l(mu_);
  return dirs_.size();
}

void CompleteDirs::SweepExpired(Clock::time_point now) {
  for (auto it = dirs_.begin(); it != dirs_.end();) {
    if (it->second.expiry <= now) {
      total_names_ -= it->second.names.size();
      it = dirs_.erase(it);
    } else {
      ++it;
    }
  }
}

void CompleteDirs::Erase(uint64_t dir) {
  auto it = dirs_.find(dir);
  if (it == dirs_.end()) return;
  total_names_ -= it->second.names.size();
  dirs_.erase(it);
}

}  // namespace sfs::fuse
