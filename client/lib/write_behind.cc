// WriteBehindQueue: the queue, the workers and the per-inode barriers (see the
// header for the rules).
#include "client/lib/write_behind.h"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <utility>

#include "client/lib/io.h"
#include "common/log.h"

namespace sfs::client {

WriteBehindQueue::WriteBehindQueue(Striper* striper, uint64_t max_bytes, int threads)
    : striper_(striper), max_bytes_(max_bytes) {
  for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { Work(); });
}

WriteBehindQueue::~WriteBehindQueue() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

bool WriteBehindQueue::OverlapsLocked(uint64_t ino, uint64_t off, uint64_t end) const {
  auto it = pending_.find(ino);
  if (it == pending_.end()) return false;
  const std::map<uint64_t, uint64_t>& ranges = it->second.by_off;
  auto next = ranges.lower_bound(off);  // the first range starting at or after off
  if (next != ranges.end() && next->first < end) return true;
  return next != ranges.begin() && std::prev(next)->second > off;
}

void WriteBehindQueue::Submit(const std::shared_ptr<File>& f, uint64_t off,
                         std::span<const uint8_t> buf) {
  const uint64_t len = buf.size();
  const uint64_t end = off + len;
  const uint64_t charge = std::max(len, kMinCharge);
  std::unique_lock<std::mutex> lock(mu_);
  // Room (a write larger than the window goes alone) and no overlap with a
  // pending write of this inode, which must land first.
  ++waiters_;
  done_cv_.wait(lock, [&] {
    return (bytes_ == 0 || bytes_ + charge <= max_bytes_) && !OverlapsLocked(f->ino_, off, end);
  });
  --waiters_;
  if (GatherLocked(f, off, buf)) return;
  auto job = std::make_unique<Job>();
  job->ino = f->ino_;
  job->files.push_back(f);
  job->off = off;
  job->data.assign(buf.begin(), buf.end());  // the one copy: the kernel's buffer goes away
  job->seq = next_seq_++;
  job->charged = charge;
  bytes_ += charge;
  InoPending& p = pending_[f->ino_];
  p.by_seq.emplace(job->seq, off);
  p.by_off.emplace(off, end);
  queue_.push_back(std::move(job));
  lock.unlock();
  work_cv_.notify_one();
}

bool WriteBehindQueue::GatherLocked(const std::shared_ptr<File>& f, uint64_t off,
                                    std::span<const uint8_t> buf) {
  if (queue_.empty()) return false;
  Job& last = *queue_.back();
  if (last.ino != f->ino_ || last.off + last.data.size() != off ||
      last.data.size() + buf.size() > kMaxGather) {
    return false;
  }
  last.data.insert(last.data.end(), buf.begin(), buf.end());
  if (std::find(last.files.begin(), last.files.end(), f) == last.files.end()) {
    last.files.push_back(f);
  }
  pending_[last.ino].by_off[last.off] = off + buf.size();
  last.charged += buf.size();
  bytes_ += buf.size();
  return true;
}

void WriteBehindQueue::WaitIno(uint64_t ino) {
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t target = next_seq_;  // every seq below was submitted before this call
  ++waiters_;
  done_cv_.wait(lock, [&] {
    auto it = pending_.find(ino);
    return it == pending_.end() || it->second.by_seq.begin()->first >= target;
  });
  --waiters_;
}

uint64_t WriteBehindQueue::bytes_pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

void WriteBehindQueue::Work() {
  for (;;) {
    std::unique_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stop_, and nothing left to send
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    Status st = striper_->Write(job->files[0]->layout_, job->off, job->data);
    if (!st.ok()) {
      LOG_WARN("background write of inode " << job->ino << " at " << job->off << " ("
                                            << job->data.size() << " bytes) failed: "
                                            << st.ToString());
      for (const std::shared_ptr<File>& f : job->files) {
        std::lock_guard<std::mutex> flock(f->mu_);
        if (f->wb_error_.ok()) f->wb_error_ = st;
      }
    }
    Finish(*job);
  }
}

void WriteBehindQueue::Finish(const Job& j) {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    bytes_ -= j.charged;
    auto it = pending_.find(j.ino);
    it->second.by_seq.erase(j.seq);
    it->second.by_off.erase(j.off);
    if (it->second.by_seq.empty()) pending_.erase(it);
    wake = waiters_ > 0;
  }
  if (wake) done_cv_.notify_all();
}

}  // namespace sfs::client
