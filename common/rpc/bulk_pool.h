// BulkPool: reusable, page-aligned buffers for the bulk (file data) of
// requests and replies on a server, and BulkBuffer, the owner of one of them.
//
// Why: a std::vector<uint8_t> per request zero-fills its bytes before the
// socket overwrites them, goes through malloc (one arena in sfs-oss, shared by
// every worker) and, for 1 MiB, maps and faults in fresh pages each time.
// Buffers from the pool are mmap'd once, aligned to 4 KiB (so the OSS can
// hand them to O_DIRECT I/O) and come back uninitialised.
//
// Bound: the pool keeps idle buffers only while all the bytes it owns (in use
// and idle) stay within `max_bytes`; a buffer released beyond that is unmapped.
// Buffers in use are bounded by whoever hands them out (the server's admission
// budget), so the pool adds at most max_bytes of idle memory, and none beyond
// the budget while the budget is full.
//
// A request for n bytes reuses an idle buffer of capacity in [n, 1.25 n]
// (rounded up to 4 KiB), else maps a new one of n rounded up to 4 KiB, first
// unmapping idle buffers (largest first) as far as needed to stay in bound.
//
// Thread safety: Get and the release of a BulkBuffer may run on any thread
// (one BulkBuffer handle is not itself synchronised). A BulkBuffer keeps its
// pool alive (shared_ptr), so it may outlive a server.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

namespace sfs::rpc {

class BulkPool;

// A handle to `size` bytes (uninitialised when fresh from Get) in a buffer of
// a pool. Copies share the buffer (so Request and Reply stay copyable); it
// goes back to its pool when the last handle lets go. An empty BulkBuffer
// holds nothing.
class BulkBuffer {
 public:
  BulkBuffer() = default;

  uint8_t* data() const { return block_ ? block_->data : nullptr; }
  size_t size() const { return block_ ? block_->size : 0; }
  bool empty() const { return size() == 0; }
  std::span<uint8_t> span() const { return {data(), size()}; }
  // Lets go of the buffer; the BulkBuffer becomes empty.
  void Reset() { block_.reset(); }

 private:
  friend class BulkPool;
  struct Block {
    Block(std::shared_ptr<BulkPool> p, uint8_t* d, size_t n, size_t cap)
        : pool(std::move(p)), data(d), size(n), capacity(cap) {}
    ~Block();
    Block(const Block&) = delete;
    Block& operator=(const Block&) = delete;
    const std::shared_ptr<BulkPool> pool;
    uint8_t* const data;
    const size_t size;
    const size_t capacity;
  };
  explicit BulkBuffer(std::shared_ptr<Block> block) : block_(std::move(block)) {}

  std::shared_ptr<Block> block_;
};

class BulkPool : public std::enable_shared_from_this<BulkPool> {
 public:
  static constexpr size_t kAlign = 4096;

  explicit BulkPool(uint64_t max_bytes) : max_bytes_(max_bytes) {}
  ~BulkPool();
  BulkPool(const BulkPool&) = delete;
  BulkPool& operator=(const BulkPool&) = delete;

  // A buffer of n bytes, data() aligned to kAlign. n == 0 gives an empty
  // buffer. Never fails short of the process running out of address space
  // (then it aborts, as operator new would).
  BulkBuffer Get(size_t n);

  struct Stats {
    uint64_t owned = 0;  // bytes mapped (in use + idle)
    uint64_t idle = 0;   // bytes kept for reuse
    uint64_t maps = 0;   // buffers mapped since start
    uint64_t reuses = 0;  // Gets served from an idle buffer
  };
  Stats stats() const;

 private:
  friend struct BulkBuffer::Block;
  void Put(uint8_t* data, size_t capacity);

  const uint64_t max_bytes_;
  mutable std::mutex mu_;
  std::multimap<size_t, uint8_t*> idle_;  // capacity -> buffer; GUARDED_BY(mu_)
  Stats stats_;                            // GUARDED_BY(mu_)
};

}  // namespace sfs::rpc
