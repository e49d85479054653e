// sfs-bench train (train_bench.h).
#include "tools/bench/train_bench.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "client/lib/client.h"

namespace sfs::bench {
namespace {

constexpr const char* kUsage =
    "usage: sfs-bench train -o DIR [-n FILES (default 2000)] [--workers K (default 4)]\n"
    "                       [--epochs E (default 3)] [--seed S] [--prepare] [--json]\n"
    "                       [--drop-caches] [--shards S [--shard-size SIZE] [--read-size SIZE]]\n"
    "                       [--mds HOST:PORT [--cache-ram SIZE] [--hint] [--transport T]\n"
    "                        [--prefetch-threads N] [--prefetch-depth N]]\n"
    "Reads DIR/s000000.. (written first with --prepare: 4-256 KiB each, mean about\n"
    "105 KiB) once per epoch in a new seeded permutation, split across K threads as\n"
    "DistributedSampler splits it. With --mds DIR is inside StripeFS, read through\n"
    "libsfs; --cache-ram turns the client cache on (0 = off), --hint hands it each\n"
    "epoch's order first (its hand-over is part of the epoch's time). Without --mds\n"
    "DIR is any directory (ext4, a mount), read with pread. --drop-caches writes 3 to\n"
    "/proc/sys/vm/drop_caches before each epoch (root; this machine's page cache:\n"
    "clients' and servers' on one host; it disturbs everything else running).\n"
    "--shards S reads S tar-style shards DIR/shard-0000.. instead (--shard-size each,\n"
    "default 128M; records of 4-256 KiB back to back) in a new seeded shard order\n"
    "every epoch, shard k of it by thread k mod K, each front to back in --read-size\n"
    "reads (default 1M); --hint hands the cache the epoch's shard order.\n";

double Since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Args {
  std::string dir, mds, transport = "auto";
  int files = 2000, workers = 4, epochs = 3;
  uint64_t seed = 1, cache_ram = 0;
  int prefetch_threads = 0, prefetch_depth = 0;  // 0 = client::Options' defaults
  bool hint = false, prepare = false, json = false, drop_caches = false;
  int shards = 0;  // > 0: the shards mode
  uint64_t shard_size = uint64_t{128} << 20, read_size = uint64_t{1} << 20;
};

bool Parse(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    std::string f = argv[i];
    if (f == "--json") { a->json = true; continue; }
    if (f == "--hint") { a->hint = true; continue; }
    if (f == "--prepare") { a->prepare = true; continue; }
    if (f == "--drop-caches") { a->drop_caches = true; continue; }
    if (i + 1 >= argc) return false;
    const char* v = argv[++i];
    if (f == "-o") a->dir = v;
    else if (f == "-n") a->files = std::atoi(v);
    else if (f == "--workers") a->workers = std::atoi(v);
    else if (f == "--epochs") a->epochs = std::atoi(v);
    else if (f == "--seed") a->seed = std::strtoull(v, nullptr, 10);
    else if (f == "--mds") a->mds = v;
    else if (f == "--transport") a->transport = v;
    else if (f == "--prefetch-threads") a->prefetch_threads = std::atoi(v);
    else if (f == "--prefetch-depth") a->prefetch_depth = std::atoi(v);
    else if (f == "--shards") a->shards = std::atoi(v);
    else if (f == "--cache-ram" || f == "--shard-size" || f == "--read-size") {
      Result<uint64_t> n = client::ParseSize(v);
      if (!n.ok()) return false;
      (f == "--cache-ram" ? a->cache_ram : f == "--shard-size" ? a->shard_size : a->read_size) = *n;
    } else return false;
  }
  if (a->shards < 0 ||
      (a->shards > 0 && (a->shard_size < 8 || a->shard_size >= (uint64_t{1} << 40) ||
                         a->read_size == 0 || a->read_size > (256 << 20)))) {
    return false;
  }
  if (a->hint && a->cache_ram == 0) return false;
  if (a->prefetch_threads < 0 || a->prefetch_depth < 0) return false;
  return !a->dir.empty() && a->files > 0 && a->workers > 0 && a->epochs > 0;
}

// File i's size and bytes: deterministic from (seed, i), so --prepare and the
// readers agree without a manifest. The first 8 bytes are i (checked on read).
uint64_t SizeOf(uint64_t seed, int i) {
  std::mt19937_64 r(seed * 7919 + static_cast<uint64_t>(i));
  double u = std::uniform_real_distribution<double>(0, 1)(r);
  return 4096 + static_cast<uint64_t>(((256 << 10) - 4096) * std::pow(u, 1.5));
}

std::string NameOf(int i) {
  char b[16];
  std::snprintf(b, sizeof b, "s%06d", i);
  return b;
}

std::string ShardName(int i) {
  char b[16];
  std::snprintf(b, sizeof b, "shard-%04d", i);
  return b;
}

// Shard s's 8-byte word at offset o (a multiple of 8): checked on read.
uint64_t ShardWord(int s, uint64_t o) { return (static_cast<uint64_t>(s) << 40) | o; }

// The records (samples) of shard s: sizes as the files' (SizeOf), back to
// back, the last one cut at the shard's end.
uint64_t ShardSamples(uint64_t seed, int s, uint64_t shard_size) {
  uint64_t n = 0;
  for (uint64_t at = 0; at < shard_size; ++n) {
    at += SizeOf(seed + static_cast<uint64_t>(s), static_cast<int>(n));
  }
  return n;
}

// The first and last whole words of a read [off, off + data.size()) of shard s.
Status CheckShard(int s, uint64_t off, std::span<const uint8_t> data) {
  const uint64_t first = (off + 7) / 8 * 8, end = off + data.size();
  for (uint64_t o : {first, end >= 8 ? (end - 8) / 8 * 8 : first}) {
    if (o < first || o + 8 > end) continue;
    uint64_t v;
    std::memcpy(&v, data.data() + (o - off), 8);
    if (v != ShardWord(s, o)) {
      return Status(EIO, ShardName(s) + ": wrong bytes at " + std::to_string(o) + " (--prepare?)");
    }
  }
  return Status();
}

// The storage the loader reads: whole files, or shards front to back.
class Store {
 public:
  using ChunkFn = std::function<Status(uint64_t off, std::span<const uint8_t> data)>;
  virtual ~Store() = default;
  virtual Status Write(const std::string& name, std::span<const uint8_t> data) = 0;
  virtual Result<size_t> ReadWhole(const std::string& name, std::vector<uint8_t>* buf) = 0;
  // Reads name front to back in reads of buf's size, each timed into lat (ms)
  // and handed to each; the bytes read.
  virtual Result<uint64_t> ReadSequential(const std::string& name, std::span<uint8_t> buf,
                                          std::vector<double>* lat, const ChunkFn& each) = 0;
};

class PosixStore final : public Store {
 public:
  explicit PosixStore(std::string dir) : dir_(std::move(dir)) { ::mkdir(dir_.c_str(), 0755); }
  Status Write(const std::string& name, std::span<const uint8_t> data) override {
    std::string p = dir_ + "/" + name;
    int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return Status(errno, p);
    ssize_t n = ::pwrite(fd, data.data(), data.size(), 0);
    ::close(fd);
    return n == static_cast<ssize_t>(data.size()) ? Status() : Status(EIO, p + ": short write");
  }
  Result<size_t> ReadWhole(const std::string& name, std::vector<uint8_t>* buf) override {
    std::string p = dir_ + "/" + name;
    int fd = ::open(p.c_str(), O_RDONLY);
    if (fd < 0) return Status(errno, p);
    struct stat st;
    ::fstat(fd, &st);
    if (buf->size() < static_cast<size_t>(st.st_size)) buf->resize(st.st_size);
    ssize_t n = ::pread(fd, buf->data(), st.st_size, 0);
    ::close(fd);
    if (n < 0) return Status(errno, p);
    return static_cast<size_t>(n);
  }
  Result<uint64_t> ReadSequential(const std::string& name, std::span<uint8_t> buf,
                                  std::vector<double>* lat, const ChunkFn& each) override {
    std::string p = dir_ + "/" + name;
    int fd = ::open(p.c_str(), O_RDONLY);
    if (fd < 0) return Status(errno, p);
    uint64_t off = 0;
    Status st;
    while (st.ok()) {
      auto t1 = std::chrono::steady_clock::now();
      ssize_t n = ::read(fd, buf.data(), buf.size());
      lat->push_back(Since(t1) * 1e3);
      if (n < 0) st = Status(errno, p);
      if (n <= 0) break;
      st = each(off, buf.first(static_cast<size_t>(n)));
      off += static_cast<uint64_t>(n);
    }
    ::close(fd);
    if (!st.ok()) return st;
    return off;
  }

