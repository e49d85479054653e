// File-backed ObjectStore: one OST directory, one sparse file per object.
//
// Data goes straight between the caller's buffer and the file with pread/pwrite
// (positional, so many threads share one descriptor without locking). Open
// descriptors live in an FdCache; Destroy renames first and evicts second so a
// racing open can never re-cache the removed file (see FdCache::Insert).
//
// Durability: a sync write or Sync fdatasyncs the object and, the first time
// after the object was created, fsyncs its directory so the name survives a
// crash too. Without sync, data is in the page cache: it survives the OSS
// process dying, not the machine. Checksummed objects sync the data file,
// then the sidecar, so when Sync returns both the bytes and their crcs are
// durable together (what a chunk written after its last sync may read as
// after a machine crash is in checked_object.h).
//
// Tombstones (tombstones.h, docs/formats.md): Destroy renames the object
// file to `tombstones/<oid>.gone` and truncates it (or links an empty inode
// there when there was no object), removes the sidecar, then fsyncs the
// tombstone directory, once per batch (DestroyMany). Opening a
// missing object checks for the tombstone (ESTALE), and creating one checks
// again after the create: a create racing with a Destroy either happened
// before the rename (which then takes the new file away) or sees the
// tombstone and removes its own file, so no object outlives its Destroy. (In
// the first case a write already past its check may land in the tombstone
// after the truncate: those bytes are freed when the tombstone expires.)
// The checks cost a stat only when an object is missing.
#include "oss/store/object_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "common/log.h"
#include "common/ondisk/ost_dir.h"
#include "oss/store/checked_object.h"
#include "oss/store/direct_io.h"
#include "oss/store/env.h"
#include "oss/store/fd_cache.h"
#include "oss/store/range_lock.h"
#include "oss/store/stored_crc_read.h"
#include "oss/store/tombstones.h"

namespace sfs::oss {
namespace {

constexpr uint64_t kMaxOffset = static_cast<uint64_t>(std::numeric_limits<off_t>::max());

// OK iff [off, off + len) is addressable by off_t.
Status CheckRange(uint64_t off, uint64_t len, int err) {
  if (off > kMaxOffset || len > kMaxOffset - off) {
    return Status::Errno(err, "range beyond the maximum object size");
  }
  return Status::Ok();
}

Status DestroyedError(uint64_t oid) {
  return Status::Errno(ESTALE, "object " + std::to_string(oid) + " was destroyed");
}

std::string Hex(uint64_t v, int digits) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%0*llx", digits, static_cast<unsigned long long>(v));
  return buf;
}

Status MakeDir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) == 0 || errno == EEXIST) return Status::Ok();
  return Status::FromErrno("mkdir " + path);
}

// mkdir -p.
Status MakeDirs(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash != std::string::npos && slash > 0) {
    struct stat st;
    std::string parent = path.substr(0, slash);
    if (::stat(parent.c_str(), &st) != 0) SFS_RETURN_IF_ERROR(MakeDirs(parent));
  }
  return MakeDir(path);
}

Status FsyncPath(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno("open " + path);
  Status st = ::fsync(fd) == 0 ? Status::Ok() : Status::FromErrno("fsync " + path);
  ::close(fd);
  return st;
}

Result<std::string> ReadFileString(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno("open " + path);
  std::vector<uint8_t> buf(128);
  Result<uint64_t> n = ReadAll(*DefaultEnv(), fd, buf, 0);
  ::close(fd);
  if (!n.ok()) return n.status();
  return std::string(buf.begin(), buf.begin() + static_cast<ptrdiff_t>(*n));
}

std::string NewUuid() {
  std::random_device rd;
  uint64_t hi = (uint64_t{rd()} << 32) | rd();
  uint64_t lo = (uint64_t{rd()} << 32) | rd();
  return Hex(hi, 16) + Hex(lo, 16);
}

