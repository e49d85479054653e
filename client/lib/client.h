// libsfs: the mount-free StripeFS client API.
//
// Inode-based, like the FUSE low-level API it serves, with path helpers for
// tools. Every call is synchronous and thread-safe; many threads may call at
// once (FUSE's multi-threaded loop, sfs-bench tasks). Metadata calls are one
// MDS RPC each; Read/Write split the range by stripe and send every piece to
// its OSS in parallel (several RPCs in flight per OSS), receiving read data
// directly into the caller's buffer and sending write data straight from it.
//
// Errors are POSIX errnos in Status::code(). An OSS that does not answer
// within Options::rpc_timeout makes I/O to its stripes fail with EIO.
//
// Write-behind (Options::write_behind_bytes, WriteBehind()): writes may be
// acknowledged before the OSSes have them; see WriteBehind() for the barriers
// and the error rule.
//
// Size: the MDS keeps each file's size. A File remembers the highest byte it
// wrote; Flush/Fsync/Close report it (the MDS keeps the maximum). Truncate
// (SetAttr with size) sets it exactly and trims/extends the objects first.
#pragma once

#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "client/lib/read_ahead.h"
#include "common/status.h"

namespace sfs::client {

inline constexpr uint64_t kRootIno = 1;

// How libsfs reaches the MDS and each OSS (issue 7). kAuto: RDMA when this
// host has an active verbs device and the peer answers over RDMA within a
// short probe, TCP otherwise, chosen per peer and logged.
enum class Transport { kAuto, kTcp, kRdma };

struct Options {
  std::string mds_address;                         // "host:port"
  std::chrono::milliseconds rpc_timeout{30000};    // per RPC, MDS and OSS
  std::chrono::milliseconds connect_timeout{5000}; // Connect() gives up after this
  // How long an MDS call keeps retrying a lost or refused connection (with the
  // same request id) before it fails with EIO: an MDS restart shorter than
  // this is invisible to applications, open files included (docs/durability.md).
  std::chrono::milliseconds recovery_timeout{60000};
  int io_threads = 2;
  Transport transport = Transport::kAuto;
  // Metadata leases (issue 6): with this set and a handler given to
  // WatchInvalidations(), replies carry Attr::lease_ms and the handler is told
  // what to forget when another client changes it.
  bool leases = false;
  // Write-behind (issue 6): WriteBehind() acknowledges a write once its bytes
  // are copied into a window of at most this many bytes of writes in flight
  // for the whole client, sent by write_behind_threads workers. 0 = off
  // (WriteBehind() is Write()).
  uint64_t write_behind_bytes = 0;
  int write_behind_threads = 16;
  // Deferred closes (issue 6; mds.proto): with this > 0, Close of a handle
  // that wrote nothing returns at once and its release rides on the next
  // MDS request this client sends, or is sent after at most about this long
  // (by a flusher thread, many at a time), or when the Client is destroyed.
  // Meanwhile the MDS counts the file as open: an orphan (unlinked while
  // open) is destroyed that much later, and a migration finds it busy.
  // 0 = every Close is its own MDS round trip.
  std::chrono::milliseconds close_delay{0};
  // The open cache (open_cache.h): with leases on (and a handler given to
  // WatchInvalidations) and close_delay > 0, at most this many read-only
  // opens are kept past their close while their lease lasts, and an open of
  // the same file by the same credentials takes one over without asking the
  // MDS. Meanwhile the MDS counts the file as open, as for a deferred close,
  // at most a lease longer. 0 = off.
  size_t open_cache = 0;
  // The client cache (issue 18; docs/cache.md): on iff cache_ram > 0 or
  // cache_dir is set. With cache_dir, blocks are kept there (at most
  // cache_size bytes; 1 GiB if 0), across restarts, and the most recent
  // cache_ram bytes of them also in RAM; without, RAM holds cache_ram bytes.
  std::string cache_dir;
  uint64_t cache_size = 0;
  uint64_t cache_ram = 0;
  // Prefetch (Prefetch()): this many threads fetch hinted files at most
  // prefetch_depth entries ahead of the reader.
  int prefetch_threads = 16;
  uint32_t prefetch_depth = 256;
  // Sequential read-ahead (read_ahead.h): a handle reading through the cache
  // front to back has the next window of its file fetched ahead, one stripe
  // row (stripe_size x stripe_count, at least 4 MiB) and at most this many
  // bytes, nor more than an eighth of the cache (off below 4 MiB). 0 = off.
  uint64_t cache_read_ahead = 64 << 20;
  // Tenants (issue 17; docs/security.md): with tenant set, Connect proves
  // to the MDS that it holds the key in keyfile (written by `sfs tenant
  // create --key-out`; refused if group or others may read it) and the
  // client then sees only the tenant's fileset, as /. "" = the default
  // tenant (no handshake), as on a file system without tenants.
  std::string tenant;
  std::string keyfile;
};

// On whose behalf a call is made; checked by the MDS.
struct Cred {
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::vector<uint32_t> groups;
};

struct Attr {
  uint64_t ino = 0;
  uint32_t mode = 0;
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint32_t nlink = 0;
  uint64_t size = 0;
  uint64_t blocks = 0;   // 512-byte units
  int64_t atime_ns = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
  uint64_t rdev = 0;
  uint64_t generation = 0;
  // Bumped by the MDS at each open for writing and each truncate (the
  // client cache's key; docs/cache.md). 0 from an MDS that keeps none.
  uint64_t data_version = 0;
  // How long (ms from now) the caller may cache these attributes, and the
  // name it looked the file or directory up by; 0 = not at all. Only with
  // leases on.
  uint32_t lease_ms = 0;
  // Replies of calls that name a directory (lookup, create, mknod, mkdir,
  // symlink, link): how long (ms from when the call was sent) the caller
  // holds a lease on that directory, i.e. hears of every name another client
  // adds or removes there before that change returns; 0 = none.
  uint32_t dir_lease_ms = 0;
  // With dir_lease_ms, on a call that added a name (create, mknod, mkdir,
  // symlink, link): that directory's attributes after the change, which may
  // be cached for dir_lease_ms. Null otherwise.
  std::shared_ptr<const Attr> dir_attr;
  struct stat ToStat() const;
};

struct StripeObject {
  uint32_t ost = 0;
  uint64_t oid = 0;
  uint32_t mirror = 0;  // which copy of its stripe
  bool stale = false;   // missed writes: never read, not written; resync it
  bool lost = false;    // with stale: its OST was declared lost; rebuilt elsewhere
};

// A striping layout. For a file, objects lists (OST, object id) per stripe,
// and for a mirrored file (mirror_count 2 or 3) every copy of every stripe:
// copy m of stripe s at objects[m * stripes + s] (Stripes()).
// For a directory, it is the default for new children; inherited is true when
// the directory has none of its own and this is its nearest ancestor's (or the root's).
struct LayoutSpec {
  uint64_t stripe_size = 0;    // 0 = inherit
  int32_t stripe_count = 0;    // 0 = inherit, -1 = all OSTs
  int32_t start_ost = -1;      // -1 = allocator's choice
  std::string pool;
  uint32_t mirror_count = 0;   // 0 = inherit; 1 = one copy; 2, 3 = mirrored
  // Erasure-coded (both > 0; docs/redundancy.md): rows of ec_data data
  // chunks of stripe_size bytes plus ec_parity parity chunks, over
  // ec_data + ec_parity objects (stripe_count) on distinct OSTs; each object
  // may be stale (missed writes: reconstructed from the others on read).
  uint32_t ec_data = 0;
  uint32_t ec_parity = 0;
  std::vector<StripeObject> objects;
  bool inherited = false;
  uint64_t ino = 0;            // a file's layout: its inode (0 if unknown)
  // The MDS's capability token for these objects ("" = none: no cluster
  // key). Opaque here; sent with every OSS request (docs/protocol.md).
  std::string capability;

