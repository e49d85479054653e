// libsfs-kv: the client of StripeFS's KV-cache tier (docs/kv.md, issue 19).
//
// A KvClient fetches the OST map from the MDS once, at Connect, and from
// then on talks to the OSSes only: a block's OST is a rendezvous hash of its
// group (or of its key when it has none) over the OST indices of that map,
// so every client places every block alike with no MDS round trip, and the
// blocks of a group (one chunk's layers and shards) share an OST, where they
// are evicted together. A namespace fixes the block size; Open declares it on
// every OST (and a call that finds an OST that forgot it, after a restart,
// declares it again and retries once).
//
// Data: GetInto receives the block straight into the caller's buffer (the
// socket read lands there: no copy in libsfs); Put sends from the caller's.
// MultiGet/MultiPut keep up to max_inflight blocks in flight over all the
// OSSes at once, each OSS's share on a thread of its own (the caller's for
// one), so that every OSS's replies are read as they come. Exists/Remove/Pin
// batch per OST, all OSTs in parallel.
//
// Misses are answers, not errors: GetInto returns false, Exists false. An
// OSS that cannot be reached (refused, reset, timed out) makes its blocks
// misses for reads (its errno for puts, removes and pins). Bad input (a
// buffer of the wrong size, a key of 0 or over 64 bytes, a group over 64)
// is EINVAL before anything is sent. A block whose bytes fail the end-to-end
// crc check (the crc recorded at its put, carried as the reply frame's crc)
// is a miss, and is removed from the tier: never wrong bytes.
//
// Thread safety: every method of both classes may be called concurrently.
// A KvNamespace must not outlive its KvClient.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "client/lib/client.h"
#include "common/status.h"

namespace sfs::client::kv {

struct KvOptions {
  std::string mds_address;                          // "host:port"
  std::chrono::milliseconds rpc_timeout{10000};
  std::chrono::milliseconds connect_timeout{5000};
  int io_threads = 2;
  Transport transport = Transport::kAuto;
  // Sent with every request; the OSS decides the tenant from it
  // (OssService::KvTenant): client::Client::KvCapability() of a tenant's
  // client, or a server's token. "" = none (a cluster without a key).
  std::string capability;
  int max_inflight = 64;  // blocks in flight in one MultiGet / MultiPut, shared by its OSSes
  // A get's caller waits awake (up to 50 µs at a time, rpc::CallOptions::spin)
  // for its reply, which a cached block gets within tens of µs, before it
  // sleeps: on a 2-vCPU VM one get's p99 0.73 ms instead of 1.66. Turn it off
  // where more processes get at once than there are cores (three getters on
  // 2 cores: p99 3.3 ms with it, 2.4 without; docs/benchmarks.md).
  bool busy_poll = true;
};

// A block's address: key (1..64 bytes) and group (0..64 bytes; empty = the
// block is alone). The group picks the OST, so gets must name the group
// that the put named.
struct BlockId {
  std::string_view key;
  std::string_view group;
};

class KvNamespace;

class KvClient {
 public:
  static Result<std::unique_ptr<KvClient>> Connect(const KvOptions& opts);
  ~KvClient();

  // Declares name with block_size on every OST of the map: EINVAL if one
  // already has it with another size (or a bad name/size).
  Result<std::unique_ptr<KvNamespace>> Open(const std::string& name, uint64_t block_size);

  // The OST indices blocks are placed over (the map at Connect, sorted).
  const std::vector<uint32_t>& osts() const;
  // The OST that holds id.
  uint32_t Place(const BlockId& id) const;

  class Impl;

 private:
  explicit KvClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class KvNamespace {
 public:
  const std::string& name() const { return name_; }
  uint64_t block_size() const { return block_size_; }

  // Stores data (exactly block_size bytes) under id; ttl_s 0 = no expiry.
  // ENOSPC when the tier (or the tenant's quota) is full of pinned blocks.
  Status Put(const BlockId& id, std::span<const uint8_t> data, uint32_t ttl_s = 0);
  // Reads the block into buf (exactly block_size bytes): true on a hit,
  // false on a miss (buf's contents then unspecified). lease_ms > 0 also
  // pins it for that long (a reader's lease).
  Result<bool> GetInto(const BlockId& id, std::span<uint8_t> buf, uint32_t lease_ms = 0);
  // Per id, in order: is it there. lease_ms > 0 pins each one found, so a
  // GetInto within the lease finds it (lookup, then fetch).
  Result<std::vector<bool>> Exists(std::span<const BlockId> ids, uint32_t lease_ms = 0);
  // Per id: was it there (and is gone now).
  Result<std::vector<bool>> Remove(std::span<const BlockId> ids);
  // Keeps each block's group from eviction and expiry for pin_ms (<= 1 h);
  // 0 unpins. Per id: was it there.
  Result<std::vector<bool>> Pin(std::span<const BlockId> ids, uint32_t pin_ms);

  struct PutItem {
    BlockId id;
    std::span<const uint8_t> data;
  };
  struct GetItem {
    BlockId id;
    std::span<uint8_t> buf;
  };
  // Many blocks at once, max_inflight in flight; one outcome per item.
  std::vector<Status> MultiPut(std::span<const PutItem> items, uint32_t ttl_s = 0);
  std::vector<Result<bool>> MultiGet(std::span<const GetItem> items, uint32_t lease_ms = 0);
  // The same, run on a thread of the client's: returns at once, and the
  // future is ready when every item's outcome is in (a fetch overlapping
  // the caller's compute, as a layer-by-layer load wants). The ids' bytes,
  // the data and buffers, and this namespace must stay valid until then;
  // the KvClient's destructor waits for calls still running.
  std::future<std::vector<Status>> MultiPutAsync(std::vector<PutItem> items, uint32_t ttl_s = 0);
  std::future<std::vector<Result<bool>>> MultiGetAsync(std::vector<GetItem> items,
                                                       uint32_t lease_ms = 0);
  // Or with a callback instead of the future, called on that thread.
  void MultiPutAsync(std::vector<PutItem> items, uint32_t ttl_s,
                     std::function<void(std::vector<Status>)> done);
  void MultiGetAsync(std::vector<GetItem> items, uint32_t lease_ms,
                     std::function<void(std::vector<Result<bool>>)> done);

  // Owned by kv.cc; not for callers.
  KvNamespace(KvClient::Impl* c, std::string name, uint64_t block_size)
      : c_(c), name_(std::move(name)), block_size_(block_size) {}

 private:
  KvClient::Impl* const c_;
  const std::string name_;
  const uint64_t block_size_;
};

}  // namespace sfs::client::kv
