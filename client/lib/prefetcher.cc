#include "client/lib/prefetcher.h"

#include <algorithm>

namespace sfs::client {

Prefetcher::Prefetcher(int threads, uint64_t default_lookahead, FetchFn fetch)
    : default_lookahead_(std::max<uint64_t>(1, default_lookahead)), fetch_(std::move(fetch)) {
  for (int i = 0; i < std::max(1, threads); ++i) threads_.emplace_back([this] { Loop(); });
}

Prefetcher::~Prefetcher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  room_cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void Prefetcher::Start(const Cred& c, std::vector<PrefetchItem> items, uint64_t lookahead,
                       bool append) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!append) {
      items_.clear();
      next_ = frontier_ = done_ = stuck_ = 0;
      ++gen_;
    }
    cred_ = c;
    lookahead_ = lookahead == 0 ? default_lookahead_ : lookahead;
    for (PrefetchItem& it : items) items_.push_back(std::move(it));
  }
  cv_.notify_all();
  room_cv_.notify_all();
  idle_cv_.notify_all();
}

void Prefetcher::Advance(uint64_t pos) {
  uint64_t admitted = 0;
  bool room_waiters = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (pos >= items_.size()) return;
    if (pos + 1 > frontier_ && lookahead_ != UINT64_MAX) {
      // Entries the window admits now: one idle worker each, not all of
      // them (a wake-up of every worker at every reader's close cost the
      // readers' CPU on a small machine).
      const uint64_t end = std::min<uint64_t>(items_.size(), pos + 1 + lookahead_);
      const uint64_t old_end = std::min<uint64_t>(items_.size(), frontier_ + lookahead_);
      admitted = end > old_end ? end - old_end : 0;
    }
    frontier_ = std::max(frontier_, pos + 1);
    ++moves_;
    stuck_ = 0;  // every entry waiting for room is asked again
    room_waiters = room_waiters_ > 0;
  }
  if (admitted >= threads_.size()) {
    cv_.notify_all();
  } else {
    for (uint64_t i = 0; i < admitted; ++i) cv_.notify_one();
  }
  if (room_waiters) room_cv_.notify_all();
}

void Prefetcher::Clear() { Start(Cred{}, {}, 0, false); }

bool Prefetcher::Ready() const {
  if (next_ >= items_.size()) return false;
  return lookahead_ == UINT64_MAX || next_ < frontier_ + lookahead_;
}

void Prefetcher::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stop_ || Ready(); });
    if (stop_) return;
    if (lookahead_ != UINT64_MAX && next_ < frontier_) {
      // The readers are past these (done, or being read now): fetching them
      // would only take the cache's room and the servers' time.
      done_ += frontier_ - next_;
      next_ = frontier_;
      idle_cv_.notify_all();
      if (!Ready()) continue;
    }
    const uint64_t pos = next_++;
    const uint64_t gen = gen_;
    const PrefetchItem item = items_[pos];
    const Cred cred = cred_;
    Outcome out;
    while (true) {
      const uint64_t moves = moves_;
      const bool bounded = lookahead_ != UINT64_MAX;
      lock.unlock();
      out = fetch_(cred, item, pos);
      lock.lock();
      // Nothing can make room without a reader (warm mode): give up on it.
      if (out != Outcome::kNotYet || !bounded) break;
      ++room_waiters_;
      if (moves_ == moves) {
        ++stuck_;  // until the next frontier move or hint
        idle_cv_.notify_all();
      }
      room_cv_.wait(lock, [&] { return stop_ || gen_ != gen || moves_ != moves; });
      --room_waiters_;
      if (stop_ || gen_ != gen) break;
    }
    if (gen_ == gen) ++done_;
    idle_cv_.notify_all();
  }
}

uint64_t Prefetcher::WindowLocked() const {
  if (lookahead_ == UINT64_MAX) return items_.size();
  return std::min<uint64_t>(items_.size(), frontier_ + lookahead_);
}

bool Prefetcher::IdleLocked() const {
  // Entries are taken in order and none past the window, so done_ counts
  // positions below next_ (passed ones included): the window's entries are
  // all accounted for once they and the workers waiting for room cover it.
  return done_ + stuck_ >= WindowLocked();
}

bool Prefetcher::WaitIdle(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return idle_cv_.wait_for(lock, timeout, [&] { return IdleLocked(); });
}

bool Prefetcher::Bounded() {
  std::lock_guard<std::mutex> lock(mu_);
  return lookahead_ != UINT64_MAX;
}

Prefetcher::Progress Prefetcher::GetProgress() {
  std::lock_guard<std::mutex> lock(mu_);
  return Progress{items_.size(), done_, WindowLocked(), stuck_};
}

}  // namespace sfs::client