  uint32_t Copies() const { return mirror_count > 1 ? mirror_count : 1; }
  bool IsEc() const { return ec_data > 0 && ec_parity > 0; }
  // How many stripes a file's objects make (each kept Copies() times).
  uint32_t Stripes() const { return static_cast<uint32_t>(objects.size() / Copies()); }
};

// SetAttr valid bits (same values as FUSE_SET_ATTR_*).
enum SetAttrMask : uint32_t {
  kSetMode = 1, kSetUid = 2, kSetGid = 4, kSetSize = 8, kSetAtime = 16, kSetMtime = 32,
  kSetAtimeNow = 128, kSetMtimeNow = 256, kSetCtime = 1024,
  // Drop S_ISUID (and S_ISGID with S_IXGRP) as a write does; allowed with
  // write access, unlike kSetMode (a write by a non-owner must clear them).
  kSetKillSuid = 2048,
};
struct SetAttrArgs {
  uint32_t valid = 0;
  uint32_t mode = 0;
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint64_t size = 0;
  int64_t atime_ns = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
};

struct DirEntry {
  std::string name;
  uint64_t ino = 0;
  uint32_t type = 0;           // DT_* value
  std::optional<Attr> attr;    // when asked for with_attrs
};
struct DirPage {
  std::vector<DirEntry> entries;
  bool eof = false;
  uint32_t dir_lease_ms = 0;  // a lease on the directory listed (Attr::dir_lease_ms)
};

struct FsStat {
  uint64_t total_bytes = 0, free_bytes = 0, avail_bytes = 0;
  uint64_t total_inodes = 0, free_inodes = 0;
  uint32_t bsize = 4096;
  uint64_t degraded_files = 0;  // mirrored files with a stale copy (resync pending)
  uint64_t fs_id = 0;           // the file system's id (0 from an MDS that sends none)
};

struct OstStatus {
  uint32_t index = 0;
  std::string uuid;
  std::string address;
  bool up = false;
  uint64_t total_bytes = 0, free_bytes = 0, avail_bytes = 0;
  int64_t last_heartbeat_ms = 0;
  // How this client's connection to the OSS goes: "tcp", "rdma", or "-" when
  // it has no channel to that address (yet).
  std::string transport = "-";
  std::string metrics_address;  // the OSS's GET /metrics ("" = none)
  bool lost = false;            // declared lost (`sfs ost lost`)
};

// The MDS's rebuild and resync progress (`sfs rebuild status`).
struct RebuildStatus {
  std::vector<uint32_t> lost_osts;
  uint64_t files_pending = 0, objects_pending = 0, bytes_pending = 0;
  uint64_t objects_done = 0, bytes_done = 0, failures = 0;
  double bytes_per_s = 0;
  std::vector<std::string> paused;  // one line per full OST the rebuild waits on
};

// One file's scrub by the MDS (`sfs scrub`; mds.proto ScrubResp).
struct ScrubResult {
  uint64_t objects_checked = 0, bytes_checked = 0, bad_objects = 0, mismatched_rows = 0;
  uint64_t repairs_queued = 0;
  bool busy = false;
  std::vector<std::string> problems;
  uint64_t calls = 0;  // ScrubReqs it took (each reads for about two seconds)
};

// An OST pool: a named set of OSTs that layouts may name (LayoutSpec::pool).
struct PoolInfo {
  std::string name;
  std::vector<uint32_t> osts;  // OST indices, sorted
};

// An OSS QoS rule (docs/qos.md): class "job:<id>", "tenant:<name>" or
// "resync"; rates per OSS, 0 = none.
struct QosRuleInfo {
  std::string name;
  double read_mibps = 0;
  double write_mibps = 0;
  double iops = 0;
  double reserve_mibps = 0;
  double reserve_iops = 0;
  double weight = 1;
};

// Something a lease holder must forget: ino's attributes and, when parent is
// not 0, the name (parent, name).
struct Invalidation {
  uint64_t ino = 0;
  uint64_t parent = 0;
  std::string name;
  bool lock_recall = false;  // not a lease: libsfs gives back a cached lock (Striper)
};
using InvalidationFn = std::function<void(const Invalidation&)>;

// A file lock (fcntl byte range or flock), as Linux's struct flock after
// the kernel made it absolute: type F_RDLCK/F_WRLCK/F_UNLCK, [start, end]
// inclusive with end = UINT64_MAX for "to EOF", and the holder's pid.
struct LockSpec {
  int type = 0;
  uint64_t start = 0;
  uint64_t end = UINT64_MAX;
  uint32_t pid = 0;
  uint64_t copy_gen = 0;  // libsfs's own range locks: the file's copy states at the grant
  bool cached = false;    // ... and whether it is kept until recalled (LockResp.cached)
};

// The client cache's counters (Client::CacheStatus; docs/cache.md).
struct CacheStats {
  uint64_t hits = 0, misses = 0;            // blocks asked for by readers
  uint64_t hit_bytes = 0, miss_bytes = 0;
  // Of miss_bytes: blocks a reader waited for while a prefetch or read-ahead
  // was fetching them, so not fetched again (OSS bytes = miss_bytes -
  // joined_bytes + prefetched_bytes).
  uint64_t joined_bytes = 0;
  uint64_t bytes = 0, capacity = 0;         // held in the cache tier, and its bound
  uint64_t ram_bytes = 0, ram_capacity = 0; // the RAM tier (the cache tier without a dir)
  uint64_t ram_carved = 0;                  // the RAM tier's arena: bytes carved (touched at most)
  uint64_t ram_reused = 0;                  // block buffers the arena reused (no new pages)
  uint64_t blocks = 0;
  uint64_t evictions = 0;
  uint64_t corrupt = 0;                     // directory blocks that failed their check
  uint64_t prefetched_blocks = 0;           // blocks filled by the prefetcher
  uint64_t prefetched_bytes = 0;            // and their bytes (fetched from OSSes)
  uint64_t prefetch_files = 0;              // hint entries fetched
  uint64_t prefetch_skipped = 0;            // hint entries skipped (missing, not a file, denied, open for write)
  uint64_t hint_length = 0;                 // entries of the current order hint
  uint64_t hint_done = 0;                   // of those, fetched or skipped so far
  uint64_t hint_window = 0;                 // of those, admitted by the look-ahead now
  uint64_t hint_waiting = 0;                // admitted, waiting for a reader to make room
  uint64_t read_ahead_bytes = 0;            // asked for by sequential read-ahead
  uint64_t hinted_lookups = 0;  // lookups answered by the prefetcher's opens (HintedName)
  std::string dir;                          // the directory tier ("" = RAM only)
};

// One entry of an order hint: a path from the file system's root, and the
// byte range that will be read (length UINT64_MAX = to the end).
struct PrefetchItem {
  std::string path;
  uint64_t offset = 0;
  uint64_t length = UINT64_MAX;
};

class Client;

// An open regular file. Thread-safe; shared by every FUSE request on that handle.
class File {
 public:
  uint64_t ino() const { return ino_; }
  const LayoutSpec& layout() const { return layout_; }
  // Highest size this client knows of: the MDS size at open, raised by writes.
  uint64_t size() const;
  // This open made the file (O_CREAT on an absent name): it has no xattrs yet.
  bool created() const { return created_; }

