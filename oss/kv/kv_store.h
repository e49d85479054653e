// KvStore: one OST's KV-cache tier (docs/kv.md): fixed-size blocks by
// (tenant, namespace, key), in files under <ost>/kv/, indexed and evicted by
// a KvIndex (kv_index.h).
//
// One file per block, not a slab: blocks are large (a 256-token chunk of a
// layer is ~1 MiB, of all layers ~8 MiB), so a create and an unlink per block
// cost little beside its bytes; the file system does the allocation, an
// eviction is an unlink (no compaction, no free-space map of our own), a
// put is written to a temporary file and renamed into place, so a reader
// holding the old file reads it whole, and a concurrent put of the same key
// never tears it. A slab would pay off for blocks of a few KiB.
//   <ost>/kv/<tenant, 8 hex>/<namespace>/<key[0], 2 hex>/<key, hex>
// The block's crc32c is kept in the index and checked on every read (a
// mismatch is logged, the block dropped and the read a miss: never wrong
// bytes); the reply's frame crc is then folded from it, so a read makes one
// pass over the bytes. Open serves a get with no pass at all (the file goes
// out by sendfile, the frame crc is the recorded crc): the client's frame
// check is then the only check, and a client that sees it fail removes the
// block (client/lib/kv.cc).
//
// It is a cache: nothing is fsynced, and the index lives in memory; Open
// removes what a previous run left (a restarted OSS starts empty; clients
// then see misses, and declare their namespaces again on ENOENT).
//
// Errors: unknown namespace ENOENT; wrong block size, a key or group of
// 0 (key) or over kMaxKey bytes, a bad namespace name, ttl over kMaxTtlSec,
// a pin over kMaxPinMs, more than kMaxBatch keys: EINVAL; no room but
// pinned groups: ENOSPC; a block over the capacity: EFBIG; disk errors as
// the file system reports them.
//
// Thread safety: every method may be called concurrently. mu_ covers the
// index and every rename/unlink under <ost>/kv (so the file a key names is
// the one the index describes); block bytes are written and read outside it.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "oss/kv/kv_index.h"

namespace sfs::oss::kv {

struct KvOptions {
  uint64_t capacity = 0;      // bytes of blocks on this OST (> 0)
  uint64_t tenant_quota = 0;  // per tenant; 0 = the capacity
};

class KvStore {
 public:
  static constexpr size_t kMaxKey = 64;
  static constexpr size_t kMaxNamespace = 64;
  static constexpr size_t kMaxBatch = 4096;
  static constexpr uint32_t kMaxTtlSec = 30 * 86400;
  static constexpr uint32_t kMaxPinMs = 3600 * 1000;
  static constexpr uint64_t kMaxBlock = 64ull << 20;

  // Opens (and empties) <ost_dir>/kv.
  static Result<std::unique_ptr<KvStore>> Open(const std::string& ost_dir, const KvOptions& opts);

  Status Declare(uint32_t tenant, const std::string& ns, uint64_t block_size);
  // The namespace's block size: ENOENT if unknown, EINVAL for a bad name.
  Result<uint64_t> BlockSize(uint32_t tenant, const std::string& ns) const;
  // REQUIRES-checked: data.size() is the namespace's block size.
  Status Put(uint32_t tenant, const std::string& ns, const std::string& key,
             const std::string& group, std::span<const uint8_t> data, uint32_t ttl_s);
  // Reads the block into dest (whose size must be the block size): true on
  // a hit (*crc = its crc32c), false on a miss. lease_ms > 0 pins it.
  Result<bool> Get(uint32_t tenant, const std::string& ns, const std::string& key,
                   std::span<uint8_t> dest, uint32_t lease_ms, uint32_t* crc);
  // A block to send from its file without reading it here (sendfile): the
  // file, open (the caller closes it; the bytes stay whole whatever puts and
  // evictions follow), the crc32c recorded when it was put, and whether all
  // of it is in the page cache now (so that sending it waits on no disk).
  // The bytes are NOT checked: the receiver checks them against crc
  // (docs/kv.md). A miss is an fd of -1. lease_ms > 0 pins the block, as Get.
  struct OpenBlock {
    int fd = -1;
    uint32_t crc = 0;
    bool cached = false;
  };
  Result<OpenBlock> Open(uint32_t tenant, const std::string& ns, const std::string& key,
                         uint32_t lease_ms);
  // Reads an opened block (Open) into dest (the block size) and checks it
  // against its crc: true if it matches (*crc = it), else the block is
  // dropped and false. Closes b.fd.
  Result<bool> ReadOpened(uint32_t tenant, const std::string& ns, const std::string& key,
                          OpenBlock b, std::span<uint8_t> dest, uint32_t* crc);
  Result<std::vector<bool>> Exists(uint32_t tenant, const std::string& ns,
                                   std::span<const std::string> keys, uint32_t lease_ms);
  Result<std::vector<bool>> Remove(uint32_t tenant, const std::string& ns,
                                   std::span<const std::string> keys);
  Result<std::vector<bool>> Pin(uint32_t tenant, const std::string& ns,
                                std::span<const std::string> keys, uint32_t pin_ms);

  uint64_t bytes() const;
  uint64_t blocks() const;
  uint64_t evicted_groups() const;
  const std::string& dir() const { return dir_; }

  // For tests: a clock to replace steady time (ms).
  void set_clock_for_test(int64_t (*now_ms)()) { now_ms_ = now_ms; }

 private:
  KvStore(std::string dir, const KvOptions& opts);
  // <tenant>/<ns>/<sub>/<hex key>: the block's id in the index and its path under dir_.
  static std::string BlockId(uint32_t tenant, const std::string& ns, const std::string& key);
  static std::string GroupId(uint32_t tenant, const std::string& ns, const std::string& key,
                             const std::string& group);
  Status CheckKeys(std::span<const std::string> keys) const;
  // The checks of a get and the open of its block's file under mu_ (fd -1:
  // a miss); `size` is the namespace's block size.
  Result<OpenBlock> OpenChecked(uint32_t tenant, const std::string& ns, const std::string& key,
                                uint64_t size, uint32_t lease_ms);
  // Unlinks the files of evicted ids. REQUIRES: mu_ held.
  void RemoveFiles(const std::vector<std::string>& ids);
  int64_t Now() const { return now_ms_(); }

  const std::string dir_;  // <ost>/kv
  int64_t (*now_ms_)();
  std::atomic<uint64_t> tmp_seq_{0};
  mutable std::mutex mu_;
  KvIndex index_;                                                 // GUARDED_BY(mu_)
  std::map<std::pair<uint32_t, std::string>, uint64_t> spaces_;   // GUARDED_BY(mu_): block sizes
};

// EINVAL unless name is a valid namespace (1..64 of [A-Za-z0-9._-], no leading '.').
Status CheckNamespace(const std::string& name);

}  // namespace sfs::oss::kv
