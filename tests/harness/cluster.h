// TestCluster: a real StripeFS cluster for one GoogleTest fixture.
//
// Start() makes a fresh temp directory and runs one sfs-mds and N sfs-oss
// processes from the build tree on 127.0.0.1 with ports they pick, each
// waited for by its `LISTENING host:port` line (read from its stdout pipe with
// a deadline), then waits until the MDS reports every OST up (libsfs
// ListOsts, polled with a deadline). Mount() runs sfs-mount -f in the
// background and waits until the mountpoint's st_dev differs from its
// parent's. Faults: KillMds/KillOss send a signal (SIGKILL by default,
// SIGSTOP for a hung server); RestartMds/RestartOss start the daemon again on
// the same port with the same state directory.
//
// Layout of the temp dir (kept on failure, or always with SFS_KEEP_TMP=1):
//   mds/  ostK/  mnt*/  logs/{mds,ossK,mount-*}.log
// (mds/ and ostK/ elsewhere with ClusterOptions::mds_parent/ost_parent).
//
// Binaries: $SFS_MDS_BIN / $SFS_OSS_BIN / $SFS_MOUNT_BIN, else the paths
// meson compiled in (SFS_MDS_BIN_DEFAULT...), else $SFS_BUILD_DIR/{mds,oss,
// client/fuse}/..., else the compiled-in SFS_BUILD_DIR.
//
// Teardown (Stop(), also run by the destructor) unmounts every mount
// (fusermount3 -u, then umount -l), SIGTERMs then SIGKILLs only the processes
// this object started, and fails the test if a daemon's or a mount's log
// holds a sanitizer report (scripts/sanitize.sh). ReportFailure() prints a
// one-line repro command and the tail of every log.
//
// Thread safety: none; the fixture's thread drives it. Clients returned by
// Connect() may be used from any thread.
#pragma once

#include <chrono>
#include <csignal>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "client/lib/client.h"
#include "common/status.h"
#include "tests/harness/subprocess.h"

namespace sfs::testing {

struct ClusterOptions {
  std::string name = "cluster";     // part of the temp dir's name
  int num_oss = 4;
  int osts_per_oss = 1;             // each OSS serves this many OSTs (ost_dir(oss, k))
  int heartbeat_ms = 200;           // OSS → MDS
  int ost_timeout_ms = 3000;        // MDS marks an OST down after this
  int client_timeout_ms = 30000;    // MDS drops a silent client's opens
  std::chrono::milliseconds start_timeout{30000};  // per daemon, and for all OSTs up
  std::chrono::milliseconds mount_timeout{30000};
  // Where the MDS's state dir (<mds_parent>/mds) and the OST dirs
  // (<ost_parent>/ostK) go; empty: under root(). E.g. a LossyFs mount.
  std::string mds_parent;
  std::string ost_parent;
  std::vector<std::string> mds_args;  // appended to every sfs-mds command line
  std::vector<std::string> oss_args;  // appended to every sfs-oss command line
  std::map<int, std::vector<std::string>> oss_args_of;  // oss -> appended to its only
  // Every daemon serves GET /metrics on a port it picks (--metrics-listen
  // 127.0.0.1:0); see mds_metrics_address().
  bool metrics = false;
  // The daemons get a fresh cluster key (root()/cluster.key, mode 0600):
  // the MDS signs capabilities, every OSS checks them and proves the key at
  // every registration and heartbeat (docs/security.md, "OSS <-> MDS").
  // Off by default: with it every raw OSS request of a test needs a token.
  bool cluster_key = false;
};

class TestCluster {
 public:
  explicit TestCluster(ClusterOptions opts = {});
  ~TestCluster();
  TestCluster(const TestCluster&) = delete;
  TestCluster& operator=(const TestCluster&) = delete;

  // Creates the temp dir, starts the MDS and the OSSes, waits for all OSTs up.
  Status Start();
  // Unmounts, stops every process; keeps the temp dir iff a test failed or
  // SFS_KEEP_TMP is set. Idempotent.
  void Stop();

