// Status helpers: errno names and check failures.
#include "common/status.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace sfs {

Status Status::FromErrno(std::string_view what) {
  int e = errno;
  return Status(e == 0 ? EIO : e, std::string(what) + ": " + std::strerror(e));
}

std::string ErrnoName(int code) {
  switch (code) {
    case 0: return "OK";
    case EPERM: return "EPERM";
    case ENOENT: return "ENOENT";
    case EIO: return "EIO";
    case EBADF: return "EBADF";
    case EAGAIN: return "EAGAIN";
    case ENOMEM: return "ENOMEM";
    case EACCES: return "EACCES";
    case EEXIST: return "EEXIST";
    case EXDEV: return "EXDEV";
    case ENOTDIR: return "ENOTDIR";
    case EISDIR: return "EISDIR";
    case EINVAL: return "EINVAL";
    case EFBIG: return "EFBIG";
    case ENOSPC: return "ENOSPC";
    case EROFS: return "EROFS";
    case EMLINK: return "EMLINK";
    case ERANGE: return "ERANGE";
    case ENAMETOOLONG: return "ENAMETOOLONG";
    case ENOSYS: return "ENOSYS";
    case ENOTEMPTY: return "ENOTEMPTY";
    case ELOOP: return "ELOOP";
    case ENODATA: return "ENODATA";
    case ESTALE: return "ESTALE";
    case ETIMEDOUT: return "ETIMEDOUT";
    case ECONNREFUSED: return "ECONNREFUSED";
    case ENOTCONN: return "ENOTCONN";
    case EPROTO: return "EPROTO";
    case EBADMSG: return "EBADMSG";
    case EMSGSIZE: return "EMSGSIZE";
    case ECANCELED: return "ECANCELED";
    case E2BIG: return "E2BIG";
    case ENODEV: return "ENODEV";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    case EBUSY: return "EBUSY";
    case ETXTBSY: return "ETXTBSY";
    default: return "errno " + std::to_string(code);
  }
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  if (message_.empty()) return ErrnoName(code_) + " (" + std::strerror(code_) + ")";
  return ErrnoName(code_) + ": " + message_;
}

void CheckFailed(const char* file, int line, const char* cond) {
  std::fprintf(stderr, "FATAL %s:%d: check failed: %s\n", file, line, cond);
  std::abort();
}

}  // namespace sfs
