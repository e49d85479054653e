// The tombstones of one OST; see tombstones.h.
#include "oss/store/tombstones.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "common/log.h"
#include "common/ondisk/ost_dir.h"
#include "oss/store/env.h"

namespace sfs::oss {
namespace {

constexpr char kSuffix[] = ".gone";
constexpr size_t kNameLen = 16 + sizeof(kSuffix) - 1;

// The oid a tombstone's file name stands for; false for any other name.
bool ParseName(const char* name, uint64_t* oid) {
  std::string n = name;
  if (n.size() != kNameLen || n.compare(16, n.npos, kSuffix) != 0) return false;
  // Named: strtoull's end points into it, and is read after the call.
  const std::string hex = n.substr(0, 16);
  char* end = nullptr;
  *oid = std::strtoull(hex.c_str(), &end, 16);
  return end != nullptr && *end == '\0';
}

Status UnlinkIfThere(const std::string& path) {
  if (::unlink(path.c_str()) == 0 || errno == ENOENT) return Status::Ok();
  return Status::FromErrno("unlink " + path);
}

}  // namespace

Tombstones::Tombstones(std::string ost_dir, Env& env,
                       std::function<std::string(uint64_t)> object_path)
    : ost_dir_(std::move(ost_dir)),
      dir_(ost_dir_ + "/tombstones"),
      env_(env),
      object_path_(std::move(object_path)) {}

std::string Tombstones::PathOf(uint64_t oid) const {
  return dir_ + "/" + ondisk::ObjectName(oid) + kSuffix;
}

std::string Tombstones::LegacyPathOf(uint64_t oid) const { return object_path_(oid) + kSuffix; }

bool Tombstones::Contains(uint64_t oid) const {
  return ::access(PathOf(oid).c_str(), F_OK) == 0 ||
         ::access(LegacyPathOf(oid).c_str(), F_OK) == 0;
}

Status Tombstones::Open() {
  if (::mkdir(dir_.c_str(), 0755) != 0 && errno != EEXIST) {
    return Status::FromErrno("mkdir " + dir_);
  }
  DIR* d = ::opendir(dir_.c_str());
  if (d == nullptr) return Status::FromErrno("opendir " + dir_);
  Status st;
  uint64_t removed = 0;
  while (const dirent* e = ::readdir(d)) {
    uint64_t oid = 0;
    if (!ParseName(e->d_name, &oid)) continue;
    // Only after a crash can an object outlive its tombstone.
    std::string path = object_path_(oid);
    if (::access(path.c_str(), F_OK) != 0) continue;
    st = UnlinkIfThere(path);
    if (st.ok()) st = UnlinkIfThere(path + ".crc");
    if (!st.ok()) break;
    ++removed;
  }
  ::closedir(d);
  if (removed > 0) {
    LOG_WARN(ost_dir_ << ": removed " << removed << " object(s) left beside their tombstone");
  }
  return st;
}

// The batch's shared empty inode: unnamed (O_TMPFILE) until linked as tombstones.
struct Tombstones::Anchor {
  int fd = -1;
  bool tried = false;
  ~Anchor() {
    if (fd >= 0) ::close(fd);
  }
};

Status Tombstones::MakeEmpty(const std::string& tomb, Anchor& anchor) {
  if (!anchor.tried) {
    anchor.tried = true;
    anchor.fd = ::open(dir_.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
  }
  if (anchor.fd >= 0) {
    std::string self = "/proc/self/fd/" + std::to_string(anchor.fd);
    if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, tomb.c_str(), AT_SYMLINK_FOLLOW) == 0 ||
        errno == EEXIST) {
      return Status::Ok();
    }
  }
  // No O_TMPFILE here, no /proc, or the inode has its most links: a file of its own.
  int fd = ::open(tomb.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno("create " + tomb);
  ::close(fd);
  return Status::Ok();
}

Status Tombstones::Bury(uint64_t oid, Anchor& anchor) {
  std::string obj = object_path_(oid);
  std::string tomb = PathOf(oid);
  for (bool created = false;;) {
    if (::rename(obj.c_str(), tomb.c_str()) == 0) {
      if (::truncate(tomb.c_str(), 0) != 0) {
        return Status::FromErrno("truncate " + tomb);
      }
      break;
    }
    if (errno != ENOENT) return Status::FromErrno("rename " + obj);
    if (created) break;
    // Never written, or destroyed before. Once the tombstone exists every
    // create sees it; one created before it is caught by the second rename.
    SFS_RETURN_IF_ERROR(MakeEmpty(tomb, anchor));
    created = true;
  }
  // The sidecar goes second: an object file is never left without it.
  return UnlinkIfThere(obj + ".crc");
}

std::vector<Status> Tombstones::DestroyMany(std::span<const uint64_t> oids,
                                            const std::function<void(uint64_t)>& evict) {
  std::vector<Status> out;
  out.reserve(oids.size());
  bool any = false;
  Anchor anchor;
  for (uint64_t oid : oids) {
    out.push_back(Bury(oid, anchor));
    // Evict last: an open racing with us then either fails with ENOENT, or
    // sees the epoch bump and does not cache.
    evict(oid);
    any = any || out.back().ok();
  }
  if (!any) return out;
  Status synced = Commit(anchor);
  if (!synced.ok()) {
    for (Status& s : out) {
      if (s.ok()) s = synced;
    }
  }
  return out;
}

// The anchor's inode (its link count) first, then the directory's entries.
Status Tombstones::Commit(const Anchor& anchor) {
  if (anchor.fd >= 0 && env_.Fsync(anchor.fd) != 0) {
    return Status::FromErrno("fsync tombstone inode in " + dir_);
  }
  int fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno("open " + dir_);
  Status st = env_.Fsync(fd) == 0 ? Status::Ok() : Status::FromErrno("fsync " + dir_);
  ::close(fd);
  return st;
}

Result<uint64_t> Tombstones::ExpireIn(const std::string& dir, time_t limit) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return Status::FromErrno("opendir " + dir);
  // Collect first, then unlink: the tombstones of a batch share one inode,
  // whose ctime the first unlink would make "now" for the rest.
  std::vector<std::string> old;
  while (const dirent* e = ::readdir(d)) {
    uint64_t oid = 0;
    if (!ParseName(e->d_name, &oid)) continue;
    struct stat st;
    if (::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (st.st_ctime < limit) old.emplace_back(e->d_name);
  }
  uint64_t removed = 0;
  for (const std::string& name : old) {
    if (::unlinkat(::dirfd(d), name.c_str(), 0) == 0) ++removed;
  }
  ::closedir(d);
  return removed;
}

// A tombstone's ctime is when its object was destroyed (a destroy of a
// destroyed object does not touch it).
Result<uint64_t> Tombstones::Expire(std::chrono::system_clock::time_point cutoff) {
  const time_t limit = std::chrono::system_clock::to_time_t(cutoff);
  SFS_ASSIGN_OR_RETURN(uint64_t removed, ExpireIn(dir_, limit));
  for (uint32_t sub = 0; sub < ondisk::kObjectSubdirs; ++sub) {  // an older OSS's, beside objects
    SFS_ASSIGN_OR_RETURN(uint64_t n, ExpireIn(ondisk::ObjectSubdir(ost_dir_, sub), limit));
    removed += n;
  }
  return removed;
}

}  // namespace sfs::oss
