// WriteBehindQueue: the queue, the workers and the per-inode barriers (see the
// header for the rules).
#include "client/lib/write_behind.h"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <utility>

#include "client/lib/io.h"
#include "client/lib/job_id.h"
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

uint64_t WriteBehindQueue::RowBytesOf(const File& f) {
  const LayoutSpec& l = f.layout_;
  if (!l.IsEc()) return 0;
  const uint64_t rb = l.stripe_size * l.ec_data;
  return rb <= kMaxRowBytes ? rb : 0;
}

uint64_t WriteBehindQueue::Job::Lay(uint64_t at, std::span<const uint8_t> buf) {
  std::copy(buf.begin(), buf.end(), row_buf.get() + at);  // the one copy
  uint64_t start = at, end = at + buf.size();
  // Merge with the extents it touches; what they held is not new.
  uint64_t old = 0;
  auto it = have.upper_bound(start);
  if (it != have.begin() && std::prev(it)->second >= start) --it;
  while (it != have.end() && it->first <= end) {
    old += it->second - it->first;
    start = std::min(start, it->first);
    end = std::max(end, it->second);
    it = have.erase(it);
  }
  have.emplace(start, end);
  const uint64_t added = (end - start) - old;
  have_bytes += added;
  return added;
}

bool WriteBehindQueue::Submit(const std::shared_ptr<File>& f, uint64_t off,
                              std::span<const uint8_t> buf, bool defer_wake) {
  const uint64_t rb = RowBytesOf(*f);
  if (rb == 0) return SubmitRange(f, off, buf, defer_wake, false);
  // Cut at rows: runs of whole rows go as they are, parts of rows to their
  // rows' assembly buffers.
  bool wake = false;
  for (uint64_t pos = off, end = off + buf.size(); pos < end;) {
    const uint64_t row_end = (pos / rb + 1) * rb;
    const bool whole = pos % rb == 0 && end >= row_end;
    const uint64_t stop = whole ? pos + (end - pos) / rb * rb : std::min(end, row_end);
    std::span<const uint8_t> part = buf.subspan(pos - off, stop - pos);
    wake |= whole ? SubmitRange(f, pos, part, defer_wake, true)
                  : SubmitRow(f, pos, part, defer_wake, rb);
    pos = stop;
  }
  return wake;
}

bool WriteBehindQueue::SubmitRow(const std::shared_ptr<File>& f, uint64_t off,
                                 std::span<const uint8_t> buf, bool defer_wake, uint64_t rb) {
  const uint64_t start = off / rb * rb;
  const std::pair<uint64_t, uint64_t> key(f->ino_, off / rb);
  std::unique_lock<std::mutex> lock(mu_);
  const std::string job_id = CurrentJob();
  Job* row = nullptr;
  // Into the row's buffer if it is assembling one (for the same job), else a
  // new one once the row's range has no pending write and there is room.
  WaitLocked(lock, [&] {
    auto it = rows_.find(key);
    row = it != rows_.end() && it->second->job == job_id ? it->second.get() : nullptr;
    if (row == nullptr) QueueRowsLocked(f->ino_, start, start + rb);  // another job's
    const uint64_t charge =
        row != nullptr ? buf.size() : std::max<uint64_t>(buf.size(), kMinCharge);
    return (bytes_ == 0 || bytes_ + charge <= max_bytes_) &&
           (row != nullptr || !OverlapsLocked(f->ino_, start, start + rb));
  });
  const Clock::time_point now = Clock::now();
  last_submit_ = now;
  const bool fresh = row == nullptr;
  if (fresh) row = NewRowLocked(f->ino_, key.second, rb, job_id, now);
  if (std::find(row->files.begin(), row->files.end(), f) == row->files.end()) {
    row->files.push_back(f);
  }
  row->touched = now;
  row->Lay(off - start, buf);
  // Charged: what it covers, at least kMinCharge.
  const uint64_t charge = std::max(row->have_bytes, kMinCharge) - row->charged;
  row->charged += charge;
  bytes_ += charge;
  rows_bytes_ += charge;
  if (row->RowDone()) {
    QueueRowLocked(rows_.find(key));
    return WakeAfterSubmitLocked(lock, defer_wake);
  }
  // A new row needs a worker that will queue it when its hold ends.
  if (!fresh || timers_ > 0 || idle_ == 0) return false;
  lock.unlock();
  if (!defer_wake) work_cv_.notify_one();
  return true;
}