bool IsUuid(const std::string& s) {
  return s.size() == 32 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// Writes a fresh uuid to dir/ost_uuid atomically (temp file, fsync, rename).
Status CreateUuidFile(const std::string& dir, const std::string& uuid) {
  std::string tmp = ondisk::OstUuidPath(dir) + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno("create " + tmp);
  std::string line = uuid + "\n";
  Status st = WriteAll(*DefaultEnv(), fd,
                       {reinterpret_cast<const uint8_t*>(line.data()), line.size()}, 0);
  if (st.ok() && ::fsync(fd) != 0) st = Status::FromErrno("fsync " + tmp);
  ::close(fd);
  SFS_RETURN_IF_ERROR(st);
  if (::rename(tmp.c_str(), ondisk::OstUuidPath(dir).c_str()) != 0) {
    return Status::FromErrno("rename " + tmp);
  }
  return FsyncPath(dir);
}

Result<std::string> LoadOrCreateUuid(const std::string& dir) {
  std::string path = ondisk::OstUuidPath(dir);
  Result<std::string> text = ReadFileString(path);
  if (!text.ok() && text.status().code() != ENOENT) return text.status();
  if (!text.ok()) {
    std::string uuid = NewUuid();
    SFS_RETURN_IF_ERROR(CreateUuidFile(dir, uuid));
    LOG_INFO("created OST " << dir << " uuid " << uuid);
    return uuid;
  }
  std::string uuid = *text;
  while (!uuid.empty() && (uuid.back() == '\n' || uuid.back() == ' ')) uuid.pop_back();
  if (!IsUuid(uuid)) return Status::Errno(EINVAL, path + ": not a 32-hex-digit uuid");
  return uuid;
}

class FileObjectStore : public ObjectStore {
 public:
  FileObjectStore(std::string dir, std::string uuid, const FileStoreOptions& opts)
      : dir_(std::move(dir)),
        uuid_(std::move(uuid)),
        env_(opts.env ? *opts.env : *DefaultEnv()),
        checksums_(opts.checksums),
        // An object holds up to three (data, sidecar, O_DIRECT twin).
        cache_(std::max<size_t>(1, opts.fd_cache_capacity / (opts.checksums ? 3 : 2))),
        tombs_(dir_, env_, [this](uint64_t oid) { return PathOf(oid); }) {}

  Status OpenTombstones() { return tombs_.Open(); }

  const std::string& uuid() const override { return uuid_; }
  Result<uint64_t> Read(uint64_t oid, uint64_t off, std::span<uint8_t> dest,
                        std::vector<uint32_t>* piece_crcs = nullptr) override;
  Result<uint64_t> ReadWithStoredCrc(uint64_t oid, uint64_t off, std::span<uint8_t> dest,
                                     uint32_t* value) override;
  Result<CachedRange> OpenCachedRange(uint64_t oid, uint64_t off, uint64_t len) override;
  Status Write(uint64_t oid, uint64_t off, std::span<const uint8_t> data, bool sync,
               std::span<const uint32_t> piece_crcs = {}) override;
  Status Truncate(uint64_t oid, uint64_t size) override;
  Status Punch(uint64_t oid, uint64_t off, uint64_t len) override;
  Result<ObjectAttr> Stat(uint64_t oid) override;
  Status Fallocate(uint64_t oid, int mode, uint64_t off, uint64_t len) override;
  Result<std::optional<uint64_t>> Seek(uint64_t oid, uint64_t off, bool hole) override;
  Status Destroy(uint64_t oid) override { return DestroyMany({&oid, 1})[0]; }
  std::vector<Status> DestroyMany(std::span<const uint64_t> oids) override {
    return tombs_.DestroyMany(oids, [this](uint64_t oid) { cache_.Erase(oid); });
  }
  Status Sync(uint64_t oid) override;
  Result<OstSpace> Statfs() override;
  Result<uint64_t> ExpireTombstones(std::chrono::system_clock::time_point cutoff) override {
    return tombs_.Expire(cutoff);
  }

 private:
  std::string SubdirOf(uint64_t oid) const {
    return ondisk::ObjectSubdir(dir_, static_cast<uint32_t>(oid % ondisk::kObjectSubdirs));
  }
  std::string PathOf(uint64_t oid) const { return ondisk::ObjectPath(dir_, oid); }
  std::string CrcPathOf(uint64_t oid) const { return ondisk::CrcPath(PathOf(oid)); }
  // Whether oid has a tombstone (was destroyed).
  bool Destroyed(uint64_t oid) const { return tombs_.Contains(oid); }
  // Removes a file this store just created for an object found destroyed.
  Status UndoCreate(uint64_t oid, int fd, int crc_fd);
  // fd's O_DIRECT twin for a transfer of n bytes, or -1 if too small to go direct.
  static int DirectFd(const Fd& fd, uint64_t n) { return n >= kDirectMin ? fd.direct() : -1; }
  CheckedObject Checked(uint64_t oid, const Fd& fd, uint64_t n = 0) const {
    return CheckedObject(env_, fd.get(), fd.crc(),
                         "oid " + std::to_string(oid) + " (" + PathOf(oid) + ")",
                         DirectFd(fd, n));
  }

  // The object's open file; with !create a missing object yields null.
  Result<std::shared_ptr<Fd>> GetFd(uint64_t oid, bool create);
  Result<std::shared_ptr<Fd>> OpenFile(uint64_t oid, bool create);
  // The sidecar of an existing object file: -1 if it has none (or checksums are off).
  Result<int> OpenSidecar(uint64_t oid, bool create);
  Result<uint64_t> CheckedRead(uint64_t oid, const Fd& fd, uint64_t off, std::span<uint8_t> dest,
                               std::vector<uint32_t>* piece_crcs);
  Status PunchData(uint64_t oid, int fd, uint64_t off, uint64_t len);
  // fdatasync, plus the directory entry if this file was created unsynced.
  Status SyncFd(uint64_t oid, Fd& fd);
  Status ZeroRange(int fd, uint64_t off, uint64_t len);
  // FALLOC_FL_ZERO_RANGE (keep: | KEEP_SIZE) of the data file, or a punch and
  // an allocation where the file system has no zero-range.
  Status ZeroData(uint64_t oid, int fd, uint64_t off, uint64_t len, bool keep);

  const std::string dir_;
  const std::string uuid_;
  Env& env_;
  const bool checksums_;
  FdCache cache_;
  RangeLocks locks_;  // chunk ranges of checksummed objects being changed
  Tombstones tombs_;
};

Result<std::shared_ptr<Fd>> FileObjectStore::GetFd(uint64_t oid, bool create) {
  if (std::shared_ptr<Fd> fd = cache_.Lookup(oid)) return fd;
  uint64_t epoch = cache_.epoch();
  SFS_ASSIGN_OR_RETURN(std::shared_ptr<Fd> fd, OpenFile(oid, create));
  if (!fd) return fd;
  return cache_.Insert(oid, std::move(fd), epoch);
}

Result<std::shared_ptr<Fd>> FileObjectStore::OpenFile(uint64_t oid, bool create) {
  std::string path = PathOf(oid);
  for (;;) {
    int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd >= 0) {
      Result<int> crc_fd = OpenSidecar(oid, /*create=*/false);
      if (!crc_fd.ok()) ::close(fd);
      if (!crc_fd.ok()) return crc_fd.status();
      return std::make_shared<Fd>(fd, false, *crc_fd);
    }
    if (errno != ENOENT) return Status::FromErrno("open " + path);
    if (Destroyed(oid)) return DestroyedError(oid);
    if (!create) return std::shared_ptr<Fd>();
    // The sidecar comes first, so a checksummed object file never exists
    // without one (a crash in between leaves an empty sidecar, harmless).
    SFS_ASSIGN_OR_RETURN(int crc_fd, OpenSidecar(oid, /*create=*/true));
    // O_EXCL tells us whether this call created the file, which decides
    // whether a later sync must also make the directory entry durable.
    fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0 && Destroyed(oid)) return UndoCreate(oid, fd, crc_fd);  // lost a race with Destroy
    if (fd >= 0) return std::make_shared<Fd>(fd, true, crc_fd);
    Status st = Status::FromErrno("create " + path);
    if (crc_fd >= 0) ::close(crc_fd);
    if (st.code() != EEXIST) return st;
  }
}

