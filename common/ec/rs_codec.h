// Reed–Solomon erasure code over GF(2^8): K data chunks + M parity chunks,
// computed by ISA-L (libisal). The generator is ISA-L's Cauchy matrix
// (gf_gen_cauchy1_matrix): its top K rows are the identity, so the data chunks
// are stored as they are, and every K x K submatrix is invertible, so any K of
// the K+M chunks recover all of them.
//
// Chunk i of a row is: i < K the i-th data chunk, K <= i < K+M parity chunk i-K.
// Every call works on caller-owned buffers (spans); the codec copies no data.
//
// Thread safety: a codec is immutable after Create() except for its cache of
// decode tables, which a mutex guards; any number of threads may call any
// method of one codec at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "common/status.h"

namespace sfs::ec {

// K+M is at most this, so a set of chunks fits in a uint32_t mask.
inline constexpr int kMaxChunks = 32;

class RsCodec {
 public:
  // REQUIRES nothing: k >= 1, m >= 1, k + m <= kMaxChunks, else EINVAL.
  static Result<std::unique_ptr<RsCodec>> Create(int k, int m);

  int k() const { return k_; }
  int m() const { return m_; }

  // Computes the M parity chunks of one row from its K data chunks.
  // REQUIRES: data.size() == k, parity.size() == m, every span the same length
  // (<= INT32_MAX), parity buffers not overlapping the data; else EINVAL.
  Status Encode(std::span<const std::span<const uint8_t>> data,
                std::span<const std::span<uint8_t>> parity) const;

  // Rebuilds the chunks listed in `erased` from the others.
  // chunks.size() == k + m. An index in `erased` is an output: chunks[i] is the
  // buffer it is written into. Every other chunk is a source if chunks[i].data()
  // is non-null, or absent (lost, not wanted) if it is null. Sources and outputs
  // all have the same length.
  // Fails with EIO, writing nothing, when fewer than K sources remain (more than
  // M chunks erased or absent): never wrong data. EINVAL for bad indices/sizes.
  Status Reconstruct(std::span<const std::span<uint8_t>> chunks,
                     std::span<const int> erased) const;

  // Parity delta for a partial write: data chunk `index` changes from old_data
  // to new_data (equal lengths, a sub-range of the chunk at the same offset as
  // the parity spans); the M parity spans are updated in place, reading nothing
  // else: parity ^= A[p][index] * (old ^ new). Two ISA-L multiply-adds, no copy.
  Status UpdateParity(int index, std::span<const uint8_t> old_data,
                      std::span<const uint8_t> new_data,
                      std::span<const std::span<uint8_t>> parity) const;

  // Decode tables built so far (one per erasure pattern); for tests.
  size_t CachedPatterns() const;

 private:
  struct Tables;  // ISA-L expanded tables for one (sources, outputs) pattern
  RsCodec(int k, int m);
  std::shared_ptr<const Tables> DecodeTables(uint32_t sources, uint32_t outputs) const;
  std::shared_ptr<const Tables> BuildDecodeTables(uint32_t sources, uint32_t outputs) const;

  int k_;
  int m_;
  std::vector<uint8_t> matrix_;      // (k+m) x k generator, row-major
  std::vector<uint8_t> enc_tables_;  // ec_init_tables of the M parity rows
  mutable std::mutex mu_;
  // Key: sources mask << 32 | outputs mask. GUARDED_BY(mu_). Bounded by
  // kMaxCachedPatterns; cleared when full (patterns are few in practice).
  mutable std::map<uint64_t, std::shared_ptr<const Tables>> cache_;
};

}  // namespace sfs::ec
