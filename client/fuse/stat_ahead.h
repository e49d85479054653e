// StatAhead: sfs-mount's statahead (Lustre's llite statahead, the kernel's
// READDIRPLUS for stat(2) after stat(2)). When a directory's names are looked
// up one after another at the MDS (mdtest -T, `find -size`, a training
// loader's first pass over a dataset directory), a worker lists the
// directory with attributes, 1024 entries a request, and the next LOOKUPs
// there are answered from that listing instead of one MDS round trip each.
//
// Correctness rests on the MDS's leases (docs/protocol.md, "Metadata
// leases"): a listing with attributes carries a lease on the directory (its
// names) and one on each regular file's and directory's attributes, so any
// other client's change to one revokes it here first (Clear, from
// FuseOps::Invalidate) before that change returns. An entry is kept no longer
// than the shorter of its two leases, timed from when the page was asked
// for; entries without both leases are not kept. Changes through this mount
// revoke nothing (the MDS spares the requester), so every operation that
// changes a name or attributes here clears the whole cache first (Clear,
// from FuseOps), and a page in flight across a Clear is dropped (Epoch) —
// but for the unlink of a name whose LOOKUP answer showed a regular file
// with one link (mdtest -r, rm -r): only that name and the directory's own
// attributes change, so only they are forgotten (Unlinking/Unlinked), a
// page in flight across it is kept without that name, and the run of
// lookups goes on counting.
// An entry is handed out once (Take): the kernel then holds it under its
// own entry timeout, as for any LOOKUP reply. Callers merge the client's
// own unreported writes into the attributes (libsfs Client::WithLocal),
// as a LOOKUP's reply is merged.
//
// Trigger: kTrigger positive LOOKUPs answered by the MDS in one directory
// with no Clear between them (a lookup-then-unlink loop never lists).
// A directory is listed again no sooner than kRelistAfter (unless a Clear
// came between), and later still when its listings do not pay: a listing
// that fewer than one in kYield of its entries were taken from before the
// next doubles the wait before the one after (up to kRelistAfter <<
// kMaxBackoff; a listing that pays resets it). That is a directory larger
// than a listing read in random order (a training loader's first epoch over
// 100,000 files): the lookups of names past the listing's end kept
// triggering listings of the same first kMaxPages pages, 2,500 pages an
// epoch for a few hits each.
// Bounds: one directory listed at a time, kMaxPages pages a listing,
// kMaxEntries entries held in all; past them, lookups go to the MDS.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "client/lib/client.h"
#include "common/status.h"

namespace sfs::fuse {

class StatAhead {
 public:
  using Clock = std::chrono::steady_clock;
  // One page of dir with attributes, names after `after` (libsfs Readdir).
  using ListFn = std::function<Result<client::DirPage>(const client::Cred& cred, uint64_t dir,
                                                       std::string_view after)>;
  static constexpr int kTrigger = 8;
  static constexpr int kMaxPages = 64;
  static constexpr uint32_t kPageEntries = 1024;
  static constexpr size_t kMaxEntries = 256 * 1024;
  static constexpr std::chrono::seconds kRelistAfter{2};
  static constexpr uint64_t kYield = 8;
  static constexpr int kMaxBackoff = 4;

  explicit StatAhead(ListFn list);
  ~StatAhead();
  StatAhead(const StatAhead&) = delete;
  StatAhead& operator=(const StatAhead&) = delete;

  // A positive LOOKUP in dir was answered by the MDS, for cred: may start a
  // listing of dir on the worker.
  void NoteMiss(uint64_t dir, const client::Cred& cred);
  // The entry for name in dir, if held and within its leases: moved to *out,
  // with out->lease_ms set to what is left of it. False otherwise.
  bool Take(uint64_t dir, std::string_view name, client::Attr* out);
  // Forgets every entry and every count (see above).
  void Clear();
  // A LOOKUP of name in dir answered a (from here or the MDS): remembered
  // for the next few unlinks (Unlinking).
  void Seen(uint64_t dir, std::string_view name, const client::Attr& a);
  // This mount is about to unlink name in dir. True if only the name and
  // dir's attributes can change (the last LOOKUP of it showed a regular file
  // with nlink 1): both are forgotten here and the name is kept out of
  // pages in flight until Unlinked(dir, name). False: call Clear().
  bool Unlinking(uint64_t dir, std::string_view name);
  // The unlink that Unlinking(dir, name) announced has its answer.
  void Unlinked(uint64_t dir, std::string_view name);

  // For tests and metrics.
  size_t size() const;
  uint64_t listings() const;
  // The directory's back-off (0: relisted after kRelistAfter).
  int backoff(uint64_t dir) const;
  uint64_t hits() const;
  // Blocks until the worker is idle (tests).
  void WaitIdle();

 private:
  struct Entry {
    client::Attr attr;
    Clock::time_point expires;
  };
  struct Job {
    uint64_t dir = 0;
    client::Cred cred;
  };
  // A LOOKUP answer (Seen), and an unlink in flight or just answered (a page
  // asked for before `done` may still show the name).
  struct SeenName {
    uint64_t dir = 0;
    std::string name;
    bool one_link_file = false;
  };
  struct Gone {
    uint64_t dir = 0;
    std::string name;
    Clock::time_point done = Clock::time_point::max();
  };
  static constexpr size_t kSeen = 256;
  // REQUIRES: mu_ held. Erases dir's entry for name, if held.
  void EraseLocked(uint64_t dir, std::string_view name);
  void Run();
  void List(const Job& job);
  // Keeps page's entries unless a Clear came after epoch. False: stop.
  bool Fill(uint64_t dir, client::DirPage& page, Clock::time_point sent, uint64_t epoch);

  ListFn list_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::unordered_map<uint64_t, std::unordered_map<std::string, Entry>> dirs_;  // GUARDED_BY(mu_)
  size_t entries_ = 0;            // GUARDED_BY(mu_)
  uint64_t epoch_ = 0;            // GUARDED_BY(mu_): bumped by Clear
  uint64_t counting_dir_ = 0;     // GUARDED_BY(mu_): the directory of the last misses
  int misses_ = 0;                // GUARDED_BY(mu_): in a row there
  struct Listed {
    uint64_t epoch = 0;
    Clock::time_point at;  // when it ended
    uint64_t kept = 0;     // entries the last listing kept
    uint64_t hits = 0;     // lookups answered in the directory since
    int backoff = 0;       // the wait is kRelistAfter << backoff
  };
  // GUARDED_BY(mu_): each directory's last listing (see the file comment).
  std::unordered_map<uint64_t, Listed> listed_;
  std::deque<Job> jobs_;          // GUARDED_BY(mu_)
  std::deque<SeenName> seen_;     // GUARDED_BY(mu_): the last kSeen LOOKUP answers
  std::vector<Gone> gone_;        // GUARDED_BY(mu_)
  // GUARDED_BY(mu_): directory inode -> (its parent, its name) of each
  // directory entry held, for Unlinking to forget a directory's attributes.
  std::unordered_map<uint64_t, std::pair<uint64_t, std::string>> dir_names_;
  bool busy_ = false;             // GUARDED_BY(mu_)
  bool stop_ = false;             // GUARDED_BY(mu_)
  uint64_t listings_ = 0;         // GUARDED_BY(mu_)
  uint64_t hits_ = 0;             // GUARDED_BY(mu_)
  std::thread worker_;
};

}  // namespace sfs::fuse
