// The Channel every transport hands out: a thin owner of the transport's
// connection core, which does the work. REQUIRES of Core: Start/Wait with the
// Channel signatures, address(), and Shutdown() (called once, on destruction).
// Cores are shared with their I/O loops, which may outlive the Channel.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "common/rpc/rpc.h"

namespace sfs::rpc {

template <typename Core>
class CoreChannel final : public Channel {
 public:
  explicit CoreChannel(std::shared_ptr<Core> core) : core_(std::move(core)) {}
  ~CoreChannel() override { core_->Shutdown(); }

  std::shared_ptr<PendingCall> Start(uint16_t service, std::string payload,
                                     std::span<const uint8_t> bulk_out, std::span<uint8_t> bulk_in,
                                     const CallOptions& opts) override {
    return core_->Start(service, std::move(payload), bulk_out, bulk_in, opts);
  }
  Status Wait(const std::shared_ptr<PendingCall>& call, Response* out) override {
    return core_->Wait(call, out);
  }
  const std::string& address() const override { return core_->address(); }

 private:
  std::shared_ptr<Core> core_;
};

}  // namespace sfs::rpc
