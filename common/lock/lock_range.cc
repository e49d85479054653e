// Lock range arithmetic (lock_range.h).
#include "common/lock/lock_range.h"

#include <algorithm>

namespace sfs::lock {

void Apply(std::vector<Range>* held, const Range& r) {
  std::vector<Range> out;
  out.reserve(held->size() + 2);
  for (const Range& h : *held) {
    if (!Overlaps(h, r)) {
      out.push_back(h);
      continue;
    }
    // Keep the parts of h outside r.
    if (h.start < r.start) out.push_back({h.start, r.start - 1, h.type});
    if (h.end > r.end) out.push_back({r.end + 1, h.end, h.type});
  }
  if (r.type != kUnlock) out.push_back(r);
  std::sort(out.begin(), out.end(), [](const Range& a, const Range& b) { return a.start < b.start; });
  // Merge neighbours of one type that touch (end + 1 == start) or overlap.
  held->clear();
  for (const Range& x : out) {
    if (!held->empty()) {
      Range& last = held->back();
      bool touches = last.end == kLockEof || last.end + 1 >= x.start;
      if (last.type == x.type && touches) {
        last.end = std::max(last.end, x.end);
        continue;
      }
    }
    held->push_back(x);
  }
}

bool FromStartLen(int64_t start, int64_t len, Range* out) {
  if (start < 0) return false;
  uint64_t s = static_cast<uint64_t>(start);
  if (len == 0) {
    *out = {s, kLockEof, out->type};
    return true;
  }
  if (len > 0) {
    uint64_t e = s + static_cast<uint64_t>(len) - 1;
    if (e < s || e > static_cast<uint64_t>(INT64_MAX)) return false;
    *out = {s, e, out->type};
    return true;
  }
  // len < 0: the |len| bytes before start.
  uint64_t n = static_cast<uint64_t>(-(len + 1)) + 1;
  if (n > s) return false;
  *out = {s - n, s - 1, out->type};
  return true;
}

}  // namespace sfs::lock
