// MirrorResyncer: background resync of mirrored files' stale copies by the
// MDS (docs/redundancy.md "Resync"). Every `interval` it looks at the files
// with a copy marked stale (Namespace::ResyncWanted, kept across restarts);
// for each one not open for write whose stale
// copy's OST and a good copy's OST are both up, it has the stale copy's OSS
// cut the object to the good copy's size and pull the good copy's bytes (the
// OSS copy op), syncs it, and marks it ok with MirrorStateReq.if_idle (so a
// write meanwhile leaves it stale, to be tried again). One file at a time,
// one OSS call in flight per copy chunk.
//
// The same worker rebuilds (docs/redundancy.md "Rebuild"): an EC file's stale
// chunk object is rebuilt in place from K other chunks (read row batches in
// parallel, ISA-L reconstruct, write), then marked ok as above; an object on
// a lost OST (`sfs ost lost`) is rebuilt onto a new object on an OST the file
// does not use (a good copy's OSS pulls it, or K chunks reconstruct it) and
// swapped into the layout (Namespace::ReplaceObject). Up to kFileWorkers
// files at once; total OSS write rate bounded by set_rate_mibps.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/auth/capability.h"
#include "common/auth/signing_keys.h"
#include "common/rpc/rpc.h"
#include "mds/namespace/namespace.h"
#include "mds/lock/lock_table.h"
#include "mds/namespace/ost_registry.h"

namespace sfs::proto {
class OssRequest;
class OssResponse;
class RebuildStatusResp;
class ScrubReq;
class ScrubResp;
}  // namespace sfs::proto

namespace sfs::mds {

class MirrorResyncer {
 public:
  // REQUIRES: ns, osts, io and locks outlive this object. Starts its thread.
  // With locks (the MDS's lock table), a mirrored file open for write is
  // resynced under a whole-file mirror-range lock: its writers wait, and
  // learn the resynced copy from their next grant (LockResp.copy_gen).
  // Without, only files no one has open for write.
  MirrorResyncer(Namespace* ns, OstRegistry* osts, rpc::IoContext* io,
                 std::chrono::milliseconds interval,
                 auth::KeyRotator* keys = nullptr,
                 LockTable* locks = nullptr);
  ~MirrorResyncer();
  MirrorResyncer(const MirrorResyncer&) = delete;
  MirrorResyncer& operator=(const MirrorResyncer&) = delete;

  // One pass over the wanted files (also what the thread runs).
  void RunOnce();
  // Starts the next pass now rather than at the next interval (new work:
  // an OST declared lost, a scrub's repairs).
  void Kick();

  // Progress, for the metrics (sfs_mds_mirror_resync_*): stale copies
  // brought back to ok and bytes copied since start, failed copy attempts.
  uint64_t copies_resynced() const { return copies_resynced_.load(std::memory_order_relaxed); }
  uint64_t bytes_copied() const { return bytes_copied_.load(std::memory_order_relaxed); }
  uint64_t copy_failures() const { return copy_failures_.load(std::memory_order_relaxed); }

  // Bounds the bytes rebuild/resync writes per second (all files together);
  // 0 = unbounded (the OSS QoS class "resync" still applies).
  void set_rate_mibps(double mibps) { rate_mibps_.store(mibps, std::memory_order_relaxed); }
  // How long one ScrubReq reads before it answers "more" (default 2 s;
  // sfs-mds --scrub-call-ms). Call before the first scrub.
  void set_scrub_call(std::chrono::milliseconds d) { scrub_call_ = d; }
  // The client id the resyncer's range locks are held under.
  static constexpr uint64_t kLockClient = 0x5253594E43000001;  // "RSYNC"
  // sfs rebuild status (mds.proto RebuildStatusResp).
  void FillStatus(proto::RebuildStatusResp* out) const;
  // sfs scrub of one file from req.offset() for about two seconds
  // (scrubber.cc; mds.proto ScrubReq: more and next_offset say where to go on).
  Status ScrubFile(const proto::ScrubReq& req, proto::ScrubResp* out);
  // The rebuild's pauses for lack of space, one line per OST (rebuild_space.cc).
  void FillPauses(proto::RebuildStatusResp* out) const;

