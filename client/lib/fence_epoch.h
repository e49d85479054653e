// FenceEpoch: this client's write fence epoch for one OSS (issue 15;
// docs/protocol.md "Write fencing"; the OSS side is oss/service/write_fence.h).
//
// Every mutating OSS request carries current(). When such a call ends without
// a reply (it timed out, or its connection failed), or its reply answered a
// copy the channel re-sent on a new connection (rpc::Response::resent), a
// copy of the request may still be in the network and land late; Abandoned() raises the epoch past the one it
// carried, before the failure is reported or anything is retried. The OSS,
// once a request of the raised epoch arrived, refuses the older one, so no
// write the application saw fail, or that was retried, can overwrite a later
// write. Calls abandoned at once raise it once (to the epoch they carried + 1).
//
// Thread safety: all methods may be called concurrently (one atomic).
#pragma once

#include <atomic>
#include <cstdint>

namespace sfs::client {

class FenceEpoch {
 public:
  uint64_t current() const { return epoch_.load(std::memory_order_acquire); }
  // A mutating call that carried `sent` ended without a reply.
  void Abandoned(uint64_t sent) {
    uint64_t cur = epoch_.load(std::memory_order_acquire);
    while (cur <= sent && !epoch_.compare_exchange_weak(cur, sent + 1, std::memory_order_acq_rel)) {
    }
  }

 private:
  std::atomic<uint64_t> epoch_{1};  // 0 on the wire means "not fenced"
};

}  // namespace sfs::client
