// ChannelFactory: per-peer transport choice for libsfs (see channel_factory.h).
// Everything RDMA is behind SFS_HAVE_RDMA, so libsfs builds without it.
#include "client/lib/channel_factory.h"

#include <thread>

#include "common/log.h"
#ifdef SFS_HAVE_RDMA
#include "common/net/rdma_transport.h"
#endif

namespace sfs::client {

using Clock = std::chrono::steady_clock;

Result<Transport> ParseTransport(std::string_view s) {
  if (s == "auto") return Transport::kAuto;
  if (s == "tcp") return Transport::kTcp;
  if (s == "rdma") return Transport::kRdma;
  return Status(EINVAL, "transport must be auto, tcp or rdma, not '" + std::string(s) + "'");
}

const char* TransportName(Transport t) {
  switch (t) {
    case Transport::kTcp: return "tcp";
    case Transport::kRdma: return "rdma";
    case Transport::kAuto: break;
  }
  return "auto";
}

#ifdef SFS_HAVE_RDMA
class ChannelFactory::RdmaSide {
 public:
  std::unique_ptr<rpc::RdmaContext> ctx;
};

namespace {

// The RDMA context, or why there is none.
Result<std::unique_ptr<ChannelFactory::RdmaSide>> OpenRdma() {
  if (!rpc::RdmaDeviceAvailable()) return Status(ENODEV, "no RDMA device");
  SFS_ASSIGN_OR_RETURN(std::unique_ptr<rpc::RdmaContext> ctx, rpc::RdmaContext::Create());
  auto side = std::make_unique<ChannelFactory::RdmaSide>();
  side->ctx = std::move(ctx);
  return side;
}

}  // namespace
#else
class ChannelFactory::RdmaSide {};

namespace {

Result<std::unique_ptr<ChannelFactory::RdmaSide>> OpenRdma() {
  return Status(ENODEV, "libsfs built without RDMA support");
}

}  // namespace
#endif

ChannelFactory::ChannelFactory(Transport mode, rpc::IoContext* io,
                               std::chrono::milliseconds probe_timeout)
    : mode_(mode), io_(io), probe_timeout_(probe_timeout) {}

ChannelFactory::~ChannelFactory() = default;

Result<std::unique_ptr<ChannelFactory>> ChannelFactory::Create(
    Transport mode, rpc::IoContext* io, std::chrono::milliseconds probe_timeout) {
  std::unique_ptr<ChannelFactory> f(new ChannelFactory(mode, io, probe_timeout));
  if (mode == Transport::kTcp) return f;
  Result<std::unique_ptr<RdmaSide>> rdma = OpenRdma();
  if (rdma.ok()) {
    f->rdma_ = std::move(*rdma);
  } else if (mode == Transport::kRdma) {
    return Status(rdma.status().code(),
                  "transport rdma: cannot open RDMA: " + rdma.status().message());
  } else {
    f->no_rdma_reason_ = rdma.status().message();
  }
  return f;
}

MadeChannel ChannelFactory::Make(const std::string& address, uint16_t service) {
  MadeChannel out;
  if (mode_ == Transport::kTcp || rdma_ == nullptr) {
    out.channel = io_->MakeTcpChannel(address, LanesFor(service));
    LOG_INFO("transport to " << address << ": tcp ("
             << (mode_ == Transport::kTcp ? "transport=tcp" : no_rdma_reason_) << ")");
    return out;
  }
#ifdef SFS_HAVE_RDMA
  out.channel = rdma_->ctx->MakeRdmaChannel(address);
  out.transport = "rdma";
  if (mode_ == Transport::kRdma) {
    LOG_INFO("transport to " << address << ": rdma (transport=rdma)");
    return out;
  }
  // auto: any reply to an empty request proves the RDMA path end to end.
  auto start = Clock::now();
  rpc::Response resp;
  rpc::CallOptions copts;
  copts.timeout = probe_timeout_;
  Status st = out.channel->Call(service, std::string(), {}, {}, &resp, copts);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  if (st.ok()) {
    LOG_INFO("transport to " << address << ": rdma (auto: RDMA probe answered in " << ms << " ms)");
    return out;
  }
  out.channel = io_->MakeTcpChannel(address, LanesFor(service));
  out.transport = "tcp";
  LOG_INFO("transport to " << address << ": tcp (auto: RDMA probe failed after " << ms
           << " ms: " << st.ToString() << ")");
#endif
  return out;
}

std::vector<MadeChannel> ChannelFactory::MakeMany(const std::vector<std::string>& addresses,
                                                  uint16_t service) {
  std::vector<MadeChannel> out(addresses.size());
  if (mode_ != Transport::kAuto || rdma_ == nullptr || addresses.size() < 2) {
    for (size_t i = 0; i < addresses.size(); ++i) out[i] = Make(addresses[i], service);
    return out;
  }
  std::vector<std::thread> probes;
  for (size_t i = 0; i < addresses.size(); ++i) {
    probes.emplace_back([&, i] { out[i] = Make(addresses[i], service); });
  }
  for (std::thread& t : probes) t.join();
  return out;
}

}  // namespace sfs::client
