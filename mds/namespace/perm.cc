// Permission and name rules; see perm.h for the contract.
#include "mds/namespace/perm.h"

#include <sys/stat.h>

#include <algorithm>

namespace sfs::mds {

bool Cred::InGroup(uint32_t g) const {
  return g == gid || std::find(groups.begin(), groups.end(), g) != groups.end();
}

Status CheckAccess(const Cred& cred, const proto::Attr& attr, int mask) {
  uint32_t mode = attr.mode();
  if (cred.root()) {
    bool exec_ok = S_ISDIR(mode) || (mode & (S_IXUSR | S_IXGRP | S_IXOTH)) != 0;
    if ((mask & kMayExec) && !exec_ok) return Status::Errno(EACCES, "no execute bit");
    return Status::Ok();
  }
  uint32_t bits;
  if (cred.uid == attr.uid()) {
    bits = (mode >> 6) & 7;
  } else if (cred.InGroup(attr.gid())) {
    bits = (mode >> 3) & 7;
  } else {
    bits = mode & 7;
  }
  if ((bits & static_cast<uint32_t>(mask)) != static_cast<uint32_t>(mask)) {
    return Status::Errno(EACCES, "permission denied");
  }
  return Status::Ok();
}

bool OwnerOrRoot(const Cred& cred, const proto::Attr& attr) {
  return cred.root() || cred.uid == attr.uid();
}

Status CheckSticky(const Cred& cred, const proto::Attr& dir, const proto::Attr& victim) {
  if ((dir.mode() & S_ISVTX) == 0 || cred.root()) return Status::Ok();
  if (cred.uid == dir.uid() || cred.uid == victim.uid()) return Status::Ok();
  return Status::Errno(EPERM, "sticky directory");
}

Status ValidateName(std::string_view name) {
  if (name.size() > 255) return Status::Errno(ENAMETOOLONG, "name longer than 255 bytes");
  if (name.empty() || name == "." || name == "..") return Status::Errno(EINVAL, "invalid name");
  if (name.find('/') != std::string_view::npos || name.find('\0') != std::string_view::npos) {
    return Status::Errno(EINVAL, "name contains '/' or NUL");
  }
  return Status::Ok();
}

uint32_t DirentType(uint32_t mode) { return (mode & S_IFMT) >> 12; }

}  // namespace sfs::mds
