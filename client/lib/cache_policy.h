// CachePolicy: which cached block to evict, given what the reader will read
// next (docs/cache.md "Eviction").
//
// Entries (cache blocks) belong to groups (inodes). An order hint is a list
// of groups in the order they will be read; a group listed n times has n
// future uses. Each use consumed by a read pops the group's earliest
// position. The victim is then Belady's choice over what is known:
//   1. an entry whose group has no known next use (never in the hint, or all
//      its uses consumed) — the least recently used of those;
//   2. otherwise the entry whose group's next use is farthest.
// Without a hint every entry is in class 1 and this is plain LRU. With a
// shuffled order larger than the cache, LRU evicts exactly the entries the
// next epoch reaches last-but-soon, which is why it thrashes (anchors I1).
//
// Not thread-safe: the cache holds its lock around every call. Sizes are the
// caller's business (it calls Victim() until it fits).
#pragma once

#include <cstdint>
#include <deque>
#include <list>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace sfs::client {

class CachePolicy {
 public:
  static constexpr uint64_t kNever = UINT64_MAX;
  using Key = uint64_t;  // an entry; opaque (the cache's block id)

  // Replaces the hint: order[i] is read at position i (0 first); group 0
  // is an entry not resolved yet (AddUse later). Entries already held are
  // re-ranked.
  void SetHint(const std::vector<uint64_t>& order);
  // Adds a use of group at position pos of the current hint (a hint entry
  // resolved to its group later than SetHint). Positions should be new.
  void AddUse(uint64_t group, uint64_t pos);
  // A read of group: consumes its earliest known use. Returns that position,
  // or kNever if the group had none.
  uint64_t Consume(uint64_t group);
  // The position of group's next known use, or kNever.
  uint64_t NextUse(uint64_t group) const;

  // Inserts or re-uses an entry (makes it most recently used).
  void Touch(Key k, uint64_t group);
  void Remove(Key k);
  bool Contains(Key k) const { return entries_.contains(k); }
  size_t size() const { return entries_.size(); }
  // The entry to evict next (see the file comment), or none if empty.
  std::optional<Key> Victim() const;
  // The next use of Victim()'s group (kNever for class 1, or when empty):
  // an entry used at or after this position is not worth admitting in its
  // place.
  uint64_t VictimNextUse() const;
  void Clear();

 private:
  struct Entry {
    uint64_t group = 0;
    uint64_t next = kNever;               // next use of group when ranked
    std::list<Key>::iterator lru;         // valid iff next == kNever
  };
  // Moves k into the structure its group's next use says.
  void Rank(Key k, Entry& e);
  void Unrank(Key k, Entry& e);
  void RerankGroup(uint64_t group);

  std::unordered_map<Key, Entry> entries_;
  std::list<Key> lru_;                                  // class 1, front = most recent
  std::set<std::pair<uint64_t, Key>> hinted_;           // class 2 by next use
  std::unordered_map<uint64_t, std::deque<uint64_t>> uses_;  // group -> positions, ascending
  std::unordered_map<uint64_t, std::unordered_set<Key>> members_;  // group -> entries
};

}  // namespace sfs::client
