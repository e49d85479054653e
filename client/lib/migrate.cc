// Client-side restriping of a file (Client::Migrate): MigrateBegin at the MDS,
// a parallel copy from the old objects to the new ones, MigrateCommit.
//
// The copy reads and writes through the Striper, which already sends every
// stripe's piece of a range to its OSS at once; on top of that a few workers
// copy different chunks concurrently, so many OSSes are busy on both sides.
// Chunks that read as all zeros are not written: holes (and zero runs) stay
// unallocated in the new objects. A final Truncate gives every new object the
// size it has in a file of this size, so the file's end, even in a hole, is
// right. The new objects are synced before the commit, so the swap never
// points at data that a crash could lose. Any failure aborts the migration
// at the MDS, which frees the new objects; the file is then unchanged.
#include "client/lib/migrate.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

namespace sfs::client {
namespace {

constexpr uint64_t kChunk = 8 << 20;
constexpr uint64_t kWorkers = 4;

bool AllZero(const uint8_t* p, size_t n) {
  return n == 0 || (p[0] == 0 && std::memcmp(p, p + 1, n - 1) == 0);
}

// Copies [0, size) from `from` to `to`; the first error wins.
Status CopyData(Striper& striper, const LayoutSpec& from, const LayoutSpec& to, uint64_t size) {
  uint64_t chunks = (size + kChunk - 1) / kChunk;
  std::atomic<uint64_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
  Status first;
  auto worker = [&] {
    std::vector<uint8_t> buf(std::min(kChunk, size));
    for (uint64_t i = next++; i < chunks && !failed; i = next++) {
      uint64_t off = i * kChunk;
      std::span<uint8_t> piece(buf.data(), std::min(kChunk, size - off));
      Status st = striper.Read(from, off, piece);
      if (st.ok() && !AllZero(piece.data(), piece.size())) st = striper.Write(to, off, piece);
      if (!st.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        if (!failed.exchange(true)) first = st;
      }
    }
  };
  std::vector<std::thread> threads;
  for (uint64_t i = 0; i < std::min(kWorkers, chunks); ++i) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  return first;
}

Status CopyAndSettle(Striper& striper, const MigratePlan& plan) {
  SFS_RETURN_IF_ERROR(CopyData(striper, plan.old_layout, plan.new_layout, plan.attr.size));
  SFS_RETURN_IF_ERROR(striper.Truncate(plan.new_layout, plan.attr.size));
  return striper.Sync(plan.new_layout);
}

}  // namespace

Result<LayoutSpec> MigrateFile(MdsClient& mds, Striper& striper, const Cred& c, uint64_t ino,
                               const LayoutSpec& spec) {
  SFS_ASSIGN_OR_RETURN(MigratePlan plan, mds.MigrateBegin(c, ino, spec));
  Status st = CopyAndSettle(striper, plan);
  if (!st.ok()) {
    (void)mds.MigrateCommit(c, ino, plan.new_layout, /*abort=*/true, std::nullopt);
    return Status(st.code(), "copying the data: " + st.message());
  }
  Result<uint64_t> blocks = striper.Blocks(plan.new_layout);
  std::optional<uint64_t> b;
  if (blocks.ok()) b = *blocks;
  SFS_RETURN_IF_ERROR(mds.MigrateCommit(c, ino, plan.new_layout, /*abort=*/false, b));
  return plan.new_layout;
}

}  // namespace sfs::client
