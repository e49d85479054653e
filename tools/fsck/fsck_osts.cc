// fsck, OST half: walks <ost>/objects/XX/ of each OST directory given,
// cross-checks the object files with the namespace (see fsck.h) and verifies
// each object's data against its crc sidecar with the OSS's own chunk crcs
// (oss/store/crc_sidecar.h), one problem per corrupt chunk.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "tools/fsck/fsck_internal.h"
#include "mds/namespace/keys.h"
#include "oss/store/crc_sidecar.h"
#include "oss/store/env.h"

namespace sfs::mds::fsck {
namespace {

std::string Hex(uint64_t v, int digits) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%0*llx", digits, static_cast<unsigned long long>(v));
  return buf;
}

// Parses a 16-hex-digit object file name, with or without ".crc".
bool ParseObjectName(const std::string& name, uint64_t* oid, bool* crc) {
  *crc = name.size() == 20 && name.compare(16, 4, ".crc") == 0;
  if (name.size() != 16 && !*crc) return false;
  uint64_t v = 0;
  for (int i = 0; i < 16; ++i) {
    char c = name[i];
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return false;
    v = (v << 4) | static_cast<uint64_t>(d);
  }
  *oid = v;
  return true;
}

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

}  // namespace

Result<std::vector<uint64_t>> CorruptChunks(const std::string& path) {
  ScopedFd data{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (data.fd < 0) return Status::Errno(errno, "cannot open " + path);
  ScopedFd side{::open((path + ".crc").c_str(), O_RDONLY | O_CLOEXEC)};
  if (side.fd < 0) return Status::Errno(errno, "cannot open " + path + ".crc");
  oss::Env& env = *oss::DefaultEnv();
  const oss::CrcSidecar sidecar(env, side.fd);
  constexpr uint64_t kBatch = 256;  // chunks read at a time (1 MiB)
  std::vector<uint8_t> buf(kBatch * oss::kCrcChunk);
  std::vector<uint64_t> bad;
  for (uint64_t first = 0;; first += kBatch) {
    SFS_ASSIGN_OR_RETURN(uint64_t n, oss::ReadAll(env, data.fd, buf, first * oss::kCrcChunk));
    if (n == 0) break;
    SFS_ASSIGN_OR_RETURN(std::vector<oss::CrcEntry> entries,
                         sidecar.Read(first, oss::ChunksFor(n)));
    for (uint64_t i = 0; i < entries.size(); ++i) {
      uint64_t begin = i * oss::kCrcChunk;
      uint32_t crc = oss::ChunkCrc({buf.data() + begin, std::min(oss::kCrcChunk, n - begin)});
      if (!oss::SlotMatches(entries[i].stable, crc) && !oss::SlotMatches(entries[i].pending, crc)) {
        bad.push_back((first + i) * oss::kCrcChunk);
      }
    }
    if (n < buf.size()) break;
  }
  return bad;
}

std::string ObjectPath(const std::string& ost_dir, uint64_t oid) {
  return ost_dir + "/objects/" + Hex(oid % 256, 2) + "/" + Hex(oid, 16);
}

Result<std::string> ReadOstUuid(const std::string& ost_dir) {
  std::ifstream in(ost_dir + "/ost_uuid");
  std::string uuid;
  if (!in || !std::getline(in, uuid)) {
    return Status(ENOENT, ost_dir + "/ost_uuid: cannot read (not an OST directory?)");
  }
  while (!uuid.empty() && (uuid.back() == ' ' || uuid.back() == '\r')) uuid.pop_back();
  return uuid;
}

Result<std::vector<OstObject>> ListOstObjects(const std::string& ost_dir) {
  std::map<uint64_t, OstObject> found;
  for (int sub = 0; sub < 256; ++sub) {
    std::string dir = ost_dir + "/objects/" + Hex(sub, 2);
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) {
      if (errno == ENOENT) continue;
      return Status::Errno(errno, "cannot list " + dir);
    }
    while (dirent* e = ::readdir(d)) {
      uint64_t oid = 0;
      bool crc = false;
      if (!ParseObjectName(e->d_name, &oid, &crc)) continue;
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
    std::string path = ObjectPath(dir, o.oid);
    if (!o.data) {
      Add("crc sidecar without its object: " + path + ".crc", true);
      if (opts_.repair) unlink_paths_.push_back(path + ".crc");
      continue;
    }
    ++report_.objects;
    present_.insert({index, o.oid});
    if (o.crc) SFS_RETURN_IF_ERROR(VerifyObject(path, index, o.oid));
    if (known.count({index, o.oid})) continue;
    Add("stray object " + ObjName(index, o.oid) + " (no inode uses it): " + path, true);
    if (opts_.repair) {
      unlink_paths_.push_back(path);
      if (o.crc) unlink_paths_.push_back(path + ".crc");
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
            " offset " + std::to_string(off) + " (" + std::to_string(oss::kCrcChunk) +
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
    uint64_t stripe = (rec.attr().size() - 1) / l.stripe_size();
    const proto::StripeObject& o = l.objects(static_cast<int>(stripe % l.objects_size()));
    if (!checked.count(o.ost()) || present_.count({o.ost(), o.oid()})) continue;
    Add("inode " + std::to_string(ino) + " (size " + std::to_string(rec.attr().size()) +
            "): object " + ObjName(o.ost(), o.oid()) + " holding its last byte is missing",
        false);
  }
}

}  // namespace sfs::mds::fsck