 private:
  std::string dir_;
};

class SfsStore final : public Store {
 public:
  static Result<std::unique_ptr<SfsStore>> Make(const Args& a) {
    client::Options o;
    o.mds_address = a.mds;
    SFS_ASSIGN_OR_RETURN(o.transport, client::ParseTransport(a.transport));
    o.cache_ram = a.cache_ram;
    // As a loader's close(2) through sfs-mount (-o close_delay_ms, default 10)
    // and the Python binding's (close_delay=0.01): the release of a file read
    // rides on the next MDS request instead of a round trip of its own.
    o.close_delay = std::chrono::milliseconds(10);
    if (a.prefetch_threads > 0) o.prefetch_threads = a.prefetch_threads;
    if (a.prefetch_depth > 0) o.prefetch_depth = a.prefetch_depth;
    SFS_ASSIGN_OR_RETURN(std::unique_ptr<client::Client> c, client::Client::Connect(o));
    auto s = std::unique_ptr<SfsStore>(new SfsStore(std::move(c), a.dir));
    Result<client::Attr> d = s->c_->ResolvePath(s->cred_, a.dir);
    if (!d.ok() && d.status().code() == ENOENT && a.prepare) {
      SFS_ASSIGN_OR_RETURN(client::Attr parent, s->c_->ResolvePath(s->cred_, ParentOf(a.dir)));
      d = s->c_->Mkdir(s->cred_, parent.ino, BaseOf(a.dir), 0755);
    }
    if (!d.ok()) return d.status();
    s->dir_ino_ = d->ino;
    return s;
  }
  client::Client& client() { return *c_; }
  const client::Cred& cred() const { return cred_; }
  const std::string& dir() const { return dir_; }

