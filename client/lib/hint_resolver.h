// HintResolver: the attributes of an order hint's paths, for the prefetcher
// (prefetcher.h, docs/cache.md "Prefetch").
//
// A hint is an epoch of a dataset: thousands of files in a few directories.
// Resolving each path with its own lookups cost the MDS two round trips per
// hinted file per epoch (one per path component), as many as the reader's
// own lookup and open: on a small machine the hinted epoch was slower than
// LRU's at equal hits. Instead a directory that holds at least
// kListThreshold of the hint's entries is listed once, with attributes
// (Readdir with_attrs, kPage entries a round trip), and its entries are
// answered from the listing; a path the listing lacks (created since) or in
// a directory named by fewer entries is looked up in its directory, whose
// own path is resolved once per hint.
//
// A listing also tells the positions of all the hint's entries in that
// directory at once (UseFn): the cache learns each file's next use before the
// prefetcher reaches it, so that a reader's close anywhere in the order moves
// the prefetcher's frontier (prefetcher.h). Without it, the first hint over a
// directory of 100,000 files never got ahead: its readers passed the
// prefetcher's window while the listing ran, their closes named files the
// cache knew no use of, and the frontier stayed at 0 for the whole epoch.
//
// A listing is as old as the hint (Reset forgets them all): a file
// rewritten after it shows its old version here, which costs at most a
// missed prefetch, never a stale read — the reader's own open checks the
// version (Client::Open, docs/cache.md "Consistency").
//
// Names the prefetcher opened (Named, NoteNamed): sfs-mount's LOOKUP of a
// hinted file comes right after the prefetcher opened it by that name
// (OpenPathReq from its directory), and is answered from that open's reply
// instead of an MDS round trip. The open's lease on the file covers the name
// too: the MDS revokes a file's lease before another client's unlink or
// rename of any of its names returns (mds/service/lease_ops.cc,
// NamesChanged), and this client's own changes move the open cache's
// generation (MdsClient::lease_gen). So an entry is handed out only while its
// lease runs (with OpenCache::kMinLeft to spare), at the generation its open
// request was sent at, and to the credentials the MDS checked (the search
// permission of its directory with them). This is the kernel's own dentry
// cache, filled ahead: statahead (client/fuse/stat_ahead.h) covers a
// directory only while its listing's leases last, 5 s by default, which a
// shuffled epoch of 100,000 files outlives many times over.
//
// Thread-safe; the prefetch workers share one. Workers resolving entries
// of a directory being listed wait for that listing.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "client/lib/client.h"

namespace sfs::client {

class HintResolver {
 public:
  static constexpr uint64_t kListThreshold = 16;
  static constexpr uint32_t kPage = 4096;

  // Told, under no lock of the resolver's but its directory's, each hinted
  // entry a listing resolves: its path, inode and position in the hint
  // given to Reset as generation gen (the caller drops a stale one).
  using UseFn =
      std::function<void(const std::string& path, uint64_t ino, uint64_t pos, uint64_t gen)>;
  explicit HintResolver(Client& client, UseFn on_use = nullptr)
      : client_(client), on_use_(std::move(on_use)) {}

  // A new hint (append = false forgets the listings) or more of it, whose
  // first entry is at position base, of the caller's hint generation gen:
  // its entries per directory.
  void Reset(const std::vector<PrefetchItem>& items, bool append, uint64_t base = 0,
             uint64_t gen = 0);
  // The attributes of path (absolute), as described above. *parent (if
  // not null): the inode of its directory, 0 if unknown.
  Result<Attr> Resolve(const Cred& c, const std::string& path, uint64_t* parent = nullptr);
  // The last component of path ("" if none).
  static std::string BaseOf(std::string_view path) { return Split(path).second; }

  // The prefetcher opened name in parent, by that name, with credentials c:
  // a, with its lease until `until`, at open-cache generation gen.
  void NoteNamed(const Cred& c, uint64_t parent, const std::string& name, const Attr& a,
                 uint64_t gen, std::chrono::steady_clock::time_point until);
  // What the MDS would answer c's lookup of name in parent with now, if such
  // an open says so (see the file comment), with lease_ms what is left of its
  // lease; gen_now: MdsClient::lease_gen(). Each entry is handed out once
  // (the kernel keeps it from then on, as any LOOKUP reply).
  std::optional<Attr> Named(const Cred& c, uint64_t parent, std::string_view name,
                            uint64_t gen_now);
  uint64_t named_hits() const { return named_hits_.load(); }
  // Whether the directory with inode dir is listed for the current hint.
  bool Listed(uint64_t dir);

  // Directories listed, and hinted paths looked up one by one (tests).
  uint64_t listed_dirs() const { return listed_dirs_.load(); }
  uint64_t lookups() const { return lookups_.load(); }

 private:
  struct Dir {
    std::mutex mu;           // held while resolving or listing
    bool resolved = false;   // GUARDED_BY(mu): ino (or err) is known
    Status err;              // GUARDED_BY(mu)
    uint64_t ino = 0;        // GUARDED_BY(mu)
    bool listed = false;     // GUARDED_BY(mu)
    uint64_t gave_up_at = 0;  // GUARDED_BY(mu): hinted when a listing last gave up (0: never)
    std::unordered_map<std::string, Attr> entries;  // GUARDED_BY(mu)
    uint64_t hinted = 0;     // GUARDED_BY(HintResolver::mu_)
    // The hint's entries here not yet told to on_use_: (path, position).
    std::vector<std::pair<std::string, uint64_t>> uses;  // GUARDED_BY(HintResolver::mu_)
  };
  static std::pair<std::string, std::string> Split(std::string_view path);
  // *uses_pending: d has hinted entries not yet told to on_use_.
  std::shared_ptr<Dir> DirOf(const std::string& dir, uint64_t* hinted, bool* uses_pending);
  uint64_t HintedIn(const Dir& d);  // d.hinted, under mu_
  // REQUIRES: d.mu held.
  void List(const Cred& c, const std::string& dir, Dir& d);
  // Tells on_use_ the positions of d's hinted entries the listing holds.
  // REQUIRES: d.mu held, d listed.
  void TellUses(const std::string& dir, Dir& d);

  struct Named_ {
    Cred cred;
    Attr attr;
    uint64_t gen = 0;
    std::chrono::steady_clock::time_point until;
  };
  // At most this many names are held; past it the oldest hint's are dropped
  // (all at once: a new hint refills them within its look-ahead).
  static constexpr size_t kMaxNamed = 1 << 20;

  Client& client_;
  const UseFn on_use_;
  std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<Dir>> dirs_;  // GUARDED_BY(mu_)
  uint64_t gen_ = 0;                                            // GUARDED_BY(mu_)
  std::unordered_set<uint64_t> listed_inos_;                    // GUARDED_BY(mu_)
  std::mutex named_mu_;
  // (parent, name) -> the open; GUARDED_BY(named_mu_)
  std::unordered_map<uint64_t, std::unordered_map<std::string, Named_>> named_;
  size_t named_count_ = 0;  // GUARDED_BY(named_mu_)
  std::atomic<uint64_t> listed_dirs_{0}, lookups_{0}, named_hits_{0};
};

}  // namespace sfs::client
