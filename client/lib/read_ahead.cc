#include "client/lib/read_ahead.h"

#include <algorithm>

namespace sfs::client {

std::pair<uint64_t, uint64_t> PlanReadAhead(ReadAheadState& s, uint64_t off, uint64_t n,
                                            uint64_t size, uint64_t window) {
  const uint64_t end = off + n;
  const bool sequential = off == s.next;
  s.next = end;
  if (!sequential) {  // a seek: not (or no longer) sequential
    s.issued_end = 0;
    return {0, 0};
  }
  if (window == 0 || end >= size) return {0, 0};
  s.issued_end = std::max(s.issued_end, end);
  if (s.issued_end - end >= window / 2) return {0, 0};  // enough asked for ahead
  const uint64_t to = std::min(size, end + window);
  if (to <= s.issued_end) return {0, 0};
  const uint64_t from = s.issued_end;
  s.issued_end = to;
  return {from, to};
}

ReadAhead::ReadAhead(int threads, size_t max_queued, FillFn fill)
    : max_queued_(max_queued), fill_(std::move(fill)) {
  for (int i = 0; i < std::max(1, threads); ++i) threads_.emplace_back([this] { Loop(); });
}

ReadAhead::~ReadAhead() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    queue_.clear();
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

bool ReadAhead::Submit(std::shared_ptr<File> f, uint64_t size, uint64_t off, uint64_t end) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_ || queue_.size() >= max_queued_) return false;
    queue_.push_back(Task{std::move(f), size, off, end});
  }
  submitted_bytes_.fetch_add(end - off, std::memory_order_relaxed);
  cv_.notify_one();
  return true;
}

void ReadAhead::Loop() {
  while (true) {
    Task t;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      t = std::move(queue_.front());
      queue_.pop_front();
    }
    fill_(t.f, t.size, t.off, t.end);
  }
}

}  // namespace sfs::client
