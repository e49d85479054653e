// OstRegistry: the OSTs the MDS knows, and the stripe allocator over them.
//
// Each OST is known by the uuid its OSS reports; the registry gives every new
// uuid the next index (persisted as T<uuid> keys, never reused) and keeps the
// serving address, up/down state, last heartbeat and space statistics in
// memory. OSTs loaded at start are presumed up until --ost-timeout-ms passes
// without a heartbeat. Thread-safe (one internal mutex, never held while
// calling out).
//
// Allocation (Pick): candidates are the OSTs up and not full (full: avail
// < 1% of total or < 64 MiB); if there are none, the OSTs up; if none, every
// known OST (objects are created lazily, so a layout on a down OST only delays
// I/O). Stripes are placed by smooth weighted round-robin, weight = available
// GiB, so equal OSTs get strict round-robin and emptier ones get more.
// Redundant layouts ask for distinct OSSes (Pick's distinct_oss): an OSS is
// known by the address its OSTs registered from.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "mds/namespace/kv_store.h"

namespace sfs::mds {

struct OstStats {
  uint64_t total_bytes = 0;
  uint64_t free_bytes = 0;
  uint64_t avail_bytes = 0;
  uint64_t total_inodes = 0;
  uint64_t free_inodes = 0;
};

struct OstState {
  uint32_t index = 0;
  std::string uuid;
  std::string address;
  std::string metrics_address;  // as last reported (not persisted)
  bool up = false;
  // Declared lost (`sfs ost lost`, persisted): never up again, never
  // allocated; its OSS's heartbeats are ignored (docs/redundancy.md "Rebuild").
  bool lost = false;
  OstStats stats;
  int64_t last_heartbeat_ms = 0;
  int64_t credit = 0;  // smooth weighted round-robin state
};

// What an OSS reports about one of its OSTs.
struct OstReport {
  std::string uuid;
  OstStats stats;
  std::string metrics_address;  // the OSS's GET /metrics, "" = none
};

class OstRegistry {
 public:
  explicit OstRegistry(KvStore* store) : store_(store) {}

  // Loads the persisted OSTs, marking them up as of now_ms.
  Status Load(int64_t now_ms);
  // Assigns indices to new uuids (persisted durably), keeps known ones, records
  // the address and stats, and marks them up. Indices in the order of `osts`.
  Result<std::vector<uint32_t>> Register(const std::string& address,
                                         const std::vector<OstReport>& osts, int64_t now_ms);
  // Fresh stats from a registered OSS. ENOENT iff a uuid is unknown (re-register).
  Status Heartbeat(const std::string& address, const std::vector<OstReport>& osts,
                   int64_t now_ms);
  // Marks down every OST whose last heartbeat is older than timeout_ms.
  void CheckTimeouts(int64_t now_ms, int64_t timeout_ms);

  std::vector<OstState> Snapshot() const;
  // Address of the OSS serving OST `index`, iff it is known and up.
  std::optional<std::string> UpAddress(uint32_t index) const;
  // Declares OST index lost, durably. ENOENT for an unknown index.
  Status MarkLost(uint32_t index);
  std::vector<uint32_t> LostOsts() const;
  size_t UpCount() const;
  size_t KnownCount() const;

  // Chooses OSTs for a new layout: `count` distinct OSTs (-1 = all candidates),
  // clamped to the candidates available. With start_ost >= 0 naming a
  // candidate, stripe 0 goes there and the next ones follow in index order.
  // Empty iff no OST is known. With `only` (an OST pool's members), every
  // rule above applies to those OSTs alone; empty iff none of them is known.
  // With distinct_oss, no two of the OSTs chosen are served by one OSS (an
  // OSS serving several OSTs gives one of them), and `count` is clamped to
  // the OSSes of the candidates (mirror copies and EC chunks: one lost OSS
  // must cost one copy or chunk only).
  std::vector<uint32_t> Pick(int32_t count, int32_t start_ost,
                             const std::vector<uint32_t>* only = nullptr,
                             bool distinct_oss = false);
  // How many of `set` are known and up.
  size_t UpCountIn(const std::vector<uint32_t>& set) const;
  // How many distinct OSSes serve the OSTs up (of `set`, if given).
  size_t UpOssCount(const std::vector<uint32_t>* set = nullptr) const;
  // The OSS serving OST index (its registered address, or "#index" if it
  // has none: then it counts as an OSS of its own). "" for an unknown index.
  std::string OssOf(uint32_t index) const;

  static bool IsFull(const OstStats& s);

 private:
  std::vector<OstState*> CandidatesLocked(const std::vector<uint32_t>* only);
  std::vector<uint32_t> PickWeightedLocked(std::vector<OstState*> cands, size_t n,
                                          bool distinct_oss);
  Status PersistLocked(const OstState& ost);

  KvStore* const store_;
  mutable std::mutex mu_;
  std::vector<OstState> osts_;  // GUARDED_BY(mu_); osts_[i].index == i
  size_t rr_cursor_ = 0;        // GUARDED_BY(mu_)
};

}  // namespace sfs::mds
