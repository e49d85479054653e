// OpenCache: read-only opens this client keeps after their close(2) while it
// holds the file's metadata lease, so that opening the same file again costs
// no MDS round trip (Lustre's client keeps opens under an open lock the same
// way). mdtest's "read again" opens every file a second time within seconds,
// and with the order hint (issue 18) the reader opens each file right after
// the prefetcher's open of it.
//
// Why a kept open is as good as a new one: the MDS revokes the lease (the
// watch's invalidation, MdsClient::NoteInvalidation) before it answers
// another client's change to the file's attributes, names or layout, and a
// writer's data reaches other clients at its close or flush (close-to-open),
// which report a size and so revoke too. This client's own changes revoke
// none of its leases: each request of this client that may change anything
// drops every kept open first (MdsClient::CallRaw). So an open is kept, and
// handed out, only while no invalidation or change of this client began since
// before its open request was sent (the generation, Gen), within its lease,
// and only to the credentials the MDS checked its permission for.
//
// What the MDS sees: the file stays open (its open count, an orphan's life)
// until the kept open is released: on a change, when its lease is about to
// end (Expired, swept by every MDS request and the keepalive), or to make
// room (the one nearest its end). A released open is a deferred close
// (close_queue.h).
//
// Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "client/lib/close_queue.h"
#include "client/lib/mds_client.h"

namespace sfs::client {

class OpenCache {
 public:
  using Clock = std::chrono::steady_clock;
  // No open is handed out or kept with less lease than this left: the
  // kernel's attributes and the data cache rely on it for a while after.
  static constexpr auto kMinLeft = std::chrono::milliseconds(500);
  // Whom an open (or an answer resting on its permission check) is handed
  // to: exactly the credentials the MDS checked (uid, gid and groups).
  static bool SameCred(const Cred& a, const Cred& b) {
    return a.uid == b.uid && a.gid == b.gid && a.groups == b.groups;
  }

  explicit OpenCache(size_t capacity) : capacity_(capacity) {}

  // The generation: read before an open request is sent, passed to Keep.
  uint64_t Gen() const;
  // Keeps open r of c, taken at generation gen, whose lease lasts until
  // `until`. False (the caller closes it) if the generation moved on or the
  // lease is nearly over. Appends to *released what made room.
  bool Keep(const Cred& c, OpenResult r, uint64_t gen, Clock::time_point until,
            std::vector<DeferredClose>* released);
  // A kept open of ino for exactly c (uid, gid and groups), taken out: the
  // caller owns its open id now. *until: its lease's end.
  std::optional<OpenResult> Take(const Cred& c, uint64_t ino, Clock::time_point* until);
  // Whether a kept open of ino for exactly c has at least kMinLeft + ahead
  // of lease left: Take would still hand it out `ahead` from now.
  bool Holds(const Cred& c, uint64_t ino, Clock::duration ahead) const;
  // A reply granted a new lease on ino, lasting until `until`: ino's kept
  // opens whose lease still runs last as long (no gap in between in which a
  // change could have gone unannounced). REQUIRES: no invalidation began
  // since the request was sent (MdsClient checks, as for every lease).
  void Extend(uint64_t ino, Clock::time_point until);
  // Something may have changed: a new generation, and every kept open released.
  std::vector<DeferredClose> Changed();
  // Releases the kept opens with less than kMinLeft of lease left.
  std::vector<DeferredClose> Expired();
  size_t size() const;

 private:
  struct Kept {
    Cred cred;
    OpenResult open;
  };
  using ByEnd = std::multimap<Clock::time_point, Kept>;
  using ByIno = std::unordered_multimap<uint64_t, ByEnd::iterator>;
  void EraseLocked(ByEnd::iterator it, std::vector<DeferredClose>* released);
  // REQUIRES: mu_ held. A kept open of ino for c whose lease lasts past
  // soonest, or by_ino_.end().
  ByIno::const_iterator FindLocked(const Cred& c, uint64_t ino, Clock::time_point soonest) const;

  const size_t capacity_;
  mutable std::mutex mu_;
  uint64_t gen_ = 0;  // GUARDED_BY(mu_)
  ByEnd by_end_;      // GUARDED_BY(mu_): the lease's end -> the kept open
  ByIno by_ino_;      // GUARDED_BY(mu_)
};

}  // namespace sfs::client
