// LockTable (lock_table.h). One mutex over the whole table: a lock op is a
// few map lookups, far below an RPC's cost, so finer locking would buy
// nothing measurable and make the deadlock search (which crosses inodes)
// harder to get right.
#include "mds/lock/lock_table.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <set>

namespace sfs::mds {
namespace {

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void Run(std::vector<std::pair<LockTable::Done, Status>>& calls) {
  for (auto& [done, st] : calls) done(st);
  calls.clear();
}

}  // namespace

LockTable::LockTable(LockOptions opts, Clock clock)
    : opts_(std::move(opts)),
      clock_(clock ? std::move(clock) : Clock(SteadyMs)),
      start_ms_(clock_()) {
  timer_ = std::thread([this] { TimerLoop(); });
}

LockTable::~LockTable() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  timer_.join();
}

bool LockTable::InGraceLocked() const { return clock_() < start_ms_ + opts_.grace_ms; }

std::vector<LockOwner> LockTable::ConflictsLocked(const Resource& res,
                                                  const LockRequest& r) const {
  std::vector<LockOwner> out;
  for (const auto& [owner, ranges] : res.held) {
    if (owner == r.owner) continue;
    for (const lock::Range& h : ranges) {
      if (lock::Conflict(h, r.range)) {
        out.push_back(owner);
        break;
      }
    }
  }
  return out;
}

bool LockTable::WouldDeadlockLocked(LockOwner from, std::vector<LockOwner> blockers) const {
  std::set<LockOwner> seen;
  while (!blockers.empty()) {
    LockOwner b = blockers.back();
    blockers.pop_back();
    if (b == from) return true;
    if (!seen.insert(b).second) continue;
    // What b itself waits for.
    for (const auto& [key, res] : res_) {
      if (key.flock) continue;  // as Linux: flock waits are not searched
      for (const Waiter& w : res.waiters) {
        if (w.req.owner != b) continue;
        for (const LockOwner& o : ConflictsLocked(res, w.req)) blockers.push_back(o);
      }
    }
  }
  return false;
}

bool LockTable::MayWidenLocked(const Key& k, const Resource& res, const LockRequest& r) const {
  if (!r.cache || r.flock || r.range.type != lock::kWrite || !res.waiters.empty()) return false;
  for (const auto& [owner, ranges] : res.held) {
    if (owner != r.owner) return false;
  }
  auto last = recalls_.find(k);
  return last == recalls_.end() || clock_() - last->second >= opts_.cache_quiet_ms;
}

void LockTable::RecallLocked(const Key& k, Resource* res, const std::vector<LockOwner>& blockers,
                             std::vector<std::function<void()>>* out) {
  if (!res->cached || res->recalled || !cache_hooks_.recall) return;
  if (std::find(blockers.begin(), blockers.end(), *res->cached) == blockers.end()) return;
  res->recalled = true;
  recalls_[k] = clock_();
  out->push_back([recall = cache_hooks_.recall, ino = k.ino, holder = *res->cached] {
    recall(ino, holder);
  });
}

void LockTable::GrantLocked(Resource* res, const LockRequest& r) {
  std::vector<lock::Range>& mine = res->held[r.owner];
  lock::Apply(&mine, r.range);
  if (mine.empty()) {
    res->held.erase(r.owner);
    res->pids.erase(r.owner);
    if (res->cached == r.owner) {
      res->cached.reset();
      res->recalled = false;
    }
  } else {
    res->pids[r.owner] = r.pid;
  }
  if (r.range.type != lock::kUnlock) {
    seen_.emplace(r.owner.client, clock_());
    tracked_.store(seen_.size(), std::memory_order_relaxed);
    if (!granted_any_) {
      granted_any_ = true;
      if (opts_.on_first_grant) opts_.on_first_grant();
    }
  }
}

void LockTable::WakeLocked(const Key& k, Completions* out) {
  auto it = res_.find(k);
  if (it == res_.end()) return;
  Resource& res = it->second;
  for (auto w = res.waiters.begin(); w != res.waiters.end();) {
    if (ConflictsLocked(res, w->req).empty()) {
      GrantLocked(&res, w->req);
      out->emplace_back(std::move(w->done), Status::Ok());
      w = res.waiters.erase(w);
    } else {
      ++w;
    }
  }
}

