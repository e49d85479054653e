// Text forms of the client cache's hint and counters, shared by the FUSE
// control xattrs (client/fuse/cache_ctl.h), `sfs prefetch|cache` and tests.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "client/lib/client.h"

namespace sfs::client {

// An order hint as text: one entry per line, "PATH" or "PATH<TAB>OFFSET<TAB>LENGTH"
// (bytes; LENGTH "-" = to the end). PATH is absolute inside the file system.
// Empty lines are skipped. EINVAL naming the line for anything else.
Result<std::vector<PrefetchItem>> ParsePrefetchList(std::string_view text);
std::string FormatPrefetchItem(const PrefetchItem& it);  // one line, with its '\n'

// "key: value" lines (hits, misses, hit_rate, ... dir), YAML-like as `sfs getstripe`.
std::string FormatCacheStats(const CacheStats& s);
// Back from FormatCacheStats (unknown keys ignored); EINVAL on junk.
Result<CacheStats> ParseCacheStats(std::string_view text);

}  // namespace sfs::client