Status FileObjectStore::UndoCreate(uint64_t oid, int fd, int crc_fd) {
  ::close(fd);
  if (crc_fd >= 0) ::close(crc_fd);
  ::unlink(PathOf(oid).c_str());  // ENOENT if Destroy's rename took it
  ::unlink(CrcPathOf(oid).c_str());
  return DestroyedError(oid);
}

Result<int> FileObjectStore::OpenSidecar(uint64_t oid, bool create) {
  std::string path = CrcPathOf(oid);
  if (!checksums_) {  // crcs we would not keep up to date must not outlive us
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return Status::FromErrno("unlink " + path);
    return -1;
  }
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0644);
  if (fd >= 0) return fd;
  if (errno == ENOENT && !create) return -1;  // an object made with checksums off
  return Status::FromErrno("open " + path);
}

Status FileObjectStore::SyncFd(uint64_t oid, Fd& fd) {
  if (env_.Fdatasync(fd.get()) != 0) return Status::FromErrno("fdatasync " + PathOf(oid));
  if (fd.checked() && env_.Fdatasync(fd.crc()) != 0) {
    return Status::FromErrno("fdatasync " + CrcPathOf(oid));
  }
  if (!fd.TakeDirDirty()) return Status::Ok();
  Status st = FsyncPath(SubdirOf(oid));
  if (!st.ok()) fd.MarkDirDirty();
  return st;
}

