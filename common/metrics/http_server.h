// MetricsHttpServer: serves GET /metrics (the Prometheus text exposition) on
// one thread of its own, for a daemon's --metrics-listen HOST:PORT. HttpGet
// is its client (sfs stats, sfs top, tests).
//
// Why Boost.Beast and our own exposition (metrics.h) rather than
// prometheus-cpp: Beast is in libboost-dev, already a dependency, so nothing
// new to install or package. prometheus-cpp is packaged in Debian 12
// (prometheus-cpp-dev 1.0.1, `apt-cache policy prometheus-cpp-dev`), but it
// pulls civetweb (its HTTP server) and libcurl into every daemon, and a
// labelled series is found through Family::Add, a mutex and a label-map hash
// per call; the job labels need a bound it does not have (LRU into
// job="other", job_stats.h). Ours is atomics on the hot path (metrics.h), and
// Beast and Asio headers stay in http_server.cc.
//
// Anything but GET /metrics gets 404 (405 for another method on /metrics);
// each connection is served with a 10 s deadline, so a stuck scraper cannot
// hold the thread. One request per connection.
//
// Thread safety: Start/port/the destructor from one thread; render is called
// on the server's thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/status.h"

namespace sfs::metrics {

class MetricsHttpServer {
 public:
  // Binds host:port (port 0: one the kernel picks; see port()) and serves
  // until destroyed. render is called once per scrape.
  static Result<std::unique_ptr<MetricsHttpServer>> Start(const std::string& host, uint16_t port,
                                                          std::function<std::string()> render);
  ~MetricsHttpServer();  // stops serving and joins the thread
  uint16_t port() const;
  // "host:port" as bound (the host as given to Start).
  std::string address() const;

  struct Impl;
  explicit MetricsHttpServer(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

// What a daemon's --metrics-listen HOST:PORT does: starts the server on that
// address serving registry->Render(), logs the address it got and prints
// `METRICS host:port` on stdout (tests and scripts read the port of a
// --metrics-listen ...:0 from it). EINVAL for an address that is not
// HOST:PORT. REQUIRES: registry outlives the server.
class Registry;
Result<std::unique_ptr<MetricsHttpServer>> ServeMetrics(const std::string& listen,
                                                        const Registry* registry);

// GET http://host:port/path; the body on status 200, else an error naming the
// status (ECONNREFUSED, ETIMEDOUT ... for the connection).
Result<std::string> HttpGet(const std::string& host_port, const std::string& path,
                            std::chrono::milliseconds timeout = std::chrono::milliseconds(5000));

}  // namespace sfs::metrics