  // Owned by libsfs (client.cc); not for callers.
  uint64_t ino_ = 0;
  uint64_t open_id_ = 0;
  int flags_ = 0;
  bool created_ = false;
  LayoutSpec layout_;
  Cred cred_;                  // the opener's; used for Flush/Close/O_TRUNC
  mutable std::mutex mu_;
  uint64_t size_ = 0;          // GUARDED_BY(mu_)
  bool size_dirty_ = false;    // GUARDED_BY(mu_): written since the last size report
  int64_t mtime_ns_ = 0;       // GUARDED_BY(mu_): time of last write
  uint64_t dirty_end_ = 0;     // GUARDED_BY(mu_): highest end of the unreported writes
  bool written_ = false;       // GUARDED_BY(mu_): written in this open
  // Every write of this handle so far lay in [0, dense_end_) without a gap,
  // and the file was empty at open (created or O_TRUNC): its blocks are those
  // of dense_end_ bytes, known without asking the OSSes (see DenseBlocks).
  bool dense_ = false;         // GUARDED_BY(mu_)
  uint64_t dense_end_ = 0;     // GUARDED_BY(mu_)
  Status wb_error_;            // GUARDED_BY(mu_): first failed background write, unreported
  // The client cache (docs/cache.md): the MDS's data version at open, and
  // whether this handle reads through the cache (a read-only open that no
  // writer shared, until this client opens the inode for writing).
  uint64_t data_version_ = 0;
  std::atomic<bool> cacheable_{false};
  bool prefetch_ = false;      // opened by the prefetcher (its close uses no hint)
  ReadAheadState ra_;          // GUARDED_BY(mu_): sequential read-ahead (read_ahead.h)
  // The open cache (Options::open_cache): a read-only open that came with a
  // lease, which its close may keep (open_cache.h). Set at open, then const;
  // lease_until_ stays the clock's epoch for every other open.
  std::chrono::steady_clock::time_point lease_until_{};
  Attr open_attr_;
  bool write_opens_ = false;
  bool data_versioned_ = false;
  uint64_t cache_gen_ = 0;
};

class Client {
 public:
  // Connects to the MDS and fetches the OST map. ECONNREFUSED/ETIMEDOUT with a
  // message naming the address if the MDS cannot be reached within connect_timeout.
  static Result<std::unique_ptr<Client>> Connect(const Options& opts);
  ~Client();

