// Keepalive: a thread that calls a function every period until stopped.
//
// libsfs uses it to ping the MDS every 5 s, so that the MDS keeps this
// client's opens (a client silent for --client-timeout-ms loses them).
// Kick() makes the next call happen at once (libsfs: the MDS restarted, so
// re-open files now). Stop() (and the destructor) wakes the thread and joins it; a call in
// progress finishes first, so Stop() may wait up to one call's duration.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace sfs::client {

class Keepalive {
 public:
  Keepalive(std::chrono::milliseconds period, std::function<void()> fn);
  ~Keepalive();
  Keepalive(const Keepalive&) = delete;
  Keepalive& operator=(const Keepalive&) = delete;

  void Stop();  // idempotent
  // Runs the next call now instead of at the end of the period.
  void Kick();

 private:
  void Loop();

  const std::chrono::milliseconds period_;
  const std::function<void()> fn_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // GUARDED_BY(mu_)
  bool kick_ = false;  // GUARDED_BY(mu_)
  std::thread thread_;
};

}  // namespace sfs::client
