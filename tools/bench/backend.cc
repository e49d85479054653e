// The backend-independent helpers of backend.h: API names and the factory.
#include "tools/bench/backend.h"

#include <strings.h>

namespace sfs::bench {

Result<Api> ParseApi(std::string_view s) {
  std::string v(s);
  if (strcasecmp(v.c_str(), "POSIX") == 0) return Api::kPosix;
  if (strcasecmp(v.c_str(), "SFS") == 0) return Api::kSfs;
  return Status(EINVAL, "-a: unknown API '" + v + "' (want POSIX or SFS)");
}

const char* ApiName(Api api) { return api == Api::kSfs ? "SFS" : "POSIX"; }

Result<std::unique_ptr<Backend>> MakeBackend(const BackendOptions& opts) {
  if (opts.api == Api::kSfs) return MakeSfsBackend(opts.mds, opts.transport);
  return MakePosixBackend();
}

std::string ParentDir(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  size_t slash = p.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return p.substr(0, slash);
}

}  // namespace sfs::bench
