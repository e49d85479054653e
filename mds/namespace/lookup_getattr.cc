// Read-only namespace ops: lookup (including "." and ".."), getattr,
// readlink, paged readdir and statfs. They take the shared side of the
// namespace lock, so they see only committed operations and never a half.
#include <sys/stat.h>

#include <algorithm>

#include "mds/namespace/keys.h"
#include "mds/namespace/namespace.h"

namespace sfs::mds {
namespace {

constexpr uint32_t kDefaultReaddirEntries = 1024;
constexpr uint32_t kMaxReaddirEntries = 16384;

Result<proto::InodeRec> LoadDir(KvStore* store, uint64_t ino) {
  SFS_ASSIGN_OR_RETURN(proto::InodeRec rec, LoadInodeRec(store, ino));
  if (!S_ISDIR(rec.attr().mode())) return Status::Errno(ENOTDIR, "not a directory");
  return rec;
}

}  // namespace

Result<proto::Attr> Namespace::Lookup(const Cred& cred, uint64_t parent, const std::string& name) {
  std::shared_lock lock(mu_);
  return LookupLocked(cred, parent, name, kRootIno);
}

// The name checks come before the directory's: a name over 255 bytes is
// ENAMETOOLONG even under a file (OpenPath's walk relies on this order).
Result<proto::Attr> Namespace::LookupLocked(const Cred& cred, uint64_t parent,
                                            const std::string& name, uint64_t ceiling) {
  if (name.size() > 255) return Status::Errno(ENAMETOOLONG, "name longer than 255 bytes");
  if (name.empty() || name.find('/') != std::string::npos || name.find('\0') != std::string::npos) {
    return Status::Errno(EINVAL, "invalid name");
  }
  SFS_ASSIGN_OR_RETURN(proto::InodeRec dir, LoadDir(store_, parent));
  SFS_RETURN_IF_ERROR(CheckAccess(cred, dir.attr(), kMayExec));
  if (name == "." || (name == ".." && parent == ceiling)) return dir.attr();
  if (name == "..") {
    uint64_t up = parent == kRootIno || dir.parent() == 0 ? kRootIno : dir.parent();
    SFS_ASSIGN_OR_RETURN(proto::InodeRec rec, LoadInodeRec(store_, up));
    return rec.attr();
  }
  SFS_ASSIGN_OR_RETURN(auto entry, LoadDentry(store_, parent, name));
  if (!entry) return Status::Errno(ENOENT, "no such entry");
  SFS_ASSIGN_OR_RETURN(proto::InodeRec rec, LoadInodeRec(store_, entry->ino()));
  return rec.attr();
}

Result<proto::Attr> Namespace::GetAttr(uint64_t ino) {
  std::shared_lock lock(mu_);
  auto rec = LoadInodeRec(store_, ino);
  if (!rec.ok()) {
    if (rec.status().code() == ENOENT) return Status::Errno(ESTALE, "inode is gone");
    return rec.status();
  }
  return rec->attr();
}

Result<std::string> Namespace::Readlink(uint64_t ino) {
  std::shared_lock lock(mu_);
  SFS_ASSIGN_OR_RETURN(proto::InodeRec rec, LoadInodeRec(store_, ino));
  if (!S_ISLNK(rec.attr().mode())) return Status::Errno(EINVAL, "not a symlink");
  return rec.symlink();
}

// Resumes by name (entries > req.after), so a directory changing between
// pages neither repeats nor skips an entry that stayed.
Status Namespace::Readdir(const Cred& cred, const proto::ReaddirReq& req,
                          proto::ReaddirResp* out) {
  std::shared_lock lock(mu_);
  SFS_ASSIGN_OR_RETURN(proto::InodeRec dir, LoadDir(store_, req.ino()));
  SFS_RETURN_IF_ERROR(CheckAccess(cred, dir.attr(), kMayRead));
  uint32_t max = req.max_entries() == 0 ? kDefaultReaddirEntries
                                        : std::min(req.max_entries(), kMaxReaddirEntries);
  std::string start = keys::Dentry(req.ino(), req.after());
  if (!req.after().empty()) start.push_back('\0');  // the first name after `after`
  bool more = false;
  Status bad;
  SFS_RETURN_IF_ERROR(store_->Scan(start, keys::PrefixEnd(keys::DentryPrefix(req.ino())),
                                   [&](std::string_view k, std::string_view v) {
                                     if (static_cast<uint32_t>(out->entries_size()) >= max) {
                                       more = true;
                                       return false;
                                     }
                                     proto::DentryRec d;
                                     if (!d.ParseFromArray(v.data(), v.size())) {
                                       bad = Status::Errno(EIO, "corrupt dentry");
                                       return false;
                                     }
                                     proto::DirEntry* e = out->add_entries();
                                     e->set_name(std::string(keys::NameOf(k)));
                                     e->set_ino(d.ino());
                                     e->set_type(d.type());
                                     return true;
                                   }));
  SFS_RETURN_IF_ERROR(bad);
  if (req.with_attrs()) {
    for (proto::DirEntry& e : *out->mutable_entries()) {
      auto rec = LoadInodeRec(store_, e.ino());
      if (rec.ok()) *e.mutable_attr() = rec->attr();
    }
  }
  out->set_eof(!more);
  return Status::Ok();
}

proto::StatfsResp Namespace::Statfs() {
  proto::StatfsResp out;
  for (const OstState& o : osts_->Snapshot()) {
    out.set_total_bytes(out.total_bytes() + o.stats.total_bytes);
    out.set_free_bytes(out.free_bytes() + o.stats.free_bytes);
    out.set_avail_bytes(out.avail_bytes() + o.stats.avail_bytes);
  }
  uint64_t used = inode_count_.load();
  out.set_total_inodes(kSyntheticInodes);
  out.set_free_inodes(used < kSyntheticInodes ? kSyntheticInodes - used : 0);
  out.set_bsize(4096);
  out.set_degraded_files(ResyncWanted().size());
  {
    std::shared_lock lock(mu_);
    out.set_fs_id(super_.fs_id());
  }
  return out;
}

}  // namespace sfs::mds
