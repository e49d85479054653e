// Permission and name rules of the namespace, as pure functions of the
// caller's credentials and the inodes involved. They follow Linux: uid 0
// passes read/write checks always and execute checks when the inode is a
// directory or has any execute bit; otherwise the owner, group or other
// class of the mode decides. Errors: EACCES for a denied access, EPERM for
// an operation reserved to the owner or root (and for the sticky rule).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "common.pb.h"
#include "common/status.h"

namespace sfs::mds {

// The caller, as the client reported it.
struct Cred {
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::vector<uint32_t> groups;

  bool InGroup(uint32_t g) const;
  bool root() const { return uid == 0; }
};

inline constexpr int kMayRead = 4;
inline constexpr int kMayWrite = 2;
inline constexpr int kMayExec = 1;

// OK iff cred may access the inode with every bit in mask; else EACCES.
Status CheckAccess(const Cred& cred, const proto::Attr& attr, int mask);
// True iff cred is root or owns the inode.
bool OwnerOrRoot(const Cred& cred, const proto::Attr& attr);
// In a sticky directory only root, the directory's owner or the victim's
// owner may remove or rename the victim; else EPERM.
Status CheckSticky(const Cred& cred, const proto::Attr& dir, const proto::Attr& victim);
// A name that may be created or removed: EINVAL for "", ".", "..", '/' or
// NUL in it; ENAMETOOLONG above 255 bytes.
Status ValidateName(std::string_view name);
// The DT_* type of a mode.
uint32_t DirentType(uint32_t mode);

}  // namespace sfs::mds