  // absent_lease_ms (optional): on ENOENT, the lease on parent that came
  // with the answer (Attr::dir_lease_ms): the name may be cached as absent
  // for that long. 0 otherwise.
  // The answer to c's lookup of name in parent without asking the MDS, if
  // the prefetcher opened that name under a lease still running (with
  // leases, the open cache and an order hint; hint_resolver.h, "Names the
  // prefetcher opened"). Handed out once; nullopt: ask Lookup.
  std::optional<Attr> HintedName(const Cred& c, uint64_t parent, std::string_view name);
  // Whether the current order hint listed directory dir for its prefetcher,
  // which then opens its hinted files by name (HintedName): a statahead of
  // dir would list it again for lookups those opens answer.
  bool HintListed(uint64_t dir);
  Result<Attr> Lookup(const Cred& c, uint64_t parent, std::string_view name,
                      uint32_t* absent_lease_ms = nullptr);
  Result<Attr> GetAttr(const Cred& c, uint64_t ino);
  // Attributes the MDS gave earlier (a listing's), as a Lookup now would
  // give them: this client's unreported writes merged in (after waiting for
  // its write-behind), and no lease while it has the file open for writing.
  Attr WithLocal(Attr a);
  // via: the open handle the change comes through (ftruncate). A handle opened
  // for writing may truncate whatever the mode bits say now, as ftruncate(2) may.
  Result<Attr> SetAttr(const Cred& c, uint64_t ino, const SetAttrArgs& args,
                       const File* via = nullptr);

