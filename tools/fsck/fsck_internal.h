// fsck's checker state, shared by fsck.cc (namespace) and fsck_osts.cc
// (object directories). Not part of the fsck API.
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tools/fsck/fsck.h"
#include "mds_store.pb.h"

namespace sfs::mds::fsck {

class Checker {
 public:
  Checker(KvStore* store, const Options& opts) : store_(store), opts_(opts) {}
  Result<Report> Run();

 private:
  struct Dentry {
    uint64_t parent;
    std::string name;
    uint64_t ino;
  };
  using ObjKey = std::pair<uint32_t, uint64_t>;  // (OST index, oid)

  // One problem line; repaired iff repairing and the problem is repairable.
  void Add(const std::string& text, bool repairable);
  Status Load();
  Status LoadExtraObjects();
  void CheckDentries();
  void CheckInodes();
  void CheckNlink(uint64_t ino, proto::InodeRec& rec, uint32_t want);
  void CheckQueue();
  void CheckRedundancy();
  void CheckEcRedundancy(uint64_t ino, const proto::Layout& l);
  Status RelinkLost();
  // fsck_osts.cc
  Status CheckOsts();
  // Checks one OST dir's files; adds the objects it holds to present_.
  Status CheckOst(const std::string& dir, uint32_t index, const std::set<ObjKey>& known);
  // Verifies one object file against its crc sidecar (fsck.h).
  Status VerifyObject(const std::string& path, uint32_t index, uint64_t oid);
  void CheckMissingObjects(const std::set<uint32_t>& checked);
  Result<uint32_t> OstIndexOf(const std::string& dir);

  KvStore* const store_;
  const Options opts_;
  Report report_;
  KvBatch batch_;                          // repairs, written at the end
  std::vector<std::string> unlink_paths_;  // OST files to remove (repair)
  proto::SuperblockRec super_;
  std::map<uint64_t, proto::InodeRec> inodes_;
  std::vector<Dentry> dentries_;
  std::set<uint64_t> orphans_;
  std::set<uint64_t> resync_;  // W keys: files on the background resync's list
  std::map<uint64_t, proto::DestroyRec> queued_;  // by seq
  std::set<ObjKey> extra_objects_;                // migrations, stale layouts
  std::map<uint64_t, uint32_t> links_;            // dentries per inode
  std::map<uint64_t, uint32_t> subdirs_;          // subdirectories per directory
  std::map<uint64_t, uint64_t> dir_parent_;       // directory -> the dir holding its dentry
  std::vector<uint64_t> lost_;
  std::set<ObjKey> present_;  // object files found on the OSTs given
};

}  // namespace sfs::mds::fsck
