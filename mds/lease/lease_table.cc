// LeaseTable (see lease_table.h): grants, per-client invalidation queues with
// re-send until acked, and revocations that wait for acks or expiry.
#include "mds/lease/lease_table.h"

#include <algorithm>
#include <chrono>
#include <limits>

namespace sfs::mds {
namespace {

constexpr size_t kMaxBatch = 1024;     // invalidations per Watch reply
constexpr int64_t kSweepMs = 1000;     // how often expired leases are forgotten
constexpr int64_t kForgetMs = 60000;   // a silent client's state is dropped after this
constexpr int64_t kRevokedKeepMs = 60000;  // > any request's lifetime (30 s RPC deadline)

}  // namespace

int64_t LeaseTable::SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

LeaseTable::LeaseTable(const LeaseOptions& opts, Clock now)
    : opts_(opts),
      now_(std::move(now)),
      grace_end_(now_() + (opts.grace_ms >= 0 ? opts.grace_ms : opts.lease_ms + opts.margin_ms)) {}

LeaseTable::~LeaseTable() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
    cv_.notify_all();
  }
  if (timer_.joinable()) timer_.join();
}

void LeaseTable::StartTimer() { timer_ = std::thread([this] { TimerLoop(); }); }

uint64_t LeaseTable::Tick() {
  std::lock_guard<std::mutex> l(mu_);
  return tick_;
}

bool LeaseTable::WatchActive(uint64_t client) {
  std::lock_guard<std::mutex> l(mu_);
  auto c = clients_.find(client);
  return c != clients_.end() &&
         (c->second.held || now_() - c->second.last_poll <= opts_.watch_active_ms);
}

uint32_t LeaseTable::Grant(uint64_t client, uint64_t ino, uint64_t since_tick) {
  if (opts_.lease_ms <= 0) return 0;
  std::lock_guard<std::mutex> l(mu_);
  int64_t now = now_();
  auto c = clients_.find(client);
  if (c == clients_.end()) return 0;
  if (!c->second.held && now - c->second.last_poll > opts_.watch_active_ms) return 0;
  auto it = inos_.find(ino);
  if (it == inos_.end()) {
    if (since_tick < pruned_tick_) return 0;  // its revocation record may be gone
    it = inos_.emplace(ino, InoState{}).first;
  } else if (it->second.revoked_tick > since_tick) {
    return 0;  // read before a change whose revocation did not see this lease
  }
  // Once per process, so its cost (a file create) under mu_ does not matter.
  if (opts_.on_first_grant) std::call_once(first_grant_, opts_.on_first_grant);
  it->second.holders[client] = now + opts_.lease_ms + opts_.margin_ms;
  return static_cast<uint32_t>(opts_.lease_ms);
}

void LeaseTable::Watch(uint64_t client, uint64_t ack_seq, int64_t wait_ms, WatchDone done) {
  Calls calls;
  {
    std::lock_guard<std::mutex> l(mu_);
    int64_t now = now_();
    ClientState& cs = clients_[client];
    cs.last_poll = now;
    // An ack from a previous MDS instance can be above anything we sent.
    cs.acked = std::max(cs.acked, std::min(ack_seq, cs.last_seq));
    while (!cs.queue.empty() && cs.queue.front().seq <= cs.acked) cs.queue.pop_front();
    if (cs.held) AnswerWatch(cs, now, &calls);  // superseded: answer the old poll
    cs.held = std::move(done);
    wait_ms = std::clamp<int64_t>(wait_ms <= 0 ? 1000 : wait_ms, 1, opts_.max_wait_ms);
    cs.held_until = now + wait_ms;
    DropMoot(cs, now);
    if (!cs.queue.empty()) AnswerWatch(cs, now, &calls);
    CompletePending(now, &calls);
    cv_.notify_all();
  }
  for (auto& f : calls) f();
}

