// The RDMA transport: rpc::Server and rpc::Channel over libibverbs/librdmacm,
// with the same semantics as TCP (rpc.h): many calls in flight per channel,
// per-call deadlines, reconnect with backoff and re-send of calls in flight,
// bulk straight from and into the caller's buffers. Handlers and callers do
// not change; only the factory differs.
//
// Wire: control messages (frame header + protobuf payload) by SEND/RECV into
// pre-posted buffers with credit flow control; file data by one-sided RDMA as
// Lustre's bulk: a request carries (addr, rkey, len) of the caller's
// registered buffers (see common/net/rdma_wire.h), the server RDMA-READs the
// write bulk before calling the handler and RDMA-WRITEs the reply bulk into
// the caller's bulk_in before sending the reply. The frame crc covers the
// bulk end to end, so a stale registration or a torn transfer is an error,
// never wrong data.
//
// Client buffers are registered once and cached (see rdma_mr_cache.h): a
// caller that frees or remaps a buffer used for bulk must call
// RdmaContext::Invalidate() first. A call that times out after its bulk_in
// descriptor went out drops the connection (QP to error) before Wait()
// returns, so the server can never write into a buffer the caller reuses.
//
// No verbs type appears here. Available iff built with SFS_HAVE_RDMA.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "common/rpc/rpc.h"

namespace sfs::rpc {

// True iff libibverbs sees at least one device.
bool RdmaDeviceAvailable();

// Starts an RDMA server on opts.host:opts.port (port 0 picks one; the host
// must be an address of an RDMA-capable interface). ENODEV without a device.
// REQUIRES: handler outlives the server.
Result<std::unique_ptr<Server>> StartRdmaServer(const ServerOptions& opts, Handler* handler);

// Client side: a progress thread, the device's protection domain and the
// registration cache shared by the channels made from it. Thread-safe.
class RdmaContext {
 public:
  virtual ~RdmaContext() = default;
  // ENODEV when no verbs device is present.
  static Result<std::unique_ptr<RdmaContext>> Create();
  // An RDMA channel to "host:port". REQUIRES: this context outlives it.
  virtual std::unique_ptr<Channel> MakeRdmaChannel(const std::string& address) = 0;
  // Registers [addr, addr+len) now and keeps it cached, so calls on any
  // slice of it (a buffer pool, a stripe buffer) reuse one registration.
  virtual Status Preregister(const void* addr, size_t len) = 0;
  // The caller is about to free or remap [addr, addr+len): forget its registrations.
  virtual void Invalidate(const void* addr, size_t len) = 0;
  virtual size_t CachedRegistrations() const = 0;

  // Test hook: connects to `address`, sends `bytes` as raw control-stream
  // bytes, and returns true iff the server closes the connection within
  // `timeout`.
  virtual Result<bool> SendRawForTest(const std::string& address, std::span<const uint8_t> bytes,
                                      std::chrono::milliseconds timeout) = 0;
};

// Memory registrations alive in this process (cached, in flight, server-side).
int64_t LiveRdmaRegistrations();

}  // namespace sfs::rpc