WriteBehindQueue::Job* WriteBehindQueue::NewRowLocked(uint64_t ino, uint64_t row, uint64_t rb,
                                                      const std::string& job_id,
                                                      Clock::time_point now) {
  if (rows_.size() >= kMaxRows) {  // the oldest goes as it is
    auto oldest = rows_.begin();
    for (auto it = rows_.begin(); it != rows_.end(); ++it) {
      if (it->second->born < oldest->second->born) oldest = it;
    }
    QueueRowLocked(oldest);
  }
  auto job = std::make_unique<Job>();
  job->ino = ino;
  job->born = now;
  job->job = job_id;
  job->off = row * rb;
  job->row_bytes = rb;
  if (spare_rows_.empty() || spare_size_ != rb) {
    job->row_buf.reset(new uint8_t[rb]);  // not zeroed: only written extents are sent
  } else {
    job->row_buf = std::move(spare_rows_.back());
    spare_rows_.pop_back();
  }
  job->seq = next_seq_++;
  job->charged = kMinCharge;
  bytes_ += kMinCharge;
  rows_bytes_ += kMinCharge;
  InoPending& p = pending_[ino];
  p.by_seq.emplace(job->seq, job->off);
  p.by_off.emplace(job->off, job->off + rb);
  Job* raw = job.get();
  rows_.emplace(std::pair(ino, row), std::move(job));
  return raw;
}

void WriteBehindQueue::QueueRowLocked(
    std::map<std::pair<uint64_t, uint64_t>, std::unique_ptr<Job>>::iterator it) {
  std::unique_ptr<Job> job = std::move(it->second);
  rows_.erase(it);
  rows_bytes_ -= job->charged;
  queued_bytes_ += job->Bytes();
  queue_.push_back(std::move(job));
}

void WriteBehindQueue::QueueRowsLocked(uint64_t ino, uint64_t off, uint64_t end) {
  for (auto it = rows_.lower_bound({ino, 0}); it != rows_.end() && it->first.first == ino;) {
    const Job& j = *it->second;
    if (j.off < end && off < j.off + j.row_bytes) {
      QueueRowLocked(it++);
    } else {
      ++it;
    }
  }
}

void WriteBehindQueue::QueueDueRowsLocked(Clock::time_point now) {
  for (auto it = rows_.begin(); it != rows_.end();) {
    const Job& j = *it->second;
    if (stop_ || now >= std::min(j.touched + kRowHoldIdle, j.born + kRowHoldMax)) {
      QueueRowLocked(it++);
    } else {
      ++it;
    }
  }
}

WriteBehindQueue::Clock::time_point WriteBehindQueue::RowsDueLocked() const {
  Clock::time_point due = Clock::time_point::max();
  for (const auto& [key, j] : rows_) {
    due = std::min(due, std::min(j->touched + kRowHoldIdle, j->born + kRowHoldMax));
  }
  return due;
}

