// fsck: offline consistency check (and repair) of a StripeFS file system —
// the MDS's LevelDB namespace and the object directories of its OSTs — for
// `sfs fsck` (tools/sfs/fsck.cc). The MDS must not be running (LevelDB's LOCK
// enforces it); OSSes may run, but a repair that removes objects should only
// run while no client writes. It reads the namespace with the MDS's own
// store code (mds/namespace: KvStore, keys.h) and the OSTs' files through the
// on-disk formats in common/ondisk/, never through OSS code.
//
// Namespace checks (key layout in mds/namespace/keys.h):
//   - every dentry names an existing inode, under a parent that is a directory
//     (repair: delete the dentry);
//   - every directory has exactly one dentry (root none) and its parent field
//     names that dentry's directory; nlink = 2 + subdirectories (repair: fix);
//   - every other inode has nlink = number of its dentries (repair: fix);
//   - an inode with no dentry must have an orphan record (unlinked while
//     open); otherwise it is lost (repair: link it into /lost+found as
//     "#<ino>", as e2fsck does — data is never deleted by a repair);
//   - orphan records name existing, unlinked inodes (repair: delete the record;
//     a linked inode keeps its data);
//   - destroy-queue records never name an object a live inode still uses
//     (repair: delete the record, so the data stays).
// Redundancy checks (mirrored files, docs/redundancy.md):
//   - the copies of each stripe are on distinct OSTs (not repairable: the
//     file needs `sfs migrate`);
//   - a stale copy is a problem: the stripe has fewer good copies than the
//     layout asks until it is resynced. Repair: make sure the file is on the
//     resync list (its W key), so the MDS resyncs it at its next start; the
//     report says so either way;
//   - a W key names an existing mirrored file with a stale copy (repair:
//     delete the key).
// Report::degraded_files counts the mirrored files with a stale copy.
// OST checks, for each OST directory given (its index from ost_uuid and the
// T<uuid> record):
//   - every object file belongs to an inode, a migration, a stale layout or a
//     queued destroy (repair: delete the stray object and its sidecar);
//   - every crc sidecar has its object (repair: delete the sidecar);
//   - every object with a sidecar verifies: each 4 KiB chunk's data matches
//     one of its two crc slots (common/ondisk/chunk_crc.h), else one problem per
//     chunk names the OST, oid and offset. Not repairable (fsck cannot know
//     the right bytes; the OSS already answers EIO for them, never the bad
//     bytes). Run it with no client writing: a chunk caught between its data
//     and crc updates may be reported.
//   - the object holding a regular file's last byte exists when size > 0
//     (other objects may be holes: objects are created by their first write).
//     Not repairable: the data is gone; reported so the file can be restored.
//
// Each problem is one line of text. Thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "mds/namespace/kv_store.h"

namespace sfs::mds::fsck {

struct Options {
  bool repair = false;
  std::vector<std::string> ost_dirs;  // OST directories to cross-check
};

struct Problem {
  std::string text;       // one line, e.g. "dangling dentry 1/\"a\" -> inode 7"
  bool repaired = false;  // with Options::repair, whether it was fixed
};

struct Report {
  std::vector<Problem> problems;
  uint64_t inodes = 0, dentries = 0, orphans = 0, queued_destroys = 0;
  uint64_t objects = 0;           // object files seen on the OSTs given
  uint64_t objects_verified = 0;  // of those, checked against a crc sidecar
  uint64_t mirrored_files = 0, degraded_files = 0;  // degraded: a copy is stale
  bool clean() const { return problems.empty(); }
};

// Checks (and with opts.repair, repairs) the namespace in store and the OSTs.
// Errors only for failures to read or write (not for problems found).
Result<Report> Check(KvStore* store, const Options& opts);

// Object files of one OST dir (paths in common/ondisk/ost_dir.h):
// oid -> (has data file, has crc sidecar).
struct OstObject {
  uint64_t oid = 0;
  bool data = false;
  bool crc = false;
};
Result<std::vector<OstObject>> ListOstObjects(const std::string& ost_dir);
// Offsets of the chunks of the object file at path that match neither crc
// slot of their entry in its sidecar (common/ondisk/chunk_crc.h).
Result<std::vector<uint64_t>> CorruptChunks(const std::string& path);
// The uuid in <ost_dir>/ost_uuid.
Result<std::string> ReadOstUuid(const std::string& ost_dir);

}  // namespace sfs::mds::fsck