Result<uint64_t> FileObjectStore::Read(uint64_t oid, uint64_t off, std::span<uint8_t> dest,
                                       std::vector<uint32_t>* piece_crcs) {
  if (piece_crcs != nullptr) piece_crcs->clear();
  SFS_RETURN_IF_ERROR(CheckRange(off, dest.size(), EINVAL));
  SFS_ASSIGN_OR_RETURN(std::shared_ptr<Fd> fd, GetFd(oid, /*create=*/false));
  if (fd && fd->checked()) return CheckedRead(oid, *fd, off, dest, piece_crcs);
  uint64_t got = 0;
  if (fd) {
    SFS_ASSIGN_OR_RETURN(
        got, ReadMaybeDirect(env_, fd->get(), DirectFd(*fd, dest.size()), dest, off));
  }
  // An empty dest may have a null data(): memset(nullptr, 0, 0) is undefined
  // (found by fuzz/oss_request_fuzzer).
  if (got < dest.size()) std::memset(dest.data() + got, 0, dest.size() - got);
  return got;
}

Result<uint64_t> FileObjectStore::ReadWithStoredCrc(uint64_t oid, uint64_t off,
                                                    std::span<uint8_t> dest, uint32_t* value) {
  SFS_RETURN_IF_ERROR(CheckRange(off, dest.size(), EINVAL));
  SFS_ASSIGN_OR_RETURN(std::shared_ptr<Fd> fd, GetFd(oid, /*create=*/false));
  if (!fd || !fd->checked()) return Status::Errno(ENOTSUP, "no stored crcs");
  const CrcSidecar crc(env_, fd->crc());
  return oss::ReadWithStoredCrc(env_, fd->get(), DirectFd(*fd, dest.size()), crc, off, dest,
                                value);
}