bool WriteBehindQueue::SubmitRange(const std::shared_ptr<File>& f, uint64_t off,
                                   std::span<const uint8_t> buf, bool defer_wake, bool ec) {
  const uint64_t len = buf.size();
  const uint64_t end = off + len;
  const uint64_t charge = std::max(len, kMinCharge);
  std::unique_lock<std::mutex> lock(mu_);
  // Room (a write larger than the window goes alone) and no overlap with a
  // pending write of this inode, which must land first (a row in assembly
  // it overlaps is queued, so that it does).
  WaitLocked(lock, [&] {
    if (ec) QueueRowsLocked(f->ino_, off, end);
    return (bytes_ == 0 || bytes_ + charge <= max_bytes_) && !OverlapsLocked(f->ino_, off, end);
  });
  const bool streaming = NoteEndLocked(f->ino_, off, end) && !ec;
  last_submit_ = Clock::now();
  if (GatherLocked(f, off, buf)) return WakeAfterSubmitLocked(lock, defer_wake);
  auto job = std::make_unique<Job>();
  job->ino = f->ino_;
  job->streaming = streaming;
  job->born = last_submit_;
  job->files.push_back(f);
  job->job = CurrentJob();
  job->off = off;
  job->data.assign(buf.begin(),
                   buf.end());  // the one copy: the kernel's buffer goes away
  job->seq = next_seq_++;
  job->charged = charge;
  bytes_ += charge;
  queued_bytes_ += len;
  InoPending& p = pending_[f->ino_];
  p.by_seq.emplace(job->seq, off);
  p.by_off.emplace(off, end);
  queue_.push_back(std::move(job));
  return WakeAfterSubmitLocked(lock, defer_wake);
}

bool WriteBehindQueue::WakeAfterSubmitLocked(std::unique_lock<std::mutex>& lock, bool defer_wake) {
  // While held, one worker in a timed wait is all the queue needs.
  const bool wake = HeldLocked(Clock::now()) ? timers_ == 0 && idle_ > 0 : NeedWakeLocked();
  if (!wake) return false;
  lock.unlock();
  if (!defer_wake) work_cv_.notify_one();
  return true;
}

bool WriteBehindQueue::NoteEndLocked(uint64_t ino, uint64_t off, uint64_t end) {
  if (last_end_.size() >= kMaxTracked && !last_end_.contains(ino)) last_end_.clear();
  auto [it, first] = last_end_.try_emplace(ino, end);
  const uint64_t last = it->second;
  it->second = end;
  return !first && off + kMaxGather >= last && off <= last + kMaxGather;
}

WriteBehindQueue::Clock::time_point WriteBehindQueue::HoldEndLocked() const {
  return std::min(last_submit_ + kHoldIdle, queue_.front()->born + kHoldMax);
}

bool WriteBehindQueue::HeldLocked(Clock::time_point now) const {
  if (stop_ || waiters_ > 0 || queue_.empty() || !queue_.front()->streaming) return false;
  // Never so much that writers would wait for room behind a hold.
  return queued_bytes_ < std::min(kMaxBatchBytes, max_bytes_ / 2) && now < HoldEndLocked();
}

bool WriteBehindQueue::NeedWakeLocked() {
  if (queue_.empty() || idle_ <= wakes_) return false;
  if (queue_.size() <= static_cast<size_t>(wakes_) * kMaxBatch) return false;
  ++wakes_;
  return true;
}

namespace {

// Where all of a write's stripe units go, as one key: their OST for a plain
// file; for a mirrored one, the OSTs of their copies (20 bits each, up to 3
// copies, and the number of copies above them); -1 if they go to several (a
// file of one stripe, or of several on the same OSTs, has one for every write),
// or the file is erasure-coded. Writes with one key are sent as one batch (a
// write_v per OSS).
int64_t TargetOf(const LayoutSpec& l, uint64_t off, uint64_t len) {
  const uint32_t copies = l.Copies();
  if (l.stripe_size == 0 || l.objects.empty() || len == 0 || l.IsEc() || copies > 3) return -1;
  const uint64_t stripes = l.Stripes();
  if (stripes == 0 || l.objects.size() != stripes * copies) return -1;
  auto key_of = [&](uint64_t unit) -> int64_t {
    const uint64_t s = unit % stripes;
    int64_t key = int64_t{copies - 1} << 60;
    for (uint32_t m = 0; m < copies; ++m) {
      const uint32_t ost = l.objects[m * stripes + s].ost;
      if (ost >= (1u << 20)) return -1;
      key |= int64_t{ost} << (20 * m);
    }
    return key;
  };
  const uint64_t first = off / l.stripe_size, last = (off + len - 1) / l.stripe_size;
  const int64_t key = key_of(first);
  for (uint64_t u = first + 1; u <= last && u < first + stripes; ++u) {
    if (key_of(u) != key) return -1;
  }
  return key;
}

}  // namespace

