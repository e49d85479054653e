// LoneBadChunk: try each chunk as the wrong one; see row_check.h.
#include "common/ec/row_check.h"

#include <cstring>
#include <vector>

namespace sfs::ec {

int LoneBadChunk(const RsCodec& codec, std::span<const std::span<uint8_t>> chunks) {
  const int k = codec.k(), m = codec.m();
  if (chunks.size() != static_cast<size_t>(k + m)) return -1;
  const size_t len = chunks[0].size();
  std::vector<uint8_t> rebuilt(len);
  std::vector<std::vector<uint8_t>> parity(m, std::vector<uint8_t>(len));
  int found = -1;
  for (int c = 0; c < k + m; ++c) {
    std::vector<std::span<uint8_t>> with(chunks.begin(), chunks.end());
    with[c] = std::span<uint8_t>(rebuilt);
    if (!codec.Reconstruct(with, std::span<const int>(&c, 1)).ok()) return -1;
    // The row with chunk c rebuilt: consistent iff its data encodes to its parity.
    std::vector<std::span<const uint8_t>> data(with.begin(), with.begin() + k);
    std::vector<std::span<uint8_t>> par(parity.begin(), parity.end());
    if (!codec.Encode(data, par).ok()) return -1;
    bool agree = true;
    for (int p = 0; p < m && agree; ++p) {
      agree = std::memcmp(parity[p].data(), with[k + p].data(), len) == 0;
    }
    if (!agree) continue;
    if (found >= 0) return -1;  // two candidates: nothing to tell them apart
    found = c;
  }
  return found;
}

}  // namespace sfs::ec
