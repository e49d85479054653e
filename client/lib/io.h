// Striper: file I/O over a striping layout, as parallel calls to the OSSes.
//
// A file range is split with layout::MapRange into per-stripe extents (merged
// when contiguous in both object and buffer, cut at kMaxPiece bytes), and one
// OssRequest is started per piece before any reply is awaited: every stripe's
// OSS works at once, with several RPCs in flight to each. Write data is sent
// straight from the caller's buffer and read data received straight into it;
// nothing is copied and no lock is held while waiting.
//
// Failures: after a round of calls, the OST map is refreshed if any call
// failed to reach its OSS (timeout, connection refused or lost) or was refused
// with ESTALE (that OSS no longer serves the OST). A piece is sent again at
// once if its OST has moved to another address (a restarted OSS may come back
// on a new port), and, for ESTALE, with backoff until the RPC timeout has
// passed (the OSS may not have re-registered yet). An ESTALE that carries
// object_destroyed is different: the object was destroyed (the file was
// unlinked or migrated elsewhere while this layout was held), so it is not
// retried and the call fails with ESTALE at once (docs/formats.md,
// "Tombstones"). A write, write_v or truncate that ended without a reply
// (timed out, connection lost) raises its OSS's fence epoch before anything
// else happens to it, so that a late copy of it cannot land after a later
// write (fence_epoch.h); one the OSS refused as fenced (it was sent before
// such a raise, and not applied) is sent again at once with the new epoch.
// Then the first failing
// piece in file order decides the result; transport failures become EIO, an
// OSS errno (ENOSPC, EINVAL, ...) passes through. A failed Read leaves the
// buffer's contents unspecified: the caller must not return them.
//
// Mirrored layouts (LayoutSpec::mirror_count 2 or 3; docs/redundancy.md): a
// write, truncate, fallocate (CallMirrored) or sync goes to every copy not stale, all in flight at
// once, and succeeds once every such copy has it. A copy whose OSS cannot be
// reached (or answered EIO/ESTALE) while another copy of the same stripe took
// the write is marked stale at the MDS (MirrorHooks::mark_stale, durable
// before it returns) and the write succeeds; if the MDS cannot record that,
// the write fails with EIO. A read goes to one good copy per piece (spread by
// stripe unit over the copies, OSTs that failed lately last) and on an
// unreachable OSS, EIO or ESTALE fails over to the next good copy within the
// same call; while another good copy is left to try, a read waits at most
// kFailoverAfter (or timeout / copies, if shorter) for a copy's OSS, so that
// fail-over fits in the RPC timeout even when connecting to a dead OSS
// would take all of it. Stale copies are never read nor written. The Striper remembers
// the states the MDS last reported per object (over the cached layouts,
// which may be older) and asks the MDS again (MirrorHooks::refresh) before it
// gives up on a stripe with no good copy left.
//
// Erasure-coded layouts (LayoutSpec::IsEc; docs/redundancy.md, ec_io.cc):
// a write encodes the rows it covers whole and writes their K+M chunks at
// once, reading nothing; a row it covers in part is read-modify-written (the
// old data bytes of the columns it touches read, the new laid over them,
// parity of those columns encoded again), under a lock on the file's rows
// taken in this Striper and then cluster-wide at the MDS
// (MirrorHooks::row_lock), so that no two writers of any clients interleave
// updates of one row. A read reads data chunks only;
// a chunk whose OSS fails (or that is stale) is rebuilt from any K others of
// its row within the same call. A write, truncate or sync that an object's
// OSS missed marks that object stale at the MDS (as mirrors do) while at
// most M objects of the file are stale; beyond that it fails with EIO.
//
// Thread safety: a Striper may be used by many threads at once; its state
// (the OSSes that refused write_v, the copy states heard from the MDS and
// the OSTs that failed lately) is under a mutex.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "client/lib/client.h"
#include "common/status.h"

namespace sfs::ec {
class RsCodec;
struct Geometry;
}  // namespace sfs::ec
namespace sfs::client::ecplan {
struct RowWrite;
}  // namespace sfs::client::ecplan

