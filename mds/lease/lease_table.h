// LeaseTable: which clients may cache which regular files' and directories'
// attributes and names (a directory's lease also covers the names in it,
// absent ones included), and the revocation of those leases when another
// client changes them (issue 6, "metadata attr/entry caching with correct
// invalidation"). The table only knows inodes; what an item means is the
// caller's (mds/service/lease_ops.cc).
//
// A client with an active watch (a Watch long poll held, or answered within
// watch_active_ms) is granted a lease of lease_ms with each reply carrying a
// regular file's attributes; the MDS counts it as held until grant + lease_ms
// + margin_ms (the client's kernel starts its timer when the reply arrives,
// later than the grant). A change by client R to inode I revokes every lease
// on I held by another client: the invalidation goes to that client's watch
// queue with the client's next seq, and the change's reply is held until each
// holder acked that seq (its next Watch carries ack_seq >= seq) or its lease
// ran out. So a client that stops answering delays others by at most its
// remaining lease. R's own leases stay: R's kernel sees R's change itself.
//
// Grant vs revoke race: a reply read from the namespace before a change but
// granted after the change revoked must not carry a lease (nobody would
// invalidate it). Callers take Tick() before reading the namespace and pass it
// to Grant(); Grant() refuses if I was revoked after that tick.
//
// Wait cycles: a holder acks only after its kernel applied the invalidation,
// and notify_inval_entry needs the parent directory's lock. If the holder's
// own change in that directory (which holds the lock in its kernel) is waiting
// here for the requester's ack, neither can ack: two mounts unlinking, in one
// directory, files the other caches would each wait out the other's lease.
// So a revocation does not wait on a holder that (through the revocations it
// waits for) already waits on the requester: the invalidation is still
// queued and sent, and the holder applies it as soon as its own change
// returns — a window of one round trip instead of a lease period.
//
// Restart: the table is not persistent, but clients may still hold leases of
// the previous MDS instance. Revocations are held until start + grace_ms
// (default lease_ms + margin_ms), after which every old lease has expired.
// sfs-mds sets grace_ms = 0 when no earlier instance ever granted a lease
// (the marker file written from on_first_grant is absent).
//
// Thread-safe. Callbacks (Watch and Revoke completions) run without the lock
// held, on the caller's thread or the timer thread; they must not block.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace sfs::mds {

struct LeaseOptions {
  int64_t lease_ms = 5000;         // 0 = grant no leases
  int64_t margin_ms = 500;         // MDS-side slack on top of lease_ms
  int64_t watch_active_ms = 3000;  // a watch counts as active this long after its last poll
  int64_t max_wait_ms = 5000;      // cap on a Watch's wait_ms
  int64_t grace_ms = -1;           // after start; -1 = lease_ms + margin_ms
  // Called once, before the first lease is granted (with the table's lock
  // held): sfs-mds records that a restart must wait out a grace period.
  std::function<void()> on_first_grant;
};

// One thing a client must forget. parent = 0: the inode's attributes only;
// else also the name (parent, name).
struct LeaseInval {
  uint64_t ino = 0;
  uint64_t parent = 0;
  std::string name;
  bool lock_recall = false;  // not a lease: give back the cached lock on ino (Invalidation.lock_recall)
};

class LeaseTable {
 public:
  using Clock = std::function<int64_t()>;  // monotonic milliseconds
  using WatchDone = std::function<void(std::vector<LeaseInval> items, uint64_t seq)>;

  // The grace period starts now (at construction).
  explicit LeaseTable(const LeaseOptions& opts, Clock now = SteadyMs);
  ~LeaseTable();  // stops the timer thread; pending callbacks are dropped uncalled

  // Starts a thread that calls RunDue() at each deadline. Without it (unit
  // tests with a fake clock) the owner calls RunDue() itself.
  void StartTimer();

