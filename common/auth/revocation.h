// Revocations (issue 17, docs/security.md "Revocation"): the MDS's word that
// the capabilities of an inode, of a tenant, or of everyone, minted before a
// time are void, although they have not expired.
//
// Why: a capability lives kCapabilityLifetimeSec (10 min). Without
// revocations a chmod, chown or `tenant remove` binds a client holding one
// only at its expiry. With them the window is the time the news takes to
// reach the OSSes (one heartbeat: they pull the entries in the heartbeat's
// sealed answer, mds/service/oss_gate.h).
//
// The comparison is on the mint time in milliseconds (Capability::issued_ms),
// not on the expiry: an entry voids capabilities with issued_ms < before_ms,
// and the MDS stamps every capability it mints afterwards with at least
// before_ms (MintFloorMs), so a client's renewal in the same millisecond as the
// chmod is never voided by it, and one minted before it always is.
// Capabilities that cover every object (servers' own, all_objects) are never
// voided.
//
// An entry matters only while a capability it voids could still be alive:
// it is dropped kCapabilityLifetimeSec after before_ms (Prune).
//
// The MDS numbers its entries (seq, from 1) and answers an OSS the ones after
// the last it saw (Since); an OSS applies them (Apply) and starts over
// (Reset) when the MDS it hears from is another (a restart: the new one
// begins with a kAll entry at its boot, which voids everything minted
// before it, since it does not know the old one's entries).
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/auth/capability.h"

namespace sfs::auth {

struct Revocation {
  enum class Scope : uint8_t { kInode = 0, kTenant = 1, kAll = 2 };
  Scope scope = Scope::kInode;
  uint64_t ino = 0;      // kInode
  std::string tenant;    // kTenant ("" = the default tenant)
  int64_t before_ms = 0; // voids capabilities minted (issued_ms) before this
  uint64_t seq = 0;      // the MDS's number for it (Add assigns it)
};

class RevocationList {
 public:
  // The MDS: records r (its seq assigned; before_ms at least any earlier
  // entry's for the same scope and key) and returns its seq.
  uint64_t Add(Revocation r);
  // The entries after seq, in order, at most max of them.
  std::vector<Revocation> Since(uint64_t seq, size_t max) const;
  uint64_t last_seq() const;
  // The least issued_ms a capability minted now for (ino, tenant) may carry:
  // not below any entry that names it, so no entry voids it.
  int64_t MintFloorMs(uint64_t ino, std::string_view tenant) const;

  // An OSS: takes the MDS's entries (those it has already are ignored by
  // seq), or forgets everything (another MDS).
  void Apply(std::span<const Revocation> entries);
  void Reset();
  // The seq of the last entry applied (0: none).
  uint64_t applied_seq() const;

  // True iff an entry voids cap.
  bool Voids(const Capability& cap) const;

  // Drops entries that can no longer void a live capability (before_ms
  // more than a capability's lifetime ago at now_ms).
  void Prune(int64_t now_ms);
  size_t size() const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, int64_t> inodes_;      // GUARDED_BY(mu_): ino -> before_ms
  std::unordered_map<std::string, int64_t> tenants_;  // GUARDED_BY(mu_)
  int64_t all_before_ms_ = 0;                         // GUARDED_BY(mu_)
  std::deque<Revocation> log_;                        // GUARDED_BY(mu_): in seq order
  uint64_t seq_ = 0;                                  // GUARDED_BY(mu_)
};

}  // namespace sfs::auth