namespace sfs::proto {
class OssRequest;
class OssResponse;
}  // namespace sfs::proto

namespace sfs::client {

class OssPool;

// One call to an object's OSS of an op the Striper does not build itself
// (space_ops.cc: fallocate, seek, copy). fill sets the request's op (ost,
// oid, client id and xid are set by the Striper); on_reply, if set, reads an
// OK reply. status is the call's outcome (io.h's error rules).
struct ObjectCall {
  uint32_t ost = 0;
  uint64_t oid = 0;
  std::function<void(proto::OssRequest&)> fill;
  std::function<void(const proto::OssResponse&)> on_reply;
  bool mutates = false;     // changes the object: carries the write fence epoch
  // The capability of the layouts it works on (LayoutSpec::capability), with
  // their inodes (to renew them): one, or two for a copy between files.
  std::vector<std::pair<uint64_t, std::string>> caps;
  Status status;
  bool unknown_op = false;  // the OSS answered EPROTO: one from before the op existed
  uint32_t stripe = 0;      // Striper::CallMirrored: the stripe whose copies it goes to
};

// How the Striper reaches the MDS about mirror copies (set by the Client).
struct MirrorHooks {
  // Records the objects (copies of l.ino's stripes) stale; the layout after.
  std::function<Result<LayoutSpec>(uint64_t ino, std::span<const StripeObject> objects)>
      mark_stale;
  // The file's layout as the MDS has it now.
  std::function<Result<LayoutSpec>(uint64_t ino)> refresh;
  // A fresh capability for ino in place of token (refused: EACCES), asked
  // with the credentials of whoever opened with token, so a renewal never
  // gains what a chmod took away. Unset: refresh's.
  std::function<Result<std::string>(uint64_t ino, const std::string& token)> renew;
  // EC files: takes (lock) or releases the cluster-wide lock on bytes
  // [start, end] of ino's rows for owner, waiting as long as it takes; so
  // that two clients never read-modify-write one row at once. ENOLCK: the
  // MDS grants no locks. A grant gives the file's copy generation
  // (LockResp.copy_gen): the Striper refreshes the layout when it moved.
  std::function<Result<uint64_t>(uint64_t ino, uint64_t owner, uint64_t start, uint64_t end,
                                 bool lock)>
      row_lock;
  // Mirrored files, with cached locks on (Striper::EnableCachedLocks): takes
  // the mirror-range lock on [start, end] for owner asking that it be kept
  // (LockReq.cache), waiting as long as it takes. Released with row_lock.
  struct Grant {
    uint64_t copy_gen = 0;
    bool cached = false;  // the whole file's, kept until recalled
  };
  std::function<Result<Grant>(uint64_t ino, uint64_t owner, uint64_t start, uint64_t end)>
      cached_lock;
};

class Striper {
 public:
  // Longest a mirrored read waits for one copy while another is left.
  static constexpr std::chrono::milliseconds kFailoverAfter{2000};
  // Largest single OSS read/write this client sends.
  static constexpr uint64_t kMaxPiece = 1 << 20;
  // Largest single OSS read of a plain or mirrored layout: a 4 MiB READ of
  // one stripe unit (sfs-mount's -o max_read_kb) is one request, not four.
  static constexpr uint64_t kMaxReadPiece = 4 << 20;

  // REQUIRES: pool outlives the Striper. next_xid is thread-safe.
  Striper(OssPool* pool, uint64_t client_id, std::function<uint64_t()> next_xid,
          std::chrono::milliseconds timeout);
  ~Striper();