  Status Write(const std::string& name, std::span<const uint8_t> data) override {
    client::Attr attr;
    SFS_ASSIGN_OR_RETURN(
        std::shared_ptr<client::File> f,
        c_->Create(cred_, dir_ino_, name, 0644, O_WRONLY | O_CREAT | O_TRUNC, &attr));
    Result<size_t> w = c_->Write(*f, 0, data);
    Status closed = c_->Close(f);
    if (!w.ok()) return w.status();
    return closed;
  }
  Result<size_t> ReadWhole(const std::string& name, std::vector<uint8_t>* buf) override {
    // An open by path: one MDS round trip, as a loader's open(2) through the
    // mount (names under leases) and the Python binding cost.
    client::Attr attr;
    SFS_ASSIGN_OR_RETURN(std::shared_ptr<client::File> f,
                         c_->OpenPath(cred_, dir_ + "/" + name, O_RDONLY, &attr));
    if (buf->size() < attr.size) buf->resize(attr.size);
    Result<size_t> n = c_->Read(*f, 0, std::span<uint8_t>(buf->data(), attr.size));
    Status closed = c_->Close(f);
    if (!n.ok()) return n.status();
    if (!closed.ok()) return closed;
    return *n;
  }
  Result<uint64_t> ReadSequential(const std::string& name, std::span<uint8_t> buf,
                                  std::vector<double>* lat, const ChunkFn& each) override {
    client::Attr attr;
    SFS_ASSIGN_OR_RETURN(std::shared_ptr<client::File> f,
                         c_->OpenPath(cred_, dir_ + "/" + name, O_RDONLY, &attr));
    uint64_t off = 0;
    Status st;
    while (st.ok()) {
      auto t1 = std::chrono::steady_clock::now();
      Result<size_t> n = c_->Read(*f, off, buf);
      lat->push_back(Since(t1) * 1e3);
      if (!n.ok()) st = n.status();
      if (!n.ok() || *n == 0) break;
      st = each(off, buf.first(*n));
      off += *n;
    }
    Status closed = c_->Close(f);
    if (!st.ok()) return st;
    if (!closed.ok()) return closed;
    return off;
  }

 private:
  SfsStore(std::unique_ptr<client::Client> c, std::string dir)
      : c_(std::move(c)), dir_(std::move(dir)) {
    cred_.uid = getuid();
    cred_.gid = getgid();
  }
  static std::string ParentOf(const std::string& p) {
    size_t s = p.find_last_of('/');
    return s == 0 || s == std::string::npos ? "/" : p.substr(0, s);
  }
  static std::string BaseOf(const std::string& p) { return p.substr(p.find_last_of('/') + 1); }