  uint32_t lease_ms() const { return static_cast<uint32_t>(opts_.lease_ms); }
  uint64_t Tick();
  // Records a lease on ino for client and returns its length in ms, or 0 if
  // the client has no active watch or ino was revoked after since_tick.
  uint32_t Grant(uint64_t client, uint64_t ino, uint64_t since_tick);
  // Whether client has a watch now (a poll held, or answered lately), so
  // that it would hear an item sent to it (cached locks, lock_table.h).
  bool WatchActive(uint64_t client);

  // A client's long poll. Acks everything up to ack_seq, then calls done with
  // the client's unacked invalidations (at once if there are any, else when
  // one is queued or wait_ms passed, with none). A newer Watch of the same
  // client answers the older one empty.
  void Watch(uint64_t client, uint64_t ack_seq, int64_t wait_ms, WatchDone done);

  // Revokes the leases of every client but requester on the items' inodes;
  // calls done once each holder acked or its lease expired, and the grace
  // period is over (possibly inline).
  void Revoke(uint64_t requester, std::vector<LeaseInval> items, std::function<void()> done);

  // Sends item to holder alone, whether or not it holds a lease now, and
  // calls done once it acked it or at until_ms (the append token's end,
  // append_ops.cc). Unlike Revoke, never stops waiting to break a cycle:
  // the holder must have acted on the item before done runs.
  void Recall(uint64_t holder, LeaseInval item, int64_t until_ms, std::function<void()> done);

  // The client unmounts: answers its held poll, drops its leases and queued
  // invalidations (revocations stop waiting on it) and its watch, so it gets no
  // lease until it polls again.
  void Leave(uint64_t client);

  // Answers watches and revocations whose time has come; forgets expired leases.
  void RunDue();

  // Leases held now, all inodes and clients (metrics).
  size_t LeaseCount();
  // For tests.
  size_t Holders(uint64_t ino);
  size_t PendingRevocations();

  static int64_t SteadyMs();

 private:
  struct Queued {
    uint64_t seq;
    LeaseInval item;
    int64_t expiry;  // the holder's lease ends: the item is moot after it
  };
  struct ClientState {
    uint64_t last_seq = 0;  // last seq assigned
    uint64_t acked = 0;
    std::deque<Queued> queue;
    WatchDone held;  // a Watch waiting for items
    int64_t held_until = 0;
    int64_t last_poll = 0;
  };
  struct InoState {
    std::unordered_map<uint64_t, int64_t> holders;  // client -> expiry
    uint64_t revoked_tick = 0;
    int64_t revoked_at = 0;
  };
  struct Wait {
    uint64_t client;
    uint64_t seq;
    int64_t deadline;
  };
  struct Pending {
    uint64_t requester = 0;
    std::vector<Wait> waits;
    int64_t not_before = 0;
    std::function<void()> done;
  };
  using Calls = std::vector<std::function<void()>>;

  void TimerLoop();
  // The helpers below REQUIRE mu_ held; they append callbacks to run unlocked.
  void Enqueue(uint64_t client, const LeaseInval& item, int64_t expiry, Pending* p);
  void AnswerWatch(ClientState& cs, int64_t now, Calls* out);
  void CompletePending(int64_t now, Calls* out);
  bool Satisfied(const Wait& w, int64_t now);
  bool WaitsOn(uint64_t from, uint64_t target, int64_t now);
  void DropMoot(ClientState& cs, int64_t now);
  void Sweep(int64_t now);
  int64_t NextDeadline();

  const LeaseOptions opts_;
  const Clock now_;
  const int64_t grace_end_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::once_flag first_grant_;
  uint64_t tick_ = 0;                                   // GUARDED_BY(mu_)
  uint64_t pruned_tick_ = 0;                            // GUARDED_BY(mu_)
  int64_t next_sweep_ = 0;                              // GUARDED_BY(mu_)
  std::unordered_map<uint64_t, ClientState> clients_;   // GUARDED_BY(mu_)
  std::unordered_map<uint64_t, InoState> inos_;         // GUARDED_BY(mu_)
  std::list<Pending> pending_;                          // GUARDED_BY(mu_)
  bool stop_ = false;                                   // GUARDED_BY(mu_)
  std::thread timer_;
};

}  // namespace sfs::mds
