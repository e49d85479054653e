// OssDestroyer: the ObjectDestroyer that sends OssRequest{ost, oid, destroy}
// to the OSSes over RPC, one cached Channel per OSS address, all items of a
// call in flight at once. Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/rpc/rpc.h"
#include "mds/namespace/destroy_queue.h"

namespace sfs::mds {

class OssDestroyer : public ObjectDestroyer {
 public:
  // REQUIRES: io outlives this object.
  explicit OssDestroyer(rpc::IoContext* io) : io_(io) {}
  std::vector<Status> Destroy(const std::vector<Item>& items) override;

 private:
  rpc::Channel* ChannelFor(const std::string& address);

  rpc::IoContext* const io_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<rpc::Channel>> channels_;  // GUARDED_BY(mu_)
};

}  // namespace sfs::mds