Result<CachedRange> FileObjectStore::OpenCachedRange(uint64_t oid, uint64_t off, uint64_t len) {
  SFS_RETURN_IF_ERROR(CheckRange(off, len, EINVAL));
  if (len < kDirectMin) return Status::Errno(ENOTSUP, "a short read");
  SFS_ASSIGN_OR_RETURN(std::shared_ptr<Fd> fd, GetFd(oid, /*create=*/false));
  if (!fd || !fd->checked()) return Status::Errno(ENOTSUP, "no stored crcs");
  struct stat st;
  if (::fstat(fd->get(), &st) != 0) return Status::FromErrno("fstat");
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size >= kDirectReadMinObject) return Status::Errno(ENOTSUP, "a large object");
  if (off >= size) return Status::Errno(ENOTSUP, "no bytes there");
  const uint64_t end = std::min(size, off + len);
  if (!AllCached(fd->get(), off, end - off)) return Status::Errno(ENOTSUP, "not all cached");
  const CrcSidecar crc(env_, fd->crc());
  SFS_ASSIGN_OR_RETURN(uint32_t value, StoredCrcOfRange(env_, fd->get(), crc, size, off, end));
  const int raw = fd->get();
  return CachedRange{std::move(fd), raw, off, end - off, value};
}

// Reads take no lock, so a chunk may be caught between a concurrent
// mutation's steps; only a mismatch that persists under the lock is corruption.
Result<uint64_t> FileObjectStore::CheckedRead(uint64_t oid, const Fd& fd, uint64_t off,
                                              std::span<uint8_t> dest,
                                              std::vector<uint32_t>* piece_crcs) {
  CheckedObject obj = Checked(oid, fd, dest.size());
  Result<uint64_t> got = obj.Read(off, dest, piece_crcs);
  if (got.ok() || got.status().code() != EIO) return got;
  {
    RangeLocks::Guard guard = locks_.Lock(oid, ChunkOf(off), ChunkOf(off + dest.size() - 1));
    got = obj.Read(off, dest, piece_crcs);
  }
  if (!got.ok()) LOG_ERROR("OST " << dir_ << " (" << uuid_ << "): " << got.status().message());
  return got;
}

Status FileObjectStore::Write(uint64_t oid, uint64_t off, std::span<const uint8_t> data,
                              bool sync, std::span<const uint32_t> piece_crcs) {
  SFS_RETURN_IF_ERROR(CheckRange(off, data.size(), EFBIG));
  SFS_ASSIGN_OR_RETURN(std::shared_ptr<Fd> fd, GetFd(oid, /*create=*/true));
  if (fd->checked() && !data.empty()) {
    RangeLocks::Guard guard = locks_.Lock(oid, ChunkOf(off), ChunkOf(off + data.size() - 1));
    SFS_RETURN_IF_ERROR(Checked(oid, *fd, data.size()).Write(off, data, piece_crcs));
  } else {
    SFS_RETURN_IF_ERROR(WriteMaybeDirect(env_, fd->get(), DirectFd(*fd, data.size()), data, off));
  }
  return sync ? SyncFd(oid, *fd) : Status::Ok();
}

Status FileObjectStore::Truncate(uint64_t oid, uint64_t size) {
  SFS_RETURN_IF_ERROR(CheckRange(size, 0, EFBIG));
  SFS_ASSIGN_OR_RETURN(std::shared_ptr<Fd> fd, GetFd(oid, /*create=*/true));
  if (fd->checked()) {  // rare: lock the whole object rather than reason about its size
    RangeLocks::Guard guard = locks_.Lock(oid, 0, std::numeric_limits<uint64_t>::max());
    return Checked(oid, *fd).Truncate(size);
  }
  if (env_.Ftruncate(fd->get(), size) != 0) return Status::FromErrno("ftruncate " + PathOf(oid));
  return Status::Ok();
}

