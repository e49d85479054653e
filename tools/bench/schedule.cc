// IOR offset schedules (see schedule.h).
#include "tools/bench/schedule.h"

#include <algorithm>
#include <random>

namespace sfs::bench {

uint64_t BlockOffset(const IorGeometry& g, int task, uint64_t segment) {
  if (g.file_per_process) return segment * g.block;
  return (segment * static_cast<uint64_t>(g.ntasks) + static_cast<uint64_t>(task)) * g.block;
}

void BuildSchedule(const IorGeometry& g, int task, bool random, uint64_t seed,
                   std::vector<uint64_t>* out) {
  out->clear();
  out->reserve(g.TransfersPerTask());
  for (uint64_t s = 0; s < g.segments; ++s) {
    uint64_t base = BlockOffset(g, task, s);
    for (uint64_t off = 0; off < g.block; off += g.transfer) out->push_back(base + off);
  }
  if (random) {
    std::mt19937_64 rng(seed);
    std::shuffle(out->begin(), out->end(), rng);
  }
}

}  // namespace sfs::bench
