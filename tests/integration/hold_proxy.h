// HoldProxy: a TCP proxy that can hold requests in "the network" (fence_test).
//
// Listens on 127.0.0.1 (a port it picks) and joins each connection to the
// upstream address (set once the server behind it listens; connections wait
// for it). Phases:
//   pass  — bytes go both ways at once;
//   Hold() — the client→server bytes of every connection, and of those that
//            come while holding, are kept here instead of forwarded;
//   CutHeld() — the client side of every held connection is reset (the
//            client sees its connection die and opens a new one, which
//            passes), the server side stays open with its bytes still held;
//   Release() — those bytes go to the server at last, on their old
//            connections (all held ones, or those holding a request a
//            predicate picks), which pass from then on; it returns once the
//            server answered every request frame released (docs/protocol.md
//            "Frames"), with the requests' and replies' payloads.
// So a request can reach the server after newer ones that the client sent
// once its call had timed out, as over a congested or re-routed path.
//
// Thread safety: the methods are for one test thread; one pump thread per
// connection does the I/O.
#pragma once

#include <condition_variable>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"

namespace sfs::testing {

class HoldProxy {
 public:
  HoldProxy();
  ~HoldProxy();
  HoldProxy(const HoldProxy&) = delete;
  HoldProxy& operator=(const HoldProxy&) = delete;

  Status Start();  // listens; port() is then valid
  uint16_t port() const { return port_; }
  void SetUpstream(const std::string& address);

  void Hold();
  // Waits until the held connections keep at least `frames` whole request
  // frames between them. ETIMEDOUT after timeout.
  Status WaitKept(size_t frames, std::chrono::milliseconds timeout);
  void CutHeld();
  // One request frame's payload and the payload of the server's reply to it.
  struct Exchange {
    std::string request;
    std::string reply;
  };
  // Forwards what the held connections kept — of every one, or with `pick`
  // only of those that kept a request whose payload it accepts — and waits
  // (up to timeout) for every reply. ETIMEDOUT if some did not come.
  using Pick = std::function<bool(const std::string& request_payload)>;
  Result<std::vector<Exchange>> Release(std::chrono::milliseconds timeout, Pick pick = nullptr);

 private:
  struct Conn;
  void AcceptLoop();
  void Pump(Conn* c);
  int ConnectUpstream();

  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::thread acceptor_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::string upstream_;                     // GUARDED_BY(mu_)
  bool holding_ = false;                     // GUARDED_BY(mu_)
  bool stop_ = false;                        // GUARDED_BY(mu_)
  std::vector<std::unique_ptr<Conn>> conns_;  // GUARDED_BY(mu_)
};

}  // namespace sfs::testing