int64_t WriteBehindQueue::OstOf(const Job& j) {
  return TargetOf(j.files[0]->layout_, j.off, j.data.size());
}

void WriteBehindQueue::TakeLocked(std::vector<std::unique_ptr<Job>>* batch) {
  // The front job, and after it queued jobs for the same OST (one OSS: the
  // batch waits on one connection, whose reader completes every reply as it
  // comes, so no reply waits behind a slow or dead OSS's).
  const int64_t ost = OstOf(*queue_.front());
  uint64_t bytes = 0;
  size_t keep = 0, i = 0;
  for (; i < queue_.size() && i < kMaxScan && batch->size() < kMaxBatch; ++i) {
    std::unique_ptr<Job>& j = queue_[i];
    const bool take =
        i == 0 || (ost >= 0 && OstOf(*j) == ost && bytes + j->Bytes() <= kMaxBatchBytes);
    if (take) {
      bytes += j->Bytes();
      queued_bytes_ -= j->Bytes();
      batch->push_back(std::move(j));
    } else {
      if (keep != i) queue_[keep] = std::move(j);
      ++keep;
    }
    if (ost < 0) {
      ++i;
      break;
    }
  }
  std::move(queue_.begin() + static_cast<ptrdiff_t>(i), queue_.end(),
            queue_.begin() + static_cast<ptrdiff_t>(keep));
  queue_.resize(queue_.size() - (i - keep));
}

bool WriteBehindQueue::GatherLocked(const std::shared_ptr<File>& f, uint64_t off,
                                    std::span<const uint8_t> buf) {
  if (queue_.empty()) return false;
  Job& last = *queue_.back();
  if (last.ino != f->ino_ || last.row_bytes > 0 || last.off + last.data.size() != off ||
      last.data.size() + buf.size() > kMaxGather || last.job != CurrentJob()) {
    return false;
  }
  last.data.insert(last.data.end(), buf.begin(), buf.end());
  if (std::find(last.files.begin(), last.files.end(), f) == last.files.end()) {
    last.files.push_back(f);
  }
  pending_[last.ino].by_off[last.off] = off + buf.size();
  queued_bytes_ += buf.size();
  last.charged += buf.size();
  bytes_ += buf.size();
  return true;
}

void WriteBehindQueue::WaitIno(uint64_t ino) {
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t target = next_seq_;  // every seq below was submitted before this call
  QueueRowsLocked(ino, 0, UINT64_MAX);
  WaitLocked(lock, [&] {
    auto it = pending_.find(ino);
    return it == pending_.end() || it->second.by_seq.begin()->first >= target;
  });
}

void WriteBehindQueue::WaitLocked(std::unique_lock<std::mutex>& lock,
                                  const std::function<bool()>& ready) {
  if (ready()) return;
  ++waiters_;  // no job is held from now on: have a worker send a held one
  for (;;) {
    // Rows in assembly that clog the window go as they are.
    if (rows_bytes_ > 0 && rows_bytes_ == bytes_) {
      QueueDueRowsLocked(Clock::time_point::max());
    }
    if (!queue_.empty()) work_cv_.notify_one();
    if (ready()) break;
    done_cv_.wait(lock);
  }
  --waiters_;
}

uint64_t WriteBehindQueue::bytes_pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

