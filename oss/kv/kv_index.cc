// KvIndex: SLRU over groups, per tenant, with pins and lazy TTL (kv_index.h).
#include "oss/kv/kv_index.h"

#include <algorithm>

namespace sfs::oss::kv {

uint64_t KvIndex::tenant_bytes(uint32_t tenant) const {
  auto it = tenants_.find(tenant);
  return it == tenants_.end() ? 0 : it->second.bytes;
}

bool KvIndex::IsProtected(const std::string& id) const {
  auto it = blocks_.find(id);
  return it != blocks_.end() && it->second->group->is_protected;
}

bool KvIndex::Pinned(const Group& g, int64_t now_ms) const {
  return std::any_of(g.members.begin(), g.members.end(),
                     [now_ms](const Block* b) { return b->pinned_until_ms > now_ms; });
}

KvIndex::Lru& KvIndex::ListOf(Group* g) {
  Tenant& t = TenantOf(g->tenant);
  return g->is_protected ? t.protected_ : t.probation;
}

KvIndex::Group* KvIndex::OldestUnpinned(Lru& l, const Group* keep, int64_t now_ms) const {
  for (auto it = l.rbegin(); it != l.rend(); ++it) {
    if (*it != keep && !Pinned(**it, now_ms)) return *it;
  }
  return nullptr;
}

// Probation of every tenant before any protected group: a group hit again
// outranks one never hit, whoever owns it.
KvIndex::Group* KvIndex::GlobalVictim(const Group* keep, int64_t now_ms) {
  for (bool prot : {false, true}) {
    Group* best = nullptr;
    for (auto& [id, t] : tenants_) {
      Group* g = OldestUnpinned(prot ? t.protected_ : t.probation, keep, now_ms);
      if (g != nullptr && (best == nullptr || g->tick < best->tick)) best = g;
    }
    if (best != nullptr) return best;
  }
  return nullptr;
}

void KvIndex::Unlink(Block* b) {
  Group* g = b->group;
  Tenant& t = TenantOf(g->tenant);
  g->members.erase(std::find(g->members.begin(), g->members.end(), b));
  g->bytes -= b->size;
  t.bytes -= b->size;
  if (g->is_protected) t.protected_bytes -= b->size;
  bytes_ -= b->size;
  if (g->members.empty()) {
    ListOf(g).erase(g->pos);
    groups_.erase(g->id);
  }
  blocks_.erase(b->id);  // last: b lives in it
}

void KvIndex::Evict(Group* g, std::vector<std::string>* ids) {
  ++evicted_groups_;
  // Unlink drops the group with its last member: copy the members first.
  std::vector<Block*> members = g->members;
  for (Block* b : members) {
    ids->push_back(b->id);
    Unlink(b);
  }
}

// To the MRU end of protected; protected then gives its LRU groups back to
// probation while it holds more than its share of the quota.
void KvIndex::Promote(Group* g) {
  Tenant& t = TenantOf(g->tenant);
  ListOf(g).erase(g->pos);
  if (!g->is_protected) {
    g->is_protected = true;
    t.protected_bytes += g->bytes;
  }
  t.protected_.push_front(g);
  g->pos = t.protected_.begin();
  const uint64_t cap = std::min(quota_, capacity_) / 100 * kProtectedShare;
  while (t.protected_bytes > cap && t.protected_.size() > 1) {
    Group* old = t.protected_.back();
    t.protected_.pop_back();
    old->is_protected = false;
    t.protected_bytes -= old->bytes;
    t.probation.push_front(old);
    old->pos = t.probation.begin();
  }
}

KvIndex::Inserted KvIndex::Insert(const Put& p, int64_t now_ms) {
  Inserted r;
  if (p.size > capacity_ || p.size > quota_) {
    r.status = Status::Errno(EFBIG, "kv block larger than the tier's capacity or quota");
    return r;
  }
  int64_t pin = 0;
  bool replaced = false;
  if (auto it = blocks_.find(p.id); it != blocks_.end()) {
    pin = it->second->pinned_until_ms;
    replaced = true;
    Unlink(it->second.get());
  }
  Group* keep = nullptr;
  if (auto it = groups_.find(p.group); it != groups_.end()) keep = it->second.get();
  Tenant& t = TenantOf(p.tenant);
  auto fail = [&](const char* why) {
    if (replaced) r.evicted.push_back(p.id);
    r.status = Status::Errno(ENOSPC, why);
    return r;
  };
  while (t.bytes + p.size > quota_) {
    Group* v = OldestUnpinned(t.probation, keep, now_ms);
    if (v == nullptr) v = OldestUnpinned(t.protected_, keep, now_ms);
    if (v == nullptr) return fail("kv tenant quota full of pinned blocks");
    Evict(v, &r.evicted);
  }
  while (bytes_ + p.size > capacity_) {
    Group* v = GlobalVictim(keep, now_ms);
    if (v == nullptr) return fail("kv tier full of pinned blocks");
    Evict(v, &r.evicted);
  }
  if (keep == nullptr) {
    auto g = std::make_unique<Group>();
    g->id = p.group;
    g->tenant = p.tenant;
    t.probation.push_front(g.get());
    g->pos = t.probation.begin();
    keep = g.get();
    groups_[p.group] = std::move(g);
  } else {  // a put is a use: to the MRU end of its segment
    Lru& l = ListOf(keep);
    l.splice(l.begin(), l, keep->pos);
  }
  keep->tick = ++ticks_;
  auto b = std::make_unique<Block>();
  b->id = p.id;
  b->size = p.size;
  b->crc = p.crc;
  b->expiry_ms = p.expiry_ms;
  b->pinned_until_ms = pin;
  b->group = keep;
  keep->members.push_back(b.get());
  keep->bytes += p.size;
  t.bytes += p.size;
  if (keep->is_protected) t.protected_bytes += p.size;
  bytes_ += p.size;
  blocks_[p.id] = std::move(b);
  return r;
}

std::optional<KvIndex::Found> KvIndex::Lookup(const std::string& id, int64_t now_ms, bool hit,
                                              std::vector<std::string>* expired) {
  auto it = blocks_.find(id);
  if (it == blocks_.end()) return std::nullopt;
  Block* b = it->second.get();
  if (b->expiry_ms != 0 && now_ms >= b->expiry_ms && !Pinned(*b->group, now_ms)) {
    expired->push_back(id);
    Unlink(b);
    return std::nullopt;
  }
  Found f{b->size, b->crc};
  if (hit) {
    b->group->tick = ++ticks_;
    Promote(b->group);
  }
  return f;
}

bool KvIndex::Pin(const std::string& id, int64_t until_ms) {
  auto it = blocks_.find(id);
  if (it == blocks_.end()) return false;
  Block* b = it->second.get();
  b->pinned_until_ms = until_ms == 0 ? 0 : std::max(b->pinned_until_ms, until_ms);
  return true;
}

bool KvIndex::Remove(const std::string& id) {
  auto it = blocks_.find(id);
  if (it == blocks_.end()) return false;
  Unlink(it->second.get());
  return true;
}

}  // namespace sfs::oss::kv
