// Tombstones: the record, on one OST, of the objects that were destroyed.
//
// Objects are created lazily (a stripe never written is a hole), so without a
// record a destroyed object would read as zeros and a stale client's write
// would re-create an object nobody frees. Destroying object `oid` therefore
// leaves `<ost>/tombstones/<oid as 16 hex digits>.gone`: the object's own file
// renamed there and truncated (one rename: no new inode, works on a full
// OST), or, for an object never written, a hard link to one empty inode per
// batch (opened O_TMPFILE; allocating an inode per tombstone was 55 % of the
// OSS's CPU time while destroying); the sidecar is removed. A tombstone's
// ctime (its inode's: the batch's) is when it was destroyed. docs/formats.md
// ("Tombstones") has why tombstones are needed and why a bounded life is
// enough, also for objects never written.
//
// Group commit: all tombstones live in one directory, so DestroyMany makes a
// whole batch durable with one fsync of that directory, plus one of the
// batch's shared inode if it has one (beside each object, tombstones were in
// 256 directories: one fsync, i.e. one disk flush, per object). The object's
// old name and its sidecar's unlink are metadata operations issued before
// that fsync; with a journal (ext4's default, XFS) they commit with it.
// Without one (ext4 -O ^has_journal) a crash may leave an object file beside
// its tombstone: Open() removes it (a pass over the tombstones at OSS start).
//
// Tombstones written by an older OSS beside their object
// (`objects/XX/<oid>.gone`) still count and expire.
//
// Thread-safe: every method may run concurrently with the store's other ops.
// The race with a create is settled as before (object_store.cc, top): the
// tombstone exists before Bury's second rename, and a create checks for it
// after creating.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"

namespace sfs::oss {

class Env;

class Tombstones {
 public:
  // object_path(oid) names the object's data file (the sidecar is that plus
  // ".crc"). REQUIRES: env outlives this object.
  Tombstones(std::string ost_dir, Env& env, std::function<std::string(uint64_t)> object_path);

  // Creates the tombstone directory if needed and removes any object file
  // (and sidecar) that a crash left beside its tombstone.
  Status Open();

  // Whether oid was destroyed (has a tombstone).
  bool Contains(uint64_t oid) const;

  // Destroys every oid (a missing or already destroyed object is success):
  // its tombstone, then its sidecar removed, then evict(oid); then the whole
  // batch is made durable at once (Commit). One Status per oid, in
  // order; OK means that oid's destroy is durable.
  std::vector<Status> DestroyMany(std::span<const uint64_t> oids,
                                  const std::function<void(uint64_t)>& evict);

  // Removes tombstones whose ctime is before cutoff; returns how many.
  Result<uint64_t> Expire(std::chrono::system_clock::time_point cutoff);

  // The tombstone's path (tests look at it).
  std::string PathOf(uint64_t oid) const;

 private:
  struct Anchor;
  std::string LegacyPathOf(uint64_t oid) const;
  // The object becomes its tombstone (no fsync).
  Status Bury(uint64_t oid, Anchor& anchor);
  // An empty tombstone: a new link to the batch's anchor inode.
  Status MakeEmpty(const std::string& tomb, Anchor& anchor);
  // Makes the batch durable: fsync of the anchor (if any), then of the directory.
  Status Commit(const Anchor& anchor);
  Result<uint64_t> ExpireIn(const std::string& dir, time_t limit);

  const std::string ost_dir_;
  const std::string dir_;  // ost_dir_/tombstones
  Env& env_;
  const std::function<std::string(uint64_t)> object_path_;
};

}  // namespace sfs::oss
