#include "client/lib/cache_policy.h"

#include <algorithm>

namespace sfs::client {

void CachePolicy::SetHint(const std::vector<uint64_t>& order) {
  uses_.clear();
  for (uint64_t i = 0; i < order.size(); ++i) {
    if (order[i] != 0) uses_[order[i]].push_back(i);
  }
  // Only entries whose rank changes move: the LRU order of the rest stays.
  for (auto& [k, e] : entries_) {
    if (NextUse(e.group) == e.next) continue;
    Unrank(k, e);
    Rank(k, e);
  }
}

void CachePolicy::AddUse(uint64_t group, uint64_t pos) {
  std::deque<uint64_t>& q = uses_[group];
  q.insert(std::lower_bound(q.begin(), q.end(), pos), pos);
  RerankGroup(group);
}

uint64_t CachePolicy::Consume(uint64_t group) {
  auto it = uses_.find(group);
  if (it == uses_.end()) return kNever;
  uint64_t pos = it->second.front();
  it->second.pop_front();
  if (it->second.empty()) uses_.erase(it);
  RerankGroup(group);
  return pos;
}

uint64_t CachePolicy::NextUse(uint64_t group) const {
  auto it = uses_.find(group);
  return it == uses_.end() ? kNever : it->second.front();
}

void CachePolicy::Touch(Key k, uint64_t group) {
  auto [it, inserted] = entries_.try_emplace(k);
  Entry& e = it->second;
  if (!inserted) {
    Unrank(k, e);
    if (e.group != group) members_[e.group].erase(k);
  }
  e.group = group;
  members_[group].insert(k);
  Rank(k, e);
}

void CachePolicy::Remove(Key k) {
  auto it = entries_.find(k);
  if (it == entries_.end()) return;
  Unrank(k, it->second);
  auto m = members_.find(it->second.group);
  if (m != members_.end()) {
    m->second.erase(k);
    if (m->second.empty()) members_.erase(m);
  }
  entries_.erase(it);
}

std::optional<CachePolicy::Key> CachePolicy::Victim() const {
  if (!lru_.empty()) return lru_.back();
  if (!hinted_.empty()) return hinted_.rbegin()->second;
  return std::nullopt;
}

uint64_t CachePolicy::VictimNextUse() const {
  if (!lru_.empty() || hinted_.empty()) return kNever;
  return hinted_.rbegin()->first;
}

void CachePolicy::Clear() {
  entries_.clear();
  lru_.clear();
  hinted_.clear();
  members_.clear();
  uses_.clear();
}

void CachePolicy::Rank(Key k, Entry& e) {
  e.next = NextUse(e.group);
  if (e.next == kNever) {
    lru_.push_front(k);
    e.lru = lru_.begin();
  } else {
    hinted_.emplace(e.next, k);
  }
}

void CachePolicy::Unrank(Key k, Entry& e) {
  if (e.next == kNever) {
    lru_.erase(e.lru);
  } else {
    hinted_.erase({e.next, k});
  }
}

void CachePolicy::RerankGroup(uint64_t group) {
  auto m = members_.find(group);
  if (m == members_.end()) return;
  const uint64_t next = NextUse(group);
  for (Key k : m->second) {
    Entry& e = entries_.at(k);
    if (e.next == next) continue;
    // Consumed or newly hinted: it keeps its recency only in the sense that a
    // group read just now is the most recently used of class 1.
    Unrank(k, e);
    Rank(k, e);
  }
}

}  // namespace sfs::client
