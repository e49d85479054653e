// Finding a mount's backing device and setting its readahead window.
#include "client/fuse/bdi.h"

#include <fstream>
#include <sstream>

namespace sfs::fuse {
namespace {

// mountinfo escapes space, tab, newline and backslash as \ooo octal.
std::string Unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      int v = 0;
      bool octal = true;
      for (size_t k = 1; k <= 3; ++k) {
        char c = s[i + k];
        if (c < '0' || c > '7') octal = false;
        v = v * 8 + (c - '0');
      }
      if (octal) {
        out.push_back(static_cast<char>(v));
        i += 3;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

}  // namespace

Result<std::string> MountDevice(std::string_view mountinfo, std::string_view mountpoint) {
  std::string found;
  std::istringstream in{std::string(mountinfo)};
  std::string line;
  while (std::getline(in, line)) {
    // "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS ..."
    std::istringstream fields(line);
    std::string id, parent, dev, root, mp;
    if (!(fields >> id >> parent >> dev >> root >> mp)) continue;
    if (Unescape(mp) == mountpoint) found = dev;
  }
  if (found.empty()) return Status(ENOENT, "no mount on " + std::string(mountpoint));
  return found;
}

Status SetReadAheadKb(const std::string& mountpoint, unsigned kb) {
  std::ifstream info("/proc/self/mountinfo");
  std::stringstream text;
  text << info.rdbuf();
  SFS_ASSIGN_OR_RETURN(std::string dev, MountDevice(text.str(), mountpoint));
  std::string knob = "/sys/class/bdi/" + dev + "/read_ahead_kb";
  std::ofstream out(knob);
  out << kb << "\n";
  out.flush();
  if (!out) return Status(EACCES, "cannot write " + knob);
  return Status::Ok();
}

Result<unsigned> RaiseFuseMaxPages(unsigned pages) {
  const char* knob = "/proc/sys/fs/fuse/max_pages_limit";
  unsigned limit = 0;
  {
    std::ifstream in(knob);
    if (!(in >> limit)) return Status(ENOENT, std::string("cannot read ") + knob);
  }
  if (limit >= pages) return limit;
  std::ofstream out(knob);
  out << pages << "\n";
  out.flush();
  if (!out) return Status(EACCES, std::string("cannot write ") + knob);
  return pages;
}

}  // namespace sfs::fuse
