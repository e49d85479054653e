// The kernel's per-mount I/O knobs for a FUSE mount (its backing_dev_info).
//
// Sequential reads through the page cache are cut into requests no larger
// than the readahead window, 128 KiB by default: too small to keep several
// OSSes busy. sfs-mount widens it after mounting by writing
// /sys/class/bdi/MAJOR:MINOR/read_ahead_kb, found through the mount's device
// number in /proc/self/mountinfo (stat() on the mount point would send a
// FUSE request the not-yet-running session could not answer).
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace sfs::fuse {

// "MAJOR:MINOR" of the last mount on `mountpoint` listed in `mountinfo` (the
// text of /proc/self/mountinfo); ENOENT if none.
Result<std::string> MountDevice(std::string_view mountinfo, std::string_view mountpoint);

// Sets the readahead window of the mount on `mountpoint` (root only).
Status SetReadAheadKb(const std::string& mountpoint, unsigned kb);

// FUSE READ requests are at most fs.fuse.max_pages_limit pages (256 = 1 MiB
// by default, Linux >= 6.13; before, a fixed 256). Raises the limit to
// `pages` if it is lower (root only) and returns the limit now in force; the
// kernel reads it when a connection is made, so call it before mounting.
// The knob is the machine's: it only lets FUSE servers that ask for larger
// requests have them, and sfs-mount never lowers it.
Result<unsigned> RaiseFuseMaxPages(unsigned pages);

}  // namespace sfs::fuse
