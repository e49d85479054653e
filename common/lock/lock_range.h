// Byte-range lock arithmetic shared by the MDS's lock table and the client's
// record of the locks it holds (issue 14): what one owner holds after a lock
// or unlock, and when two owners' locks conflict. Pure functions, no state.
//
// Types are Linux's fcntl values (F_RDLCK 0, F_WRLCK 1, F_UNLCK 2), which is
// also how the wire carries them (mds.proto LockReq). Ranges are inclusive,
// [start, end], with end = kLockEof meaning "to the end of the file and
// beyond", as struct flock's l_len = 0. A flock(2) lock is the range
// [0, kLockEof] in a space of its own.
#pragma once

#include <cstdint>
#include <vector>

namespace sfs::lock {

inline constexpr uint64_t kLockEof = UINT64_MAX;
inline constexpr int kRead = 0;    // F_RDLCK
inline constexpr int kWrite = 1;   // F_WRLCK
inline constexpr int kUnlock = 2;  // F_UNLCK

struct Range {
  uint64_t start = 0;
  uint64_t end = kLockEof;  // inclusive
  int type = kRead;         // kRead or kWrite (kUnlock only as a request)
  bool operator==(const Range&) const = default;
};

inline bool Overlaps(const Range& a, const Range& b) {
  return a.start <= b.end && b.start <= a.end;
}
// Locks of two different owners conflict iff they overlap and one writes.
inline bool Conflict(const Range& held, const Range& want) {
  return Overlaps(held, want) && (held.type == kWrite || want.type == kWrite);
}

// Applies one owner's lock or unlock request r to the ranges that owner
// holds, as POSIX does: the requested range takes r's type (or is freed
// for kUnlock), splitting what it partly covers, and adjacent or
// overlapping ranges of one type merge. REQUIRES: *held sorted by start,
// non-overlapping (what Apply leaves).
void Apply(std::vector<Range>* held, const Range& r);

// The range of struct flock's (start, len) from an absolute start: len 0 is
// "to EOF", a negative len covers the len bytes before start. False iff the
// range is invalid (negative start, or overflow), EINVAL for fcntl.
bool FromStartLen(int64_t start, int64_t len, Range* out);

}  // namespace sfs::lock