  const std::string& mds_address() const { return mds_.address; }
  const std::string& root() const { return root_; }  // the temp dir
  // ClusterOptions::cluster_key: the key file ("" without one).
  std::string cluster_key_path() const {
    return opts_.cluster_key ? root_ + "/cluster.key" : std::string();
  }
  int num_oss() const { return static_cast<int>(oss_.size()); }
  std::string mds_dir() const;
  // OST directory k (< osts_per_oss) of OSS oss.
  std::string ost_dir(int oss, int k = 0) const;
  std::string oss_address(int oss) const { return oss_[oss].address; }
  // With ClusterOptions::metrics: where GET /metrics answers ("host:port").
  const std::string& mds_metrics_address() const { return mds_.metrics_address; }
  std::string oss_metrics_address(int oss) const { return oss_[oss].metrics_address; }

  Status KillMds(int sig = SIGKILL);
  Status RestartMds();
  Status KillOss(int oss, int sig = SIGKILL);
  Status RestartOss(int oss);
  bool MdsRunning();
  bool OssRunning(int oss);

  // Mounts the file system at dir (created if missing; default root()/mntK)
  // with -o allow_other plus `options` (e.g. "rpc_timeout_ms=1500") and
  // returns the path once the mount is live.
  Result<std::string> Mount(const std::string& dir = {},
                            const std::vector<std::string>& options = {});
  // Unmounts one mount made by Mount().
  Status Unmount(const std::string& dir);
  // Sends sig to the sfs-mount process serving dir (SIGSTOP: a hung client
  // node; SIGCONT it before the test ends). ENOENT if dir is not ours.
  Status SignalMount(const std::string& dir, int sig);

  // A libsfs client of this cluster, retrying the connect until timeout.
  Result<std::unique_ptr<client::Client>> Connect(
      std::chrono::milliseconds rpc_timeout = std::chrono::milliseconds(10000),
      std::chrono::milliseconds timeout = std::chrono::milliseconds(30000)) const;
  // Polls ListOsts until exactly `up` OSTs are up (and `up` exist).
  Status WaitForOstsUp(int up, std::chrono::milliseconds timeout = std::chrono::milliseconds(30000));
  // Index of the OSS process that serves OST `ost_index` (by address), or -1.
  int OssOfOst(client::Client& c, uint32_t ost_index);
  // Path of an object's file in its OST dir (see oss/store/object_store.h);
  // "" if the OST is not one of ours.
  std::string ObjectPath(client::Client& c, uint32_t ost_index, uint64_t oid);

  // Prints the repro command, where the logs are and their tails to stderr,
  // and marks the temp dir to be kept.
  void ReportFailure();

 private:
  struct Daemon {
    std::string name;      // "mds", "oss0"...
    std::string address;   // "127.0.0.1:port" once listening
    std::string metrics_address;  // from its `METRICS host:port` line, if any
    std::unique_ptr<Subprocess> proc;
    bool killed = false;   // by KillMds/KillOss, so its exit is expected
  };
  struct MountPoint {
    std::string dir;
    std::unique_ptr<Subprocess> proc;
  };

  std::vector<std::string> MdsArgv(const std::string& listen) const;
  std::vector<std::string> OssArgv(int oss, const std::string& listen) const;
  Status StartDaemon(Daemon* d, std::vector<std::string> argv);
  Status StopMount(MountPoint* m);
  // Stops d (SIGTERM, then SIGKILL); notes an unexpected exit in problems.
  // was_running: whether d ran before the teardown signalled anything.
  void StopDaemon(Daemon* d, bool was_running, std::vector<std::string>* problems);
  // Notes every log of this cluster that holds a sanitizer report (a daemon
  // built with ASan/UBSan/TSan; its exit status alone misses one killed by a test).
  void NoteSanitizerReports(std::vector<std::string>* problems) const;
  std::string LogPath(const std::string& name) const;
  bool AnyTestFailed() const;

  ClusterOptions opts_;
  std::string root_;
  Daemon mds_;
  std::vector<Daemon> oss_;
  std::vector<MountPoint> mounts_;
  int mount_counter_ = 0;
  bool keep_ = false;
  bool stopped_ = false;
};

// Paths of the binaries under test (see the header comment for the order).
std::string MdsBinary();
std::string OssBinary();
std::string MountBinary();

}  // namespace sfs::testing
