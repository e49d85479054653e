// A Handler for transport tests (TCP and RDMA run the same cases): echoes the
// payload as "re:<payload>"; reply bulk = request bulk reversed; payload
// "read:N" returns N patterned bytes (byte i = i*7+3); payload "sleep" blocks
// a worker until Release(); payload "hold" keeps the call's ReplyFn (no worker)
// until AnswerHeld() or DropHeld().
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/rpc/rpc.h"

namespace sfs::rpc::test_support {

class EchoHandler : public Handler {
 public:
  void Handle(Request& req, Reply* reply) override {
    calls++;
    if (req.payload == "sleep") {
      std::unique_lock<std::mutex> l(mu);
      cv.wait(l, [&] { return released; });
    }
    if (req.payload.rfind("read:", 0) == 0) {
      size_t n = std::stoul(req.payload.substr(5));
      reply->bulk.resize(n);
      for (size_t i = 0; i < n; ++i) reply->bulk[i] = static_cast<uint8_t>(i * 7 + 3);
    } else {
      reply->bulk.assign(req.bulk.rbegin(), req.bulk.rend());
    }
    reply->payload = "re:" + req.payload;
  }
  void HandleAsync(Request& req, ReplyFn done) override {
    if (req.payload == "hold") {
      std::lock_guard<std::mutex> l(mu);
      held.push_back(std::move(done));
      return;
    }
    Handler::HandleAsync(req, std::move(done));
  }
  void Release() {
    std::lock_guard<std::mutex> l(mu);
    released = true;
    cv.notify_all();
  }
  // Answers every held call with `payload`.
  void AnswerHeld(const std::string& payload = "late") {
    for (auto& fn : TakeHeld()) fn(Reply{payload, {}});
  }
  // Drops every held call unanswered.
  void DropHeld() { TakeHeld(); }
  size_t Held() {
    std::lock_guard<std::mutex> l(mu);
    return held.size();
  }
  std::vector<ReplyFn> TakeHeld() {
    std::vector<ReplyFn> fns;
    std::lock_guard<std::mutex> l(mu);
    fns.swap(held);
    return fns;
  }
  std::atomic<int> calls{0};
  std::mutex mu;
  std::condition_variable cv;
  bool released = false;
  std::vector<ReplyFn> held;  // GUARDED_BY(mu)
};

}  // namespace sfs::rpc::test_support
