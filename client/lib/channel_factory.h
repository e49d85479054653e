// ChannelFactory: makes libsfs's rpc::Channel to one server address over the
// transport Options::transport asks for (issue 7, "Selection").
//
//   tcp  → a TCP channel.
//   rdma → an RDMA channel (Create fails with ENODEV when this build has no
//          RDMA transport or the host no verbs device).
//   auto → RDMA when a verbs device is active and a probe call to the peer
//          over RDMA is answered within the probe timeout, else TCP.
//
// The probe is one call with an empty payload to the peer's service: any
// reply (the service answers EPROTO inside its payload) proves that RDMA works
// end to end; the probed channel is kept and used. Each choice is one log line
// naming the peer, the transport and why. Probes run in parallel in MakeMany.
//
// The factory owns the RDMA context (progress thread, protection domain,
// registration cache), so it must outlive every channel it made.
// Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "client/lib/client.h"
#include "common/rpc/rpc.h"
#include "common/status.h"

namespace sfs::client {

// TCP connections ("lanes", rpc::IoContext::MakeTcpChannel) per OSS: callers
// reading from one OSS at the same time each get their own socket, so each
// reads its own reply (no follower woken to read for another) and sfs-oss,
// which serves small reads on the connection's I/O thread, serves them in
// parallel. The MDS gets one (it answers most requests on one I/O thread).
inline constexpr int kOssLanes = 4;
inline int LanesFor(uint16_t service) { return service == rpc::kServiceOss ? kOssLanes : 1; }

struct MadeChannel {
  std::unique_ptr<rpc::Channel> channel;
  const char* transport = "tcp";  // "tcp" or "rdma"
};

class ChannelFactory {
 public:
  // REQUIRES: io outlives the factory and every channel it makes.
  static Result<std::unique_ptr<ChannelFactory>> Create(
      Transport mode, rpc::IoContext* io,
      std::chrono::milliseconds probe_timeout = std::chrono::milliseconds(2000));
  ~ChannelFactory();

  Transport mode() const { return mode_; }
  // A channel to `address` for calls to `service` (used by the auto probe).
  MadeChannel Make(const std::string& address, uint16_t service);
  // Make() for several addresses, probing them in parallel; same order.
  std::vector<MadeChannel> MakeMany(const std::vector<std::string>& addresses, uint16_t service);

  class RdmaSide;  // the RDMA context, or nothing in a build without RDMA

 private:
  ChannelFactory(Transport mode, rpc::IoContext* io, std::chrono::milliseconds probe_timeout);

  const Transport mode_;
  rpc::IoContext* const io_;
  const std::chrono::milliseconds probe_timeout_;
  std::unique_ptr<RdmaSide> rdma_;   // null: RDMA not usable (auto falls back to TCP)
  std::string no_rdma_reason_;       // why rdma_ is null
};

}  // namespace sfs::client
