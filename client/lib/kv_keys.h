// Keys of the KV-cache tier (docs/kv.md "Keys"): chained prefix hashes, as
// vLLM's and LMCache's, but deterministic across processes and machines
// (SHA-256 of a fixed encoding: no random seed, no Python hash()), so that a
// chunk stored by one inference node is found by any other.
//
//   chunk_i = SHA-256("sfs-kv-chain-v1\0" ‖ be32|salt| ‖ salt ‖ be32|model| ‖ model
//                     ‖ be32|layout| ‖ layout ‖ parent ‖ be32(n) ‖ n tokens as be32)
//
// parent is chunk_{i-1}, 32 zero bytes for the first chunk. The salt is the
// tenant's (a different salt gives different keys for the same tokens; the
// OSS still refuses another tenant's blocks, whatever the key); model and
// layout name what produced the KV (model id, dtype, layers/heads, TP rank
// layout) so that incompatible KV never shares a key. A block of a chunk
// (one layer, one TP shard) is BlockKey(chunk, part): the chunk's 32 bytes
// then part as be32.
// Pure functions (OpenSSL libcrypto's SHA-256); thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sfs::client::kv {

inline constexpr size_t kHashSize = 32;
using Hash = std::array<uint8_t, kHashSize>;

struct ChainSpec {
  std::string_view salt;    // the tenant's
  std::string_view model;   // e.g. "llama-3-8b"
  std::string_view layout;  // e.g. "fp16 L32 H8 D128 tp1"
  uint32_t chunk_tokens = 256;
};

// One chunk's key from its parent's.
Hash ChunkKey(const ChainSpec& spec, const Hash& parent, std::span<const uint32_t> tokens);
// The keys of every full chunk of tokens (a trailing partial chunk has
// none), chained from parent (zeros: the start of a sequence).
// REQUIRES: spec.chunk_tokens > 0.
std::vector<Hash> ChainKeys(const ChainSpec& spec, std::span<const uint32_t> tokens,
                            const Hash& parent = Hash{});
// The key of part `part` (a layer, a shard) of a chunk: 36 bytes.
std::string BlockKey(const Hash& chunk, uint32_t part);
inline std::string_view AsBytes(const Hash& h) {
  return {reinterpret_cast<const char*>(h.data()), h.size()};
}
std::string ToHex(std::string_view bytes);

}  // namespace sfs::client::kv
