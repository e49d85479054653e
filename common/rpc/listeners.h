// Listeners: the servers a daemon (sfs-mds, sfs-oss) runs for one handler,
// chosen by its --transport=auto|tcp|rdma flag (issue 7, "Selection").
//
// TCP is always started, as before. RDMA is started as well, at the same
// host:port (rdma_cm has its own port space), when the mode is auto or rdma
// and this build has the RDMA transport and a verbs device is active. In
// auto mode a missing device or an RDMA listen failure is not an error; in
// rdma mode it is. Summary() is the one log line saying which listeners
// started and why, e.g. "transport: tcp 127.0.0.1:7700; rdma not started: no
// RDMA device".
//
// Header-only on purpose: SFS_HAVE_RDMA is defined only for targets that
// link sfs_rdma_dep, so each daemon compiles this with its own setting.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "common/rpc/rpc.h"
#include "common/status.h"
#ifdef SFS_HAVE_RDMA
#include "common/net/rdma_transport.h"
#endif

namespace sfs::rpc {

enum class TransportMode { kAuto, kTcp, kRdma };

inline bool ParseTransportMode(std::string_view s, TransportMode* out) {
  if (s == "auto") *out = TransportMode::kAuto;
  else if (s == "tcp") *out = TransportMode::kTcp;
  else if (s == "rdma") *out = TransportMode::kRdma;
  else return false;
  return true;
}

class Listeners {
 public:
  // Starts TCP on opts.host:opts.port, then RDMA on the port TCP got.
  static Result<Listeners> Start(const ServerOptions& opts, Handler* handler,
                                 TransportMode mode) {
    Listeners l;
    SFS_ASSIGN_OR_RETURN(l.tcp_, StartTcpServer(opts, handler));
    std::string where = opts.host + ":" + std::to_string(l.tcp_->port());
    l.summary_ = "transport: tcp " + where;
    if (mode == TransportMode::kTcp) {
      l.summary_ += "; rdma not started: --transport=tcp";
      return l;
    }
    Status why = l.StartRdma(opts, handler);
    if (why.ok()) {
      l.summary_ += ", rdma " + where;
    } else if (mode == TransportMode::kRdma) {
      l.tcp_->Stop();
      return Status(why.code(), "--transport=rdma: cannot listen on RDMA at " + where + ": " +
                                    why.message());
    } else {
      l.summary_ += "; rdma not started: " + why.message();
    }
    return l;
  }

  uint16_t port() const { return tcp_->port(); }
  bool rdma() const { return rdma_ != nullptr; }
  const std::string& Summary() const { return summary_; }
  // Stops every listener. Idempotent.
  void Stop() {
    if (rdma_) rdma_->Stop();
    if (tcp_) tcp_->Stop();
  }

 private:
  Status StartRdma(const ServerOptions& opts, Handler* handler) {
#ifdef SFS_HAVE_RDMA
    if (!RdmaDeviceAvailable()) return Status(ENODEV, "no RDMA device");
    ServerOptions ropts = opts;
    ropts.port = tcp_->port();
    Result<std::unique_ptr<Server>> r = StartRdmaServer(ropts, handler);
    if (!r.ok()) return r.status();
    rdma_ = std::move(*r);
    return Status::Ok();
#else
    (void)opts;
    (void)handler;
    return Status(ENOTSUP, "built without RDMA support");
#endif
  }

  std::unique_ptr<Server> tcp_;
  std::unique_ptr<Server> rdma_;
  std::string summary_;
};

}  // namespace sfs::rpc
