// Prefetcher: fetches the entries of an order hint (Client::Prefetch) into
// the client cache ahead of the reader (docs/cache.md "Prefetch").
//
// threads workers take entries in hint order, never more than lookahead
// entries past the frontier (one past the furthest position a reader has
// consumed, Advance()), so the prefetch stays a bounded window in front of
// the loader. Many workers at once spread the fetches over every OSS that
// holds the files. An entry whose blocks the cache would have to evict
// something needed sooner for (fetch returns kNotYet) waits until the reader
// moves on. A new hint (Start without append) ends the old one: workers drop
// what they had not started.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "client/lib/client.h"

namespace sfs::client {

class Prefetcher {
 public:
  enum class Outcome { kDone, kSkipped, kNotYet };
  using FetchFn = std::function<Outcome(const Cred&, const PrefetchItem&, uint64_t pos)>;

  Prefetcher(int threads, uint64_t default_lookahead, FetchFn fetch);
  ~Prefetcher();  // stops and joins the workers

  void Start(const Cred& c, std::vector<PrefetchItem> items, uint64_t lookahead, bool append);
  // A reader consumed hint position pos.
  void Advance(uint64_t pos);
  void Clear();
  // Waits until nothing is left to do before a reader moves on: every entry
  // the window admits now was fetched or skipped, or waits for room (the
  // whole hint in warm mode); false on timeout.
  bool WaitIdle(std::chrono::milliseconds timeout);
  struct Progress {
    uint64_t length = 0;   // entries of the hint
    uint64_t done = 0;     // of those, fetched or skipped
    uint64_t window = 0;   // entries the window admits now (length in warm mode)
    uint64_t waiting = 0;  // admitted entries waiting for a reader to make room
  };
  Progress GetProgress();
  // Whether the hint runs a window ahead of a reader (not a warm-up).
  bool Bounded();

 private:
  void Loop();
  bool Ready() const;  // REQUIRES: mu_ held
  bool IdleLocked() const;        // REQUIRES: mu_ held
  uint64_t WindowLocked() const;  // REQUIRES: mu_ held

  const uint64_t default_lookahead_;
  FetchFn fetch_;
  std::mutex mu_;
  std::condition_variable cv_;       // work (an entry the window admits), a new hint, stop
  std::condition_variable room_cv_;  // a frontier move, for workers whose entry got kNotYet
  std::condition_variable idle_cv_;  // an entry finished
  Cred cred_;                        // GUARDED_BY(mu_)
  std::vector<PrefetchItem> items_;  // GUARDED_BY(mu_)
  uint64_t lookahead_ = 0;           // GUARDED_BY(mu_)
  uint64_t next_ = 0;                // GUARDED_BY(mu_): next position to take
  uint64_t frontier_ = 0;            // GUARDED_BY(mu_)
  uint64_t done_ = 0;                // GUARDED_BY(mu_)
  uint64_t gen_ = 0;                 // GUARDED_BY(mu_): bumped by a replacing Start/Clear
  uint64_t moves_ = 0;               // GUARDED_BY(mu_): frontier moves (kNotYet waits on it)
  int room_waiters_ = 0;             // GUARDED_BY(mu_): workers waiting on room_cv_
  uint64_t stuck_ = 0;               // GUARDED_BY(mu_): of those, not woken by a move yet
  bool stop_ = false;                // GUARDED_BY(mu_)
  std::vector<std::thread> threads_;
};

}  // namespace sfs::client
