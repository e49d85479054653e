// Sequential read-ahead for handles that read through the client cache
// (docs/cache.md, "Read-ahead"): a handle read front to back has the next
// window of its file fetched into the cache in the background, all of the
// window's stripes in parallel, so the reader finds it there. This is what
// a shard reader needs from the binding, which has no kernel read-ahead;
// through sfs-mount it runs ahead of the kernel's own.
//
// PlanReadAhead is the per-handle decision (pure; File::ra_ holds its
// state). ReadAhead runs the fills on a few threads from a bounded queue:
// a fill that finds the queue full is dropped (the reader then fetches the
// blocks itself), never waited for.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace sfs::client {

class File;

struct ReadAheadState {
  uint64_t next = 0;        // where a sequential read would start next
  uint64_t issued_end = 0;  // the read-ahead asked for so far ends here
};

// After a read of [off, off + n) of a size-byte file: the range to fetch
// ahead, or an empty one. A read that starts where the last ended (or at 0,
// the first) is sequential; any other starts over. Once less than half a
// window is asked for ahead of the reader, the rest of the window
// [issued_end, off + n + window) is (clipped to the file).
std::pair<uint64_t, uint64_t> PlanReadAhead(ReadAheadState& s, uint64_t off, uint64_t n,
                                            uint64_t size, uint64_t window);

class ReadAhead {
 public:
  using FillFn = std::function<void(const std::shared_ptr<File>& f, uint64_t size, uint64_t off,
                                    uint64_t end)>;
  ReadAhead(int threads, size_t max_queued, FillFn fill);
  ~ReadAhead();  // drops what is queued, waits for the fills running
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;

  // Queues a fill of [off, end) of f; false (dropped) if the queue is full.
  bool Submit(std::shared_ptr<File> f, uint64_t size, uint64_t off, uint64_t end);
  uint64_t submitted_bytes() const { return submitted_bytes_.load(std::memory_order_relaxed); }

 private:
  struct Task {
    std::shared_ptr<File> f;
    uint64_t size = 0, off = 0, end = 0;
  };
  void Loop();

  const size_t max_queued_;
  const FillFn fill_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> queue_;  // GUARDED_BY(mu_)
  bool stop_ = false;       // GUARDED_BY(mu_)
  std::atomic<uint64_t> submitted_bytes_{0};
  std::vector<std::thread> threads_;
};

}  // namespace sfs::client