void LockTable::EraseIfEmptyLocked(const Key& k) {
  auto it = res_.find(k);
  if (it != res_.end() && it->second.held.empty() && it->second.waiters.empty()) res_.erase(it);
}

std::optional<LockHolder> LockTable::Test(const LockRequest& r) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = res_.find(Key{r.ino, r.flock});
  if (it == res_.end()) return std::nullopt;
  for (const auto& [owner, ranges] : it->second.held) {
    if (owner == r.owner) continue;
    for (const lock::Range& h : ranges) {
      if (lock::Conflict(h, r.range)) {
        auto pid = it->second.pids.find(owner);
        return LockHolder{owner, pid == it->second.pids.end() ? 0 : pid->second, h};
      }
    }
  }
  return std::nullopt;
}

void LockTable::Set(const LockRequest& asked, Done done) {
  Completions calls;
  std::vector<std::function<void()>> recalls;
  // Asked before mu_ is taken: the hook takes the lease table's lock.
  const bool may_cache = asked.cache && cache_hooks_.may_cache &&
                         cache_hooks_.may_cache(asked.owner.client);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!asked.reclaim && asked.range.type != lock::kUnlock && InGraceLocked()) {
      grace_.emplace_back(asked, std::move(done));  // answered when the grace period ends
      cv_.notify_all();
      return;
    }
    const Key k{asked.ino, asked.flock};
    Resource& res = res_[k];
    LockRequest r = asked;
    const bool widen = may_cache && MayWidenLocked(k, res, r);
    if (widen) r.range = {0, lock::kLockEof, lock::kWrite};
    std::vector<LockOwner> blockers =
        r.range.type == lock::kUnlock ? std::vector<LockOwner>{} : ConflictsLocked(res, r);
    RecallLocked(k, &res, blockers, &recalls);
    if (blockers.empty()) {
      GrantLocked(&res, r);
      if (widen) {
        res.cached = r.owner;
        res.recalled = false;
      }
      calls.emplace_back(std::move(done), Status::Ok());
      if (r.range.type == lock::kUnlock || r.range.type == lock::kRead) WakeLocked(k, &calls);
    } else if (!r.wait) {
      calls.emplace_back(std::move(done), Status(EAGAIN, "lock held by another client"));
    } else if (!r.flock && WouldDeadlockLocked(r.owner, blockers)) {
      calls.emplace_back(std::move(done), Status(EDEADLK, "lock wait would deadlock"));
    } else {
      // A downgrade or partial unlock by this owner may have made room for
      // others; a wait of its own replaces any earlier one (a re-sent wait).
      res.waiters.remove_if([&](const Waiter& w) { return w.req.owner == r.owner; });
      res.waiters.push_back({r, std::move(done), clock_() + std::max<int64_t>(r.wait_ms, 1)});
      seen_.emplace(r.owner.client, clock_());
      tracked_.store(seen_.size(), std::memory_order_relaxed);
      cv_.notify_all();
    }
    EraseIfEmptyLocked(k);
  }
  for (auto& f : recalls) f();
  Run(calls);
}

void LockTable::SetCacheHooks(CacheHooks hooks) {
  std::lock_guard<std::mutex> lock(mu_);
  cache_hooks_ = std::move(hooks);
}

bool LockTable::HoldsCached(uint64_t ino, LockOwner owner) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = res_.find(Key{ino, false});
  return it != res_.end() && it->second.cached == owner;
}

void LockTable::DropCached(uint64_t client) {
  Completions calls;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Key> touched;
    for (auto& [key, res] : res_) {
      if (!res.cached || res.cached->client != client) continue;
      res.held.erase(*res.cached);
      res.pids.erase(*res.cached);
      res.cached.reset();
      res.recalled = false;
      touched.push_back(key);
    }
    for (const Key& k : touched) {
      WakeLocked(k, &calls);
      EraseIfEmptyLocked(k);
    }
  }
  Run(calls);
}

