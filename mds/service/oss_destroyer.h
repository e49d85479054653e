// OssDestroyer: the ObjectDestroyer that destroys objects on the OSSes over
// RPC, one cached Channel per OSS address. The objects of one OST go in
// destroy_batch calls of up to kMaxPerCall object ids (the OSS makes each
// batch durable with one fsync); every call of a Destroy is in flight at
// once. An OSS that does not know destroy_batch (EPROTO) gets one destroy
// call per object instead. Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/auth/capability.h"
#include "common/auth/signing_keys.h"
#include "common/rpc/rpc.h"
#include "mds/namespace/destroy_queue.h"

namespace sfs::mds {

class OssDestroyer : public ObjectDestroyer {
 public:
  static constexpr size_t kMaxPerCall = 1024;  // <= OssService::kMaxDestroyBatch

  // REQUIRES: io outlives this object.
  // keys: the MDS's signing keys, if the OSSes check capabilities (its calls
  // then carry a server token, capability.h). REQUIRES: keys outlives this.
  explicit OssDestroyer(rpc::IoContext* io, auth::KeyRotator* keys = nullptr)
      : io_(io), keys_(keys) {}
  std::vector<Status> Destroy(const std::vector<Item>& items) override;

 private:
  struct Call;
  rpc::Channel* ChannelFor(const std::string& address);
  // Starts one destroy_batch of items[idx] (all on one OST).
  Call StartBatch(const std::vector<Item>& items, std::vector<size_t> idx);
  void FinishBatch(const std::vector<Item>& items, const Call& c, std::vector<Status>* out);
  // The fallback: one destroy call per item of idx, all in flight at once.
  void DestroyEach(const std::vector<Item>& items, const std::vector<size_t>& idx,
                   std::vector<Status>* out);

  rpc::IoContext* const io_;
  auth::KeyRotator* const keys_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<rpc::Channel>> channels_;  // GUARDED_BY(mu_)
};

}  // namespace sfs::mds