  // Fills all of buf with the file's bytes at [off, off + buf.size()); holes
  // and bytes past the objects' ends read as zeros.
  Status Read(const LayoutSpec& l, uint64_t off, std::span<uint8_t> buf);
  Status Write(const LayoutSpec& l, uint64_t off, std::span<const uint8_t> buf);
  // One write of a WriteBatch: the range, and on return its result.
  struct BatchWrite {
    const LayoutSpec* layout = nullptr;
    uint64_t off = 0;
    std::span<const uint8_t> buf;
    Status status;
  };
  // Does each write as Write would, with the OSS calls of all of them in
  // flight at once (one round of calls for many small writes); sets each
  // one's status. The pieces bound for one OST go as one vectored call
  // (OssRequest.write_v: one RPC, one bulk gathered by a copy, adjacent
  // pieces of an object merged into one extent), each piece keeping the
  // status of its own extent; an OSS that refuses write_v (EPROTO: one from
  // before it existed) gets, from then on, one call per piece.
  // REQUIRES: no two writes of the batch overlap (the OSS may apply them in
  // any order; write-behind never has overlapping writes in flight).
  void WriteBatch(std::span<BatchWrite> writes);
  // Sets every object to the size it has in a file of `size` bytes.
  Status Truncate(const LayoutSpec& l, uint64_t size);
  // Makes every object's data durable (missing objects are fine).
  Status Sync(const LayoutSpec& l);
  // Sum of the objects' allocated 512-byte blocks.
  Result<uint64_t> Blocks(const LayoutSpec& l);
  // Runs every call at once, retried as any piece is; sets each one's
  // status and returns the first failure in order (FirstError's rules).
  Status Call(std::span<ObjectCall> calls);
  // Mutating calls on a mirrored file's bytes [start, last] (fallocate,
  // punch): each call, for its `stripe`, goes to every good copy of that
  // stripe, under the range's cluster-wide lock, and a copy whose OSS missed
  // it is marked stale, exactly as a write's copies are; ok iff every stripe
  // has a good copy that took its call. Sets no call's status. REQUIRES:
  // l.Copies() > 1, every call's stripe < l.Stripes(), its ost and oid unused.
  Status CallMirrored(const LayoutSpec& l, std::span<ObjectCall> calls, uint64_t start,
                      uint64_t last);
  // The address of the OSS serving ost now ("" if none is known).
  std::string AddressOf(uint32_t ost) const;
  // REQUIRES: called before any I/O.
  void SetMirrorHooks(MirrorHooks hooks) { hooks_ = std::move(hooks); }
  // Cached mirror-range locks (mds/lock/lock_table.h "Cached locks"): from
  // now on a mirrored mutation asks that its lock be kept; a lone writer
  // then takes it once and writes without lock round trips until the MDS
  // recalls it. REQUIRES: the MDS's recalls reach RecallCached (the client
  // watches), and hooks with cached_lock.
  void EnableCachedLocks() { cache_locks_ = true; }
  // The MDS wants ino's cached lock back: released at once, or by the last
  // mutation under it when it is done. Never waits for them.
  void RecallCached(uint64_t ino);
  // The MDS restarted: the cached locks it granted are gone there. The next
  // mutation of each file asks again.
  void ForgetCachedLocks();
  // Cached locks held now (tests, metrics).
  size_t CachedLockCount();
  // True iff object i of l is stale (by the latest word from the MDS).
  bool IsStale(const LayoutSpec& l, size_t i) const;
  // Takes the MDS's word on the states of l's objects; true iff one that was
  // stale is no longer.
  bool Absorb(const LayoutSpec& l);

  struct Piece;  // one OSS call; defined in io.cc