 private:
  void Loop();
  // Tells each object's OSS (if up) that the copy, (OST, object id), was
  // just marked ok, so it serves it now rather than from its next heartbeat
  // (OssRequest.fence_lift).
  void LiftFences(const std::vector<std::pair<uint32_t, uint64_t>>& objects);
  // Resyncs the stale copies of ino it can; true iff none is left stale.
  bool ResyncFile(uint64_t ino);
  // ResyncFile's work once it may copy: with no writer, or under the range lock.
  bool ResyncHeld(uint64_t ino);
  // Rebuilds object `target` of the EC layout l (file size `size`) into
  // (dst_ost, dst_oid) at dst_addr from K good chunk objects.
  Status RebuildEcObject(const proto::Layout& l, uint64_t size, int target,
                              uint32_t dst_ost, uint64_t dst_oid, const std::string& dst_addr);
  // rebuild_space.cc. An up OST for a rebuilt copy of object `target` of l
  // with room for `needed` bytes: on an OSS l does not use, else (mirrors) one
  // the target's stripe does not use, else (logged) an OST l (EC) or the
  // stripe (mirror) does not use on an OSS that does. nullopt if none; then
  // *full lists those that would do but lack the room.
  std::optional<uint32_t> NewHome(const proto::Layout& l, int target, uint64_t needed,
                                  std::vector<uint32_t>* full);
  // Bytes object `target` of l holds when the file is `size` bytes long.
  static uint64_t NeededBytes(const proto::Layout& l, uint64_t size, int target);
  // Iff OST ost has room for `needed` more bytes, by the avail its OSS last
  // reported (true when it reported nothing yet); after an ENOSPC there, only
  // once that avail has grown.
  bool HasRoom(uint32_t ost, uint64_t needed);
  // Records, for this pass, that an object of `needed` bytes waits for room
  // on ost (enospc: a write there failed ENOSPC).
  void NotePause(uint32_t ost, uint64_t needed, bool enospc);
  // A rebuild write onto ost went through: its ENOSPC mark is cleared.
  void NoteRoom(uint32_t ost);
  // Iff a rebuild write onto ost failed ENOSPC since its last success.
  bool WasFull(uint32_t ost) const;
  // At the end of a pass (idle: nothing was wanted): the pauses shown become
  // this pass's; a pause that starts or ends is logged once.
  void EndPass(bool idle);
  // Destroys a rebuilt object that will not be swapped in (best effort).
  void DropOrphan(uint32_t ost, uint64_t oid, const std::string& addr);
  // What ResyncFile does for one object not ok; see there.
  enum class Outcome { kSkipped, kMarkOk, kReplaced, kRetryFile };
  Outcome RebuildObject(uint64_t ino, const proto::Attr& attr, const proto::Layout& l, int i);
  // One ScrubFile call's findings (scrubber.cc).
  struct ScrubState {
    uint64_t ino;
    const proto::Layout& l;
    uint64_t size;
    std::set<int> bad;  // object indices found bad
    proto::ScrubResp* out;
    void Problem(const std::string& what);
    void ReadFailed(int i, const Status& st);  // EIO (crc): bad; else not checked
  };
  Status ScrubEc(ScrubState* st, uint64_t from, std::chrono::steady_clock::time_point until);
  Status ScrubMirrors(ScrubState* st, uint64_t from, std::chrono::steady_clock::time_point until);
  // Reads [off, off + len) of each object in objs at once into bufs (zeros
  // past its end); one status per object (EIO: a chunk failed its crc).
  std::vector<Status> ReadAll(const std::vector<const proto::StripeObject*>& objs, uint64_t off,
                              uint64_t len, std::vector<std::vector<uint8_t>>* bufs);
  // Waits as long as the rate knob asks for `bytes` more.
  void Throttle(uint64_t bytes);
  Status CopyObject(const proto::StripeObject& src, const std::string& src_addr,
                    const proto::StripeObject& dst, const std::string& dst_addr);
  // Takes (or releases) the whole-file mirror-range write lock of ino for the
  // resyncer, waiting at most about 10 s; false: not granted.
  bool HoldWholeFile(uint64_t ino, bool lock);
  Status CallOss(const std::string& address, const proto::OssRequest& req,
                      proto::OssResponse* reply);
  rpc::Channel* ChannelTo(const std::string& address);
  std::string Payload(const proto::OssRequest& req) const;

  Namespace* const ns_;
  OstRegistry* const osts_;
  rpc::IoContext* const io_;
  const std::chrono::milliseconds interval_;
  auth::KeyRotator* const keys_;  // set: calls carry a server token
  LockTable* const locks_;
  std::mutex channels_mu_;
  std::map<std::string, std::unique_ptr<rpc::Channel>> channels_;  // GUARDED_BY(channels_mu_)
  std::mutex mu_;
  std::condition_variable cv_;
  // Set under mu_ (the loop's wait); read without it between files.
  std::atomic<bool> stop_{false};
  bool kicked_ = false;  // GUARDED_BY(mu_)
  std::atomic<uint64_t> copies_resynced_{0};
  std::atomic<uint64_t> bytes_copied_{0};
  std::atomic<uint64_t> copy_failures_{0};
  std::atomic<double> rate_mibps_{0};
  std::mutex rate_mu_;
  std::chrono::steady_clock::time_point rate_next_{};  // GUARDED_BY(rate_mu_)
  // Bytes and time of the current run of passes with work, for the rate shown.
  std::atomic<int64_t> active_since_ms_{0};
  std::atomic<uint64_t> active_bytes_{0};
  std::atomic<int64_t> active_last_ms_{0};  // when those bytes last grew
  // Pauses for lack of space (rebuild_space.cc), per destination OST.
  struct Pause {
    uint64_t needed = 0;  // the largest object waiting for it
    uint64_t avail = 0;   // its avail when last found short
  };
  mutable std::mutex pause_mu_;  // never held while calling out
  std::map<uint32_t, Pause> paused_;           // GUARDED_BY(pause_mu_): as of the last pass
  std::map<uint32_t, Pause> pass_paused_;      // GUARDED_BY(pause_mu_): this pass's so far
  std::map<uint32_t, uint64_t> enospc_avail_;  // GUARDED_BY(pause_mu_): avail at its last ENOSPC
  std::atomic<size_t> home_cursor_{0};
  std::chrono::milliseconds scrub_call_{2000};
  std::thread thread_;
};

}  // namespace sfs::mds
