// WriteBehindQueue: writes acknowledged once copied, sent to the OSSes in the
// background (issue 6: the strided unaligned write waited for one OSS round
// trip per write(2)).
//
// Gathering: a write that starts where the last queued (not yet sent) job of
// the same inode ends is appended to it, up to kMaxGather bytes, so a
// sequence of small adjacent writes (also from several handles: the kernel
// serialises writes that extend a file, so IOR's strided tasks arrive in
// file order) goes out as stripe-sized OSS calls.
//
// Submit copies the caller's bytes into a job and queues it; a small pool of
// worker threads sends each job through the Striper (all stripes in
// parallel, with its retry rules), so many writes are in flight while the
// application goes on. Memory is bounded: queued and running jobs hold at
// most max_bytes of data (a single larger write is admitted alone), and
// Submit waits for room (back-pressure on the writer). Each job counts at
// least kMinCharge bytes, so the jobs' own overhead is bounded too.
//
// Batches: a woken worker takes the front job and up to kMaxBatch - 1 more
// queued jobs for the same OST (at most kMaxBatchBytes) and sends them as
// one vectored OSS call (Striper::WriteBatch: OssRequest.write_v, adjacent
// writes merged), so many small writes cost one worker wake-up, one RPC and
// one wait. One OST per batch: a batch that meets a slow
// or dead OSS holds back no other OSS's writes (and their replies are never
// left unread while the worker waits on that OSS). Submit wakes a worker only
// when no woken worker is yet to take the queue, or when the queue holds more
// than those can take.
//
// Holding a stream: a job that lands within kMaxGather bytes of the inode's
// previous write (a sequential or strided stream, as IOR's N-to-1 tasks make:
// the kernel passes their writes one at a time, in no fixed order) is
// "streaming". While the front job is streaming, the queue holds fewer than
// kMaxBatchBytes (and half the window), the last write came less than
// kHoldIdle ago and the front job is younger than kHoldMax, no worker takes
// anything (unless someone waits: a barrier, a writer waiting for room or
// behind an overlap, or the queue stops): the next writes queue up behind
// it, and the batch that follows goes out as one write_v whose adjacent
// extents the Striper merges, up to 4 MiB instead of one OSS write per
// write(2). Without it an idle worker took each job as soon as it was
// queued. Random writes are not streaming.
//
// Erasure-coded rows: a write to an EC file is cut at its rows (K data
// chunks). Whole rows are queued as any write. A part of a row waits in an
// assembly buffer of the whole row (one per row, at most kMaxRows, rows of
// at most kMaxRowBytes), where later parts of the same row, from any handle
// of any process, are copied to their place: the kernel hands a 4 MiB write
// over in 1 MiB pieces (max_write), and each piece alone was a
// read-modify-write of its row (K - 1 chunk reads, a whole row's parity
// encoded for a quarter of it). A row whose bytes are all written is queued
// at once, as one full-row write that reads nothing back; a row still in
// part is queued kRowHoldIdle after its last piece or kRowHoldMax after its
// first (long enough for a writer the scheduler keeps off the CPU for tens
// of milliseconds between its pieces, as a loaded machine does: with 10 ms,
// a quarter of IOR's rows went in part there), or when someone waits on its
// inode (a barrier, an overlapping write) or the rows are all the window
// holds and a writer waits for room, and then each of its written extents
// is read-modify-written as before. A later piece over bytes still
// in the buffer replaces them there, which is the order the writes were
// made in.
//
// Order: a write that overlaps a pending write of the same inode waits until
// that one has finished, so a later write to the same bytes always lands
// last. Barriers: WaitIno returns once every write of that inode submitted
// before the call has finished (reads, attributes, truncates, flush and close
// of this client call it). A failed background write records its first
// error on its File (File::wb_error_); Flush/Fsync/Close report it.
//
// Thread-safe. The destructor finishes every queued job before it returns.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <unordered_map>
#include <vector>

#include "client/lib/client.h"

namespace sfs::client {

class Striper;

class WriteBehindQueue {
 public:
  // REQUIRES: striper outlives this object; max_bytes > 0, threads > 0.
  WriteBehindQueue(Striper* striper, uint64_t max_bytes, int threads);
  ~WriteBehindQueue();
  WriteBehindQueue(const WriteBehindQueue&) = delete;
  WriteBehindQueue& operator=(const WriteBehindQueue&) = delete;

  // Copies buf and queues its write at file offset off; returns once queued.
  // Returns true iff the write needs a worker woken (see Batches). With
  // defer_wake the caller does that, by calling Wake() soon, e.g. right after
  // answering its own caller, so that on a busy CPU the woken worker does not
  // run before that answer; otherwise Submit does it.
  bool Submit(const std::shared_ptr<File>& f, uint64_t off, std::span<const uint8_t> buf,
              bool defer_wake = false);
  // Wakes one worker (for a job queued with defer_wake).
  void Wake() { work_cv_.notify_one(); }
  // Waits for every write of ino submitted before this call.
  void WaitIno(uint64_t ino);
  // Bytes held by queued and running writes (for tests and stats).
  uint64_t bytes_pending() const;