 private:
  // Runs every piece, retrying unreachable ones (see the file comment).
  Status Run(std::vector<Piece>& pieces);
  void StartAll(const std::vector<Piece*>& pieces, std::chrono::milliseconds timeout);
  void WaitAll(const std::vector<Piece*>& pieces);
  // Runs write pieces, those for one OST as write_v calls (WriteBatch).
  void RunWrites(std::vector<Piece>& pieces);
  // Mirrored layouts: read pieces with fail-over; mutating pieces copied to
  // every good copy, run by `run`, then settled per group (a piece of the
  // caller's, all copies of it) with stale marking. Returns one status per group.
  Status ReadMirrored(const LayoutSpec& l, std::vector<Piece>& pieces);
  std::vector<Piece> FanOut(const LayoutSpec& l, const std::vector<Piece>& pieces,
                            std::vector<Status>* group_status, bool fail_fast = true);
  void Settle(const LayoutSpec& l, std::span<const Piece> copies,
              std::vector<Status>* group_status);
  // Asks the MDS for l's states again; true iff a stale copy became good.
  bool Refresh(const LayoutSpec& l);
  // Capabilities (docs/protocol.md): the pieces' tokens replaced by ones
  // renewed earlier; and the pieces the OSS refused with EACCES, not yet
  // renewed, given fresh tokens from the MDS (true iff any was).
  void UseRenewed(const std::vector<Piece*>& pieces);
  bool Renew(const std::vector<Piece*>& pieces);
  Status RunMirrored(const LayoutSpec& l, std::vector<Piece>& pieces);
  // Erasure-coded layouts (ec_io.cc).
  struct ChunkRead;  // columns of one chunk of one row, into a buffer
  Status ReadEc(const LayoutSpec& l, uint64_t off, std::span<uint8_t> buf);
  Status WriteEc(const LayoutSpec& l, uint64_t off, std::span<const uint8_t> buf);
  Status TruncateEc(const LayoutSpec& l, uint64_t size);
  // TruncateEc's work, under its locks.
  Status CutEc(const LayoutSpec& l, const ec::Geometry& g, const ec::RsCodec& codec,
               uint64_t size);
  Status SyncEc(const LayoutSpec& l);
  Result<uint64_t> BlocksEc(const LayoutSpec& l);
  Result<const ec::RsCodec*> CodecOf(const LayoutSpec& l);
  // Fills every read, rebuilding from other chunks what cannot be read.
  Status ReadChunks(const LayoutSpec& l, const ec::Geometry& g, const ec::RsCodec& codec,
                    std::vector<ChunkRead>& reads);
  // Rebuilds the lost reads from K other chunks of their rows each, using
  // the call's reads that are not lost as sources where they cover the bytes.
  Status RebuildChunks(const LayoutSpec& l, const ec::Geometry& g, const ec::RsCodec& codec,
                       std::vector<ChunkRead>& reads, std::vector<ChunkRead*> lost,
                       std::vector<uint32_t>* bad);
  Status WriteRows(const LayoutSpec& l, const ec::Geometry& g, const ec::RsCodec& codec,
                   std::span<const ecplan::RowWrite> rows, std::span<const uint8_t> buf);
  // Runs mutating pieces on EC objects (Piece::stripe = object index) and
  // marks those whose OSS missed them stale, or fails if that would leave
  // more than M objects stale.
  Status RunEcMutation(const LayoutSpec& l, std::vector<Piece>& pieces, bool batched);
  // The file's rows [first, end) locked against this Striper's other EC
  // writers (RMW of a row must see no other write of it half done).
  void LockRows(const LayoutSpec& l, uint64_t first, uint64_t end);
  void UnlockRows(const LayoutSpec& l, uint64_t first, uint64_t end);
  // Rows [first, end) of l as the bytes [start, last] their cluster-wide
  // lock covers (taken after LockRows, with LockRange).
  static std::pair<uint64_t, uint64_t> RowSpan(const LayoutSpec& l, uint64_t first, uint64_t end);
  // The cluster-wide lock on bytes [start, last] of l's file, in the
  // redundancy lock space (MirrorHooks::row_lock); a no-op without the hook,
  // an inode or an MDS with locks.
  Status LockClusterBytes(const LayoutSpec& l, uint64_t owner, uint64_t start, uint64_t last,
                          bool lock);
  // A mirrored mutation of bytes [start, last]: RunMirrored under the range's
  // cluster-wide lock, so that every copy gets the writes of all clients in
  // one order.
  Status RunMirroredLocked(const LayoutSpec& l, std::vector<Piece>& pieces, uint64_t start,
                           uint64_t last);
  // The lock a mirrored mutation of [start, last], or an EC write or
  // truncate of the rows those bytes make, runs under: this client's cached
  // lock on the file if it keeps one or gets one (*kept = true), else the
  // range's for owner (LockClusterBytes).
  Status LockRange(const LayoutSpec& l, uint64_t owner, uint64_t start, uint64_t last,
                    bool* kept);
  Status UnlockRange(const LayoutSpec& l, uint64_t owner, uint64_t start, uint64_t last,
                      bool kept);
  // Gives back ino's cached lock owned by owner at the MDS.
  void ReleaseCached(uint64_t ino, uint64_t owner);
  void NoteFailed(uint32_t ost);
  // p's copy was refused as not ok at the MDS (stale_copy): this client
  // reads it no more until a layout from the MDS says it is ok (Absorb);
  // any other failure: NoteFailed(p.ost).
  void NoteCopyFailure(const Piece& p);
  // Under a mirror-range (or EC row) lock just granted: gen is the MDS's
  // copy generation of l.ino (LockResp.copy_gen). When it is not the one
  // this client saw last, a copy was resynced or marked meanwhile: the
  // layout's states are fetched (Absorb) before the write goes out, so a
  // resynced copy is written from then on.
  void NoteCopyGen(const LayoutSpec& l, uint64_t gen);
  bool RecentlyFailed(uint32_t ost) const;
  // False once the OSS now serving ost has refused write_v.
  bool MayVector(uint32_t ost) const;
  void NoteNoVector(const Piece& call);

