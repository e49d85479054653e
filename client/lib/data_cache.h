// DataCache: libsfs's client cache of file data (issue 18; docs/cache.md).
//
// Blocks of kBlockSize aligned bytes, keyed by (inode, data version, block
// index): the MDS bumps a file's data version at every open for writing and
// every truncate, and only an open that no writer shares is served from or
// fills the cache (Client::Read), so one key always names one content and a
// rewrite can never mix old and new bytes.
//
// Two tiers. With a directory, the directory is the cache (bounded by
// disk_bytes, eviction by CachePolicy) and RAM keeps the most recently used
// of its blocks (bounded by ram_bytes, LRU, a copy saved the pread). Without
// one, RAM is the cache (ram_bytes, CachePolicy). A directory block is one
// file `<dir>/<fs id>/<ino>-<version>-<index>` (hex) with a header carrying
// its key, length and crc32c, written to a temporary name and renamed, so a
// crash leaves whole blocks or temporaries (removed at the next start); a
// block whose header or checksum does not match is deleted and counted
// (corrupt) and read again from the OSSes. The directory survives remounts:
// Open() indexes what it holds.
//
// Thread-safe: one mutex over the index and the policy, never held across
// disk or network I/O.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "client/lib/block_arena.h"
#include "client/lib/cache_policy.h"
#include "client/lib/client.h"
#include "common/status.h"

namespace sfs::client {


struct BlockKey {
  uint64_t ino = 0;
  uint64_t version = 0;
  uint64_t index = 0;
  bool operator==(const BlockKey&) const = default;
};
struct BlockKeyHash {
  size_t operator()(const BlockKey& k) const {
    return std::hash<uint64_t>()(k.ino * 0x9e3779b97f4a7c15ULL ^ k.version * 0xc2b2ae3d27d4eb4fULL ^
                                 k.index);
  }
};

// A block's bytes (shared: a reader may copy out while it is evicted).
struct Block {
  std::shared_ptr<const uint8_t> data;
  uint32_t len = 0;
};

class DataCache {
 public:
  static constexpr uint64_t kBlockSize = 1 << 20;

  struct Options {
    std::string dir;          // "" = RAM only
    uint64_t disk_bytes = 0;  // the directory's bound
    uint64_t ram_bytes = 0;
    uint64_t fs_id = 0;       // the directory tier needs one (0 = RAM only)
  };
  // Never fails: a directory that cannot be used (missing and not creatable,
  // read-only, not a directory) logs one line and the cache is RAM only;
  // with no RAM either, Open returns null (no cache).
  static std::unique_ptr<DataCache> Open(const Options& o);
  ~DataCache();

  // The block, or an empty Block on a miss. len: the length it must have
  // (its part of the file at that version); a held block of another length
  // is dropped. Counts a hit or a miss (count = false: a prefetcher probe).
  Block Get(const BlockKey& k, uint32_t len, bool count = true);
  // Held, or being fetched by a claim (the prefetcher need not fetch it).
  bool Contains(const BlockKey& k);
  // Keeps b as k, evicting to fit (nothing if it cannot fit at all).
  void Put(const BlockKey& k, Block b, bool prefetched = false);

  // One fetch per missing block: the first reader (or prefetcher) to miss k
  // claims it (*owner true) and must Finish it; the others Wait for that
  // fetch instead of reading the same block again (the kernel sends a
  // sequential reader's pieces of one block at once).
  struct Inflight;
  std::shared_ptr<Inflight> Claim(const BlockKey& k, bool* owner);
  // The owner's fetch is done (b empty: it failed); wakes the waiters.
  void Finish(const BlockKey& k, const std::shared_ptr<Inflight>& f, Block b);
  // The fetched block, or empty if the owner's fetch failed.
  static Block Wait(const std::shared_ptr<Inflight>& f);

  // The order hint: group (inode) per position; 0 = not resolved yet.
  void SetHint(const std::vector<uint64_t>& groups);
  void AddUse(uint64_t ino, uint64_t pos);
  // A reader finished a read-open of ino: consumes one use; its position
  // or CachePolicy::kNever.
  uint64_t Consume(uint64_t ino);
  // Whether fetching blocks first used at position pos is worth evicting
  // for: room is free, or the policy's victim is used later than pos.
  bool WorthFetching(uint64_t pos, uint64_t bytes);

  // Memory for a block's (or a run of blocks') bytes: from the RAM tier's
  // arena (reused, huge pages), else the heap.
  std::shared_ptr<uint8_t> Alloc(size_t n);

  // Drops every block (RAM and directory); the arena's pages go back once
  // no reader holds a block.
  void Drop();
  CacheStats Stats();
  void CountPrefetch(bool fetched);
  // A reader's missed block that it got from a fetch already in flight.
  void CountJoined(uint32_t len);

 private:
  struct Entry {
    uint64_t key = 0;          // the policy's key
    uint32_t len = 0;
    bool on_disk = false;      // the directory holds it
    Block ram;                 // the RAM copy, if any
    std::list<BlockKey>::iterator ram_lru;  // valid iff ram.data and a dir exists
  };
  explicit DataCache(const Options& o);
  bool InitDir();
  void IndexDir();
  std::string PathOf(const BlockKey& k) const;
  enum class FileRead { kOk, kMissing, kBad };
  FileRead ReadBlockFile(const BlockKey& k, uint32_t len, Block* out);
  bool WriteBlockFile(const BlockKey& k, const Block& b);
  // REQUIRES: mu_ held. Evicts until need more bytes fit; paths to unlink out.
  bool MakeRoomLocked(uint64_t need, std::vector<std::string>* unlink);
  void EraseLocked(std::unordered_map<BlockKey, Entry, BlockKeyHash>::iterator it,
                   std::vector<std::string>* unlink);
  void KeepInRamLocked(const BlockKey& k, Entry& e, Block b);
  void DropRamLocked(Entry& e);

  Options opts_;
  bool disk_ = false;          // the directory tier is in use
  std::string root_;           // <dir>/<fs id hex>
  uint64_t capacity_ = 0;      // the cache tier's bound
  std::shared_ptr<BlockArena> arena_;  // null: blocks on the heap

  std::mutex mu_;
  std::unordered_map<BlockKey, Entry, BlockKeyHash> index_;  // GUARDED_BY(mu_)
  std::unordered_map<uint64_t, BlockKey> by_key_;            // GUARDED_BY(mu_)
  std::unordered_map<BlockKey, std::shared_ptr<Inflight>, BlockKeyHash> inflight_;  // GUARDED_BY(mu_)
  CachePolicy policy_;                                       // GUARDED_BY(mu_)
  std::list<BlockKey> ram_lru_;  // GUARDED_BY(mu_): with a dir, front = most recent
  uint64_t next_key_ = 1;        // GUARDED_BY(mu_)
  uint64_t bytes_ = 0;           // GUARDED_BY(mu_)
  uint64_t ram_used_ = 0;        // GUARDED_BY(mu_)
  CacheStats stats_;             // GUARDED_BY(mu_): the counters
  std::atomic<uint64_t> tmp_seq_{0};
  std::atomic<bool> write_failed_logged_{false};
};

}  // namespace sfs::client
