// LossyFs: boots, power-cuts and reboots one sfs-lossyfs "machine"; see
// lossy_fs.h. Waits are on conditions with deadlines (the mountpoint's st_dev
// changing, the process exiting), never on sleeps.
#include "tests/harness/lossy_fs.h"

#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <filesystem>
#include <iostream>

#include "tests/harness/test_util.h"

namespace sfs::testing {
namespace {

using std::chrono::milliseconds;
namespace fs = std::filesystem;

constexpr milliseconds kMountTimeout{20000};
constexpr milliseconds kExitTimeout{10000};

#ifndef SFS_LOSSYFS_BIN_DEFAULT
#define SFS_LOSSYFS_BIN_DEFAULT "sfs-lossyfs"
#endif

}  // namespace

std::string LossyFsBinary() {
  const char* env = getenv("SFS_LOSSYFS_BIN");
  return env != nullptr && *env != '\0' ? env : SFS_LOSSYFS_BIN_DEFAULT;
}

LossyFs::LossyFs(std::string workdir) : workdir_(std::move(workdir)) {}

LossyFs::~LossyFs() {
  Status st = Stop();
  if (!st.ok()) std::cerr << "LossyFs teardown: " << st.ToString() << "\n";
  const char* keep = getenv("SFS_KEEP_TMP");
  if (keep_ || (keep != nullptr && *keep != '\0') || !st.ok()) {
    std::cerr << "LossyFs images kept in " << workdir_ << "\n";
    return;
  }
  std::error_code ec;
  fs::remove_all(workdir_, ec);
}

std::string LossyFs::log_path() const {
  return workdir_ + "/logs/lossyfs" + std::to_string(boot_) + ".log";
}

Status LossyFs::Start(const std::string& mountpoint) {
  mountpoint_ = mountpoint;
  std::error_code ec;
  for (const std::string& d : {workdir_ + "/logs", Image(0), Image(1), mountpoint_}) {
    if (!fs::create_directories(d, ec) && ec) return Status::Errno(EIO, "mkdir " + d);
  }
  chmod(mountpoint_.c_str(), 0755);
  return Mount();
}

Status LossyFs::Mount() {
  struct stat parent {};
  if (stat(fs::path(mountpoint_).parent_path().c_str(), &parent) != 0) {
    return Status::FromErrno("stat parent of " + mountpoint_);
  }
  std::vector<std::string> argv = {LossyFsBinary(), live_dir(), durable_dir(), mountpoint_};
  // SIGTERM if the test dies: sfs-lossyfs then unmounts on its way out.
  SFS_ASSIGN_OR_RETURN(proc_, Subprocess::Spawn(argv, log_path(), SIGTERM, false));
  bool live = PollUntil(
      [&] {
        struct stat st {};
        return !proc_->Running() ||
               (stat(mountpoint_.c_str(), &st) == 0 && st.st_dev != parent.st_dev);
      },
      kMountTimeout);
  if (live && proc_->Running()) return Status::Ok();
  std::string cmd = proc_->CommandLine();
  proc_->Terminate(milliseconds(2000));
  return Status::Errno(ETIMEDOUT, "sfs-lossyfs did not mount\n  command: " + cmd + "\n  log " +
                                      log_path() + ":\n" + TailFile(log_path(), 20));
}

Status LossyFs::PowerCut() {
  if (proc_ == nullptr || !proc_->Running()) return Status::Errno(ENOTCONN, "not mounted");
  proc_->Signal(SIGKILL);
  SFS_RETURN_IF_ERROR(proc_->Wait(kExitTimeout).status());
  if (umount2(mountpoint_.c_str(), MNT_DETACH) != 0) {
    return Status::FromErrno("umount -l " + mountpoint_);
  }
  return Status::Ok();
}

Status LossyFs::Reboot() {
  if (proc_ != nullptr && proc_->Running()) return Status::Errno(EBUSY, "still mounted");
  ++boot_;
  // cp -a keeps hard links (the OSS's tombstones share inodes) and holes.
  auto rc = RunCommand({"cp", "-a", live_dir(), durable_dir()}, log_path(), milliseconds(60000));
  if (!rc.ok()) return rc.status();
  if (*rc != 0) {
    return Status::Errno(EIO, "cp -a " + live_dir() + ": " + DescribeWaitStatus(*rc));
  }
  return Mount();
}

Status LossyFs::Stop() {
  if (proc_ == nullptr || !proc_->Running()) return Status::Ok();
  auto rc = RunCommand({"fusermount3", "-u", mountpoint_}, log_path(), milliseconds(20000));
  Status result;
  if (!rc.ok() || *rc != 0) {
    umount2(mountpoint_.c_str(), MNT_DETACH);
    result = Status::Errno(EBUSY, "fusermount3 -u " + mountpoint_ + " failed; used umount -l");
  }
  if (!proc_->Wait(kExitTimeout).ok()) {
    proc_->Terminate(milliseconds(2000));
    if (result.ok()) result = Status::Errno(ETIMEDOUT, "sfs-lossyfs did not exit on unmount");
  }
  return result;
}

}  // namespace sfs::testing