void LockTable::Cancel(uint64_t ino, bool flock, LockOwner owner) {
  Completions calls;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const Key k{ino, flock};
    auto it = res_.find(k);
    if (it != res_.end()) {
      it->second.waiters.remove_if([&](Waiter& w) {
        if (w.req.owner != owner) return false;
        calls.emplace_back(std::move(w.done), Status(EINTR, "lock wait interrupted"));
        return true;
      });
      EraseIfEmptyLocked(k);
    }
    grace_.remove_if([&](std::pair<LockRequest, Done>& g) {
      if (g.first.ino != ino || g.first.flock != flock || g.first.owner != owner) return false;
      calls.emplace_back(std::move(g.second), Status(EINTR, "lock wait interrupted"));
      return true;
    });
  }
  Run(calls);
}

void LockTable::Touch(uint64_t client) {
  // Every MDS request touches its client: without a lock holder or waiter
  // anywhere (the common case) that costs no mutex. A client that gets its
  // first lock is entered with a fresh time, so a Touch missed meanwhile
  // loses nothing.
  if (tracked_.load(std::memory_order_relaxed) == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = seen_.find(client);
  if (it != seen_.end()) it->second = clock_();
}

void LockTable::DropClient(uint64_t client) {
  Completions calls;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Key> touched;
    for (auto& [key, res] : res_) {
      bool changed = false;
      if (res.cached && res.cached->client == client) {
        res.cached.reset();
        res.recalled = false;
      }
      for (auto h = res.held.begin(); h != res.held.end();) {
        if (h->first.client == client) {
          res.pids.erase(h->first);
          h = res.held.erase(h);
          changed = true;
        } else {
          ++h;
        }
      }
      res.waiters.remove_if([&](Waiter& w) {
        if (w.req.owner.client != client) return false;
        calls.emplace_back(std::move(w.done), Status(EIO, "client expired"));
        return true;
      });
      if (changed) touched.push_back(key);
    }
    for (const Key& k : touched) WakeLocked(k, &calls);
    for (auto it = res_.begin(); it != res_.end();) {
      it = it->second.held.empty() && it->second.waiters.empty() ? res_.erase(it) : std::next(it);
    }
    seen_.erase(client);
    tracked_.store(seen_.size(), std::memory_order_relaxed);
  }
  Run(calls);
}

void LockTable::Housekeep() {
  Completions calls;
  std::vector<uint64_t> expired;
  std::list<std::pair<LockRequest, Done>> after_grace;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t now = clock_();
    for (auto& [key, res] : res_) {
      res.waiters.remove_if([&](Waiter& w) {
        if (w.deadline_ms > now) return false;
        calls.emplace_back(std::move(w.done), Status(EINPROGRESS, "still waiting for the lock"));
        return true;
      });
    }
    for (auto it = res_.begin(); it != res_.end();) {
      it = it->second.held.empty() && it->second.waiters.empty() ? res_.erase(it) : std::next(it);
    }
    for (const auto& [client, seen] : seen_) {
      if (now - seen > opts_.client_timeout_ms) expired.push_back(client);
    }
    if (!InGraceLocked()) after_grace.swap(grace_);
    std::erase_if(recalls_, [&](const auto& e) { return now - e.second >= opts_.cache_quiet_ms; });
  }
  Run(calls);
  for (uint64_t c : expired) DropClient(c);
  for (auto& [r, done] : after_grace) Set(r, std::move(done));
}

void LockTable::TimerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, std::chrono::milliseconds(100));
    if (stop_) break;
    lock.unlock();
    Housekeep();
    lock.lock();
  }
}

size_t LockTable::LockCount() {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [key, res] : res_) {
    for (const auto& [owner, ranges] : res.held) n += ranges.size();
  }
  return n;
}

size_t LockTable::WaiterCount() {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = grace_.size();
  for (const auto& [key, res] : res_) n += res.waiters.size();
  return n;
}

}  // namespace sfs::mds
