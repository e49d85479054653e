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
// A listing is as old as the hint (Reset forgets them all): a file
// rewritten after it shows its old version here, which costs at most a
// missed prefetch, never a stale read — the reader's own open checks the
// version (Client::Open, docs/cache.md "Consistency").
//
// Thread-safe; the prefetch workers share one. Workers resolving entries
// of a directory being listed wait for that listing.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "client/lib/client.h"

namespace sfs::client {

class HintResolver {
 public:
  static constexpr uint64_t kListThreshold = 16;
  static constexpr uint32_t kPage = 4096;

  explicit HintResolver(Client& client) : client_(client) {}

  // A new hint (append = false forgets the listings) or more of it: counts
  // its entries per directory.
  void Reset(const std::vector<PrefetchItem>& items, bool append);
  // The attributes of path (absolute), as described above.
  Result<Attr> Resolve(const Cred& c, const std::string& path);

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
    std::unordered_map<std::string, Attr> entries;  // GUARDED_BY(mu)
    uint64_t hinted = 0;     // GUARDED_BY(HintResolver::mu_)
  };
  static std::pair<std::string, std::string> Split(std::string_view path);
  std::shared_ptr<Dir> DirOf(const std::string& dir, uint64_t* hinted);
  // REQUIRES: d.mu held.
  void List(const Cred& c, Dir& d, uint64_t hinted);

  Client& client_;
  std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<Dir>> dirs_;  // GUARDED_BY(mu_)
  std::atomic<uint64_t> listed_dirs_{0}, lookups_{0};
};

}  // namespace sfs::client