  // Create-or-open (atomic at the MDS). With O_EXCL in flags an existing name
  // is EEXIST; O_TRUNC truncates an existing file. layout may be null (inherit).
  // Without O_CREAT in flags it only opens an existing name (ENOENT if missing).
  Result<std::shared_ptr<File>> Create(const Cred& c, uint64_t parent, std::string_view name,
                                       uint32_t mode, int flags, Attr* attr,
                                       const LayoutSpec* layout = nullptr);
  Result<std::shared_ptr<File>> Open(const Cred& c, uint64_t ino, int flags, Attr* attr);
  // Opens the file an absolute path names ("/" is the root; follows no
  // symlinks), exactly as ResolvePath then Open would, errors included, but
  // in one MDS round trip whatever the depth (OpenPathReq): the MDS walks
  // the names with a lookup's checks each and opens atomically, so nothing
  // is cached and a rename or unlink another client made before this call
  // is always seen. An MDS without the op gets the lookups and the open.
  // REQUIRES: no O_CREAT in flags (Create opens by name and may create).
  Result<std::shared_ptr<File>> OpenPath(const Cred& c, std::string_view path, int flags,
                                         Attr* attr);
  // Reports the size (if this client extended the file) and releases the open
  // (at once, or deferred: Options::close_delay).
  Status Close(const std::shared_ptr<File>& f);
  // Sends the releases deferred so far (Options::close_delay) now.
  Status FlushDeferredCloses();

  // pread: returns bytes read; short only at end of file. Holes read as zeros.
  Result<size_t> Read(File& f, uint64_t off, std::span<uint8_t> buf);
  // pwrite: all or error.
  Result<size_t> Write(File& f, uint64_t off, std::span<const uint8_t> buf);
  // Write-behind (Options::write_behind_bytes > 0): returns once buf is copied
  // and queued (waiting for room in the window); the OSS calls complete in the
  // background. Reads, GetAttr, Lookup, SetAttr, Flush, Fsync and Close of
  // this client wait for the inode's queued writes first, so this client
  // always sees its own writes. A background failure is remembered on f and
  // returned by the next WriteBehind/Write on f (kept) and by the next
  // Flush/Fsync/Close (which clear it), as the kernel reports write-back errors.
  // With wake_owed not null, no background worker is woken yet: if
  // *wake_owed is set on return, the caller must call WakeWriteBehind() (after
  // answering its own caller, so that the worker does not take the CPU first).
  Result<size_t> WriteBehind(const std::shared_ptr<File>& f, uint64_t off,
                             std::span<const uint8_t> buf, bool* wake_owed = nullptr);
  void WakeWriteBehind();
  // An O_APPEND write: buf lands whole at the true end of file, also when
  // other clients append at once (the MDS reserves the range; AppendReq),
  // then is written (behind, with wake_owed as for WriteBehind). Returns
  // the bytes written and, in *offset, where.
  Result<size_t> Append(const std::shared_ptr<File>& f, std::span<const uint8_t> buf,
                        uint64_t* offset, bool* wake_owed = nullptr);
  // Reports the written size to the MDS if it grew.
  Status Flush(File& f);
  // Makes written data durable on the OSSes, and the size and every other
  // metadata change the MDS acknowledged before it (the file's create,
  // renames...) durable on the MDS.
  Status Fsync(File& f, bool datasync);
  // Makes every metadata change acknowledged before it durable (fsyncdir).
  Status SyncMetadata();

