// The client cache's controls through the mount (docs/cache.md): virtual
// extended attributes, answered by sfs-mount and never stored, so that `sfs
// prefetch|cache` reach a running mount's libsfs cache with no socket or
// extra name in the tree (find, rm -r and backups never meet a control file),
// with the kernel's own permission check on the inode they are set on (any
// directory or file of the mount; the CLI uses the mount's root).
//
//   setxattr user.sfs.prefetch[.append]  value: an order hint (cache_text.h),
//            replacing (or added to) the current one; bounded look-ahead
//   setxattr user.sfs.warm[.append]      the same, fetched as far as the cache holds
//   setxattr user.sfs.cache.drop         forget every cached block
//   getxattr user.sfs.cache.status       the counters (FormatCacheStats)
//   getxattr user.sfs.prefetch.wait      waits up to 1 s for the hint to have
//            nothing left to do before a reader moves on (Client::WaitPrefetch),
//            then the counters (hint_done of hint_length; hint_window, hint_waiting)
//
// A value is at most 64 KiB (XATTR_SIZE_MAX): longer hints go as a first
// chunk and .append chunks. ENOTSUP when the mount has no cache.
#pragma once

#include <string>
#include <string_view>

#include "client/lib/client.h"

namespace sfs::fuse {

bool IsCacheCtl(std::string_view name);
Status CacheCtlSet(client::Client& c, const client::Cred& cred, std::string_view name,
                   std::string_view value);
Result<std::string> CacheCtlGet(client::Client& c, std::string_view name);

}  // namespace sfs::fuse
