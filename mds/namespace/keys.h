// Key encoding of the metadata store (see docs in DESIGN.md, "Metadata store").
//
// Every key starts with a one-byte type tag; integers are fixed-width
// big-endian so that bytewise order equals numeric order. Hence all entries of
// one directory, D<parent><name>, are the contiguous range
// [DentryPrefix(p), DentryPrefix(p + 1)), ordered by name bytewise; the same
// holds for an inode's xattrs under X<ino>.
//   I<ino:8>            -> InodeRec
//   D<parent:8><name>   -> DentryRec
//   X<ino:8><name>      -> xattr value (raw bytes)
//   S                   -> SuperblockRec
//   Q<seq:8>            -> DestroyRec (objects to destroy on OSSes)
//   O<ino:8>            -> OrphanRec (unlinked while open)
//   T<uuid>             -> OstRec (OST registry)
//   R<client:8><xid:8>  -> ReplyRec (outcome of an applied mutating request)
//   P<name>             -> PoolRec (OST pool: its member OST indices)
//   M<ino:8>            -> MigrateRec (migration in progress: new objects not yet the file's)
//   L<ino:8>            -> StaleLayoutRec (objects replaced by a migration, freed at last close)
//   W<ino:8>            -> "" (a mirrored file with a stale copy: the resync's to-do list)
//   C<class>            -> QosRule (an OSS QoS rule for "job:<id>", "tenant:<name>" or "resync")
//   E<name>             -> TenantRec (a tenant: its fileset, id maps and key; tenant.cc)
//   G                   -> "1" (every client must be a tenant's; tenant.cc)
//   V                   -> the last TenantRec.kv_id given (decimal; tenant.cc)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sfs::mds::keys {

inline constexpr char kInode = 'I';
inline constexpr char kDentry = 'D';
inline constexpr char kXattr = 'X';
inline constexpr char kSuper = 'S';
inline constexpr char kQueue = 'Q';
inline constexpr char kOrphan = 'O';
inline constexpr char kOst = 'T';
inline constexpr char kReply = 'R';
inline constexpr char kPool = 'P';
inline constexpr char kMigrate = 'M';
inline constexpr char kStaleLayout = 'L';
inline constexpr char kResync = 'W';
inline constexpr char kQos = 'C';
// K<client>: a client that may hold requests to replay; Z: the last stop was clean.
inline constexpr char kClient = 'K';
inline constexpr char kCleanStop = 'Z';
inline constexpr char kTenant = 'E';
inline constexpr char kTenantsRequired = 'G';
inline constexpr char kTenantKvSeq = 'V';

// Appends v as 8 big-endian bytes.
void PutBe64(std::string* out, uint64_t v);
// Reads 8 big-endian bytes at s[pos]. REQUIRES: s.size() >= pos + 8.
uint64_t GetBe64(std::string_view s, size_t pos);

std::string Inode(uint64_t ino);
std::string Dentry(uint64_t parent, std::string_view name);
// The common prefix of every entry of directory `parent`.
std::string DentryPrefix(uint64_t parent);
std::string Xattr(uint64_t ino, std::string_view name);
std::string XattrPrefix(uint64_t ino);
std::string Super();
std::string Queue(uint64_t seq);
std::string Orphan(uint64_t ino);
std::string Ost(std::string_view uuid);
std::string Reply(uint64_t client, uint64_t xid);
std::string Pool(std::string_view name);
std::string Qos(std::string_view name);
std::string Tenant(std::string_view name);
std::string Migrate(uint64_t ino);
std::string StaleLayout(uint64_t ino);
std::string Resync(uint64_t ino);
std::string Client(uint64_t client);
std::string CleanStop();

// The first key after every key starting with `prefix` (prefix's range end).
// REQUIRES: prefix is not all 0xff bytes.
std::string PrefixEnd(std::string_view prefix);

// The name part of a D or X key.
inline std::string_view NameOf(std::string_view key) { return key.substr(9); }
// The 8-byte integer following the tag.
inline uint64_t IdOf(std::string_view key) { return GetBe64(key, 1); }

}  // namespace sfs::mds::keys
