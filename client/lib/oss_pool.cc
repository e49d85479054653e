// OssPool: OST index -> channel, refreshed from the MDS when it goes stale.
#include "client/lib/oss_pool.h"

#include "client/lib/mds_client.h"
#include "common/log.h"

namespace sfs::client {

OssPool::OssPool(rpc::IoContext* io, MdsClient* mds) : io_(io), mds_(mds) {}

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
  std::lock_guard<std::mutex> lock(mu_);
  for (const OstStatus& o : osts) {
    if (o.address.empty()) continue;
    auto it = ost_addr_.find(o.index);
    if (it != ost_addr_.end() && it->second != o.address) {
      LOG_INFO("OST " << o.index << " moved from " << it->second << " to " << o.address);
    }
    ost_addr_[o.index] = o.address;
    if (channels_.count(o.address) == 0) channels_[o.address] = io_->MakeTcpChannel(o.address);
  }
  ++generation_;
  return Status::Ok();
}

Status OssPool::RefreshIfStale(uint64_t seen) {
  std::lock_guard<std::mutex> refresh(refresh_mu_);
  if (generation() != seen) return Status::Ok();
  return RefreshLocked();
}

rpc::Channel* OssPool::Find(uint32_t ost) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = ost_addr_.find(ost);
  if (it == ost_addr_.end()) return nullptr;
  return channels_.at(it->second).get();
}

Result<rpc::Channel*> OssPool::ChannelFor(uint32_t ost) {
  if (rpc::Channel* ch = Find(ost)) return ch;
  SFS_RETURN_IF_ERROR(RefreshIfStale(generation()));
  if (rpc::Channel* ch = Find(ost)) return ch;
  return Status(ESTALE, "OST " + std::to_string(ost) + " is not in the MDS's OST map");
}

}  // namespace sfs::client