  std::unique_ptr<client::Client> c_;
  client::Cred cred_;
  std::string dir_;
  uint64_t dir_ino_ = 0;
};

struct Epoch {
  double seconds = 0, p50_ms = 0, p99_ms = 0, hit_rate = 0;
  uint64_t bytes = 0, oss_bytes = 0;
};

// Empties this machine's page cache (dirty pages written first).
Status DropCaches() {
  ::sync();
  int fd = ::open("/proc/sys/vm/drop_caches", O_WRONLY);
  if (fd < 0) return Status(errno, "/proc/sys/vm/drop_caches (root only)");
  ssize_t n = ::write(fd, "3\n", 2);
  int err = errno;
  ::close(fd);
  return n == 2 ? Status() : Status(err, "writing /proc/sys/vm/drop_caches");
}

int Fail(const std::string& what, const Status& st) {
  std::fprintf(stderr, "sfs-bench train: %s: %s\n", what.c_str(), st.ToString().c_str());
  return 1;
}

}  // namespace

int RunTrain(int argc, char** argv) {
  Args a;
  if (argc > 1 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (!Parse(argc, argv, &a)) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  std::unique_ptr<Store> store;
  SfsStore* sfs = nullptr;
  if (a.mds.empty()) {
    store = std::make_unique<PosixStore>(a.dir);
  } else {
    auto s = SfsStore::Make(a);
    if (!s.ok()) return Fail(a.dir, s.status());
    sfs = s->get();
    store = std::move(*s);
  }
  // What an epoch reads: the files, or the shards (a.shards > 0).
  const bool sharded = a.shards > 0;
  const int units = sharded ? a.shards : a.files;
  auto name_of = [&](int i) { return sharded ? ShardName(i) : NameOf(i); };
  uint64_t dataset = 0, samples = 0;
  for (int i = 0; i < units; ++i) {
    dataset += sharded ? a.shard_size : SizeOf(a.seed, i);
    samples += sharded ? ShardSamples(a.seed, i, a.shard_size) : 1;
  }
  if (a.prepare) {
    std::vector<uint8_t> buf;
    for (int i = 0; i < units; ++i) {
      buf.resize(sharded ? a.shard_size : SizeOf(a.seed, i));
      std::mt19937_64 r(a.seed ^ (static_cast<uint64_t>(i) << 20));
      for (size_t j = 0; j + 8 <= buf.size(); j += 8) {
        uint64_t v = sharded ? ShardWord(i, j) : j == 0 ? static_cast<uint64_t>(i) : r();
        std::memcpy(buf.data() + j, &v, 8);
      }
      Status st = store->Write(name_of(i), buf);
      if (!st.ok()) return Fail("prepare " + name_of(i), st);
    }
  }
  std::vector<Epoch> epochs;
  for (int e = 0; e < a.epochs; ++e) {
    std::vector<int> order(units);
    for (int i = 0; i < units; ++i) order[i] = i;
    std::mt19937_64 rng(a.seed * 1000003 + static_cast<uint64_t>(e));
    std::shuffle(order.begin(), order.end(), rng);
    if (a.drop_caches) {
      Status st = DropCaches();
      if (!st.ok()) return Fail("--drop-caches", st);
    }
    client::CacheStats before;
    if (sfs != nullptr && a.cache_ram > 0) before = *sfs->client().CacheStatus();
    auto t0 = std::chrono::steady_clock::now();
    if (sfs != nullptr && a.cache_ram > 0) {
      if (a.hint) {
        // One cache per process: the hint is the whole epoch in the order the
        // K threads together read it (worker w takes order[w], order[w+K]...).
        std::vector<client::PrefetchItem> items;
        items.reserve(order.size());
        for (int i : order) items.push_back({sfs->dir() + "/" + name_of(i), 0, UINT64_MAX});
        Status st = sfs->client().Prefetch(sfs->cred(), std::move(items));
        if (!st.ok()) return Fail("prefetch", st);
      }
    }
    std::vector<std::vector<double>> lat(a.workers);
    std::atomic<uint64_t> bytes{0};
    std::mutex err_mu;
    Status err;
    std::vector<std::thread> threads;
    for (int w = 0; w < a.workers; ++w) {
      threads.emplace_back([&, w] {
        std::vector<uint8_t> buf(sharded ? a.read_size : 256 << 10);
        // One unit (a shard, or a file): the bytes read, or what was wrong.
        auto read_one = [&](int i) -> Result<uint64_t> {
          if (sharded) {
            Result<uint64_t> n = store->ReadSequential(
                ShardName(i), buf, &lat[w],
                [i](uint64_t off, std::span<const uint8_t> d) { return CheckShard(i, off, d); });
            if (n.ok() && *n != a.shard_size) {
              return Status(EIO, ShardName(i) + ": wrong size (--prepare?)");
            }
            return n;
          }
          auto t1 = std::chrono::steady_clock::now();
          Result<size_t> n = store->ReadWhole(NameOf(i), &buf);
          lat[w].push_back(Since(t1) * 1e3);
          if (!n.ok()) return n.status();
          uint64_t id = 0;
          if (*n >= 8) std::memcpy(&id, buf.data(), 8);
          if (*n != SizeOf(a.seed, i) || id != static_cast<uint64_t>(i)) {
            return Status(EIO, NameOf(i) + ": wrong size or bytes (--prepare?)");
          }
          return uint64_t{*n};
        };
        for (size_t k = w; k < order.size(); k += a.workers) {
          Result<uint64_t> n = read_one(order[k]);
          if (!n.ok()) {
            std::lock_guard<std::mutex> l(err_mu);
            if (err.ok()) err = n.status();
            return;
          }
          bytes += *n;
        }
      });
    }
    for (auto& t : threads) t.join();
    Epoch ep;
    ep.seconds = Since(t0);
    if (!err.ok()) return Fail("epoch " + std::to_string(e + 1), err);
    ep.bytes = bytes;
    ep.oss_bytes = bytes;
    if (sfs != nullptr && a.cache_ram > 0) {
      client::CacheStats after = *sfs->client().CacheStatus();
      uint64_t hits = after.hits - before.hits, misses = after.misses - before.misses;
      ep.hit_rate = hits + misses ? static_cast<double>(hits) / (hits + misses) : 0;
      // Fetched from OSSes: what readers missed and fetched themselves (not
      // waited for from a prefetch in flight) plus what prefetch and read-ahead brought.
      ep.oss_bytes = (after.miss_bytes - before.miss_bytes) -
                     (after.joined_bytes - before.joined_bytes) +
                     (after.prefetched_bytes - before.prefetched_bytes);
    }
    std::vector<double> all;
    for (auto& l : lat) all.insert(all.end(), l.begin(), l.end());
    std::sort(all.begin(), all.end());
    ep.p50_ms = all[all.size() / 2];
    ep.p99_ms = all[std::min(all.size() - 1, all.size() * 99 / 100)];
    epochs.push_back(ep);
  }
  const char* mode = sfs == nullptr ? "posix" : a.cache_ram == 0 ? "no-cache"
                                               : a.hint ? "cache+hint" : "cache-lru";
  if (a.json) {
    std::printf("{\"mode\": \"%s\", \"files\": %d, \"shards\": %d, \"samples\": %llu, "
                "\"workers\": %d, \"dataset_bytes\": %llu, \"cache_bytes\": %llu, \"epochs\": [",
                mode, sharded ? 0 : a.files, a.shards, static_cast<unsigned long long>(samples),
                a.workers, static_cast<unsigned long long>(dataset),
                static_cast<unsigned long long>(a.cache_ram));
    for (size_t e = 0; e < epochs.size(); ++e) {
      const Epoch& ep = epochs[e];
      std::printf("%s{\"seconds\": %.4f, \"samples_per_s\": %.1f, \"mib_per_s\": %.1f, "
                  "\"hit_rate\": %.4f, \"bytes\": %llu, \"oss_bytes\": %llu, \"p50_ms\": %.3f, "
                  "\"p99_ms\": %.3f}",
                  e ? ", " : "", ep.seconds, samples / ep.seconds,
                  ep.bytes / 1048576.0 / ep.seconds, ep.hit_rate,
                  static_cast<unsigned long long>(ep.bytes),
                  static_cast<unsigned long long>(ep.oss_bytes), ep.p50_ms, ep.p99_ms);
    }
    std::printf("]}\n");
  } else {
    std::printf("train: %s, %d %s (%.1f MiB, %llu samples), %d workers, cache %.1f MiB\n", mode,
                units, sharded ? "shards" : "files", dataset / 1048576.0,
                static_cast<unsigned long long>(samples), a.workers, a.cache_ram / 1048576.0);
    for (size_t e = 0; e < epochs.size(); ++e) {
      const Epoch& ep = epochs[e];
      std::printf("  epoch %zu  %8.3f s  %9.1f samples/s  %7.1f MiB/s  hit %5.1f%%  "
                  "OSS %.2fx dataset  p50 %.3f ms  p99 %.3f ms\n",
                  e + 1, ep.seconds, samples / ep.seconds, ep.bytes / 1048576.0 / ep.seconds,
                  100 * ep.hit_rate,
                  static_cast<double>(ep.oss_bytes) / dataset, ep.p50_ms, ep.p99_ms);
    }
  }
  return 0;
}

}  // namespace sfs::bench