  // Space and copies on the servers (space_ops.h). Each waits for f's
  // queued writes first.
  // fallocate(2): mode 0, FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE |
  // KEEP_SIZE, FALLOC_FL_ZERO_RANGE [| KEEP_SIZE] (else EOPNOTSUPP) on every
  // object the range touches; without KEEP_SIZE the MDS's size becomes at
  // least off + len before this returns. EINVAL for len 0, EFBIG past the
  // largest file, EBADF for a handle not open for writing.
  Status Fallocate(File& f, int mode, uint64_t off, uint64_t len);
  // lseek(2) SEEK_DATA / SEEK_HOLE (whence) from off: ENXIO at or past the
  // end of file, and for SEEK_DATA when only holes follow; the end of file
  // is a hole. EINVAL for any other whence.
  Result<uint64_t> Seek(File& f, uint64_t off, int whence);
  // copy_file_range(2): up to len bytes from in at in_off (fewer at its end
  // of file) to out at out_off, copied by the OSSes (no data through this
  // client unless an OSS cannot: space_ops.h). Returns the bytes copied; the
  // MDS's size of out covers them before this returns. EINVAL for
  // overlapping ranges of one file, EBADF for in not readable or out not
  // writable, EFBIG past the largest file.
  Result<size_t> CopyRange(File& in, uint64_t in_off, File& out, uint64_t out_off, size_t len);

  // Cluster-wide locks (issue 14; lock_book.h), granted by the MDS to
  // (this client, owner); owner is the kernel's lock owner. flock selects
  // flock(2)'s space (whole-file locks) over fcntl byte ranges.
  // TestLock: F_GETLK — the first conflicting lock, or type F_UNLCK.
  Result<LockSpec> TestLock(uint64_t ino, uint64_t owner, bool flock, const LockSpec& want);
  // Lock or unlock. wait: block until granted (EDEADLK if that would
  // deadlock, EINTR after CancelLockWait); else EAGAIN on a conflict. An
  // unlock first makes this client's writes to ino visible to the next
  // holder (write-behind drained, size reported); a grant is the caller's
  // cue to drop cached data of ino (the FUSE layer invalidates its pages).
  Status SetLock(uint64_t ino, uint64_t owner, bool flock, const LockSpec& l, bool wait);
  // Ends a SetLock wait of (ino, owner, flock) with EINTR (a signal).
  void CancelLockWait(uint64_t ino, uint64_t owner, bool flock);
  // Releases everything owner holds on ino in that space (close, flush):
  // no MDS call unless it holds something.
  Status ReleaseLocks(uint64_t ino, uint64_t owner, bool flock);

  Result<Attr> Mknod(const Cred& c, uint64_t parent, std::string_view name, uint32_t mode,
                     uint64_t rdev);
  Result<Attr> Mkdir(const Cred& c, uint64_t parent, std::string_view name, uint32_t mode);
  // dir_attr (optional): parent's attributes after the change, with
  // lease_ms = the lease on parent (Attr::dir_attr); ino 0 if none came.
  Status Unlink(const Cred& c, uint64_t parent, std::string_view name, Attr* dir_attr = nullptr);
  Status Rmdir(const Cred& c, uint64_t parent, std::string_view name, Attr* dir_attr = nullptr);
  // flags: RENAME_NOREPLACE (1) / RENAME_EXCHANGE (2). dir_attr: as for
  // Unlink, for a rename within one directory.
  Status Rename(const Cred& c, uint64_t parent, std::string_view name, uint64_t new_parent,
                std::string_view new_name, uint32_t flags, Attr* dir_attr = nullptr);
  Result<Attr> Link(const Cred& c, uint64_t ino, uint64_t new_parent, std::string_view new_name);
  Result<Attr> Symlink(const Cred& c, uint64_t parent, std::string_view name,
                       std::string_view target);
  Result<std::string> Readlink(const Cred& c, uint64_t ino);
  // Entries with name > after, in name order, at most max_entries.
  Result<DirPage> Readdir(const Cred& c, uint64_t ino, std::string_view after,
                          uint32_t max_entries, bool with_attrs);