void LeaseTable::Leave(uint64_t client) {
  Calls calls;
  {
    std::lock_guard<std::mutex> l(mu_);
    int64_t now = now_();
    for (auto& [ino, st] : inos_) st.holders.erase(client);
    auto c = clients_.find(client);
    if (c != clients_.end()) {
      if (c->second.held) AnswerWatch(c->second, now, &calls);
      clients_.erase(c);  // Satisfied(): an unknown client waits for nothing
    }
    CompletePending(now, &calls);
    cv_.notify_all();
  }
  for (auto& f : calls) f();
}

void LeaseTable::Revoke(uint64_t requester, std::vector<LeaseInval> items,
                        std::function<void()> done) {
  Calls calls;
  {
    std::lock_guard<std::mutex> l(mu_);
    int64_t now = now_();
    ++tick_;
    Pending p;
    p.requester = requester;
    p.not_before = now < grace_end_ ? grace_end_ : 0;
    // The holders of each inode, taken once: several items may name one
    // inode (a directory whose two names a rename changes) and each goes to
    // every holder, though the first revocation ends the leases.
    std::unordered_map<uint64_t, std::vector<std::pair<uint64_t, int64_t>>> revoked;
    for (const LeaseInval& item : items) {
      auto [it, fresh] = revoked.try_emplace(item.ino);
      if (fresh) {
        InoState& st = inos_[item.ino];
        st.revoked_tick = tick_;
        st.revoked_at = now;
        for (auto h = st.holders.begin(); h != st.holders.end();) {
          if (h->first == requester) {
            ++h;
            continue;
          }
          if (h->second > now) it->second.emplace_back(h->first, h->second);
          h = st.holders.erase(h);
        }
      }
      for (auto& [client, expiry] : it->second) Enqueue(client, item, expiry, &p);
    }
    for (const Wait& w : p.waits) {
      ClientState& cs = clients_[w.client];
      if (cs.held) AnswerWatch(cs, now, &calls);
    }
    // Break wait cycles (lease_table.h): the items are sent either way.
    std::erase_if(p.waits, [&](const Wait& w) { return WaitsOn(w.client, requester, now); });
    if (p.waits.empty() && p.not_before == 0) {
      calls.push_back(std::move(done));
    } else {
      p.done = std::move(done);
      pending_.push_back(std::move(p));
      cv_.notify_all();
    }
  }
  for (auto& f : calls) f();
}

void LeaseTable::Recall(uint64_t holder, LeaseInval item, int64_t until_ms,
                        std::function<void()> done) {
  Calls calls;
  {
    std::lock_guard<std::mutex> l(mu_);
    const int64_t now = now_();
    if (until_ms <= now) {
      calls.push_back(std::move(done));
    } else {
      Pending p;  // requester 0: no client, so no wait cycle runs through it
      Enqueue(holder, item, until_ms, &p);
      ClientState& cs = clients_[holder];
      if (cs.held) AnswerWatch(cs, now, &calls);
      p.done = std::move(done);
      pending_.push_back(std::move(p));
      cv_.notify_all();
    }
  }
  for (auto& f : calls) f();
}

void LeaseTable::Enqueue(uint64_t client, const LeaseInval& item, int64_t expiry, Pending* p) {
  ClientState& cs = clients_[client];
  uint64_t seq = ++cs.last_seq;
  cs.queue.push_back(Queued{seq, item, expiry});
  p->waits.push_back(Wait{client, seq, expiry});
}

void LeaseTable::AnswerWatch(ClientState& cs, int64_t now, Calls* out) {
  DropMoot(cs, now);
  std::vector<LeaseInval> items;
  uint64_t seq = cs.last_seq;
  for (const Queued& q : cs.queue) {
    if (items.size() == kMaxBatch) break;
    items.push_back(q.item);
    seq = q.seq;
  }
  // Nothing queued: every seq so far is acked or moot, so the client may ack them all.
  out->push_back([done = std::move(cs.held), items = std::move(items), seq]() mutable {
    done(std::move(items), seq);
  });
  cs.held = nullptr;
}

void LeaseTable::DropMoot(ClientState& cs, int64_t now) {
  std::erase_if(cs.queue, [now](const Queued& q) { return q.expiry <= now; });
}

