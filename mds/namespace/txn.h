// Txn: the working set of one namespace operation, turned into one atomic
// KvBatch at commit.
//
// Inodes are loaded at most once per Txn and edited in place, so an op that
// touches the same inode in two roles (rename within one directory, a
// directory that is both parent and grandparent) sees one consistent copy;
// every inode marked dirty is written at Finish(). Not thread-safe: a Txn
// lives inside one call under the namespace's exclusive lock.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "common/status.h"
#include "mds/namespace/kv_store.h"
#include "mds_store.pb.h"

namespace sfs::mds {

// Reads one inode record from the store: ENOENT iff absent, EIO if corrupt.
Result<proto::InodeRec> LoadInodeRec(KvStore* store, uint64_t ino);
// Reads one directory entry: nullopt iff absent.
Result<std::optional<proto::DentryRec>> LoadDentry(KvStore* store, uint64_t parent,
                                                   std::string_view name);

class Txn {
 public:
  Txn(KvStore* store, int64_t now_ns) : store_(store), now_(now_ns) {}

  int64_t now() const { return now_; }
  KvStore* store() const { return store_; }
  // The inode, loaded once; ENOENT iff absent. The pointer stays valid for the Txn.
  Result<proto::InodeRec*> Inode(uint64_t ino);
  // Like Inode(), plus ENOTDIR unless it is a directory.
  Result<proto::InodeRec*> Dir(uint64_t ino);
  void Dirty(uint64_t ino) { dirty_.insert(ino); }
  // Adds a new inode (dirty).
  proto::InodeRec* Add(uint64_t ino, proto::InodeRec rec);
  // Deletes the inode's record (not its xattrs or entries).
  void DeleteInode(uint64_t ino);
  // Sets mtime and ctime of a directory whose entries changed.
  Status TouchDir(uint64_t ino);

  Result<std::optional<proto::DentryRec>> Dentry(uint64_t parent, std::string_view name) {
    return LoadDentry(store_, parent, name);
  }
  void PutDentry(uint64_t parent, std::string_view name, uint64_t ino, uint32_t type);
  void DeleteDentry(uint64_t parent, std::string_view name);

  KvBatch& batch() { return batch_; }
  // Runs fn after the batch has been written.
  void OnCommit(std::function<void()> fn) { on_commit_.push_back(std::move(fn)); }
  // Appends the dirty inodes to the batch and returns it.
  KvBatch Finish();
  void RunCommitHooks();

 private:
  KvStore* const store_;
  const int64_t now_;
  std::map<uint64_t, proto::InodeRec> inodes_;
  std::set<uint64_t> dirty_;
  KvBatch batch_;
  std::vector<std::function<void()>> on_commit_;
};

}  // namespace sfs::mds
