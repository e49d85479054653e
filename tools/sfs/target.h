// How a `sfs` subcommand reaches the file system behind a PATH argument.
//
// Mount mode (the default): PATH is on a mounted StripeFS. The MDS address
// comes from the mount's source in /proc/self/mountinfo (fstype fuse.sfs,
// source "HOST:PORT" or "sfs#HOST:PORT"), the inode number from stat(2)
// (sfs-mount reports StripeFS inode numbers as st_ino). Server mode
// (`--mds HOST:PORT`): PATH is a path inside the file system, "/" its root.
// Either way the command then talks to the MDS through libsfs, as the
// caller's uid/gids.
#pragma once

#include <memory>
#include <string>

#include "client/lib/client.h"
#include "common/status.h"

namespace sfs::tools {

struct GlobalOptions {
  std::string mds;   // empty = mount mode
  bool json = false;
};

class Target {
 public:
  // Connects for PATH. "PATH: not a StripeFS path" (ENOTSUP-ish EINVAL) when
  // it is on no StripeFS mount.
  static Result<std::unique_ptr<Target>> Open(const GlobalOptions& g, const std::string& path);

  // The attributes of PATH (which must exist).
  Result<client::Attr> Stat(const std::string& path);
  // The parent directory's inode and the last component of PATH.
  Status SplitParent(const std::string& path, uint64_t* parent, std::string* name);

  client::Client& client() { return *client_; }
  const client::Cred& cred() const { return cred_; }
  const std::string& mds() const { return mds_; }

 private:
  bool mount_mode_ = true;
  std::string mds_;
  client::Cred cred_;
  std::unique_ptr<client::Client> client_;
};

// The mount point of the StripeFS mount holding path (after realpath), or "".
std::string MountPointOf(const std::string& path);

// "1.5G", "512K": a short human size (powers of 1024).
std::string HumanSize(uint64_t bytes);
// A JSON string literal for s (quotes and escapes).
std::string JsonString(const std::string& s);

}  // namespace sfs::tools
