// OpenCache: keeping, handing out and releasing read-only opens (open_cache.h).
#include "client/lib/open_cache.h"

namespace sfs::client {

uint64_t OpenCache::Gen() const {
  std::lock_guard<std::mutex> lock(mu_);
  return gen_;
}

size_t OpenCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return by_end_.size();
}

void OpenCache::EraseLocked(ByEnd::iterator it, std::vector<DeferredClose>* released) {
  const uint64_t ino = it->second.open.attr.ino;
  auto [begin, end] = by_ino_.equal_range(ino);
  for (auto i = begin; i != end; ++i) {
    if (i->second == it) {
      by_ino_.erase(i);
      break;
    }
  }
  if (released != nullptr) released->push_back({.ino = ino, .open_id = it->second.open.open_id});
  by_end_.erase(it);
}

bool OpenCache::Keep(const Cred& c, OpenResult r, uint64_t gen, Clock::time_point until,
                     std::vector<DeferredClose>* released) {
  if (capacity_ == 0 || until < Clock::now() + kMinLeft) return false;
  std::lock_guard<std::mutex> lock(mu_);
  if (gen != gen_) return false;
  const uint64_t ino = r.attr.ino;
  auto it = by_end_.emplace(until, Kept{.cred = c, .open = std::move(r)});
  by_ino_.emplace(ino, it);
  // The one whose lease ends first makes room: it has the least use left.
  while (by_end_.size() > capacity_) EraseLocked(by_end_.begin(), released);
  return true;
}

OpenCache::ByIno::const_iterator OpenCache::FindLocked(const Cred& c, uint64_t ino,
                                                       Clock::time_point soonest) const {
  auto [begin, end] = by_ino_.equal_range(ino);
  for (auto i = begin; i != end; ++i) {
    if (i->second->first >= soonest && SameCred(i->second->second.cred, c)) return i;
  }
  return by_ino_.end();
}

std::optional<OpenResult> OpenCache::Take(const Cred& c, uint64_t ino, Clock::time_point* until) {
  const Clock::time_point soonest = Clock::now() + kMinLeft;
  std::lock_guard<std::mutex> lock(mu_);
  auto i = FindLocked(c, ino, soonest);
  if (i == by_ino_.end()) return std::nullopt;
  ByEnd::iterator it = i->second;
  std::optional<OpenResult> out(std::move(it->second.open));
  *until = it->first;
  by_ino_.erase(i);
  by_end_.erase(it);
  return out;
}

bool OpenCache::Holds(const Cred& c, uint64_t ino, Clock::duration ahead) const {
  const Clock::time_point soonest = Clock::now() + kMinLeft + ahead;
  std::lock_guard<std::mutex> lock(mu_);
  return FindLocked(c, ino, soonest) != by_ino_.end();
}

void OpenCache::Extend(uint64_t ino, Clock::time_point until) {
  const Clock::time_point now = Clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  auto [begin, end] = by_ino_.equal_range(ino);
  for (auto i = begin; i != end; ++i) {
    ByEnd::iterator it = i->second;
    if (it->first <= now || it->first >= until) continue;
    auto node = by_end_.extract(it);
    node.key() = until;
    i->second = by_end_.insert(std::move(node));
  }
}

std::vector<DeferredClose> OpenCache::Changed() {
  std::vector<DeferredClose> released;
  std::lock_guard<std::mutex> lock(mu_);
  ++gen_;
  released.reserve(by_end_.size());
  for (auto& [end, k] : by_end_)
    released.push_back({.ino = k.open.attr.ino, .open_id = k.open.open_id});
  by_end_.clear();
  by_ino_.clear();
  return released;
}

std::vector<DeferredClose> OpenCache::Expired() {
  std::vector<DeferredClose> released;
  const Clock::time_point soonest = Clock::now() + kMinLeft;
  std::lock_guard<std::mutex> lock(mu_);
  while (!by_end_.empty() && by_end_.begin()->first < soonest) {
    EraseLocked(by_end_.begin(), &released);
  }
  return released;
}

}  // namespace sfs::client
