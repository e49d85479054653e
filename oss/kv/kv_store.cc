// KvStore: block files under <ost>/kv and the index over them (kv_store.h).
#include "oss/kv/kv_store.h"

#include <fcntl.h>
#include <ftw.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "common/crc32c.h"
#include "common/log.h"

namespace sfs::oss::kv {
namespace {

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string Hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

std::string TenantDir(uint32_t tenant) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%08x", tenant);
  return buf;
}

int RemoveEntry(const char* path, const struct stat*, int, struct FTW*) {
  return ::remove(path) == 0 || errno == ENOENT ? 0 : -1;
}

Status RemoveTree(const std::string& dir) {
  if (::access(dir.c_str(), F_OK) != 0) return Status::Ok();
  if (::nftw(dir.c_str(), RemoveEntry, 16, FTW_DEPTH | FTW_PHYS) != 0) {
    return Status::FromErrno("remove " + dir);
  }
  return Status::Ok();
}

Status MakeDir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return Status::FromErrno("mkdir " + dir);
  return Status::Ok();
}

// Writes all of data at offset 0 of a new file at path.
Status WriteFile(const std::string& path, std::span<const uint8_t> data) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return Status::FromErrno("create " + path);
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::pwrite(fd, data.data() + done, data.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      Status st = Status::FromErrno("write " + path);
      ::close(fd);
      ::unlink(path.c_str());
      return st;
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return Status::Ok();
}

// Reads exactly dest.size() bytes from offset 0 of fd (EIO if shorter).
Status ReadAll(int fd, std::span<uint8_t> dest) {
  size_t done = 0;
  while (done < dest.size()) {
    ssize_t n = ::pread(fd, dest.data() + done, dest.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::FromErrno("read kv block");
    if (n == 0) return Status::Errno(EIO, "kv block file shorter than its block");
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

// cachestat(2), Linux 6.5, which this system's headers predate: the number
// of a range's pages in the page cache, in one call.
#if defined(__x86_64__) || defined(__aarch64__)
constexpr long kSysCachestat = 451;  // the same on every architecture
#else
constexpr long kSysCachestat = -1;
#endif
struct CachestatRange {
  uint64_t off;
  uint64_t len;
};
struct Cachestat {
  uint64_t nr_cache;
  uint64_t nr_dirty;
  uint64_t nr_writeback;
  uint64_t nr_evicted;
  uint64_t nr_recently_evicted;
};
std::atomic<bool> no_cachestat{kSysCachestat < 0};

// Every page of fd's first len bytes is in the page cache. A probe on every
// get: cachestat is one system call where mincore needs three (an mmap of
// the block that touches none of it, mincore, munmap) and the mm lock.
bool InPageCache(int fd, size_t len) {
  if (len == 0) return true;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  if (!no_cachestat.load(std::memory_order_relaxed)) {
    CachestatRange range{0, len};
    Cachestat cs{};
    if (::syscall(kSysCachestat, fd, &range, &cs, 0) == 0) {
      return cs.nr_cache >= (len + page - 1) / page;
    }
    if (errno == ENOSYS || errno == EPERM) no_cachestat.store(true, std::memory_order_relaxed);
  }
  void* map = ::mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) return false;
  std::vector<unsigned char> vec((len + page - 1) / page);
  bool all = ::mincore(map, len, vec.data()) == 0;
  for (size_t i = 0; all && i < vec.size(); ++i) all = (vec[i] & 1) != 0;
  ::munmap(map, len);
  return all;
}

}  // namespace

Status CheckNamespace(const std::string& name) {
  bool ok = !name.empty() && name.size() <= KvStore::kMaxNamespace && name[0] != '.';
  for (char c : name) {
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '.' || c == '_' || c == '-');
  }
  if (!ok) return Status::Errno(EINVAL, "bad kv namespace name (1-64 of [A-Za-z0-9._-], no leading '.')");
  return Status::Ok();
}

