#include "client/lib/data_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "common/crc32c.h"
#include "common/log.h"

namespace sfs::client {
namespace {

constexpr uint32_t kMagic = 0x31434653;  // "SFC1"
constexpr char kBlocksFormat[] = "%016" PRIx64 "-%016" PRIx64 "-%08" PRIx64;

// The header before a block's bytes in its file. Little-endian, as every
// host this runs on.
struct FileHeader {
  uint32_t magic = kMagic;
  uint32_t len = 0;
  uint64_t ino = 0;
  uint64_t version = 0;
  uint64_t index = 0;
  uint32_t crc = 0;     // crc32c of the bytes
  uint32_t hcrc = 0;    // crc32c of the fields above
  uint32_t HeaderCrc() const { return crc32c::Value(this, offsetof(FileHeader, hcrc)); }
};
static_assert(sizeof(FileHeader) == 40);

bool MakeDirs(const std::string& path) {
  for (size_t i = 1; i <= path.size(); ++i) {
    if (i != path.size() && path[i] != '/') continue;
    std::string p = path.substr(0, i);
    if (mkdir(p.c_str(), 0700) != 0 && errno != EEXIST) return false;
  }
  struct stat st{};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

std::unique_ptr<DataCache> DataCache::Open(const Options& o) {
  std::unique_ptr<DataCache> c(new DataCache(o));
  if (!o.dir.empty()) {
    if (o.fs_id == 0) {
      LOG_WARN("cache: the MDS sends no file system id; " << o.dir << " not used (RAM only)");
    } else if (!c->InitDir()) {
      LOG_WARN("cache: cannot use " << o.dir << ": " << std::strerror(errno) << " (RAM only)");
    }
  }
  c->capacity_ = c->disk_ ? o.disk_bytes : o.ram_bytes;
  if (c->capacity_ == 0) return nullptr;
  if (c->disk_) c->IndexDir();
  c->stats_.capacity = c->capacity_;
  // The RAM tier's bound, plus a quarter for the class sizes' rounding and
  // room for the fetches in flight (a reader's or the prefetcher's block
  // before it is kept); past that, blocks take the heap.
  const uint64_t ram = c->disk_ ? o.ram_bytes : c->capacity_;
  if (ram > 0) c->arena_ = BlockArena::Create(ram + ram / 4 + (64u << 20));
  c->stats_.ram_capacity = o.ram_bytes;
  c->stats_.dir = c->disk_ ? c->root_ : "";
  return c;
}

DataCache::DataCache(const Options& o) : opts_(o) {}
DataCache::~DataCache() = default;

bool DataCache::InitDir() {
  char id[32];
  std::snprintf(id, sizeof(id), "%016" PRIx64, opts_.fs_id);
  root_ = opts_.dir + "/" + id;
  if (!MakeDirs(root_)) return false;
  // Writable? A read-only directory is found now, not at the first block.
  std::string probe = root_ + "/.probe";
  int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return false;
  ::close(fd);
  ::unlink(probe.c_str());
  disk_ = true;
  return true;
}

// Indexes the blocks a previous mount left (they rank as least recently
// used, in directory order); removes temporaries and what does not fit.
void DataCache::IndexDir() {
  DIR* d = opendir(root_.c_str());
  if (d == nullptr) return;
  std::vector<std::string> extra;
  size_t kept = 0;
  while (dirent* de = readdir(d)) {
    std::string name = de->d_name;
    if (name == "." || name == "..") continue;
    BlockKey k;
    char tail = 0;
    if (std::sscanf(name.c_str(), "%" SCNx64 "-%" SCNx64 "-%" SCNx64 "%c", &k.ino, &k.version,
                    &k.index, &tail) != 3) {
      extra.push_back(root_ + "/" + name);  // a temporary, or not ours
      continue;
    }
    struct stat st{};
    std::string path = root_ + "/" + name;
    if (stat(path.c_str(), &st) != 0 || st.st_size <= static_cast<off_t>(sizeof(FileHeader)) ||
        st.st_size > static_cast<off_t>(sizeof(FileHeader) + kBlockSize) ||
        bytes_ + st.st_size - sizeof(FileHeader) > capacity_) {
      extra.push_back(path);
      continue;
    }
    Entry e;
    e.key = next_key_++;
    e.len = static_cast<uint32_t>(st.st_size - sizeof(FileHeader));
    e.on_disk = true;
    bytes_ += e.len;
    policy_.Touch(e.key, k.ino);
    by_key_[e.key] = k;
    index_.emplace(k, std::move(e));
    ++kept;
  }
  closedir(d);
  for (const std::string& p : extra) ::unlink(p.c_str());
  if (kept > 0 || !extra.empty()) {
    LOG_INFO("cache: " << root_ << ": " << kept << " block(s) kept from before, " << extra.size()
                       << " file(s) removed");
  }
}

std::string DataCache::PathOf(const BlockKey& k) const {
  char name[64];
  std::snprintf(name, sizeof(name), kBlocksFormat, k.ino, k.version, k.index);
  return root_ + "/" + name;
}

DataCache::FileRead DataCache::ReadBlockFile(const BlockKey& k, uint32_t len, Block* out) {
  int fd = ::open(PathOf(k).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return FileRead::kMissing;
  FileHeader h;
  std::shared_ptr<uint8_t> bytes = Alloc(len);
  bool ok = ::pread(fd, &h, sizeof(h), 0) == static_cast<ssize_t>(sizeof(h)) &&
            h.magic == kMagic && h.hcrc == h.HeaderCrc() && h.len == len && h.ino == k.ino &&
            h.version == k.version && h.index == k.index &&
            ::pread(fd, bytes.get(), len, sizeof(h)) == static_cast<ssize_t>(len) &&
            crc32c::Value(bytes.get(), len) == h.crc;
  ::close(fd);
  if (!ok) return FileRead::kBad;
  out->data = std::move(bytes);
  out->len = len;
  return FileRead::kOk;
}

bool DataCache::WriteBlockFile(const BlockKey& k, const Block& b) {
  FileHeader h;
  h.len = b.len;
  h.ino = k.ino;
  h.version = k.version;
  h.index = k.index;
  h.crc = crc32c::Value(b.data.get(), b.len);
  h.hcrc = h.HeaderCrc();
  std::string path = PathOf(k);
  std::string tmp = path + ".tmp" + std::to_string(tmp_seq_.fetch_add(1));
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  bool ok = fd >= 0;
  if (ok) {
    iovec iov[2] = {{&h, sizeof(h)}, {const_cast<uint8_t*>(b.data.get()), b.len}};
    ok = ::pwritev(fd, iov, 2, 0) == static_cast<ssize_t>(sizeof(h) + b.len);
    ok = ::close(fd) == 0 && ok;
    ok = ok && ::rename(tmp.c_str(), path.c_str()) == 0;
    if (!ok) ::unlink(tmp.c_str());
  }
  if (!ok && !write_failed_logged_.exchange(true)) {
    LOG_WARN("cache: writing " << path << ": " << std::strerror(errno)
                               << " (blocks that cannot be written stay uncached)");
  }
  return ok;
}

Block DataCache::Get(const BlockKey& k, uint32_t len, bool count) {
  std::vector<std::string> unlink;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = index_.find(k);
    if (it != index_.end() && it->second.len != len) {
      EraseLocked(it, &unlink);
      it = index_.end();
    }
    if (it == index_.end()) {
      if (count) {
        ++stats_.misses;
        stats_.miss_bytes += len;
      }
      return {};
    }
    Entry& e = it->second;
    if (e.ram.data) {
      policy_.Touch(e.key, k.ino);
      if (disk_) ram_lru_.splice(ram_lru_.begin(), ram_lru_, e.ram_lru);
      if (count) {
        ++stats_.hits;
        stats_.hit_bytes += len;
      }
      return e.ram;
    }
  }
  for (const std::string& p : unlink) ::unlink(p.c_str());
  Block b;
  const FileRead got = ReadBlockFile(k, len, &b);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(k);
  if (got != FileRead::kOk) {
    // Missing: evicted meanwhile, or its file removed under us. Bad: a
    // flipped byte, a torn write; never served.
    if (it != index_.end() && it->second.on_disk && !it->second.ram.data) {
      std::vector<std::string> gone;
      EraseLocked(it, &gone);
      if (got == FileRead::kBad) {
        ++stats_.corrupt;
        for (const std::string& p : gone) ::unlink(p.c_str());  // rare: under the lock
        LOG_WARN("cache: block " << PathOf(k) << " failed its check; dropped, read again");
      }
    }
    if (count) {
      ++stats_.misses;
      stats_.miss_bytes += len;
    }
    return {};
  }
  if (count) {
    ++stats_.hits;
    stats_.hit_bytes += len;
  }
  if (it != index_.end()) {
    policy_.Touch(it->second.key, k.ino);
    KeepInRamLocked(k, it->second, b);
  }
  return b;
}

bool DataCache::Contains(const BlockKey& k) {
  std::lock_guard<std::mutex> lock(mu_);
  return index_.contains(k) || inflight_.contains(k);
}

void DataCache::Put(const BlockKey& k, Block b, bool prefetched) {
  if (b.len == 0 || b.len > capacity_) return;
  std::vector<std::string> unlink;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (index_.contains(k)) return;
    if (!MakeRoomLocked(b.len, &unlink)) return;
    Entry e;
    e.key = next_key_++;
    e.len = b.len;
    bytes_ += b.len;
    if (prefetched) {
      ++stats_.prefetched_blocks;
      stats_.prefetched_bytes += b.len;
    }
    policy_.Touch(e.key, k.ino);
    by_key_[e.key] = k;
    auto it = index_.emplace(k, std::move(e)).first;
    // Until its file is written, the RAM copy is what readers get.
    KeepInRamLocked(k, it->second, b);
  }
  for (const std::string& p : unlink) ::unlink(p.c_str());
  unlink.clear();
  if (!disk_) return;
  const bool written = WriteBlockFile(k, b);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(k);
  if (it == index_.end()) {
    if (written) unlink.push_back(PathOf(k));  // evicted meanwhile
  } else if (written) {
    it->second.on_disk = true;
    if (opts_.ram_bytes == 0) DropRamLocked(it->second);
  } else {
    std::vector<std::string> none;
    EraseLocked(it, &none);
  }
  for (const std::string& p : unlink) ::unlink(p.c_str());  // rare: under the lock
}

struct DataCache::Inflight {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;  // GUARDED_BY(mu)
  Block block;        // GUARDED_BY(mu)
};

std::shared_ptr<DataCache::Inflight> DataCache::Claim(const BlockKey& k, bool* owner) {
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, inserted] = inflight_.try_emplace(k);
  if (inserted) it->second = std::make_shared<Inflight>();
  *owner = inserted;
  return it->second;
}

void DataCache::Finish(const BlockKey& k, const std::shared_ptr<Inflight>& f, Block b) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = inflight_.find(k);
    if (it != inflight_.end() && it->second == f) inflight_.erase(it);
  }
  {
    std::lock_guard<std::mutex> lock(f->mu);
    f->done = true;
    f->block = std::move(b);
  }
  f->cv.notify_all();
}

