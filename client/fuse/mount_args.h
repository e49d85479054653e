// sfs-mount's command line: `sfs-mount HOST:PORT MOUNTPOINT [-f] [-d] [-o opt,...]`.
//
// Options of our own (attr_timeout=, entry_timeout=, file_attr_timeout=,
// file_entry_timeout=,
// rpc_timeout_ms=, connect_timeout_ms=, max_threads=, max_idle_threads=,
// read_ahead_kb=, write_behind_kb=, write_behind_threads=, close_delay_ms=, metrics_listen=,
// cache_dir=, cache_size=, cache_ram=, cache_read_ahead=, prefetch_threads=, prefetch_depth=,
// tenant=, keyfile=, splice_write, noleases, nowireflags) are taken out; every other -o option
// (allow_other, ro, max_read=, debug, ...) is handed to libfuse, after the defaults we add
// (default_permissions, fsname=HOST:PORT, subtype=sfs: the mount shows as
// `HOST:PORT on DIR type fuse.sfs`, the source as written in /etc/fstab, so
// that `mount -a` recognises it as mounted), so a user's
// fsname= or subtype= wins. libfuse rejects options it does not know.
#pragma once

#include <string>
#include <vector>

#include "client/fuse/fuse_ops.h"
#include "client/lib/client.h"
#include "common/status.h"

namespace sfs::fuse {

struct MountArgs {
  std::string mds_address;
  std::string mountpoint;
  bool foreground = false;  // -f (also implied by -d)
  bool debug = false;       // -d or -o debug: libfuse traces every request
  bool help = false;
  FuseOptions fuse;
  client::Options client;
  unsigned max_threads = 64;       // FUSE workers at most (requests in flight)
  // Idle workers kept; by default all (max_threads): a worker that ends
  // after a burst of requests is a thread created again for the next one.
  unsigned max_idle_threads = 64;
  unsigned read_ahead_kb = 4096;   // kernel readahead window; 0 = kernel default
  // The largest READ request asked of the kernel (INIT max_pages; needs the
  // wire flags and the kernel's fs.fuse.max_pages_limit, bdi.h).
  unsigned max_read_kb = 4096;
  // The INIT and open flags libfuse 3.14 cannot send (wire_flags.h); off
  // with -o nowireflags.
  bool wire_flags = true;
  // -o metrics_listen=HOST:PORT: serve GET /metrics there ("" = off).
  std::string metrics_listen;
  // For fuse_session_new: argv[0], then the -o options.
  std::vector<std::string> fuse_argv;
};

// Parses argv. EINVAL with a one-line reason for a bad command line.
Result<MountArgs> ParseMountArgs(int argc, const char* const* argv);

// As ParseMountArgs, with the -o options of a config file first: the file
// named by `--config FILE`, else `default_path` (/etc/stripefs/client.conf in
// sfs-mount) when it exists. The file is TOML (common/config/config_file.h),
// one key per -o option: `read_ahead_kb = 8192`, `allow_other = true` (false
// leaves the option out), `transport = "tcp"`; an -o option on the command
// line wins. An unknown key or a bad value is EINVAL naming the file and line.
Result<MountArgs> ParseMountArgsWithConfig(int argc, const char* const* argv,
                                           const std::string& default_path);

// The usage text, several lines, ending in a newline.
std::string MountUsage();

}  // namespace sfs::fuse
