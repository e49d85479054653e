// OssPool: OST index -> channel, refreshed from the MDS when it goes stale.
#include "client/lib/oss_pool.h"

#include <algorithm>
#include <vector>

#include "client/lib/channel_factory.h"
#include "client/lib/mds_client.h"
#include "common/log.h"

namespace sfs::client {

OssPool::OssPool(rpc::IoContext* io, MdsClient* mds) : io_(io), mds_(mds) {}

OssPool::OssPool(ChannelFactory* factory, MdsClient* mds)
    : io_(nullptr), factory_(factory), mds_(mds) {}

OssPool::~OssPool() = default;

uint64_t OssPool::generation() const {
  std::lock_guard<std::mutex> lock(mu_);
  return generation_;
}

Status OssPool::Refresh() {
  std::lock_guard<std::mutex> refresh(refresh_mu_);
  return RefreshLocked();
}

Status OssPool::RefreshLocked() {
  // The RPC runs without mu_, so I/O on known OSTs carries on meanwhile.
  SFS_ASSIGN_OR_RETURN(std::vector<OstStatus> osts, mds_->GetOstMap());
  // Channels for new addresses are made before taking mu_ (refresh_mu_ keeps
  // other refreshes out), so I/O to known OSTs is not held up by a probe.
  std::vector<std::string> fresh;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const OstStatus& o : osts) {
      if (!o.address.empty() && channels_.count(o.address) == 0 &&
          std::find(fresh.begin(), fresh.end(), o.address) == fresh.end()) {
        fresh.push_back(o.address);
      }
    }
  }
  std::vector<MadeChannel> made;
  if (factory_ != nullptr) {
    made = factory_->MakeMany(fresh, rpc::kServiceOss);
  } else {
    for (const std::string& a : fresh) made.push_back({io_->MakeTcpChannel(a, kOssLanes), "tcp"});
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < fresh.size(); ++i) {
    transports_[fresh[i]] = made[i].transport;
    channels_[fresh[i]] = std::move(made[i].channel);
    fences_[fresh[i]] = std::make_unique<FenceEpoch>();
  }
  for (const OstStatus& o : osts) {
    if (o.address.empty()) continue;
    auto it = ost_addr_.find(o.index);
    if (it != ost_addr_.end() && it->second != o.address) {
      LOG_INFO("OST " << o.index << " moved from " << it->second << " to " << o.address);
    }
    ost_addr_[o.index] = o.address;
  }
  ++generation_;
  return Status::Ok();
}

Status OssPool::RefreshIfStale(uint64_t seen) {
  std::lock_guard<std::mutex> refresh(refresh_mu_);
  if (generation() != seen) return Status::Ok();
  return RefreshLocked();
}

std::optional<OssPool::Route> OssPool::FindRoute(uint32_t ost) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = ost_addr_.find(ost);
  if (it == ost_addr_.end()) return std::nullopt;
  return Route{channels_.at(it->second).get(), fences_.at(it->second).get()};
}

rpc::Channel* OssPool::Find(uint32_t ost) const {
  std::optional<Route> r = FindRoute(ost);
  return r ? r->channel : nullptr;
}

std::string OssPool::TransportOf(const std::string& address) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = transports_.find(address);
  return it == transports_.end() ? "-" : it->second;
}

Result<OssPool::Route> OssPool::RouteFor(uint32_t ost) {
  if (std::optional<Route> r = FindRoute(ost)) return *r;
  SFS_RETURN_IF_ERROR(RefreshIfStale(generation()));
  if (std::optional<Route> r = FindRoute(ost)) return *r;
  return Status(ESTALE, "OST " + std::to_string(ost) + " is not in the MDS's OST map");
}

Result<rpc::Channel*> OssPool::ChannelFor(uint32_t ost) {
  SFS_ASSIGN_OR_RETURN(Route r, RouteFor(ost));
  return r.channel;
}

}  // namespace sfs::client
