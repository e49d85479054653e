// RangeLocks: a short list of held ranges per shard; waiters re-scan on every
// release. Few ranges are held at once (about one per worker thread), so a
// linear scan beats any tree.
#include "oss/store/range_lock.h"

#include <algorithm>

#include "common/status.h"

namespace sfs::oss {
namespace {

bool Overlaps(const RangeLocks::Range& a, const RangeLocks::Range& b) {
  return a.oid == b.oid && a.first <= b.last && b.first <= a.last;
}

}  // namespace

RangeLocks::Guard RangeLocks::Lock(uint64_t oid, uint64_t first, uint64_t last) {
  SFS_CHECK(first <= last);
  Range r{oid, first, last};
  Shard& s = ShardOf(oid);
  std::unique_lock<std::mutex> lock(s.mu);
  s.cv.wait(lock, [&] {
    return std::none_of(s.held.begin(), s.held.end(),
                        [&](const Range& h) { return Overlaps(h, r); });
  });
  s.held.push_back(r);
  return Guard(this, r);
}

void RangeLocks::Unlock(const Range& r) {
  Shard& s = ShardOf(r.oid);
  {
    std::lock_guard<std::mutex> lock(s.mu);
    auto it = std::find_if(s.held.begin(), s.held.end(), [&](const Range& h) {
      return h.oid == r.oid && h.first == r.first && h.last == r.last;
    });
    SFS_CHECK(it != s.held.end());
    *it = s.held.back();
    s.held.pop_back();
  }
  s.cv.notify_all();
}

}  // namespace sfs::oss