Status FileObjectStore::Punch(uint64_t oid, uint64_t off, uint64_t len) {
  SFS_RETURN_IF_ERROR(CheckRange(off, len, EINVAL));
  if (len == 0) return Status::Ok();
  SFS_ASSIGN_OR_RETURN(std::shared_ptr<Fd> fd, GetFd(oid, /*create=*/false));
  if (!fd) return Status::Ok();
  if (!fd->checked()) return PunchData(oid, fd->get(), off, len);
  RangeLocks::Guard guard = locks_.Lock(oid, ChunkOf(off), ChunkOf(off + len - 1));
  return Checked(oid, *fd).Punch(off, len, [&] { return PunchData(oid, fd->get(), off, len); });
}

Status FileObjectStore::PunchData(uint64_t oid, int fd, uint64_t off, uint64_t len) {
  int mode = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE;
  if (env_.Fallocate(fd, mode, off, len) == 0) return Status::Ok();
  if (errno != EOPNOTSUPP) return Status::FromErrno("punch " + PathOf(oid));
  return ZeroRange(fd, off, len);
}

// Fallback for file systems without hole punching: writes zeros over the part
// of the range inside the object (never extending it).
Status FileObjectStore::ZeroRange(int fd, uint64_t off, uint64_t len) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return Status::FromErrno("fstat");
  uint64_t end = std::min(off + len, static_cast<uint64_t>(st.st_size));
  static const std::vector<uint8_t> zeros(1 << 20);
  for (uint64_t pos = off; pos < end;) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(end - pos, zeros.size()));
    SFS_RETURN_IF_ERROR(WriteAll(env_, fd, {zeros.data(), n}, pos));
    pos += n;
  }
  return Status::Ok();
}

// Allocation changes no byte, so no crc; a zero range is a punch for the
// sidecar (the chunks it covers become zeros) with another data change.
Status FileObjectStore::Fallocate(uint64_t oid, int mode, uint64_t off, uint64_t len) {
  SFS_RETURN_IF_ERROR(CheckRange(off, len, EFBIG));
  const bool keep = (mode & FALLOC_FL_KEEP_SIZE) != 0;
  if ((mode & FALLOC_FL_PUNCH_HOLE) != 0) return Punch(oid, off, len);
  const bool zero = (mode & FALLOC_FL_ZERO_RANGE) != 0;
  // Zeroing a missing object within its size (none) changes nothing.
  SFS_ASSIGN_OR_RETURN(std::shared_ptr<Fd> fd, GetFd(oid, /*create=*/!(zero && keep)));
  if (!fd) return Status::Ok();
  if (!zero) {
    if (env_.Fallocate(fd->get(), keep ? FALLOC_FL_KEEP_SIZE : 0, off, len) == 0) {
      return Status::Ok();
    }
    return Status::FromErrno("fallocate " + PathOf(oid));
  }
  if (!fd->checked()) return ZeroData(oid, fd->get(), off, len, keep);
  RangeLocks::Guard guard = locks_.Lock(oid, ChunkOf(off), ChunkOf(off + len - 1));
  return Checked(oid, *fd).Punch(off, len,
                                 [&] { return ZeroData(oid, fd->get(), off, len, keep); });
}

Status FileObjectStore::ZeroData(uint64_t oid, int fd, uint64_t off, uint64_t len, bool keep) {
  const int mode = FALLOC_FL_ZERO_RANGE | (keep ? FALLOC_FL_KEEP_SIZE : 0);
  if (env_.Fallocate(fd, mode, off, len) == 0) return Status::Ok();
  if (errno != EOPNOTSUPP) return Status::FromErrno("zero range " + PathOf(oid));
  SFS_RETURN_IF_ERROR(PunchData(oid, fd, off, len));
  if (env_.Fallocate(fd, keep ? FALLOC_FL_KEEP_SIZE : 0, off, len) == 0) return Status::Ok();
  if (errno != EOPNOTSUPP) return Status::FromErrno("fallocate " + PathOf(oid));
  // No allocation at all: the zeros are there; grow the object as asked.
  struct stat st;
  if (::fstat(fd, &st) != 0) return Status::FromErrno("fstat " + PathOf(oid));
  if (keep || static_cast<uint64_t>(st.st_size) >= off + len) return Status::Ok();
  if (env_.Ftruncate(fd, off + len) != 0) return Status::FromErrno("ftruncate " + PathOf(oid));
  return Status::Ok();
}