KvStore::KvStore(std::string dir, const KvOptions& opts)
    : dir_(std::move(dir)),
      now_ms_(SteadyMs),
      index_(opts.capacity, opts.tenant_quota == 0 ? opts.capacity : opts.tenant_quota) {}

Result<std::unique_ptr<KvStore>> KvStore::Open(const std::string& ost_dir, const KvOptions& opts) {
  if (opts.capacity == 0) return Status::Errno(EINVAL, "kv capacity of 0");
  std::string dir = ost_dir + "/kv";
  SFS_RETURN_IF_ERROR(RemoveTree(dir));  // a cache: what the last run left is not indexed
  SFS_RETURN_IF_ERROR(MakeDir(dir));
  return std::unique_ptr<KvStore>(new KvStore(dir, opts));
}

std::string KvStore::BlockId(uint32_t tenant, const std::string& ns, const std::string& key) {
  std::string hex = Hex(key);
  return TenantDir(tenant) + "/" + ns + "/" + hex.substr(0, 2) + "/" + hex;
}

// A named group, or the block alone ('k' and 'g' keep the two apart).
std::string KvStore::GroupId(uint32_t tenant, const std::string& ns, const std::string& key,
                             const std::string& group) {
  return TenantDir(tenant) + "/" + ns + (group.empty() ? "/k" + Hex(key) : "/g" + Hex(group));
}

Status KvStore::Declare(uint32_t tenant, const std::string& ns, uint64_t block_size) {
  SFS_RETURN_IF_ERROR(CheckNamespace(ns));
  if (block_size == 0 || block_size > kMaxBlock) {
    return Status::Errno(EINVAL, "kv block size must be 1 byte to 64 MiB");
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = spaces_.find({tenant, ns});
  if (it != spaces_.end()) {
    if (it->second == block_size) return Status::Ok();
    return Status::Errno(EINVAL, "kv namespace " + ns + " has block size " +
                                     std::to_string(it->second) + ", not " +
                                     std::to_string(block_size));
  }
  // Every subdirectory now, so that puts need no mkdir.
  std::string base = dir_ + "/" + TenantDir(tenant);
  SFS_RETURN_IF_ERROR(MakeDir(base));
  SFS_RETURN_IF_ERROR(MakeDir(base + "/" + ns));
  for (int sub = 0; sub < 256; ++sub) {
    char name[4];
    std::snprintf(name, sizeof(name), "%02x", sub);
    SFS_RETURN_IF_ERROR(MakeDir(base + "/" + ns + "/" + name));
  }
  spaces_[{tenant, ns}] = block_size;
  return Status::Ok();
}

Result<uint64_t> KvStore::BlockSize(uint32_t tenant, const std::string& ns) const {
  SFS_RETURN_IF_ERROR(CheckNamespace(ns));
  std::lock_guard<std::mutex> lock(mu_);
  auto it = spaces_.find({tenant, ns});
  if (it == spaces_.end()) return Status::Errno(ENOENT, "unknown kv namespace " + ns);
  return it->second;
}

Status KvStore::CheckKeys(std::span<const std::string> keys) const {
  if (keys.size() > kMaxBatch) {
    return Status::Errno(EINVAL, "more than " + std::to_string(kMaxBatch) + " kv keys in one call");
  }
  for (const std::string& k : keys) {
    if (k.empty() || k.size() > kMaxKey) return Status::Errno(EINVAL, "kv key of 0 or over 64 bytes");
  }
  return Status::Ok();
}

void KvStore::RemoveFiles(const std::vector<std::string>& ids) {
  for (const std::string& id : ids) {
    std::string path = dir_ + "/" + id;
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      LOG_WARN("kv: unlink " << path << ": " << std::strerror(errno));
    }
  }
}