Block DataCache::Wait(const std::shared_ptr<Inflight>& f) {
  std::unique_lock<std::mutex> lock(f->mu);
  f->cv.wait(lock, [&] { return f->done; });
  return f->block;
}

void DataCache::KeepInRamLocked(const BlockKey& k, Entry& e, Block b) {
  if (!disk_) {
    e.ram = std::move(b);  // RAM is the cache tier: counted in bytes_
    return;
  }
  if (e.ram.data) return;
  e.ram = std::move(b);
  ram_used_ += e.len;
  ram_lru_.push_front(k);
  e.ram_lru = ram_lru_.begin();
  while (ram_used_ > opts_.ram_bytes && !ram_lru_.empty()) {
    auto victim = index_.find(ram_lru_.back());
    // A block whose file is not written yet keeps its RAM copy.
    if (victim == index_.end() || !victim->second.on_disk) break;
    DropRamLocked(victim->second);
  }
}

void DataCache::DropRamLocked(Entry& e) {
  if (!e.ram.data) return;
  e.ram = {};
  if (disk_) {
    ram_used_ -= e.len;
    ram_lru_.erase(e.ram_lru);
  }
}

bool DataCache::MakeRoomLocked(uint64_t need, std::vector<std::string>* unlink) {
  while (bytes_ + need > capacity_) {
    std::optional<CachePolicy::Key> v = policy_.Victim();
    if (!v) return false;
    auto it = index_.find(by_key_.at(*v));
    EraseLocked(it, unlink);
    ++stats_.evictions;
  }
  return true;
}

