// The metadata commit policy; see committer.h.
//
// Why counting writes is enough: a write is noted after KvStore::Write
// returned, so every write counted in `written_` when a Commit reads it is in
// the log before that Commit's Sync starts. The sets of noted writes only
// grow, so a finished Sync that began after reading a count >= ours covered
// every write we could see; committed_ keeps the largest such count.
#include "mds/namespace/committer.h"

#include "common/log.h"

namespace sfs::mds {
namespace {
thread_local Committer::DeferScope* tl_scope = nullptr;
}  // namespace

Committer::DeferScope::DeferScope() : outer_(tl_scope) { tl_scope = this; }
Committer::DeferScope::~DeferScope() {
  tl_scope = outer_;
  if (outer_ != nullptr) outer_->Note(seq_);
}
Committer::DeferScope* Committer::DeferScope::Current() { return tl_scope; }

Committer::Committer(KvStore* store, int64_t interval_ms)
    : store_(store), interval_(interval_ms > 0 ? interval_ms : 0) {}

Committer::~Committer() { (void)Stop(); }

void Committer::Start() {
  std::lock_guard<std::mutex> l(mu_);
  if (sync_each_op() || thread_.joinable() || stop_) return;
  thread_ = std::thread([this] { Loop(); });
}

Status Committer::Commit() {
  const uint64_t target = written_.load(std::memory_order_acquire);
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!failed_.ok()) return failed_;
  }
  if (target <= committed_.load(std::memory_order_acquire)) return Status::Ok();
  SFS_RETURN_IF_ERROR(SyncStore());
  RaiseCommitted(target);
  return Status::Ok();
}

void Committer::RaiseCommitted(uint64_t target) {
  uint64_t seen = committed_.load(std::memory_order_acquire);
  while (seen < target && !committed_.compare_exchange_weak(seen, target)) {
  }
}

Status Committer::SyncStore() {
  auto start = std::chrono::steady_clock::now();
  Status st = store_->Sync();
  if (metrics::Histogram* h = sync_histogram_.load()) {
    h->ObserveNanos(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                              std::chrono::steady_clock::now() - start)
                                              .count()));
  }
  if (!st.ok()) sync_failures_.fetch_add(1);
  if (st.ok()) {
    commits_.fetch_add(1);
    return st;
  }
  std::lock_guard<std::mutex> l(mu_);
  if (failed_.ok()) {
    LOG_ERROR("metadata commit failed, no later commit can be trusted: " << st.ToString());
    failed_ = Status::Errno(st.code() != 0 ? st.code() : EIO,
                            "metadata commit failed: " + st.message());
  }
  return failed_;
}

void Committer::WhenDurable(uint64_t seq, std::function<void(const Status&)> fn) {
  Status st;
  {
    std::lock_guard<std::mutex> l(mu_);
    st = failed_;
    if (st.ok() && seq > committed_.load(std::memory_order_acquire) && !stop_) {
      waiters_.push_back({seq, std::move(fn)});
      if (!waiter_thread_.joinable()) waiter_thread_ = std::thread([this] { WaiterLoop(); });
      cv_.notify_all();
      return;
    }
  }
  // Durable already, failed, or stopping (no thread to hand it to): here.
  if (st.ok() && seq > committed_.load(std::memory_order_acquire)) st = Commit();
  fn(st);
}

// Commits while anyone waits: each pass covers every write noted before it
// began, so the replies of all ops that arrived during the previous fsync go
// out after the next one.
void Committer::WaiterLoop() {
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    cv_.wait(l, [&] { return stop_ || !waiters_.empty(); });
    if (waiters_.empty()) return;  // stopping, nothing left
    l.unlock();
    Status st = Commit();
    const uint64_t done = committed_.load(std::memory_order_acquire);
    l.lock();
    std::vector<Waiter> ready;
    for (size_t i = 0; i < waiters_.size();) {
      if (!st.ok() || waiters_[i].seq <= done) {
        ready.push_back(std::move(waiters_[i]));
        waiters_[i] = std::move(waiters_.back());
        waiters_.pop_back();
      } else {
        ++i;
      }
    }
    l.unlock();
    for (Waiter& w : ready) w.fn(st);
    l.lock();
  }
}

void Committer::Loop() {
  std::unique_lock<std::mutex> l(mu_);
  while (!cv_.wait_for(l, interval_, [&] { return stop_; })) {
    l.unlock();
    (void)Commit();  // a failure is logged once and kept for the next Commit()
    ticks_.fetch_add(1);
    l.lock();
  }
}

Status Committer::Stop() {
  bool again = false;
  {
    std::lock_guard<std::mutex> l(mu_);
    again = stopped_;
    stop_ = true;
  }
  // Called again: only what was noted since (housekeeping after the first).
  if (again) return Commit();
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  // The waiter thread answers everyone queued before it sees stop_ (its last
  // passes commit), so no held reply is dropped.
  if (waiter_thread_.joinable()) waiter_thread_.join();
  Status st;
  {
    std::lock_guard<std::mutex> l(mu_);
    st = failed_;
  }
  // Unconditional: writes nobody noted (trims, the destroy queue) go too.
  const uint64_t target = written_.load(std::memory_order_acquire);
  if (st.ok()) st = SyncStore();
  if (st.ok()) RaiseCommitted(target);
  std::lock_guard<std::mutex> l(mu_);
  stopped_ = true;
  return st;
}

}  // namespace sfs::mds