 private:
  // Adjacent writes are gathered into one job up to this many bytes.
  static constexpr uint64_t kMaxGather = 1 << 20;
  // What a job costs the window at least, so that tiny writes cannot queue
  // millions of jobs: the job's own overhead stays under 4% of the window.
  static constexpr uint64_t kMinCharge = 4096;
  // Most jobs and bytes a worker takes at once (one write_v), and how far
  // down the queue it looks. 4 MiB: IOR's strided tasks drift apart, and a
  // 1 MiB batch held their writes in 47008-byte extents that did not touch
  // (OSS pwrite sizes: 40 % of the bytes in writes of 64 KiB or more with
  // 1 MiB, 94 % with 4 MiB).
  static constexpr size_t kMaxBatch = 128;
  static constexpr uint64_t kMaxBatchBytes = 4 << 20;
  static constexpr size_t kMaxScan = 256;
  // How long a stream is held (see Holding): since the last write, and at
  // most since its front job was queued.
  static constexpr std::chrono::microseconds kHoldIdle{1000};
  static constexpr std::chrono::milliseconds kHoldMax{20};
  // Inodes whose last write end is remembered (then the memory starts over).
  static constexpr size_t kMaxTracked = 4096;
  // EC row assembly (see Erasure-coded rows): how many rows at once, the
  // largest row assembled, and how long a row waits for the rest of it.
  static constexpr size_t kMaxRows = 8;
  static constexpr uint64_t kMaxRowBytes = 16 << 20;
  static constexpr std::chrono::milliseconds kRowHoldIdle{50};
  static constexpr std::chrono::milliseconds kRowHoldMax{250};
  // Row buffers kept for reuse: a new one's every page faults in when the
  // row is copied in (a tenth of the mount's CPU for an EC checkpoint).
  static constexpr size_t kSpareRows = 4;
  using Clock = std::chrono::steady_clock;

  struct Job {
    uint64_t ino = 0;
    // The handles whose writes it carries (one, or more when gathered): a
    // failure is remembered on each.
    std::vector<std::shared_ptr<File>> files;
    std::string job;  // CurrentJob() of the writer (job_id.h): sent with its data
    uint64_t seq = 0;
    uint64_t off = 0;
    std::vector<uint8_t> data;
    uint64_t charged = 0;    // what it holds of bytes_
    bool streaming = false;  // within kMaxGather of the inode's previous write
    Clock::time_point born;  // when queued
    // An EC row (row_bytes > 0; off is the row's start, data unused): the
    // row's bytes at their place, and which of them were written
    // (row-relative [start, end), disjoint, merged).
    uint64_t row_bytes = 0;
    std::unique_ptr<uint8_t[]> row_buf;
    std::map<uint64_t, uint64_t> have;
    uint64_t have_bytes = 0;
    Clock::time_point touched;  // its last piece

