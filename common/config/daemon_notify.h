// Readiness for systemd (issue 20): sfs-mds.service and sfs-oss@.service are
// Type=notify, so `systemctl start` returns once the daemon serves, and units
// ordered after it (a local OSS after the MDS, a mount after both) start then.
// sd_notify is a no-op when NOTIFY_SOCKET is unset (not under systemd) and
// when the build has no libsystemd (SFS_HAVE_SD_NOTIFY, common/meson.build);
// include this in a daemon's main.cc only, which links sd_daemon_dep.
#pragma once

#include <string>

#ifdef SFS_HAVE_SD_NOTIFY
#include <systemd/sd-daemon.h>
#endif

namespace sfs::config {

inline void NotifyReady(const std::string& status) {
#ifdef SFS_HAVE_SD_NOTIFY
  sd_notifyf(/*unset_environment=*/0, "READY=1\nSTATUS=%s", status.c_str());
#else
  (void)status;
#endif
}

inline void NotifyStopping() {
#ifdef SFS_HAVE_SD_NOTIFY
  sd_notify(/*unset_environment=*/0, "STOPPING=1");
#endif
}

}  // namespace sfs::config