bool LeaseTable::Satisfied(const Wait& w, int64_t now) {
  if (w.deadline <= now) return true;
  auto c = clients_.find(w.client);
  return c == clients_.end() || c->second.acked >= w.seq;
}

// Whether client `from` has a change waiting, directly or through the
// holders it waits for, on an ack from `target`.
bool LeaseTable::WaitsOn(uint64_t from, uint64_t target, int64_t now) {
  std::vector<uint64_t> todo{from};
  std::vector<uint64_t> seen;
  while (!todo.empty()) {
    uint64_t c = todo.back();
    todo.pop_back();
    if (std::find(seen.begin(), seen.end(), c) != seen.end()) continue;
    seen.push_back(c);
    for (const Pending& p : pending_) {
      if (p.requester != c) continue;
      for (const Wait& w : p.waits) {
        if (Satisfied(w, now)) continue;
        if (w.client == target) return true;
        todo.push_back(w.client);
      }
    }
  }
  return false;
}

void LeaseTable::CompletePending(int64_t now, Calls* out) {
  for (auto p = pending_.begin(); p != pending_.end();) {
    std::erase_if(p->waits, [&](const Wait& w) { return Satisfied(w, now); });
    if (p->waits.empty() && p->not_before <= now) {
      out->push_back(std::move(p->done));
      p = pending_.erase(p);
    } else {
      ++p;
    }
  }
}

void LeaseTable::RunDue() {
  Calls calls;
  {
    std::lock_guard<std::mutex> l(mu_);
    int64_t now = now_();
    for (auto& [id, cs] : clients_) {
      if (cs.held && cs.held_until <= now) AnswerWatch(cs, now, &calls);
    }
    CompletePending(now, &calls);
    if (now >= next_sweep_) Sweep(now);
  }
  for (auto& f : calls) f();
}

void LeaseTable::Sweep(int64_t now) {
  next_sweep_ = now + kSweepMs;
  for (auto it = inos_.begin(); it != inos_.end();) {
    std::erase_if(it->second.holders, [now](const auto& h) { return h.second <= now; });
    if (it->second.holders.empty() && now - it->second.revoked_at > kRevokedKeepMs) {
      pruned_tick_ = std::max(pruned_tick_, it->second.revoked_tick);
      it = inos_.erase(it);
    } else {
      ++it;
    }
  }
  std::erase_if(clients_, [now](const auto& c) {
    return !c.second.held && now - c.second.last_poll > kForgetMs;
  });
}

int64_t LeaseTable::NextDeadline() {
  int64_t next = next_sweep_;
  for (auto& [id, cs] : clients_) {
    if (cs.held) next = std::min(next, cs.held_until);
  }
  // Acks complete a revocation early (through Watch); by time, it completes
  // when its last wait expires and the grace period is over.
  for (const Pending& p : pending_) {
    int64_t due = p.not_before;
    for (const Wait& w : p.waits) due = std::max(due, w.deadline);
    next = std::min(next, due);
  }
  return next;
}

void LeaseTable::TimerLoop() {
  std::unique_lock<std::mutex> l(mu_);
  while (!stop_) {
    int64_t wait = std::max<int64_t>(NextDeadline() - now_(), 0);
    cv_.wait_for(l, std::chrono::milliseconds(std::max<int64_t>(wait, 1)));
    if (stop_) break;
    l.unlock();
    RunDue();
    l.lock();
  }
}

size_t LeaseTable::LeaseCount() {
  std::lock_guard<std::mutex> l(mu_);
  size_t n = 0;
  for (const auto& [ino, s] : inos_) n += s.holders.size();
  return n;
}

size_t LeaseTable::Holders(uint64_t ino) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = inos_.find(ino);
  return it == inos_.end() ? 0 : it->second.holders.size();
}

size_t LeaseTable::PendingRevocations() {
  std::lock_guard<std::mutex> l(mu_);
  return pending_.size();
}

}  // namespace sfs::mds