  Result<FsStat> StatFs();

  Result<std::string> GetXattr(const Cred& c, uint64_t ino, std::string_view name);
  // flags: XATTR_CREATE (1) / XATTR_REPLACE (2).
  Status SetXattr(const Cred& c, uint64_t ino, std::string_view name, std::string_view value,
                  int flags);
  Result<std::vector<std::string>> ListXattr(const Cred& c, uint64_t ino);
  Status RemoveXattr(const Cred& c, uint64_t ino, std::string_view name);

  Result<LayoutSpec> GetLayout(const Cred& c, uint64_t ino);
  // Directory: set its default (clear = remove it). Empty regular file: replace its layout.
  Status SetLayout(const Cred& c, uint64_t ino, const LayoutSpec& spec, bool clear);

  // mds_metrics (optional): the MDS's GET /metrics address ("" = none).
  Result<std::vector<OstStatus>> ListOsts(std::string* mds_metrics = nullptr);

  // OST pools, kept by the MDS. ListPools: every pool, or only `name` (ENOENT
  // if it does not exist). Changes need root (EPERM). Create: EEXIST if it
  // exists; Add: EEXIST for a member, EINVAL for an unknown OST; Remove: ENOENT
  // for a non-member; Destroy: ENOTEMPTY while the pool has members.
  Result<std::vector<PoolInfo>> ListPools(std::string_view name = {});
  Status PoolCreate(const Cred& c, std::string_view name);
  Status PoolAdd(const Cred& c, std::string_view name, const std::vector<uint32_t>& osts);
  Status PoolRemove(const Cred& c, std::string_view name, const std::vector<uint32_t>& osts);
  Status PoolDestroy(const Cred& c, std::string_view name);

  // OSS QoS rules, kept by the MDS and enforced by every OSS within a
  // heartbeat of a change. ListQos: every rule, or only `name` (ENOENT). Set
  // replaces the class's rule (EINVAL for a bad class or rate); Remove:
  // ENOENT if it has none. Changes need root (EPERM).
  Result<std::vector<QosRuleInfo>> ListQos(std::string_view name = {});
  Status QosSet(const Cred& c, const QosRuleInfo& rule);
  Status QosRemove(const Cred& c, std::string_view name);
  // `sfs tenant` (issue 17): one serialized proto::TenantReq in, the
  // serialized TenantResp out (the CLI owns the format; root only).
  Status TenantAdmin(const Cred& c, const std::string& req, std::string* resp);
  // `sfs key status|rotate`: one serialized proto::CapKeyReq in, the
  // serialized CapKeyResp out (root only).
  Status CapKeyAdmin(const Cred& c, const std::string& req, std::string* resp);
  // A capability for the KV-cache tier as this client's tenant (the one it
  // authenticated as at Connect; the default tenant without one), signed by
  // the MDS, for kv::KvOptions::capability. Good for the MDS's capability
  // lifetime (minutes): ask again before it runs out. "" without a cluster key.
  Result<std::string> KvCapability();

  // Restripes a regular file that may hold data (migrate.cc): new objects are
  // allocated for spec (unset fields keep the file's values), the data is
  // copied stripe-wise in parallel (holes stay holes), and the MDS swaps the
  // layout atomically. The file stays readable throughout; readers that
  // opened it before the swap keep the old objects until they close, then the
  // MDS frees them. EBUSY if the file is open for write at the start, or was
  // opened for write or written before the swap (nothing changes then).
  // Returns the new layout.
  Result<LayoutSpec> Migrate(const Cred& c, uint64_t ino, const LayoutSpec& spec);
  // Resyncs a mirrored file's stale copies from good ones (space_ops.h
  // ResyncCopies) and has the MDS mark them ok; the layout after. Owner or
  // root. EINVAL if the file is not mirrored. Under the file's whole
  // mirror-range lock (writers of every mount wait meanwhile), so also while
  // a writer keeps the file open; with an MDS without locks, EBUSY if the
  // file is open for write or written during the copy.
  Result<LayoutSpec> ResyncMirrors(const Cred& c, uint64_t ino);
  // Declares an OST lost (root; rebuild_ops.cc): the MDS rebuilds what it
  // held elsewhere. The number of files with an object there. ENOENT: unknown.
  Result<uint64_t> OstLost(const Cred& c, uint32_t index);
  Result<RebuildStatus> GetRebuildStatus();
  // Has the MDS scrub one file (root): reads every copy/chunk, checks crcs,
  // copy and parity agreement; with repair, bad objects are queued for resync.
  // As many MDS calls as the file takes, each bounded in time.
  Result<ScrubResult> Scrub(const Cred& c, uint64_t ino, bool repair);

