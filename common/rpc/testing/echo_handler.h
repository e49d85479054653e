// A Handler for transport tests (TCP and RDMA run the same cases): echoes the
// payload as "re:<payload>"; reply bulk = request bulk reversed; payload
// "read:N" returns N patterned bytes (byte i = i*7+3); payload "sleep" blocks
// until Release().
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>

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
  void Release() {
    std::lock_guard<std::mutex> l(mu);
    released = true;
    cv.notify_all();
  }
  std::atomic<int> calls{0};
  std::mutex mu;
  std::condition_variable cv;
  bool released = false;
};

}  // namespace sfs::rpc::test_support