Status KvStore::Put(uint32_t tenant, const std::string& ns, const std::string& key,
                    const std::string& group, std::span<const uint8_t> data, uint32_t ttl_s) {
  SFS_ASSIGN_OR_RETURN(uint64_t size, BlockSize(tenant, ns));
  if (data.size() != size) {
    return Status::Errno(EINVAL, "kv block of " + std::to_string(data.size()) +
                                     " bytes; namespace " + ns + " has " + std::to_string(size));
  }
  SFS_RETURN_IF_ERROR(CheckKeys({&key, 1}));
  if (group.size() > kMaxKey) return Status::Errno(EINVAL, "kv group over 64 bytes");
  if (ttl_s > kMaxTtlSec) return Status::Errno(EINVAL, "kv ttl over 30 days");
  KvIndex::Put p;
  p.id = BlockId(tenant, ns, key);
  p.group = GroupId(tenant, ns, key, group);
  p.tenant = tenant;
  p.size = size;
  p.crc = crc32c::Value(data.data(), data.size());
  const std::string final_path = dir_ + "/" + p.id;
  const std::string tmp = final_path.substr(0, final_path.rfind('/')) + "/.tmp-" +
                          std::to_string(tmp_seq_.fetch_add(1, std::memory_order_relaxed));
  SFS_RETURN_IF_ERROR(WriteFile(tmp, data));
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t now = Now();
  p.expiry_ms = ttl_s == 0 ? 0 : now + static_cast<int64_t>(ttl_s) * 1000;
  KvIndex::Inserted r = index_.Insert(p, now);
  RemoveFiles(r.evicted);  // before the rename: one of them may be this key's old file
  if (!r.status.ok()) {
    ::unlink(tmp.c_str());
    return r.status;
  }
  if (::rename(tmp.c_str(), final_path.c_str()) != 0) {
    Status st = Status::FromErrno("rename " + tmp);
    index_.Remove(p.id);
    ::unlink(tmp.c_str());
    ::unlink(final_path.c_str());
    return st;
  }
  return Status::Ok();
}

Result<KvStore::OpenBlock> KvStore::OpenChecked(uint32_t tenant, const std::string& ns,
                                                const std::string& key, uint64_t size,
                                                uint32_t lease_ms) {
  SFS_RETURN_IF_ERROR(CheckKeys({&key, 1}));
  if (lease_ms > kMaxPinMs) return Status::Errno(EINVAL, "kv lease over 1 hour");
  const std::string id = BlockId(tenant, ns, key);
  const std::string path = dir_ + "/" + id;
  OpenBlock b;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> expired;
    const int64_t now = Now();
    std::optional<KvIndex::Found> f = index_.Lookup(id, now, true, &expired);
    RemoveFiles(expired);
    if (!f) return OpenBlock{};
    if (lease_ms > 0) index_.Pin(id, now + lease_ms);
    // Opened under mu_: the file the index describes, even if a put renames
    // a new one over it or an eviction unlinks it while we read.
    b.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    b.crc = f->crc;
  }
  struct stat st;
  if (b.fd >= 0 && ::fstat(b.fd, &st) == 0 && static_cast<uint64_t>(st.st_size) == size) {
    b.cached = InPageCache(b.fd, size);
    return b;
  }
  // Gone or of the wrong length (a sendfile could not finish its frame).
  LOG_ERROR("kv: indexed block " << path << (b.fd < 0 ? " lost" : " has the wrong size")
                                 << "; dropped");
  if (b.fd >= 0) ::close(b.fd);
  std::lock_guard<std::mutex> lock(mu_);
  if (index_.Remove(id)) ::unlink(path.c_str());
  return OpenBlock{};
}

Result<KvStore::OpenBlock> KvStore::Open(uint32_t tenant, const std::string& ns,
                                         const std::string& key, uint32_t lease_ms) {
  SFS_ASSIGN_OR_RETURN(uint64_t size, BlockSize(tenant, ns));
  return OpenChecked(tenant, ns, key, size, lease_ms);
}

