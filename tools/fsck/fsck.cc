// fsck, namespace half: loads every inode, dentry, orphan and destroy record
// into memory, cross-checks them (see fsck.h), queues repairs into one batch
// and writes it synced at the end. The OST half is in fsck_osts.cc.
#include "tools/fsck/fsck.h"

#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <set>

#include "tools/fsck/fsck_internal.h"
#include "mds/namespace/keys.h"

namespace sfs::mds::fsck {
namespace {

constexpr uint64_t kRootIno = 1;
constexpr const char* kLostFound = "lost+found";

std::string Quote(const std::string& name) { return "\"" + name + "\""; }

}  // namespace

void Checker::Add(const std::string& text, bool repairable) {
  report_.problems.push_back({text, opts_.repair && repairable});
}

Status Checker::Load() {
  auto scan = [&](char tag, const KvStore::ScanFn& fn) {
    std::string p(1, tag);
    return store_->Scan(p, keys::PrefixEnd(p), fn);
  };
  SFS_RETURN_IF_ERROR(scan(keys::kInode, [&](std::string_view k, std::string_view v) {
    proto::InodeRec rec;
    if (k.size() != 9 || !rec.ParseFromArray(v.data(), v.size())) {
      Add("unparsable inode record (key of " + std::to_string(k.size()) + " bytes)", false);
      return true;
    }
    inodes_.emplace(keys::IdOf(k), std::move(rec));
    return true;
  }));
  SFS_RETURN_IF_ERROR(scan(keys::kDentry, [&](std::string_view k, std::string_view v) {
    proto::DentryRec rec;
    if (k.size() < 10 || !rec.ParseFromArray(v.data(), v.size())) {
      Add("unparsable dentry record", false);
      return true;
    }
    dentries_.push_back({keys::IdOf(k), std::string(keys::NameOf(k)), rec.ino()});
    return true;
  }));
  SFS_RETURN_IF_ERROR(scan(keys::kOrphan, [&](std::string_view k, std::string_view) {
    if (k.size() == 9) orphans_.insert(keys::IdOf(k));
    return true;
  }));
  SFS_RETURN_IF_ERROR(scan(keys::kResync, [&](std::string_view k, std::string_view) {
    if (k.size() == 9) resync_.insert(keys::IdOf(k));
    return true;
  }));
  SFS_RETURN_IF_ERROR(scan(keys::kQueue, [&](std::string_view k, std::string_view v) {
    proto::DestroyRec rec;
    if (k.size() == 9 && rec.ParseFromArray(v.data(), v.size())) {
      queued_.emplace(keys::IdOf(k), rec);
    }
    return true;
  }));
  SFS_RETURN_IF_ERROR(LoadExtraObjects());
  auto super = store_->Get(keys::Super());
  if (!super.ok()) return Status(EIO, "no superblock: " + super.status().ToString());
  if (!super_.ParseFromString(*super)) return Status(EIO, "corrupt superblock");
  report_.inodes = inodes_.size();
  report_.dentries = dentries_.size();
  report_.orphans = orphans_.size();
  report_.queued_destroys = queued_.size();
  return Status::Ok();
}

// Objects that belong to something other than a file's layout: migrations
// in progress (M) and replaced layouts awaiting the last close (L).
Status Checker::LoadExtraObjects() {
  std::string m(1, keys::kMigrate), l(1, keys::kStaleLayout);
  SFS_RETURN_IF_ERROR(store_->Scan(m, keys::PrefixEnd(m), [&](std::string_view, std::string_view v) {
    proto::MigrateRec rec;
    if (rec.ParseFromArray(v.data(), v.size())) {
      for (const auto& o : rec.new_layout().objects()) extra_objects_.insert({o.ost(), o.oid()});
    }
    return true;
  }));
  return store_->Scan(l, keys::PrefixEnd(l), [&](std::string_view, std::string_view v) {
    proto::StaleLayoutRec rec;
    if (rec.ParseFromArray(v.data(), v.size())) {
      for (const auto& o : rec.objects()) extra_objects_.insert({o.ost(), o.oid()});
    }
    return true;
  });
}

void Checker::CheckDentries() {
  for (const Dentry& d : dentries_) {
    auto parent = inodes_.find(d.parent);
    auto target = inodes_.find(d.ino);
    std::string where = std::to_string(d.parent) + "/" + Quote(d.name);
    if (parent == inodes_.end() || !S_ISDIR(parent->second.attr().mode())) {
      Add("dentry " + where + " is in a missing or non-directory inode " +
              std::to_string(d.parent),
          true);
      if (opts_.repair) batch_.Delete(keys::Dentry(d.parent, d.name));
      continue;
    }
    if (target == inodes_.end()) {
      Add("dangling dentry " + where + " -> missing inode " + std::to_string(d.ino), true);
      if (opts_.repair) batch_.Delete(keys::Dentry(d.parent, d.name));
      continue;
    }
    ++links_[d.ino];
    if (S_ISDIR(target->second.attr().mode())) {
      ++subdirs_[d.parent];
      dir_parent_[d.ino] = d.parent;
    }
  }
}

void Checker::CheckInodes() {
  for (auto& [ino, rec] : inodes_) {
    proto::Attr* a = rec.mutable_attr();
    uint32_t links = links_.count(ino) ? links_[ino] : 0;
    bool dir = S_ISDIR(a->mode());
    if (ino == kRootIno) {
      CheckNlink(ino, rec, 2 + subdirs_[ino]);
      continue;
    }
    if (links == 0 && !dir && orphans_.count(ino)) {
      if (a->nlink() != 0) {
        Add("orphan inode " + std::to_string(ino) + " has nlink " + std::to_string(a->nlink()) +
                " (want 0)",
            true);
        a->set_nlink(0);
        if (opts_.repair) batch_.Put(keys::Inode(ino), rec.SerializeAsString());
      }
      continue;
    }
    if (links == 0) {
      Add(std::string("lost ") + (dir ? "directory" : "inode") + " " + std::to_string(ino) +
              ": no dentry and no orphan record",
          true);
      lost_.push_back(ino);
      continue;
    }
    if (dir && links > 1) {
      Add("directory " + std::to_string(ino) + " has " + std::to_string(links) + " dentries",
          false);
    }
    if (dir && rec.parent() != dir_parent_[ino]) {
      Add("directory " + std::to_string(ino) + " says its parent is " +
              std::to_string(rec.parent()) + " but sits in " + std::to_string(dir_parent_[ino]),
          true);
      rec.set_parent(dir_parent_[ino]);
      if (opts_.repair) batch_.Put(keys::Inode(ino), rec.SerializeAsString());
    }
    CheckNlink(ino, rec, dir ? 2 + subdirs_[ino] : links);
    if (orphans_.count(ino)) {
      Add("orphan record for inode " + std::to_string(ino) + " which still has " +
              std::to_string(links) + " link(s)",
          true);
      if (opts_.repair) batch_.Delete(keys::Orphan(ino));
    }
  }
  for (uint64_t ino : orphans_) {
    if (inodes_.count(ino)) continue;
    Add("orphan record for missing inode " + std::to_string(ino), true);
    if (opts_.repair) batch_.Delete(keys::Orphan(ino));
  }
}

void Checker::CheckNlink(uint64_t ino, proto::InodeRec& rec, uint32_t want) {
  if (rec.attr().nlink() == want) return;
  Add("inode " + std::to_string(ino) + " has nlink " + std::to_string(rec.attr().nlink()) +
          ", counted " + std::to_string(want),
      true);
  rec.mutable_attr()->set_nlink(want);
  if (opts_.repair) batch_.Put(keys::Inode(ino), rec.SerializeAsString());
}

void Checker::CheckQueue() {
  std::set<std::pair<uint32_t, uint64_t>> live;
  for (const auto& [ino, rec] : inodes_) {
    for (const auto& o : rec.layout().objects()) live.insert({o.ost(), o.oid()});
  }
  for (const auto& [seq, rec] : queued_) {
    if (!live.count({rec.ost(), rec.oid()})) continue;
    Add("destroy record " + std::to_string(seq) + " names object " + std::to_string(rec.ost()) +
            ":" + std::to_string(rec.oid()) + " that a live inode uses",
        true);
    if (opts_.repair) batch_.Delete(keys::Queue(seq));
  }
}

void Checker::CheckRedundancy() {
  for (const auto& [ino, rec] : inodes_) {
    const proto::Layout& l = rec.layout();
    if (S_ISREG(rec.attr().mode()) && l.ec_data() != 0) {
      CheckEcRedundancy(ino, l);
      continue;
    }
    if (!S_ISREG(rec.attr().mode()) || l.mirror_count() < 2 || l.stripe_count() <= 0) continue;
    ++report_.mirrored_files;
    const int stripes = l.stripe_count();
    int stale = 0;
    for (int s = 0; s < stripes; ++s) {
      std::set<uint32_t> osts;
      int good = 0, copies = 0;
      for (int i = s; i < l.objects_size(); i += stripes) {
        ++copies;
        osts.insert(l.objects(i).ost());
        if (l.objects(i).state() == proto::OBJECT_OK) {
          ++good;
        } else {
          ++stale;
        }
      }
      if (osts.size() < static_cast<size_t>(copies)) {
        Add("inode " + std::to_string(ino) + ": copies of stripe " + std::to_string(s) +
                " share an OST (" + std::to_string(osts.size()) + " OSTs for " +
                std::to_string(copies) + " copies): one OST loss loses the stripe",
            false);
      }
      if (good == 0) {
        Add("inode " + std::to_string(ino) + ": stripe " + std::to_string(s) +
                " has no good copy",
            false);
      }
    }
    const bool listed = resync_.count(ino) > 0;
    if (stale > 0) {
      ++report_.degraded_files;
      Add("inode " + std::to_string(ino) + ": " + std::to_string(stale) + " stale cop" +
              (stale == 1 ? "y" : "ies") + " of " + std::to_string(l.mirror_count()) +
              "-way mirrored stripes: not fully redundant until resynced (" +
              (listed ? "on the MDS's resync list" : "not on the MDS's resync list") + ")",
          !listed);
      if (opts_.repair && !listed) batch_.Put(keys::Resync(ino), "");
    } else if (listed) {
      Add("resync record for inode " + std::to_string(ino) + " which has no stale copy", true);
      if (opts_.repair) batch_.Delete(keys::Resync(ino));
    }
  }
  for (uint64_t ino : resync_) {
    auto it = inodes_.find(ino);
    if (it != inodes_.end() && (it->second.layout().mirror_count() >= 2 ||
                                it->second.layout().ec_data() != 0)) {
      continue;
    }
    Add("resync record for " + std::string(it == inodes_.end() ? "missing" : "unmirrored") +
            " inode " + std::to_string(ino),
        true);
    if (opts_.repair) batch_.Delete(keys::Resync(ino));
  }
}

// An erasure-coded file: K+M chunk objects on distinct OSTs, every one ok.
// A stale or lost chunk object leaves the file one loss nearer to EIO: a
// problem until the MDS has rebuilt it (repairable as for mirrors: the file
// goes back on the resync list). More than M not ok: rows are unreadable.
void Checker::CheckEcRedundancy(uint64_t ino, const proto::Layout& l) {
  ++report_.mirrored_files;
  std::set<uint32_t> osts;
  int bad = 0;
  for (const proto::StripeObject& o : l.objects()) {
    osts.insert(o.ost());
    bad += o.state() != proto::OBJECT_OK;
  }
  const std::string geo = std::to_string(l.ec_data()) + "+" + std::to_string(l.ec_parity());
  if (osts.size() < static_cast<size_t>(l.objects_size())) {
    Add("inode " + std::to_string(ino) + ": EC " + geo + " chunk objects share an OST (" +
            std::to_string(osts.size()) + " OSTs for " + std::to_string(l.objects_size()) + ")",
        false);
  }
  if (bad > static_cast<int>(l.ec_parity())) {
    Add("inode " + std::to_string(ino) + ": EC " + geo + " has " + std::to_string(bad) +
            " chunk objects not ok: rows are unreadable",
        false);
  }
  const bool listed = resync_.count(ino) > 0;
  if (bad > 0) {
    ++report_.degraded_files;
    Add("inode " + std::to_string(ino) + ": " + std::to_string(bad) + " stale or lost chunk object" +
            (bad == 1 ? "" : "s") + " of EC " + geo + ": not fully redundant until rebuilt (" +
            (listed ? "on the MDS's resync list" : "not on the MDS's resync list") + ")",
        !listed);
    if (opts_.repair && !listed) batch_.Put(keys::Resync(ino), "");
  } else if (listed) {
    Add("resync record for inode " + std::to_string(ino) + " which has no stale chunk", true);
    if (opts_.repair) batch_.Delete(keys::Resync(ino));
  }
}

// Links lost inodes into /lost+found (created if missing) as "#<ino>".
Status Checker::RelinkLost() {
  if (lost_.empty() || !opts_.repair) return Status::Ok();
  uint64_t lf = 0;
  for (const Dentry& d : dentries_) {
    if (d.parent == kRootIno && d.name == kLostFound && inodes_.count(d.ino)) lf = d.ino;
  }
  proto::InodeRec& root = inodes_[kRootIno];
  if (lf == 0) {
    lf = super_.ino_limit();
    super_.set_ino_limit(lf + 1);
    batch_.Put(keys::Super(), super_.SerializeAsString());
    proto::InodeRec dir;
    dir.mutable_attr()->set_ino(lf);
    dir.mutable_attr()->set_mode(S_IFDIR | 0700);
    dir.mutable_attr()->set_nlink(2);
    dir.mutable_attr()->set_size(4096);
    dir.mutable_attr()->set_generation(1);
    dir.set_parent(kRootIno);
    inodes_[lf] = dir;
    proto::DentryRec de;
    de.set_ino(lf);
    de.set_type(4);  // DT_DIR
    batch_.Put(keys::Dentry(kRootIno, kLostFound), de.SerializeAsString());
    root.mutable_attr()->set_nlink(root.attr().nlink() + 1);
    batch_.Put(keys::Inode(kRootIno), root.SerializeAsString());
  }
  proto::InodeRec& lfrec = inodes_[lf];
  for (uint64_t ino : lost_) {
    proto::InodeRec& rec = inodes_[ino];
    bool dir = S_ISDIR(rec.attr().mode());
    proto::DentryRec de;
    de.set_ino(ino);
    de.set_type(dir ? 4 : S_ISLNK(rec.attr().mode()) ? 10 : 8);
    batch_.Put(keys::Dentry(lf, "#" + std::to_string(ino)), de.SerializeAsString());
    if (dir) {
      rec.set_parent(lf);
      rec.mutable_attr()->set_nlink(2 + subdirs_[ino]);
      lfrec.mutable_attr()->set_nlink(lfrec.attr().nlink() + 1);
    } else {
      rec.mutable_attr()->set_nlink(1);
    }
    batch_.Put(keys::Inode(ino), rec.SerializeAsString());
  }
  batch_.Put(keys::Inode(lf), lfrec.SerializeAsString());
  return Status::Ok();
}

Result<Report> Checker::Run() {
  SFS_RETURN_IF_ERROR(Load());
  CheckDentries();
  CheckInodes();
  CheckQueue();
  CheckRedundancy();
  SFS_RETURN_IF_ERROR(CheckOsts());
  SFS_RETURN_IF_ERROR(RelinkLost());
  if (opts_.repair && !batch_.empty()) SFS_RETURN_IF_ERROR(store_->Write(batch_, /*sync=*/true));
  for (const std::string& path : unlink_paths_) {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      return Status::Errno(errno, "cannot remove " + path);
    }
  }
  return std::move(report_);
}

Result<Report> Check(KvStore* store, const Options& opts) {
  Checker c(store, opts);
  return c.Run();
}

}  // namespace sfs::mds::fsck
