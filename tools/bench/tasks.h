// Benchmark tasks: N forked processes on this node, as `mpirun -np N` would
// start them, with barriers between phases and per-phase timings sent back
// to the parent.
//
// Each task has two pipes to the parent: "up" carries its messages (a
// barrier arrival, a TaskRecord) and "down" carries barrier releases. The
// parent releases a barrier once every task has arrived, so tasks start a
// phase within microseconds of each other, with no sleeps and no polling in
// the tasks. Timestamps are CLOCK_MONOTONIC, comparable across the tasks of
// one node, so the parent can compute a phase's time as
// (last task's end - first task's start), as IOR does.
//
// Failure: a task that exits non-zero (an I/O error, reported by the task
// itself on stderr) makes the parent stop the others with SIGTERM; tasks
// blocked in Barrier() then see ECANCELED. SIGINT/SIGTERM to the parent
// (Ctrl-C) stops every task and RunTasks returns with interrupted set, so
// the caller can remove its files.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "common/status.h"

namespace sfs::bench {

// One task's timings of one phase of one iteration. A plain struct: it goes
// through the pipe as bytes (same binary on both ends).
struct TaskRecord {
  int32_t iteration = 0;
  int32_t phase = 0;
  int64_t start_ns = 0;     // the phase began (right after its barrier)
  int64_t io_start_ns = 0;  // open done; data transfer begins
  int64_t io_end_ns = 0;    // data done (fsync included); close begins
  int64_t end_ns = 0;       // close done
  uint64_t bytes = 0;
  uint64_t ops = 0;
  uint64_t errors = 0;  // verification errors
};

// CLOCK_MONOTONIC in nanoseconds.
int64_t NowNs();

// Node-wide: sync(), then drop the page cache, dentries and inodes
// (echo 3 > /proc/sys/vm/drop_caches). False if that is not permitted.
bool DropCaches();

// A task's handle on the run. Used only by the task's own (single) thread.
class TaskContext {
 public:
  TaskContext(int rank, int ntasks, int up_fd, int down_fd)
      : rank_(rank), ntasks_(ntasks), up_(up_fd), down_(down_fd) {}
  int rank() const { return rank_; }
  int ntasks() const { return ntasks_; }
  // Returns once every task has called Barrier() as many times as this one.
  // ECANCELED if the run was aborted meanwhile.
  Status Barrier();
  // Sends r to the parent.
  Status Report(const TaskRecord& r);

 private:
  int rank_, ntasks_, up_, down_;
};

struct TaskRunResult {
  std::vector<TaskRecord> records;  // from every task, in arrival order
  int failed_tasks = 0;             // exited non-zero or killed
  bool interrupted = false;         // the parent got SIGINT or SIGTERM
};

// Forks ntasks processes; task i runs body(ctx with rank i) and exits with
// its return value. Returns when all have exited.
// REQUIRES: the calling process has no other threads (fork), ntasks >= 1.
TaskRunResult RunTasks(int ntasks, const std::function<int(TaskContext&)>& body);

}  // namespace sfs::bench