void DataCache::EraseLocked(std::unordered_map<BlockKey, Entry, BlockKeyHash>::iterator it,
                            std::vector<std::string>* unlink) {
  Entry& e = it->second;
  DropRamLocked(e);
  if (e.on_disk) unlink->push_back(PathOf(it->first));
  bytes_ -= e.len;
  policy_.Remove(e.key);
  by_key_.erase(e.key);
  index_.erase(it);
}

void DataCache::SetHint(const std::vector<uint64_t>& groups) {
  std::lock_guard<std::mutex> lock(mu_);
  policy_.SetHint(groups);
  stats_.hint_length = groups.size();
}

void DataCache::AddUse(uint64_t ino, uint64_t pos) {
  std::lock_guard<std::mutex> lock(mu_);
  policy_.AddUse(ino, pos);
}

uint64_t DataCache::Consume(uint64_t ino) {
  std::lock_guard<std::mutex> lock(mu_);
  return policy_.Consume(ino);
}

bool DataCache::WorthFetching(uint64_t pos, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (bytes_ + bytes <= capacity_) return true;
  uint64_t v = policy_.VictimNextUse();
  return v == CachePolicy::kNever || v > pos;
}

std::shared_ptr<uint8_t> DataCache::Alloc(size_t n) {
  if (arena_) return arena_->Alloc(n);
  return std::shared_ptr<uint8_t>(new uint8_t[n], std::default_delete<uint8_t[]>());
}

void DataCache::Drop() {
  std::vector<std::string> unlink;
  {
    std::lock_guard<std::mutex> lock(mu_);
    while (!index_.empty()) EraseLocked(index_.begin(), &unlink);
    policy_.Clear();
  }
  for (const std::string& p : unlink) ::unlink(p.c_str());
  if (arena_) arena_->Trim();
}

CacheStats DataCache::Stats() {
  std::lock_guard<std::mutex> lock(mu_);
  CacheStats s = stats_;
  s.bytes = bytes_;
  s.blocks = index_.size();
  s.ram_bytes = disk_ ? ram_used_ : bytes_;
  if (!disk_) s.ram_capacity = capacity_;
  if (arena_) {
    BlockArena::Stats a = arena_->GetStats();
    s.ram_carved = a.carved;
    s.ram_reused = a.reused;
  }
  return s;
}

void DataCache::CountJoined(uint32_t len) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.joined_bytes += len;
}

void DataCache::CountPrefetch(bool fetched) {
  std::lock_guard<std::mutex> lock(mu_);
  ++(fetched ? stats_.prefetch_files : stats_.prefetch_skipped);
}

}  // namespace sfs::client
