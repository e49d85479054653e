// fsck, OST half: walks <ost>/objects/XX/ of each OST directory given,
// cross-checks the object files with the namespace (see fsck.h) and verifies
// each object's data against its crc sidecar (common/ondisk/chunk_crc.h, the
// format the OSS writes), one problem per corrupt chunk. The paths inside an
// OST directory are common/ondisk/ost_dir.h's.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <span>

#include "common/ondisk/chunk_crc.h"
#include "common/ondisk/ost_dir.h"
#include "mds/namespace/keys.h"
#include "tools/fsck/fsck_internal.h"

namespace sfs::mds::fsck {
namespace {

std::string ObjName(uint32_t ost, uint64_t oid) {
  return std::to_string(ost) + ":" + std::to_string(oid);
}

// Closes a descriptor at scope exit.
struct ScopedFd {
  int fd;
  ~ScopedFd() {
    if (fd >= 0) ::close(fd);
  }
};

// Reads into dest from off until dest is full or the file ends; the bytes read.
Result<uint64_t> ReadAt(int fd, std::span<uint8_t> dest, uint64_t off, const std::string& path) {
  uint64_t got = 0;
  while (got < dest.size()) {
    ssize_t n = ::pread(fd, dest.data() + got, dest.size() - got, static_cast<off_t>(off + got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::Errno(errno, "cannot read " + path);
    if (n == 0) break;
    got += static_cast<uint64_t>(n);
  }
  return got;
}

// Entries [first, first + count) of the sidecar open as fd.
Result<std::vector<ondisk::CrcEntry>> ReadCrcEntries(int fd, uint64_t first, uint64_t count,
                                                     const std::string& path) {
  std::vector<uint8_t> raw(count * ondisk::kCrcEntrySize);
  SFS_ASSIGN_OR_RETURN(uint64_t got, ReadAt(fd, raw, first * ondisk::kCrcEntrySize, path));
  return ondisk::DecodeCrcEntries(std::span(raw).first(got), count);
}

}  // namespace

Result<std::vector<uint64_t>> CorruptChunks(const std::string& path) {
  using ondisk::kCrcChunk;
  const std::string crc_path = ondisk::CrcPath(path);
  ScopedFd data{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (data.fd < 0) return Status::Errno(errno, "cannot open " + path);
  ScopedFd side{::open(crc_path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (side.fd < 0) return Status::Errno(errno, "cannot open " + crc_path);
  constexpr uint64_t kBatch = 256;  // chunks read at a time (1 MiB)
  std::vector<uint8_t> buf(kBatch * kCrcChunk);
  std::vector<uint64_t> bad;
  for (uint64_t first = 0;; first += kBatch) {
    SFS_ASSIGN_OR_RETURN(uint64_t n, ReadAt(data.fd, buf, first * kCrcChunk, path));
    if (n == 0) break;
    SFS_ASSIGN_OR_RETURN(std::vector<ondisk::CrcEntry> entries,
                         ReadCrcEntries(side.fd, first, ondisk::ChunksFor(n), crc_path));
    for (uint64_t i = 0; i < entries.size(); ++i) {
      uint64_t begin = i * kCrcChunk;
      uint32_t crc = ondisk::ChunkCrc({buf.data() + begin, std::min(kCrcChunk, n - begin)});
      if (!ondisk::SlotMatches(entries[i].stable, crc) &&
          !ondisk::SlotMatches(entries[i].pending, crc)) {
        bad.push_back((first + i) * kCrcChunk);
      }
    }
    if (n < buf.size()) break;
  }
  return bad;
}

Result<std::string> ReadOstUuid(const std::string& ost_dir) {
  const std::string path = ondisk::OstUuidPath(ost_dir);
  std::ifstream in(path);
  std::string uuid;
  if (!in || !std::getline(in, uuid)) {
    return Status(ENOENT, path + ": cannot read (not an OST directory?)");
  }
  while (!uuid.empty() && (uuid.back() == ' ' || uuid.back() == '\r')) uuid.pop_back();
  return uuid;
}

Result<std::vector<OstObject>> ListOstObjects(const std::string& ost_dir) {
  std::map<uint64_t, OstObject> found;
  for (uint32_t sub = 0; sub < ondisk::kObjectSubdirs; ++sub) {
    std::string dir = ondisk::ObjectSubdir(ost_dir, sub);
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) {
      if (errno == ENOENT) continue;
      return Status::Errno(errno, "cannot list " + dir);
    }
    while (dirent* e = ::readdir(d)) {
      uint64_t oid = 0;
      bool crc = false;
      if (!ondisk::ParseObjectName(e->d_name, &oid, &crc)) continue;
      OstObject& o = found[oid];
      o.oid = oid;
      (crc ? o.crc : o.data) = true;
    }
    ::closedir(d);
  }
  std::vector<OstObject> out;
  for (auto& [oid, o] : found) out.push_back(o);
  return out;
}

Result<uint32_t> Checker::OstIndexOf(const std::string& dir) {
  SFS_ASSIGN_OR_RETURN(std::string uuid, ReadOstUuid(dir));
  auto raw = store_->Get(keys::Ost(uuid));
  if (!raw.ok()) return Status(ENOENT, dir + ": OST uuid " + uuid + " is not registered");
  proto::OstRec rec;
  if (!rec.ParseFromString(*raw)) return Status(EIO, "corrupt OST record for " + uuid);
  return rec.index();
}

Status Checker::CheckOsts() {
  if (opts_.ost_dirs.empty()) return Status::Ok();
  std::set<ObjKey> known = extra_objects_;
  for (const auto& [ino, rec] : inodes_) {
    for (const auto& o : rec.layout().objects()) known.insert({o.ost(), o.oid()});
  }
  for (const auto& [seq, rec] : queued_) known.insert({rec.ost(), rec.oid()});
  std::set<uint32_t> checked;
  for (const std::string& dir : opts_.ost_dirs) {
    SFS_ASSIGN_OR_RETURN(uint32_t index, OstIndexOf(dir));
    checked.insert(index);
    SFS_RETURN_IF_ERROR(CheckOst(dir, index, known));
  }
  CheckMissingObjects(checked);
  return Status::Ok();
}

Status Checker::CheckOst(const std::string& dir, uint32_t index, const std::set<ObjKey>& known) {
  SFS_ASSIGN_OR_RETURN(std::vector<OstObject> objects, ListOstObjects(dir));
  for (const OstObject& o : objects) {
    std::string path = ondisk::ObjectPath(dir, o.oid);
    if (!o.data) {
      Add("crc sidecar without its object: " + ondisk::CrcPath(path), true);
      if (opts_.repair) unlink_paths_.push_back(ondisk::CrcPath(path));
      continue;
    }
    ++report_.objects;
    present_.insert({index, o.oid});
    if (o.crc) SFS_RETURN_IF_ERROR(VerifyObject(path, index, o.oid));
    if (known.count({index, o.oid})) continue;
    Add("stray object " + ObjName(index, o.oid) + " (no inode uses it): " + path, true);
    if (opts_.repair) {
      unlink_paths_.push_back(path);
      if (o.crc) unlink_paths_.push_back(ondisk::CrcPath(path));
    }
  }
  return Status::Ok();
}

// Corrupt data is reported, never repaired: fsck cannot know the right bytes
// (the file must be restored; rewriting the chunk whole also clears it).
Status Checker::VerifyObject(const std::string& path, uint32_t index, uint64_t oid) {
  Result<std::vector<uint64_t>> bad = CorruptChunks(path);
  if (!bad.ok() && bad.status().code() == ENOENT) return Status::Ok();  // destroyed meanwhile
  if (!bad.ok()) return bad.status();
  ++report_.objects_verified;
  for (uint64_t off : *bad) {
    Add("corrupt data on OST " + std::to_string(index) + ": oid " + std::to_string(oid) +
            " offset " + std::to_string(off) + " (" + std::to_string(ondisk::kCrcChunk) +
            "-byte chunk does not match its crc): " + path,
        false);
  }
  return Status::Ok();
}

// A regular file of size > 0 must have the object holding its last byte
// (its size came from a write or a truncate, both of which create it).
void Checker::CheckMissingObjects(const std::set<uint32_t>& checked) {
  for (const auto& [ino, rec] : inodes_) {
    const proto::Layout& l = rec.layout();
    if (!S_ISREG(rec.attr().mode()) || rec.attr().size() == 0 || l.objects_size() == 0 ||
        l.stripe_size() == 0) {
      continue;
    }
    // A mirrored file: every copy of that stripe but stale ones (a copy that
    // missed the creating write may not exist until it is resynced).
    const int copies = std::max<int>(static_cast<int>(l.mirror_count()), 1);
    const int stripes = std::max(l.objects_size() / copies, 1);
    uint64_t stripe = (rec.attr().size() - 1) / l.stripe_size();
    if (l.ec_data() > 0) {
      // Erasure-coded: data chunk c of row r is on object (c + r) mod (K+M)
      // (common/ec/ec_geometry.h).
      const uint64_t row = stripe / l.ec_data(), chunk = stripe % l.ec_data();
      stripe = (chunk + row) % static_cast<uint64_t>(stripes);
    }
    for (int m = 0; m < copies; ++m) {
      const int at = m * stripes + static_cast<int>(stripe % static_cast<uint64_t>(stripes));
      if (at >= l.objects_size()) break;
      const proto::StripeObject& o = l.objects(at);
      if (o.state() != proto::OBJECT_OK) continue;
      if (!checked.count(o.ost()) || present_.count({o.ost(), o.oid()})) continue;
      Add("inode " + std::to_string(ino) + " (size " + std::to_string(rec.attr().size()) +
              "): object " + ObjName(o.ost(), o.oid()) + " holding its last byte is missing",
          false);
    }
  }
}

}  // namespace sfs::mds::fsck
