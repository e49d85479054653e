// CompleteDirs: the directories whose every name sfs-mount knows, so that a
// LOOKUP of an absent name there is answered here, without an MDS round trip
// (Ceph's "complete" directory cap, Lustre's LOOKUP lock on the parent).
//
// A directory is complete while this mount holds the MDS's lease on it
// (Attr::dir_lease_ms; docs/protocol.md, "Metadata leases") and knows its
// full set of names: it made the directory itself (mkdir with a lease: the
// set is empty), or listed it whole, every page under the lease, with no
// invalidation and no name op of this mount anywhere while it did (Listed).
// Then every change of a name in it comes either from this
// mount (the kernel serialises those against lookups in the directory by
// the directory's lock, and the FUSE ops record them here before replying:
// Added, Removed) or from another client, which the MDS revokes first: the
// invalidation reaches Forget before the kernel is told and before the other
// client's change returns. So a name absent from a complete directory's set
// is absent at the MDS, or being created by a change that has not returned.
//
// Times: a lease counts from when the request that brought it was sent (the
// MDS counts from its grant, later, plus a margin). A reply of our own create
// or link in a complete directory renews the lease if it carries one and the
// old one had not run out when the reply arrived (the MDS kept us as holder
// throughout). Once run out, the directory is forgotten; only a new mkdir
// makes it complete again.
//
// Races: Made() needs to know that no invalidation was applied while its
// mkdir was in flight (the invalidation of a name created meanwhile in the
// new directory found nothing to forget here yet). Callers take Epoch()
// before the request; Forget() advances it.
//
// Attributes: the kernel drops a directory's attributes after every create
// or unlink in it and asks for them (GETATTR) at the next path walk through
// it, to check permissions. The MDS's reply to a name op under a directory
// lease carries the directory's new attributes (Attr::dir_attr); they are
// kept here (SetAttr) and answer that GETATTR for the rest of the lease.
// Forget, and DropAttr (an own change to the directory's attributes), end
// that; SetAttr, like Made, takes an Epoch() from before its request.
//
// Bounds: at most kMaxDirs complete directories (and as many directories'
// attributes), kMaxNames names in one and kMaxTotalNames in all (about
// 100 MiB at 100-byte names); past any, a directory is simply not complete
// (LOOKUPs go to the MDS).
//
// Thread-safe: one mutex, held for a map access.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "client/lib/client.h"

namespace sfs::fuse {

class CompleteDirs {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr size_t kMaxDirs = 4096;
  static constexpr size_t kMaxNames = 100000;
  static constexpr size_t kMaxTotalNames = 1000000;

  uint64_t Epoch() const;
  // Advanced by every name op of this mount (Added, Removed) and Forget.
  uint64_t NamesEpoch() const;
  // The mount made dir (empty) with a request sent at `sent`, carrying a
  // lease of lease_ms on dir; epoch = Epoch() before it was sent.
  void Made(uint64_t dir, uint32_t lease_ms, Clock::time_point sent, uint64_t epoch);
  // The mount listed dir whole: its first page asked for at first_sent with
  // a lease of first_ms, its last at last_sent with last_ms; the epochs from
  // before the first. Complete iff every page came within the first lease
  // and neither epoch moved.
  void Listed(uint64_t dir, std::vector<std::string> names, Clock::time_point first_sent,
              uint32_t first_ms, Clock::time_point last_sent, uint32_t last_ms,
              uint64_t epoch, uint64_t names_epoch);
  // This mount added / removed a name in dir (its reply said OK). A reply
  // carrying a lease on dir (dir_lease_ms > 0, its request sent at `sent`)
  // renews a lease that has not run out by now.
  void Added(uint64_t dir, std::string_view name, uint32_t dir_lease_ms = 0,
             Clock::time_point sent = {});
  void Removed(uint64_t dir, std::string_view name);
  // The names of dir may have changed in a way not seen here (another
  // client's change, or an op of ours with an unknown outcome).
  void Forget(uint64_t dir);
  // Seconds for which name is known absent from dir (> 0), or 0: ask the MDS.
  double AbsentFor(uint64_t dir, std::string_view name);

  // a: a directory's attributes with a.lease_ms, from a request sent at
  // `sent`; epoch = Epoch() before it was sent.
  void SetAttr(const client::Attr& a, Clock::time_point sent, uint64_t epoch);
  // Seconds for which *out (dir's attributes) may be cached (> 0), or 0.
  double CachedAttr(uint64_t dir, client::Attr* out);
  // dir's attributes change through this mount: forget them (names stay).
  void DropAttr(uint64_t dir);
  // A directory whose inode this mount does not know changed (the one an
  // rmdir removed or a rename moved): forget every directory's attributes.
  void DropAllAttrs();

  size_t size() const;  // complete directories held (tests)

 private:
  struct Dir {
    Clock::time_point expiry;
    std::unordered_set<std::string> names;
  };
  // REQUIRES: mu_ held. The live entry for dir, or nullptr (expired: erased).
  Dir* Live(uint64_t dir, Clock::time_point now);
  void SweepExpired(Clock::time_point now);  // REQUIRES: mu_ held
  void Erase(uint64_t dir);                   // REQUIRES: mu_ held

  struct Attrs {
    Clock::time_point expiry;
    client::Attr attr;
  };

  mutable std::mutex mu_;
  uint64_t epoch_ = 0;                       // GUARDED_BY(mu_)
  uint64_t names_epoch_ = 0;                 // GUARDED_BY(mu_)
  size_t total_names_ = 0;                   // GUARDED_BY(mu_): in dirs_
  std::unordered_map<uint64_t, Dir> dirs_;   // GUARDED_BY(mu_)
  std::unordered_map<uint64_t, Attrs> attrs_;  // GUARDED_BY(mu_)
};

}  // namespace sfs::fuse
