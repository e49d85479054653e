#include "client/lib/cache_io.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace sfs::client {
namespace {

constexpr uint64_t kB = DataCache::kBlockSize;

BlockKey KeyOf(const File& f, uint64_t index) {
  return BlockKey{.ino = f.ino_, .version = f.data_version_, .index = index};
}

uint32_t LenOf(uint64_t size, uint64_t index) {
  return static_cast<uint32_t>(std::min(kB, size - index * kB));
}

// Blocks [first, last] of f: what the cache holds; each run of missing ones
// this call claimed is read with one striped read and kept; the ones another
// call is fetching are waited for (and read here only if that failed).
// REQUIRES: last * kB < size.
Status Gather(DataCache& cache, Striper& striper, const File& f, uint64_t size, uint64_t first,
              uint64_t last, bool count, std::vector<Block>* blocks) {
  const uint64_t n = last - first + 1;
  blocks->assign(n, Block{});
  std::vector<std::shared_ptr<DataCache::Inflight>> claims(n);
  std::vector<bool> mine(n, false);
  for (uint64_t i = first; i <= last; ++i) {
    (*blocks)[i - first] = cache.Get(KeyOf(f, i), LenOf(size, i), count);
    if ((*blocks)[i - first].data) continue;
    bool owner = false;
    claims[i - first] = cache.Claim(KeyOf(f, i), &owner);
    mine[i - first] = owner;
  }
  Status st;
  for (uint64_t i = first; i <= last;) {
    if (!mine[i - first]) {
      ++i;
      continue;
    }
    uint64_t j = i;
    while (j + 1 <= last && mine[j + 1 - first]) ++j;
    const uint64_t start = i * kB, end = std::min(size, (j + 1) * kB);
    std::shared_ptr<uint8_t> run = cache.Alloc(end - start);
    Status rs = st.ok() ? striper.Read(f.layout_, start, std::span<uint8_t>(run.get(), end - start))
                        : st;
    for (uint64_t k = i; k <= j; ++k) {
      Block b;
      if (rs.ok()) {
        // Each block shares the run's buffer (no copy): it is freed with the last of them.
        b = Block{.data = std::shared_ptr<const uint8_t>(run, run.get() + (k - i) * kB),
                  .len = LenOf(size, k)};
        cache.Put(KeyOf(f, k), b, /*prefetched=*/!count);
      }
      cache.Finish(KeyOf(f, k), claims[k - first], b);
      (*blocks)[k - first] = std::move(b);
    }
    if (!rs.ok()) st = rs;
    i = j + 1;
  }
  SFS_RETURN_IF_ERROR(st);
  for (uint64_t i = first; i <= last; ++i) {
    if ((*blocks)[i - first].data || mine[i - first]) continue;
    Block b = DataCache::Wait(claims[i - first]);
    if (b.data && count) cache.CountJoined(b.len);
    if (!b.data) {  // the other fetch failed: try once more here, uncached
      const uint32_t len = LenOf(size, i);
      std::shared_ptr<uint8_t> own(new uint8_t[len], std::default_delete<uint8_t[]>());
      SFS_RETURN_IF_ERROR(striper.Read(f.layout_, i * kB, std::span<uint8_t>(own.get(), len)));
      b = Block{.data = own, .len = len};
    }
    (*blocks)[i - first] = std::move(b);
  }
  return Status::Ok();
}

}  // namespace

Status CachedRead(DataCache& cache, Striper& striper, const File& f, uint64_t size, uint64_t off,
                  std::span<uint8_t> buf) {
  if (buf.empty()) return Status::Ok();
  const uint64_t first = off / kB, last = (off + buf.size() - 1) / kB;
  std::vector<Block> blocks;
  SFS_RETURN_IF_ERROR(Gather(cache, striper, f, size, first, last, true, &blocks));
  size_t done = 0;
  for (uint64_t i = first; i <= last; ++i) {
    const uint64_t in = (off + done) - i * kB;
    const size_t n = std::min<uint64_t>(blocks[i - first].len - in, buf.size() - done);
    std::memcpy(buf.data() + done, blocks[i - first].data.get() + in, n);
    done += n;
  }
  return Status::Ok();
}

Status CacheFill(DataCache& cache, Striper& striper, const File& f, uint64_t size, uint64_t off,
                 uint64_t end) {
  end = std::min(end, size);
  if (off >= end) return Status::Ok();
  std::vector<Block> blocks;
  return Gather(cache, striper, f, size, off / kB, (end - 1) / kB, false, &blocks);
}

uint64_t MissingBytes(DataCache& cache, uint64_t ino, uint64_t version, uint64_t size,
                      uint64_t off, uint64_t end) {
  end = std::min(end, size);
  uint64_t missing = 0;
  for (uint64_t i = off / kB; off < end && i <= (end - 1) / kB; ++i) {
    if (!cache.Contains(BlockKey{.ino = ino, .version = version, .index = i})) {
      missing += LenOf(size, i);
    }
  }
  return missing;
}

uint64_t MissingBytes(DataCache& cache, const File& f, uint64_t size, uint64_t off, uint64_t end) {
  return MissingBytes(cache, f.ino_, f.data_version_, size, off, end);
}

}  // namespace sfs::client
