// ReplyGate: lets a ReplyFn outlive the server that made it.
//
// A handler may keep a ReplyFn (rpc.h) after Server::Stop() and even after the
// server is destroyed. Each server owns a gate through shared_ptr and each of
// its ReplyFns holds a copy; a ReplyFn sends only while the gate is open, and
// Stop() closes it before tearing the transport down. Sends hold the gate
// shared, so replies on different workers do not serialize; Close() waits
// for sends in progress. Thread-safe.
#pragma once

#include <shared_mutex>

namespace sfs::rpc {

class ReplyGate {
 public:
  // Runs send() iff the gate is open; returns whether it ran.
  template <typename F>
  bool RunIfOpen(F&& send) {
    std::shared_lock<std::shared_mutex> l(mu_);
    if (closed_) return false;
    send();
    return true;
  }
  // After Close() returns no send is running and none will start.
  void Close() {
    std::unique_lock<std::shared_mutex> l(mu_);
    closed_ = true;
  }

 private:
  std::shared_mutex mu_;
  bool closed_ = false;  // GUARDED_BY(mu_)
};

}  // namespace sfs::rpc
