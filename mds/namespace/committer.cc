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
  Status st = store_->Sync();
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