Result<bool> KvStore::Get(uint32_t tenant, const std::string& ns, const std::string& key,
                          std::span<uint8_t> dest, uint32_t lease_ms, uint32_t* crc) {
  SFS_ASSIGN_OR_RETURN(uint64_t size, BlockSize(tenant, ns));
  if (dest.size() != size) {
    return Status::Errno(EINVAL, "kv get of " + std::to_string(dest.size()) +
                                     " bytes; namespace " + ns + " has " + std::to_string(size));
  }
  SFS_ASSIGN_OR_RETURN(OpenBlock b, OpenChecked(tenant, ns, key, size, lease_ms));
  if (b.fd < 0) return false;
  return ReadOpened(tenant, ns, key, b, dest, crc);
}

Result<bool> KvStore::ReadOpened(uint32_t tenant, const std::string& ns, const std::string& key,
                                 OpenBlock b, std::span<uint8_t> dest, uint32_t* crc) {
  Status st = ReadAll(b.fd, dest);
  ::close(b.fd);
  uint32_t got = st.ok() ? crc32c::Value(dest.data(), dest.size()) : 0;
  if (!st.ok() || got != b.crc) {
    const std::string id = BlockId(tenant, ns, key);
    LOG_ERROR("kv: block " << dir_ << "/" << id
                           << (st.ok() ? ": crc mismatch" : ": " + st.ToString()) << "; dropped");
    std::lock_guard<std::mutex> lock(mu_);
    if (index_.Remove(id)) ::unlink((dir_ + "/" + id).c_str());
    return false;
  }
  *crc = got;
  return true;
}

Result<std::vector<bool>> KvStore::Exists(uint32_t tenant, const std::string& ns,
                                          std::span<const std::string> keys, uint32_t lease_ms) {
  SFS_RETURN_IF_ERROR(BlockSize(tenant, ns).status());
  SFS_RETURN_IF_ERROR(CheckKeys(keys));
  if (lease_ms > kMaxPinMs) return Status::Errno(EINVAL, "kv lease over 1 hour");
  std::vector<bool> found;
  found.reserve(keys.size());
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> expired;
  const int64_t now = Now();
  for (const std::string& k : keys) {
    std::string id = BlockId(tenant, ns, k);
    bool hit = index_.Lookup(id, now, false, &expired).has_value();
    if (hit && lease_ms > 0) index_.Pin(id, now + lease_ms);
    found.push_back(hit);
  }
  RemoveFiles(expired);
  return found;
}

Result<std::vector<bool>> KvStore::Remove(uint32_t tenant, const std::string& ns,
                                          std::span<const std::string> keys) {
  SFS_RETURN_IF_ERROR(BlockSize(tenant, ns).status());
  SFS_RETURN_IF_ERROR(CheckKeys(keys));
  std::vector<bool> found;
  std::vector<std::string> gone;
  std::lock_guard<std::mutex> lock(mu_);
  for (const std::string& k : keys) {
    std::string id = BlockId(tenant, ns, k);
    bool had = index_.Remove(id);
    if (had) gone.push_back(id);
    found.push_back(had);
  }
  RemoveFiles(gone);
  return found;
}

Result<std::vector<bool>> KvStore::Pin(uint32_t tenant, const std::string& ns,
                                       std::span<const std::string> keys, uint32_t pin_ms) {
  SFS_RETURN_IF_ERROR(BlockSize(tenant, ns).status());
  SFS_RETURN_IF_ERROR(CheckKeys(keys));
  if (pin_ms > kMaxPinMs) return Status::Errno(EINVAL, "kv pin over 1 hour");
  std::vector<bool> found;
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t now = Now();
  for (const std::string& k : keys) {
    found.push_back(index_.Pin(BlockId(tenant, ns, k), pin_ms == 0 ? 0 : now + pin_ms));
  }
  return found;
}

uint64_t KvStore::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return index_.bytes();
}

uint64_t KvStore::blocks() const {
  std::lock_guard<std::mutex> lock(mu_);
  return index_.blocks();
}

uint64_t KvStore::evicted_groups() const {
  std::lock_guard<std::mutex> lock(mu_);
  return index_.evicted_groups();
}

}  // namespace sfs::oss::kv
