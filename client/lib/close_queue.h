// CloseQueue: the closes a client deferred (mds.proto, "Deferred closes").
//
// A close(2) of a handle with nothing to report need not cost a round trip
// of its own: libsfs answers it at once and queues the (ino, open id) here.
// MdsClient hands queued closes to the next request it sends anyway
// (Take/PutBack); a flusher thread sends what nobody took once the oldest
// close has waited max_delay, or at once when max_queued are waiting
// (WaitDue). The MDS's open count only delays an orphan's destruction (and a
// migration's start), so a close may wait; it must never be lost: whatever a
// request took and the MDS did not count as applied goes back (PutBack).
//
// WaitDue wakes the flusher at most about twice per max_delay while closes
// keep coming: Add notifies only a flusher that sleeps with nothing queued,
// and the flusher keeps ticking for a while after the queue empties, so a
// steady stream of opens and closes costs no thread wake-up each.
//
// Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

namespace sfs::client {

struct DeferredClose {
  uint64_t ino = 0;
  uint64_t open_id = 0;
  std::chrono::steady_clock::time_point since{};  // when it was deferred (set by Add)
};

class CloseQueue {
 public:
  using Clock = std::chrono::steady_clock;
  CloseQueue(std::chrono::milliseconds max_delay, size_t max_queued);

  void Add(uint64_t ino, uint64_t open_id);
  // Takes up to max queued closes, oldest first.
  std::vector<DeferredClose> Take(size_t max);
  // Puts closes a request took back at the front, in their order (they were
  // not delivered).
  void PutBack(std::vector<DeferredClose> closes);
  size_t size() const;
  // Blocks until a flush is due: the oldest close has waited max_delay, or
  // max_queued are waiting. False iff Stop() was called.
  bool WaitDue();
  // Wakes and ends every WaitDue (the queue keeps its closes).
  void Stop();

 private:
  // How long the flusher keeps ticking after the queue emptied.
  static constexpr auto kTickAfterIdle = std::chrono::seconds(1);
  bool DueLocked(Clock::time_point now) const;

  const std::chrono::milliseconds max_delay_;
  const size_t max_queued_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<DeferredClose> items_;  // GUARDED_BY(mu_), oldest first
  Clock::time_point last_add_{};     // GUARDED_BY(mu_)
  bool ticking_ = false;             // GUARDED_BY(mu_): the flusher waits with a timeout
  bool stop_ = false;                // GUARDED_BY(mu_)
};

}  // namespace sfs::client
