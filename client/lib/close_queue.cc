// CloseQueue (see close_queue.h).
#include "client/lib/close_queue.h"

#include <algorithm>

namespace sfs::client {

CloseQueue::CloseQueue(std::chrono::milliseconds max_delay, size_t max_queued)
    : max_delay_(max_delay), max_queued_(std::max<size_t>(1, max_queued)) {}

void CloseQueue::Add(uint64_t ino, uint64_t open_id) {
  std::lock_guard<std::mutex> lock(mu_);
  last_add_ = Clock::now();
  items_.push_back(DeferredClose{ino, open_id, last_add_});
  // A ticking flusher looks at the queue within max_delay anyway.
  if (!ticking_ || items_.size() == max_queued_) cv_.notify_one();
}

std::vector<DeferredClose> CloseQueue::Take(size_t max) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = std::min(max, items_.size());
  std::vector<DeferredClose> out(items_.begin(), items_.begin() + n);
  items_.erase(items_.begin(), items_.begin() + n);
  return out;
}

void CloseQueue::PutBack(std::vector<DeferredClose> closes) {
  if (closes.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  items_.insert(items_.begin(), closes.begin(), closes.end());
  cv_.notify_one();
}

size_t CloseQueue::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return items_.size();
}

bool CloseQueue::DueLocked(Clock::time_point now) const {
  return items_.size() >= max_queued_ ||
         (!items_.empty() && now - items_.front().since >= max_delay_);
}

bool CloseQueue::WaitDue() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (stop_) return false;
    const Clock::time_point now = Clock::now();
    if (DueLocked(now)) {
      ticking_ = true;
      return true;
    }
    if (!items_.empty()) {
      ticking_ = true;
      cv_.wait_until(lock, items_.front().since + max_delay_);
    } else if (now - last_add_ < kTickAfterIdle) {
      ticking_ = true;
      cv_.wait_for(lock, max_delay_);
    } else {
      ticking_ = false;
      cv_.wait(lock);
    }
  }
}

void CloseQueue::Stop() {
  std::lock_guard<std::mutex> lock(mu_);
  stop_ = true;
  cv_.notify_all();
}

}  // namespace sfs::client