// The OST's file system knows the holes (a punched chunk is one; a chunk of
// written zeros is data). ENXIO from lseek: nothing of the kind past off.
Result<std::optional<uint64_t>> FileObjectStore::Seek(uint64_t oid, uint64_t off, bool hole) {
  SFS_RETURN_IF_ERROR(CheckRange(off, 0, EINVAL));
  SFS_ASSIGN_OR_RETURN(std::shared_ptr<Fd> fd, GetFd(oid, /*create=*/false));
  if (!fd) return hole ? std::optional<uint64_t>(off) : std::optional<uint64_t>();
  const off_t at = ::lseek(fd->get(), static_cast<off_t>(off), hole ? SEEK_HOLE : SEEK_DATA);
  if (at >= 0) return std::optional<uint64_t>(static_cast<uint64_t>(at));
  if (errno != ENXIO) return Status::FromErrno("lseek " + PathOf(oid));
  return hole ? std::optional<uint64_t>(off) : std::optional<uint64_t>();
}

Result<ObjectAttr> FileObjectStore::Stat(uint64_t oid) {
  struct stat st;
  if (::stat(PathOf(oid).c_str(), &st) != 0) {
    if (errno == ENOENT && Destroyed(oid)) return DestroyedError(oid);
    if (errno == ENOENT) return ObjectAttr{};
    return Status::FromErrno("stat " + PathOf(oid));
  }
  return ObjectAttr{true, static_cast<uint64_t>(st.st_size), static_cast<uint64_t>(st.st_blocks)};
}

Status FileObjectStore::Sync(uint64_t oid) {
  SFS_ASSIGN_OR_RETURN(std::shared_ptr<Fd> fd, GetFd(oid, /*create=*/false));
  if (!fd) return Status::Ok();
  return SyncFd(oid, *fd);
}

Result<OstSpace> FileObjectStore::Statfs() {
  struct statvfs vfs;
  if (::statvfs(dir_.c_str(), &vfs) != 0) return Status::FromErrno("statvfs " + dir_);
  OstSpace s;
  uint64_t frsize = vfs.f_frsize ? vfs.f_frsize : vfs.f_bsize;
  s.total_bytes = uint64_t{vfs.f_blocks} * frsize;
  s.free_bytes = uint64_t{vfs.f_bfree} * frsize;
  s.avail_bytes = uint64_t{vfs.f_bavail} * frsize;
  s.total_inodes = vfs.f_files;
  s.free_inodes = vfs.f_ffree;
  return s;
}

}  // namespace

Result<std::unique_ptr<ObjectStore>> OpenFileObjectStore(const std::string& dir,
                                                         const FileStoreOptions& opts) {
  if (dir.empty()) return Status::Errno(EINVAL, "empty OST directory");
  if (opts.fd_cache_capacity == 0) return Status::Errno(EINVAL, "fd cache capacity is 0");
  SFS_RETURN_IF_ERROR(MakeDirs(dir));
  SFS_RETURN_IF_ERROR(MakeDir(ondisk::ObjectsDir(dir)));
  for (uint32_t i = 0; i < ondisk::kObjectSubdirs; ++i) {
    SFS_RETURN_IF_ERROR(MakeDir(ondisk::ObjectSubdir(dir, i)));
  }
  SFS_ASSIGN_OR_RETURN(std::string uuid, LoadOrCreateUuid(dir));
  auto store = std::make_unique<FileObjectStore>(dir, std::move(uuid), opts);
  SFS_RETURN_IF_ERROR(store->OpenTombstones());
  return std::unique_ptr<ObjectStore>(std::move(store));
}

}  // namespace sfs::oss
