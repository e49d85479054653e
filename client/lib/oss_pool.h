// OssPool: which rpc::Channel reaches each OST, from the MDS's OST map.
//
// The map (OST index -> "host:port" of its OSS) is fetched with GetOstMap at
// Connect and again whenever an OST index is unknown or a caller reports that
// an OSS could not be reached: a restarted OSS may come back on a new address.
// One channel per OSS address, shared by all of that OSS's OSTs. Channels are
// never destroyed before the pool, so a Channel* handed out stays valid while
// other threads refresh the map.
//
// Channels come from a ChannelFactory (TCP or RDMA per peer, issue 7) or,
// with the IoContext constructor, are TCP. New channels are made outside mu_
// (an auto-transport probe may take a moment) and the pool remembers which
// transport each address got, for `sfs servers`.
//
// Each OSS address also has this client's write fence epoch for it
// (fence_epoch.h), made with its channel and as long-lived.
//
// Thread safety: all methods may be called concurrently. No lock is held
// across an RPC; concurrent refreshes of the same map generation collapse into one.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "client/lib/fence_epoch.h"
#include "common/rpc/rpc.h"
#include "common/status.h"

namespace sfs::client {

class ChannelFactory;
class MdsClient;

class OssPool {
 public:
  // REQUIRES: io and mds outlive the pool.
  OssPool(rpc::IoContext* io, MdsClient* mds);
  // REQUIRES: factory and mds outlive the pool.
  OssPool(ChannelFactory* factory, MdsClient* mds);
  ~OssPool();

  // Fetches the OST map now.
  Status Refresh();
  // Fetches the map unless it has changed since generation `seen` was read
  // (someone else already refreshed it).
  Status RefreshIfStale(uint64_t seen);
  uint64_t generation() const;

  // The channel serving `ost` and the fence epoch of its OSS, refreshing the
  // map once if the index is unknown. ESTALE if the MDS does not know the OST either.
  struct Route {
    rpc::Channel* channel = nullptr;
    FenceEpoch* fence = nullptr;
  };
  Result<Route> RouteFor(uint32_t ost);
  Result<rpc::Channel*> ChannelFor(uint32_t ost);
  // The channel the current map has for `ost`, or null; never calls the MDS.
  rpc::Channel* Find(uint32_t ost) const;
  // "tcp"/"rdma" for the channel to this OSS address, "-" if there is none.
  std::string TransportOf(const std::string& address) const;

 private:
  Status RefreshLocked();  // REQUIRES: refresh_mu_ held
  std::optional<Route> FindRoute(uint32_t ost) const;

  rpc::IoContext* const io_;        // null when factory_ is set
  ChannelFactory* const factory_ = nullptr;
  MdsClient* const mds_;
  std::mutex refresh_mu_;  // serializes refreshes; never taken under mu_
  mutable std::mutex mu_;
  std::unordered_map<uint32_t, std::string> ost_addr_;                  // GUARDED_BY(mu_)
  std::map<std::string, std::unique_ptr<rpc::Channel>> channels_;      // GUARDED_BY(mu_)
  std::map<std::string, std::unique_ptr<FenceEpoch>> fences_;          // GUARDED_BY(mu_), as channels_
  std::map<std::string, std::string> transports_;                       // GUARDED_BY(mu_)
  uint64_t generation_ = 0;                                            // GUARDED_BY(mu_)
};

}  // namespace sfs::client
