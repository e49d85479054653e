// The verification pattern (see pattern.h). Words are stored with memcpy of
// a little-endian value so that the file bytes are the same on any host.
#include "tools/bench/pattern.h"

#include <cstring>

namespace sfs::bench {
namespace {

// SplitMix64's finaliser: a bijection with good avalanche.
inline uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

inline uint64_t ToLittle(uint64_t v) {
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  return __builtin_bswap64(v);
#else
  return v;
#endif
}

}  // namespace

uint64_t PatternKey(int task, int iteration, int64_t seed_offset) {
  uint64_t k =
      (static_cast<uint64_t>(static_cast<uint32_t>(task)) << 32) | static_cast<uint32_t>(iteration);
  return Mix(k + 0x5354524950454653ULL + static_cast<uint64_t>(seed_offset));
}

// One multiply per word: a bijection of key ^ off (so it is as collision-free
// as Mix would be), cheap enough that filling and checking stay well above
// any storage speed.
uint64_t PatternWord(uint64_t key, uint64_t off) {
  return ToLittle((key ^ off) * 0x9e3779b97f4a7c15ULL);
}

void FillPattern(uint64_t key, uint64_t off, std::span<uint8_t> buf) {
  uint8_t* p = buf.data();
  for (size_t i = 0; i + 8 <= buf.size(); i += 8) {
    uint64_t w = PatternWord(key, off + i);
    std::memcpy(p + i, &w, 8);
  }
}

namespace {

// Words [i, end) of buf that differ from the pattern: the first differing
// byte (index in buf, or -1) and how many words differ. The slow path.
int64_t ScanWords(uint64_t key, uint64_t off, const uint8_t* p, size_t i, size_t end,
                  uint64_t* bad) {
  int64_t first = -1;
  for (; i < end; i += 8) {
    uint64_t want = PatternWord(key, off + i);
    if (std::memcmp(p + i, &want, 8) == 0) continue;
    ++*bad;
    if (first >= 0) continue;
    const uint8_t* w = reinterpret_cast<const uint8_t*>(&want);
    int b = 0;
    while (p[i + b] == w[b]) ++b;
    first = static_cast<int64_t>(i) + b;
  }
  return first;
}

}  // namespace

int64_t CheckPattern(uint64_t key, uint64_t off, std::span<const uint8_t> buf,
                     uint64_t* mismatched_words) {
  constexpr size_t kChunk = 512;  // OR the differences of a chunk; scan only a bad chunk
  const uint8_t* p = buf.data();
  const size_t n = buf.size() & ~size_t{7};
  int64_t first = -1;
  uint64_t bad = 0;
  for (size_t c = 0; c < n; c += kChunk) {
    size_t end = c + kChunk < n ? c + kChunk : n;
    uint64_t diff = 0;
    for (size_t i = c; i < end; i += 8) {
      uint64_t got;
      std::memcpy(&got, p + i, 8);
      diff |= got ^ PatternWord(key, off + i);
    }
    if (diff == 0) continue;
    int64_t f = ScanWords(key, off, p, c, end, &bad);
    if (first < 0) first = f;
  }
  if (mismatched_words != nullptr) *mismatched_words = bad;
  return first;
}

}  // namespace sfs::bench