void WriteBehindQueue::Work() {
  std::vector<std::unique_ptr<Job>> batch;
  for (;;) {
    bool wake = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      for (;;) {
        if (queue_.empty() && rows_.empty() && stop_) return;  // nothing left to send
        const Clock::time_point now = Clock::now();
        QueueDueRowsLocked(now);
        const bool held = HeldLocked(now);
        if (!queue_.empty() && !held) break;
        // Nothing queued, or a held queue: wait for work, or for the hold
        // (or a row's) to end.
        const Clock::time_point until =
            std::min(held ? HoldEndLocked() : Clock::time_point::max(), RowsDueLocked());
        ++idle_;
        if (until == Clock::time_point::max()) {
          work_cv_.wait(lock);
        } else {
          ++timers_;
          work_cv_.wait_until(lock, until);
          --timers_;
        }
        --idle_;
        if (wakes_ > 0) --wakes_;
      }
      TakeLocked(&batch);
      wake = NeedWakeLocked();  // more queued than this batch: another worker
    }
    if (wake) work_cv_.notify_one();
    Send(batch);
    for (std::unique_ptr<Job>& job : batch) Finish(*job);
    batch.clear();
  }
}

void WriteBehindQueue::Send(std::vector<std::unique_ptr<Job>>& batch) {
  // A job's writes: its bytes, or an EC row's written extents (one, a whole
  // row, once assembled).
  std::vector<Striper::BatchWrite> writes;
  std::vector<size_t> owner;  // writes[i] is batch[owner[i]]'s
  for (size_t i = 0; i < batch.size(); ++i) {
    const Job& j = *batch[i];
    auto add = [&](uint64_t off, std::span<const uint8_t> buf) {
      writes.push_back(Striper::BatchWrite{.layout = &j.files[0]->layout_, .off = off, .buf = buf});
      owner.push_back(i);
    };
    if (j.row_bytes == 0) {
      add(j.off, j.data);
      continue;
    }
    for (const auto& [start, end] : j.have) {
      add(j.off + start, std::span<const uint8_t>(j.row_buf.get() + start, end - start));
    }
  }
  // Each run of writes of one job goes as that job's (jobstats), in order:
  // usually the whole batch is one run.
  for (size_t begin = 0, end = 0; begin < writes.size(); begin = end) {
    end = begin + 1;
    const std::string& id = batch[owner[begin]]->job;
    while (end < writes.size() && batch[owner[end]]->job == id) ++end;
    JobScope scope(id);
    striper_->WriteBatch(std::span<Striper::BatchWrite>(writes).subspan(begin, end - begin));
  }
  for (size_t i = 0; i < writes.size(); ++i) {
    const Status& st = writes[i].status;
    if (st.ok()) continue;
    const Job& job = *batch[owner[i]];
    LOG_WARN("background write of inode " << job.ino << " at " << writes[i].off << " ("
                                          << writes[i].buf.size()
                                          << " bytes) failed: " << st.ToString());
    for (const std::shared_ptr<File>& f : job.files) {
      std::lock_guard<std::mutex> flock(f->mu_);
      if (f->wb_error_.ok()) f->wb_error_ = st;
    }
  }
}

void WriteBehindQueue::Finish(Job& j) {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    bytes_ -= j.charged;
    auto it = pending_.find(j.ino);
    it->second.by_seq.erase(j.seq);
    it->second.by_off.erase(j.off);
    if (it->second.by_seq.empty()) pending_.erase(it);
    wake = waiters_ > 0;
    if (j.row_buf != nullptr) {  // kept for the next row (its pages already mapped)
      if (spare_size_ != j.row_bytes) spare_rows_.clear();
      spare_size_ = j.row_bytes;
      if (spare_rows_.size() < kSpareRows) spare_rows_.push_back(std::move(j.row_buf));
    }
  }
  if (wake) done_cv_.notify_all();
}

}  // namespace sfs::client
