// JobIdOf: the job a FUSE request works for, as Lustre's jobid_var: the
// SFS_JOBID environment variable of the process that made it, read from
// /proc/PID/environ (sfs-mount runs as root, so it may read any process's).
//
// Cached per pid for kJobIdTtl in a cache of the calling thread (no lock: each
// FUSE worker keeps its own), so a stream of requests from one process costs
// one /proc read per worker per TTL. The TTL bounds how long a reused pid
// keeps its predecessor's job. A process whose environ cannot be read (it has
// exited, a kernel thread, pid 0) has no job: "".
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <string_view>

namespace sfs::fuse {

inline constexpr char kJobIdVar[] = "SFS_JOBID";
inline constexpr std::chrono::seconds kJobIdTtl{10};

// The job of pid (""= none). REQUIRES: the result is used before this
// thread's next call.
const std::string& JobIdOf(pid_t pid);

// The value of kJobIdVar in an environ block (NUL-separated NAME=VALUE), or "".
std::string_view JobIdInEnviron(std::string_view environ);

}  // namespace sfs::fuse
