// DirCursor: one opendir's paged, stable view of a directory for readdir.
//
// Positions: 0 is ".", 1 is "..", and 2 + i is the i-th entry fetched from
// libsfs. The offset FUSE stores with an entry is its position + 1 (where the
// next readdir resumes). Entries come from libsfs in name order, each page
// fetched after the last name already held, and are kept for the life of the
// handle: resuming at any offset handed out earlier (also after telldir/
// seekdir) finds the same entry whatever is created or removed meanwhile, and
// no entry is returned twice. An entry created after its place was passed is
// not seen, one removed after it was fetched is still returned; POSIX allows
// both. Rewinding to 0 starts a fresh snapshot (rewinddir sees the present).
//
// Memory: the names of the entries fetched so far (an entry's attributes are
// dropped once handed to the kernel) and a stamp per page. Not thread-safe:
// the owner locks mu.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string_view>
#include <utility>
#include <vector>

#include "client/lib/client.h"

namespace sfs::fuse {

class DirCursor {
 public:
  // Fetches up to max entries with names > after (libsfs Readdir).
  using FetchFn = std::function<Result<client::DirPage>(std::string_view after, uint32_t max)>;

  static constexpr uint64_t kFirstEntryPos = 2;

  explicit DirCursor(uint32_t page_entries) : page_entries_(page_entries) {}

  // Forgets every entry fetched; the next EntryAt fetches from the start.
  void Reset();
  // The entry at position pos (>= kFirstEntryPos), fetching pages as needed;
  // nullptr once pos is past the last entry.
  Result<client::DirEntry*> EntryAt(uint64_t pos, const FetchFn& fetch);

  // The entries fetched so far, in name order.
  const std::vector<client::DirEntry>& entries() const { return entries_; }

  // What the owner knew when it asked for a page: when it sent the request
  // and its epochs then (FuseOps: invalidations, own name ops, own changes).
  // An entry's leases count from its page's stamp.
  struct Stamp {
    std::chrono::steady_clock::time_point sent;
    uint64_t epoch = 0, names_epoch = 0, local_epoch = 0;
  };
  // Called by the FetchFn before it sends: the page it fetches is stamped s.
  void StampNextPage(const Stamp& s);
  // The stamp of the page that brought the entry at pos, or nullptr.
  const Stamp* StampOf(uint64_t pos) const;

  std::mutex mu;
  uint64_t parent_ino = 0;   // GUARDED_BY(mu): ".." once looked up, 0 before
  // The listing since the last Reset() as a directory lease sees it
  // (FuseOps::NoteListed, complete_dirs.h): whether every page so far came
  // with a lease on the directory, when the first and the last page were
  // asked for and their leases, and CompleteDirs' epochs before the first.
  struct Lease {
    bool whole = false;
    std::chrono::steady_clock::time_point first_sent, last_sent;
    uint32_t first_ms = 0, last_ms = 0;
    uint64_t epoch = 0, names_epoch = 0;
  };
  Lease lease;               // GUARDED_BY(mu)

 private:
  Status FetchPage(const FetchFn& fetch);

  uint32_t page_entries_;
  std::vector<client::DirEntry> entries_;  // GUARDED_BY(mu)
  // (index in entries_ of the page's first entry, its stamp), ascending.
  std::vector<std::pair<size_t, Stamp>> stamps_;  // GUARDED_BY(mu)
  bool eof_ = false;                       // GUARDED_BY(mu)
};

}  // namespace sfs::fuse
