// The per-operation working set; see txn.h.
#include "mds/namespace/txn.h"

#include <sys/stat.h>

#include "mds/namespace/keys.h"

namespace sfs::mds {

Result<proto::InodeRec> LoadInodeRec(KvStore* store, uint64_t ino) {
  auto raw = store->Get(keys::Inode(ino));
  if (!raw.ok()) {
    // An inode the caller names that no longer exists: ESTALE, so the kernel
    // drops its cached entry and looks the path up again.
    if (raw.status().code() == ENOENT) return Status::Errno(ESTALE, "no such inode");
    return raw.status();
  }
  proto::InodeRec rec;
  if (!rec.ParseFromString(*raw)) return Status::Errno(EIO, "corrupt inode record");
  return rec;
}

Result<std::optional<proto::DentryRec>> LoadDentry(KvStore* store, uint64_t parent,
                                                   std::string_view name) {
  auto raw = store->Get(keys::Dentry(parent, name));
  if (!raw.ok()) {
    if (raw.status().code() == ENOENT) return std::optional<proto::DentryRec>();
    return raw.status();
  }
  proto::DentryRec rec;
  if (!rec.ParseFromString(*raw)) return Status::Errno(EIO, "corrupt dentry record");
  return std::optional<proto::DentryRec>(std::move(rec));
}

Result<proto::InodeRec*> Txn::Inode(uint64_t ino) {
  auto it = inodes_.find(ino);
  if (it != inodes_.end()) return &it->second;
  SFS_ASSIGN_OR_RETURN(proto::InodeRec rec, LoadInodeRec(store_, ino));
  return &inodes_.emplace(ino, std::move(rec)).first->second;
}

Result<proto::InodeRec*> Txn::Dir(uint64_t ino) {
  SFS_ASSIGN_OR_RETURN(proto::InodeRec * rec, Inode(ino));
  if (!S_ISDIR(rec->attr().mode())) return Status::Errno(ENOTDIR, "not a directory");
  return rec;
}

proto::InodeRec* Txn::Add(uint64_t ino, proto::InodeRec rec) {
  dirty_.insert(ino);
  return &inodes_.insert_or_assign(ino, std::move(rec)).first->second;
}

void Txn::DeleteInode(uint64_t ino) {
  dirty_.erase(ino);
  inodes_.erase(ino);
  batch_.Delete(keys::Inode(ino));
}

Status Txn::TouchDir(uint64_t ino) {
  SFS_ASSIGN_OR_RETURN(proto::InodeRec * dir, Inode(ino));
  dir->mutable_attr()->set_mtime_ns(now_);
  dir->mutable_attr()->set_ctime_ns(now_);
  Dirty(ino);
  return Status::Ok();
}

void Txn::PutDentry(uint64_t parent, std::string_view name, uint64_t ino, uint32_t type) {
  proto::DentryRec rec;
  rec.set_ino(ino);
  rec.set_type(type);
  batch_.Put(keys::Dentry(parent, name), rec.SerializeAsString());
}

void Txn::DeleteDentry(uint64_t parent, std::string_view name) {
  batch_.Delete(keys::Dentry(parent, name));
}

KvBatch Txn::Finish() {
  for (uint64_t ino : dirty_) {
    auto it = inodes_.find(ino);
    if (it != inodes_.end()) batch_.Put(keys::Inode(ino), it->second.SerializeAsString());
  }
  dirty_.clear();
  return std::move(batch_);
}

void Txn::RunCommitHooks() {
  for (auto& fn : on_commit_) fn();
  on_commit_.clear();
}

}  // namespace sfs::mds
