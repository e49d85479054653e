// Process-wide counters of file-data (bulk) bytes, for the "the bulk path
// does not copy" check of issue 7.
//
// copied: bytes of bulk that our own code memcpy'd — the RDMA transport's
//   inline bulk (frame encode, staging into registered send slots, stream
//   reassembly and frame extraction, an inline reply copied into a caller's
//   buffer) and the OSS store's partial-chunk bounce buffers (crc checks).
//   Kernel copies (read/write/pread/pwrite) are not ours and are not counted.
//   Not counted either: FrameAssembler's compaction of a partial frame left in
//   its stream buffer, and the TCP transport (its bulk goes through sockets).
// rdma: bytes moved by one-sided RDMA READ/WRITE (posted by the server).
//
// Relaxed atomics: these are statistics, read by tests after the traffic.
// Header-only so that every library can bump them without a new dependency.
#pragma once

#include <atomic>
#include <cstdint>

namespace sfs::rpc {

class BulkCopyStats {
 public:
  static void AddCopied(uint64_t n) { copied_.fetch_add(n, std::memory_order_relaxed); }
  static void AddRdma(uint64_t n) { rdma_.fetch_add(n, std::memory_order_relaxed); }
  static uint64_t Copied() { return copied_.load(std::memory_order_relaxed); }
  static uint64_t Rdma() { return rdma_.load(std::memory_order_relaxed); }
  static void Reset() {
    copied_.store(0, std::memory_order_relaxed);
    rdma_.store(0, std::memory_order_relaxed);
  }

 private:
  static inline std::atomic<uint64_t> copied_{0};
  static inline std::atomic<uint64_t> rdma_{0};
};

}  // namespace sfs::rpc
