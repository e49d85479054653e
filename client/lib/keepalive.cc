// Keepalive: periodic calls on a thread of their own.
#include "client/lib/keepalive.h"

#include <utility>

namespace sfs::client {

Keepalive::Keepalive(std::chrono::milliseconds period, std::function<void()> fn)
    : period_(period), fn_(std::move(fn)), thread_([this] { Loop(); }) {}

Keepalive::~Keepalive() { Stop(); }

void Keepalive::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void Keepalive::Kick() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    kick_ = true;
  }
  cv_.notify_all();
}

void Keepalive::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait_for(lock, period_, [this] { return stop_ || kick_; });
    if (stop_) return;
    kick_ = false;
    lock.unlock();
    fn_();
    lock.lock();
  }
}

}  // namespace sfs::client
