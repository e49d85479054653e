// OpenTable: which client holds which inode open, and when each client was
// last heard from. In memory only: after an MDS restart no file is open, and
// orphans left from before are destroyed once clients had --client-timeout-ms
// to reopen them (see Namespace::Housekeep).
//
// Opens by client 0 (a client that sent no id) never expire. Thread-safe.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "common/mdsop/open_id.h"

namespace sfs::mds {

class OpenTable {
 public:
  // Open ids are unique across MDS restarts: ids of boot epoch E start at
  // E << kOpenIdEpochShift (common/mdsop/open_id.h), so a stale id from
  // before a restart is never reused.
  // Sets the boot epoch of the ids handed out from now on (call before any Add).
  void SetEpoch(uint64_t epoch);
  // The boot epoch an open id was handed out in.
  static uint64_t EpochOf(uint64_t open_id) { return mdsop::OpenIdEpoch(open_id); }
  // Whether open_id is a current open.
  bool Contains(uint64_t open_id) const;
  // Records an open of ino by client (for writing iff write); returns its
  // open id (never 0).
  uint64_t Add(uint64_t client, uint64_t ino, int64_t now_ms, bool write = false);
  // Forgets an open; the inode it was for iff it existed.
  std::optional<uint64_t> Remove(uint64_t open_id);
  int OpenCount(uint64_t ino) const;
  // Opens of ino for writing (O_WRONLY, O_RDWR or O_TRUNC).
  int WriteOpenCount(uint64_t ino) const;
  // Notes that client was heard from at now_ms.
  void Touch(uint64_t client, int64_t now_ms);
  // Drops the opens of every client silent for more than timeout_ms; returns
  // the inodes those opens were for (one entry per dropped open).
  std::vector<uint64_t> ExpireClients(int64_t now_ms, int64_t timeout_ms);
  // Opens recorded now, and clients holding at least one (metrics).
  size_t Opens() const;
  size_t ClientsWithOpens() const;

 private:
  struct Open {
    uint64_t client;
    uint64_t ino;
    bool write;
  };
  struct Client {
    int64_t last_seen_ms = 0;
    size_t opens = 0;
  };
  void DropLocked(std::unordered_map<uint64_t, Open>::iterator it);

  mutable std::mutex mu_;
  uint64_t next_id_ = 1;                          // GUARDED_BY(mu_)
  std::unordered_map<uint64_t, Open> opens_;      // GUARDED_BY(mu_), by open id
  std::unordered_map<uint64_t, int> per_ino_;     // GUARDED_BY(mu_), open count by ino
  std::unordered_map<uint64_t, int> writers_;     // GUARDED_BY(mu_), write opens by ino
  std::unordered_map<uint64_t, Client> clients_;  // GUARDED_BY(mu_)
};

}  // namespace sfs::mds