  // Walks an absolute path from the root ("/" is the root). Follows no symlinks.
  Result<Attr> ResolvePath(const Cred& c, std::string_view path);

  uint64_t client_id() const;

  // The client cache (docs/cache.md); ENOTSUP when it is off.
  // Prefetch: the order hint. items will be read next, in this order; the
  // cache fetches them ahead of the reader (at most lookahead entries past
  // the last one a reader closed; 0 = Options::prefetch_depth, UINT64_MAX =
  // all, as far as the cache holds them) on prefetch_threads threads, and
  // evicts by farthest next use in this order. Replaces the current hint
  // (a new epoch), or with append adds to it. Entries that do not resolve to
  // a regular file c may read are skipped and counted, never an error.
  Status Prefetch(const Cred& c, std::vector<PrefetchItem> items, uint64_t lookahead = 0,
                  bool append = false);
  // Waits until the hint has nothing left to do before a reader moves on:
  // every entry the look-ahead admits now was fetched or skipped, or waits
  // for a reader to make room in the cache (every entry, after a warm-up);
  // false if timeout passed first. CacheStatus tells how far it got.
  Result<bool> WaitPrefetch(std::chrono::milliseconds timeout);
  Result<CacheStats> CacheStatus();
  // Forgets every cached block (RAM and directory) and the hint.
  Status DropCache();

  // Metadata leases: iff Options::leases, starts the thread that long-polls
  // the MDS and calls fn for each invalidation (on that thread; the MDS takes
  // a batch as applied once fn returned for all of it). Of each batch, fn
  // first gets every inode's attributes alone (parent 0), then the names. No reply carries a lease
  // before this call. REQUIRES: called at most once.
  void WatchInvalidations(InvalidationFn fn);

  class Impl;

 private:
  // The lock owner of ResyncMirrors' whole-file lock ("RESYNC").
  static constexpr uint64_t kResyncLockOwner = 0x524553594E430001;
  // locked: under the whole-file lock (no write can land meanwhile); else
  // the MDS marks the copies ok only if the file stayed closed and unchanged.
  Result<LayoutSpec> ResyncMirrorsLocked(const Cred& c, uint64_t ino, bool locked);
  explicit Client(std::unique_ptr<Impl> impl);
  // Raises f's size and marks it for the next size report (a write ended at end).
  // A write of [off, end) went out (or was queued); dense: it may keep the
  // handle's blocks estimate (false for fallocate and server-side copies).
  void NoteWritten(File& f, uint64_t off, uint64_t end, bool dense = true);
  // The blocks of f's objects for its size report: estimated when f is dense
  // and the only handle of its inode here, else asked of the OSSes.
  Result<uint64_t> BlocksOf(File& f);
  // f's unreported background write error (cleared), or OK.
  Status TakeWriteError(File& f);
  // The size/blocks report of Flush, without its barrier.
  Status ReportSize(File& f);
  // Flush of every handle this client has open on ino (before an unlock).
  Status FlushInode(uint64_t ino);
  // On any invalidation of ino (watch thread), before it is acked: an
  // append token on ino is given up, and what was appended under it drained
  // and reported, so that another client's append starts past it.
  void DropAppendToken(uint64_t ino);
  std::unique_ptr<Impl> impl_;
};

// "auto" / "tcp" / "rdma" → Transport. EINVAL on anything else.
Result<Transport> ParseTransport(std::string_view s);
const char* TransportName(Transport t);

// "1M" / "64K" / "2G" / "4096" → bytes. EINVAL on junk.
Result<uint64_t> ParseSize(std::string_view s);

}  // namespace sfs::client
