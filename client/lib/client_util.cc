// The pure helpers of client.h: Attr::ToStat and ParseSize. No I/O, so the
// unit tests exercise them without any server.
#include <cctype>
#include <cstring>

#include "client/lib/client.h"

namespace sfs::client {
namespace {

timespec ToTimespec(int64_t ns) {
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(ns / 1000000000);
  ts.tv_nsec = static_cast<long>(ns % 1000000000);
  if (ts.tv_nsec < 0) {  // times before the epoch: keep tv_nsec in [0, 1e9)
    ts.tv_nsec += 1000000000;
    ts.tv_sec -= 1;
  }
  return ts;
}

// Binary shift of a unit letter (K/M/G/T, any case), or -1.
int UnitShift(char c) {
  switch (std::tolower(static_cast<unsigned char>(c))) {
    case 'k': return 10;
    case 'm': return 20;
    case 'g': return 30;
    case 't': return 40;
    default: return -1;
  }
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

}  // namespace

struct stat Attr::ToStat() const {
  struct stat st;
  std::memset(&st, 0, sizeof(st));
  st.st_ino = ino;
  st.st_mode = mode;
  st.st_nlink = nlink;
  st.st_uid = uid;
  st.st_gid = gid;
  st.st_rdev = rdev;
  st.st_size = static_cast<off_t>(size);
  st.st_blksize = 4096;
  st.st_blocks = static_cast<blkcnt_t>(blocks);
  st.st_atim = ToTimespec(atime_ns);
  st.st_mtim = ToTimespec(mtime_ns);
  st.st_ctim = ToTimespec(ctime_ns);
  return st;
}

Result<uint64_t> ParseSize(std::string_view s) {
  const Status junk(EINVAL, "bad size '" + std::string(s) + "' (want e.g. 4096, 64K, 1M, 2G)");
  size_t i = 0;
  uint64_t v = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
    uint64_t d = static_cast<uint64_t>(s[i] - '0');
    if (v > (UINT64_MAX - d) / 10) return junk;
    v = v * 10 + d;
  }
  if (i == 0) return junk;
  std::string_view rest = s.substr(i);
  int shift = 0;
  if (!rest.empty() && UnitShift(rest[0]) > 0) {
    shift = UnitShift(rest[0]);
    rest.remove_prefix(1);
  }
  bool suffix_ok = rest.empty() || EqualsIgnoreCase(rest, "b") ||
                   (shift > 0 && EqualsIgnoreCase(rest, "ib"));
  if (!suffix_ok) return junk;
  if (shift > 0 && v > (UINT64_MAX >> shift)) return junk;
  return v << shift;
}

}  // namespace sfs::client
