// KvIndex: the in-memory index and eviction policy of one OST's KV-cache
// tier (docs/kv.md "Eviction"). No I/O: KvStore owns the files and asks this
// which blocks exist and which must go; tests drive it with a fake clock.
//
// Blocks are grouped: every block belongs to one group (the blocks of one
// token chunk: all layers, all TP shards), and eviction takes whole groups,
// so a reader never finds half a chunk. Each tenant has its own groups.
//
// Policy: segmented LRU (SLRU) over groups, per tenant. A new group enters
// the probation segment; a hit (Touch) moves it to the MRU end of the
// protected segment, which holds at most kProtectedShare of the tenant's
// quota (the LRU of protected falls back to probation's MRU end). Victims come
// from probation first, then protected, least recently used first. Why not
// plain LRU: many prefixes are seen once (Mooncake#1062: over half the data);
// under LRU a burst of them flushes the shared prefixes that are hit again
// and again (system prompts, shared documents); under SLRU the burst only
// cycles through probation. Cost is LRU's: O(1) per put and hit.
//
// Capacity: a put first evicts the putting tenant's own groups while the
// tenant is over its quota (a tenant over quota loses its own oldest blocks,
// nobody else's), then, while the OST is over capacity, the globally oldest
// probation group (of any tenant), then the oldest protected one. The group
// being put into is never a victim of its own put.
//
// Pins and leases: a block pinned until time T (Pin, or a get's/exists'
// lease) keeps its whole group from eviction and expiry until T. A put that
// finds only pinned groups to evict fails with ENOSPC; nothing is stored.
//
// TTL: a block past its expiry is a miss and is dropped when looked up
// (lazily; until then it is an old block like any other, first in line).
//
// Thread safety: none; KvStore serialises calls under its mutex.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/status.h"

namespace sfs::oss::kv {

class KvIndex {
 public:
  // The protected segment's share of a tenant's quota, in percent.
  static constexpr uint64_t kProtectedShare = 80;

  // capacity: bytes of blocks this index may hold; tenant_quota: per tenant
  // (both > 0).
  KvIndex(uint64_t capacity, uint64_t tenant_quota)
      : capacity_(capacity), quota_(tenant_quota) {}

  struct Found {
    uint64_t size = 0;
    uint32_t crc = 0;
  };
  struct Put {
    std::string id;        // the block's id (unique per index; KvStore uses its path)
    std::string group;     // its group's id (tenant-unique; the id itself for a lone block)
    uint32_t tenant = 0;
    uint64_t size = 0;
    uint32_t crc = 0;
    int64_t expiry_ms = 0;  // 0 = none
  };

  struct Inserted {
    // OK; ENOSPC when room could only be made by evicting pinned groups;
    // EFBIG when the block is larger than the capacity or the tenant's quota.
    // On error the block is not in the index.
    Status status;
    // The blocks evicted (to be removed from disk), also on error: groups
    // evicted before the put found it could not fit stay evicted, and a
    // block that a failed put would have replaced is dropped too.
    std::vector<std::string> evicted;
  };
  // Inserts (or replaces, keeping its pin) a block.
  Inserted Insert(const Put& p, int64_t now_ms);
  // The block, unless it is absent or expired (then *expired lists it: it
  // was dropped here and its file must go). hit: the lookup is a read, which
  // refreshes its group (SLRU promotion); an exists is not.
  std::optional<Found> Lookup(const std::string& id, int64_t now_ms, bool hit,
                              std::vector<std::string>* expired);
  // Pins id's group until until_ms (the later of that and any pin it has);
  // until_ms = 0 unpins the block. False if absent.
  bool Pin(const std::string& id, int64_t until_ms);
  // Drops a block; false if absent.
  bool Remove(const std::string& id);

  uint64_t bytes() const { return bytes_; }
  uint64_t blocks() const { return blocks_.size(); }
  uint64_t tenant_bytes(uint32_t tenant) const;
  uint64_t evicted_groups() const { return evicted_groups_; }
  // For tests: is the block's group in the protected segment.
  bool IsProtected(const std::string& id) const;

 private:
  struct Group;
  struct Block {
    std::string id;
    uint64_t size = 0;
    uint32_t crc = 0;
    int64_t expiry_ms = 0;
    int64_t pinned_until_ms = 0;
    Group* group = nullptr;
  };
  using Lru = std::list<Group*>;  // front = most recently used
  struct Group {
    std::string id;
    uint32_t tenant = 0;
    uint64_t bytes = 0;
    std::vector<Block*> members;
    bool is_protected = false;
    uint64_t tick = 0;  // when last used (put or hit), on ticks_
    Lru::iterator pos;  // in its tenant's probation or protected list
  };
  struct Tenant {
    uint64_t bytes = 0;
    uint64_t protected_bytes = 0;
    Lru probation, protected_;
  };

  bool Pinned(const Group& g, int64_t now_ms) const;
  // The LRU unpinned group of list l other than keep, or null.
  Group* OldestUnpinned(Lru& l, const Group* keep, int64_t now_ms) const;
  // The globally oldest evictable group (probation first), or null.
  Group* GlobalVictim(const Group* keep, int64_t now_ms);
  void Evict(Group* g, std::vector<std::string>* ids);
  void Unlink(Block* b);  // drops b from its group (and the group if empty) and the map
  void Promote(Group* g);
  Lru& ListOf(Group* g);
  Tenant& TenantOf(uint32_t t) { return tenants_[t]; }

  const uint64_t capacity_;
  const uint64_t quota_;
  uint64_t bytes_ = 0;
  uint64_t evicted_groups_ = 0;
  uint64_t ticks_ = 0;  // a clock of uses, for recency across tenants (Group::tick)
  std::unordered_map<std::string, std::unique_ptr<Block>> blocks_;
  std::unordered_map<std::string, std::unique_ptr<Group>> groups_;
  std::map<uint32_t, Tenant> tenants_;
};

}  // namespace sfs::oss::kv