  OssPool* const pool_;
  const uint64_t client_id_;
  const std::function<uint64_t()> next_xid_;
  const std::chrono::milliseconds timeout_;
  mutable std::mutex mu_;
  std::set<std::string> no_vector_;  // GUARDED_BY(mu_): OSS addresses that refused write_v
  // GUARDED_BY(mu_): (ost, oid) -> stale, as the MDS last said.
  std::map<std::pair<uint32_t, uint64_t>, bool> states_;
  std::map<uint64_t, uint64_t> copy_gens_;  // GUARDED_BY(mu_): ino -> the last copy_gen seen
  std::map<uint32_t, std::chrono::steady_clock::time_point> failed_;  // GUARDED_BY(mu_)
  MirrorHooks hooks_;
  // GUARDED_BY(mu_): (K, M) -> codec; codecs live as long as the Striper.
  std::map<std::pair<uint32_t, uint32_t>, std::unique_ptr<ec::RsCodec>> codecs_;
  // Row locks of EC files: (OST, oid) of a file's first object -> rows held.
  std::mutex rows_mu_;
  std::condition_variable rows_cv_;
  // GUARDED_BY(rows_mu_)
  std::multimap<std::pair<uint32_t, uint64_t>, std::pair<uint64_t, uint64_t>> rows_held_;
  std::atomic<uint64_t> row_owners_{0};       // owners of cluster row locks: one per write
  std::atomic<bool> no_cluster_locks_{false};  // the MDS answered ENOLCK
  // Cached mirror-range locks, by inode. A file's lock is being asked for
  // (held false: other mutations of the file wait) or held; a recalled one
  // takes no new users and is released by its last.
  struct Cached {
    bool held = false;     // else being asked for
    uint64_t owner = 0;
    // The byte ranges [first, last] of this client's mutations under it
    // now: overlapping ones wait for each other, as the MDS would have made
    // them (every copy must get them in one order).
    std::vector<std::pair<uint64_t, uint64_t>> users;
    bool recalled = false;
    bool releasing = false;
  };
  std::atomic<bool> cache_locks_{false};
  std::mutex cached_mu_;
  std::condition_variable cached_cv_;
  std::map<uint64_t, Cached> cached_;  // GUARDED_BY(cached_mu_)
  // GUARDED_BY(mu_): ino -> (token that an OSS refused, the one that replaced it).
  std::map<uint64_t, std::pair<std::string, std::string>> renewed_;
};

}  // namespace sfs::client
