#include "client/fuse/cache_ctl.h"

#include "client/lib/cache_text.h"

namespace sfs::fuse {
namespace {

constexpr std::string_view kPrefix = "user.sfs.";
constexpr std::string_view kAppend = ".append";

}  // namespace

bool IsCacheCtl(std::string_view name) {
  if (!name.starts_with(kPrefix)) return false;
  name.remove_prefix(kPrefix.size());
  if (name.ends_with(kAppend)) name.remove_suffix(kAppend.size());
  return name == "prefetch" || name == "warm" || name == "cache.drop" ||
         name == "cache.status" || name == "prefetch.wait";
}

Status CacheCtlSet(client::Client& c, const client::Cred& cred, std::string_view name,
                   std::string_view value) {
  name.remove_prefix(kPrefix.size());
  if (name == "cache.drop") return c.DropCache();
  const bool append = name.ends_with(kAppend);
  if (append) name.remove_suffix(kAppend.size());
  if (name != "prefetch" && name != "warm") return Status(EPERM, "read-only control");
  SFS_ASSIGN_OR_RETURN(std::vector<client::PrefetchItem> items, client::ParsePrefetchList(value));
  return c.Prefetch(cred, std::move(items), name == "warm" ? UINT64_MAX : 0, append);
}

Result<std::string> CacheCtlGet(client::Client& c, std::string_view name) {
  name.remove_prefix(kPrefix.size());
  if (name == "prefetch.wait") {
    SFS_ASSIGN_OR_RETURN(bool done, c.WaitPrefetch(std::chrono::seconds(1)));
    (void)done;  // the counters say how far it got
  } else if (name != "cache.status") {
    return Status(ENODATA, "write-only control");
  }
  SFS_ASSIGN_OR_RETURN(client::CacheStats s, c.CacheStatus());
  return client::FormatCacheStats(s);
}

}  // namespace sfs::fuse