    uint64_t Bytes() const { return row_bytes > 0 ? have_bytes : data.size(); }
    bool RowDone() const { return row_bytes > 0 && have_bytes == row_bytes; }
    // Copies buf to row offset `at` and notes it written; returns the
    // bytes newly covered.
    uint64_t Lay(uint64_t at, std::span<const uint8_t> buf);
  };
  // An inode's pending writes: disjoint ranges (an overlapping write waits),
  // so the overlap check is two lookups in by_off.
  struct InoPending {
    std::map<uint64_t, uint64_t> by_seq;  // submission number -> start offset
    std::map<uint64_t, uint64_t> by_off;  // start offset -> end
  };
  bool OverlapsLocked(uint64_t ino, uint64_t off, uint64_t end) const;
  // The bytes of f's EC rows if they are assembled (see Erasure-coded
  // rows), else 0.
  static uint64_t RowBytesOf(const File& f);
  // Submit of one range: a plain write, or whole EC rows (ec: not held as a
  // stream).
  bool SubmitRange(const std::shared_ptr<File>& f, uint64_t off, std::span<const uint8_t> buf,
                   bool defer_wake, bool ec);
  // Submit of a part of one EC row of rb bytes: into its assembly buffer.
  bool SubmitRow(const std::shared_ptr<File>& f, uint64_t off, std::span<const uint8_t> buf,
                 bool defer_wake, uint64_t rb);
  // A new assembly buffer for row `row` (rb bytes) of ino, pending and
  // charged kMinCharge (the oldest row is queued if kMaxRows are
  // assembling). REQUIRES: mu_ held; the row not in rows_.
  Job* NewRowLocked(uint64_t ino, uint64_t row, uint64_t rb, const std::string& job_id,
                    Clock::time_point now);
  // Moves rows_[key] to the queue. REQUIRES: mu_ held; key in rows_.
  void QueueRowLocked(std::map<std::pair<uint64_t, uint64_t>, std::unique_ptr<Job>>::iterator it);
  // Queues ino's rows that overlap [off, end). REQUIRES: mu_ held.
  void QueueRowsLocked(uint64_t ino, uint64_t off, uint64_t end);
  // Queues the rows whose hold ended (every row once stop_). REQUIRES: mu_
  // held.
  void QueueDueRowsLocked(Clock::time_point now);
  // When the next row's hold ends (max() if none). REQUIRES: mu_ held.
  Clock::time_point RowsDueLocked() const;
  // Appends the write to the last queued job if it continues it (same inode,
  // starts where it ends, not yet taken by a worker). REQUIRES: mu_ held.
  bool GatherLocked(const std::shared_ptr<File>& f, uint64_t off, std::span<const uint8_t> buf);
  // True iff a worker should be woken for what is queued now; if so, counts
  // the wake-up as owed to the queue. REQUIRES: mu_ held.
  bool NeedWakeLocked();
  // The OST all of a job's bytes go to (for a mirrored file, the OSTs of
  // their copies), as a key, or -1 if they go to several.
  static int64_t OstOf(const Job& j);
  // Moves the front job into batch, and after it up to kMaxBatch - 1 more
  // queued jobs for the same OST or copies' OSTs (none if it spans them;
  // mirrored ones go under one range lock per file). REQUIRES: mu_
  // held; a job queued.
  void TakeLocked(std::vector<std::unique_ptr<Job>>* batch);
  // Records [off, end) as ino's latest write; true iff it lies within
  // kMaxGather of the previous one (a stream). REQUIRES: mu_ held.
  bool NoteEndLocked(uint64_t ino, uint64_t off, uint64_t end);
  // When the current hold ends (see Holding). REQUIRES: mu_ held; a job queued.
  Clock::time_point HoldEndLocked() const;
  // True iff the queue is held now. REQUIRES: mu_ held.
  bool HeldLocked(Clock::time_point now) const;
  // After a write was queued: wakes a worker if the queue needs one (see
  // Submit's return). REQUIRES: lock holds mu_ (released if it returns true).
  bool WakeAfterSubmitLocked(std::unique_lock<std::mutex>& lock, bool defer_wake);
  // Waits on done_cv_ until ready(), counted in waiters_ (which ends any
  // hold; and queues the EC rows in assembly when they are all that is
  // pending, which the waiter may be waiting for room behind). REQUIRES:
  // lock holds mu_.
  void WaitLocked(std::unique_lock<std::mutex>& lock, const std::function<bool()>& ready);
  void Work();
  void Send(std::vector<std::unique_ptr<Job>>& batch);
  // Ends j: its bytes leave the window, its inode's barriers may pass, and
  // an EC row's buffer goes to spare_rows_.
  void Finish(Job& j);

  Striper* const striper_;
  const uint64_t max_bytes_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_;         // a job was queued, or stop
  std::condition_variable done_cv_;         // a job finished
  std::deque<std::unique_ptr<Job>> queue_;  // GUARDED_BY(mu_)
  // Pending (queued or running) writes per inode, by submission number.
  std::unordered_map<uint64_t, InoPending> pending_;  // GUARDED_BY(mu_)
  int waiters_ = 0;        // GUARDED_BY(mu_): threads waiting on done_cv_
  int idle_ = 0;           // GUARDED_BY(mu_): workers waiting on work_cv_
  int wakes_ = 0;          // GUARDED_BY(mu_): workers notified, not yet awake
  uint64_t next_seq_ = 1;  // GUARDED_BY(mu_)
  std::unordered_map<uint64_t, uint64_t> last_end_;  // GUARDED_BY(mu_): ino -> end of last write
  // EC rows in assembly, by (inode, row): pending (in pending_ over the
  // whole row) and charged, not yet queued.
  std::map<std::pair<uint64_t, uint64_t>, std::unique_ptr<Job>> rows_;  // GUARDED_BY(mu_)
  uint64_t rows_bytes_ = 0;        // GUARDED_BY(mu_): what rows_ hold of bytes_
  // Buffers of rows sent, of spare_size_ bytes each (at most kSpareRows).
  std::vector<std::unique_ptr<uint8_t[]>> spare_rows_;  // GUARDED_BY(mu_)
  uint64_t spare_size_ = 0;                              // GUARDED_BY(mu_)
  uint64_t queued_bytes_ = 0;      // GUARDED_BY(mu_): data of the jobs in queue_
  int timers_ = 0;                 // GUARDED_BY(mu_): idle workers waiting for a hold to end
  Clock::time_point last_submit_;  // GUARDED_BY(mu_)
  uint64_t bytes_ = 0;             // GUARDED_BY(mu_)
  bool stop_ = false;              // GUARDED_BY(mu_)
  std::vector<std::thread> workers_;
};

}  // namespace sfs::client
