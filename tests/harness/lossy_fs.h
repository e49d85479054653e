// LossyFs: one "machine" whose disk can lose power, for the power-loss tests
// (issue 15). Runs sfs-lossyfs (tests/powerloss/lossyfs.cc) at a mountpoint:
// a daemon whose state dir is under the mount keeps running as usual, while
// the durable image holds only what its fsyncs made durable.
//
// Layout of workdir (created if missing): img0, img1, ... are the disk images
// of successive boots; boot k runs with img<k> as the live dir and img<k+1>
// as the durable one; logs/lossyfs<k>.log is that boot's log.
//
//   Start(mnt)  boot 0: empty images, mounted at mnt (waits until live).
//   PowerCut()  SIGKILL of sfs-lossyfs and a lazy unmount: everything not
//               in the durable image is gone. Stop the processes using the
//               mount first (SIGSTOP), or they see ENOTCONN and act on it.
//   Reboot()    the durable image becomes the live one (and a copy of it,
//               hard links kept, the next durable one); mounted again at the
//               same mountpoint.
//   Stop()      a clean unmount (also run by the destructor).
//
// The workdir is removed by the destructor unless Keep() was called or
// SFS_KEEP_TMP is set. Thread safety: none; the test's thread drives it.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "common/status.h"
#include "tests/harness/subprocess.h"

namespace sfs::testing {

class LossyFs {
 public:
  explicit LossyFs(std::string workdir);
  ~LossyFs();
  LossyFs(const LossyFs&) = delete;
  LossyFs& operator=(const LossyFs&) = delete;

  // REQUIRES: not started. mountpoint is created if missing.
  Status Start(const std::string& mountpoint);
  // REQUIRES: mounted.
  Status PowerCut();
  // REQUIRES: PowerCut() was the last call.
  Status Reboot();
  // Unmounts if mounted. Idempotent.
  Status Stop();
  void Keep() { keep_ = true; }

  const std::string& mountpoint() const { return mountpoint_; }
  const std::string& workdir() const { return workdir_; }
  std::string live_dir() const { return Image(boot_); }
  std::string durable_dir() const { return Image(boot_ + 1); }
  std::string log_path() const;

 private:
  std::string Image(int k) const { return workdir_ + "/img" + std::to_string(k); }
  Status Mount();

  std::string workdir_;
  std::string mountpoint_;
  int boot_ = 0;
  std::unique_ptr<Subprocess> proc_;  // null or exited when not mounted
  bool keep_ = false;
};

// Path of sfs-lossyfs: $SFS_LOSSYFS_BIN, else the path meson compiled in.
std::string LossyFsBinary();

}  // namespace sfs::testing
