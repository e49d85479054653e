// Benchmark tasks: N forked processes on this node, as `mpirun -np N` would
// start them, with barriers between phases and per-phase timings sent back
// to the parent. When sfs-bench is built with MPI and started by mpirun,
// the MPI ranks are the tasks instead (RunMpiTasks, mpi_tasks.cc).
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
// Pipes to the parent for forked tasks, MPI calls under mpirun.
class TaskContext {
 public:
  virtual ~TaskContext() = default;
  int rank() const { return rank_; }
  int ntasks() const { return ntasks_; }
  // Returns once every task has called Barrier() as many times as this one.
  // ECANCELED if the run was aborted meanwhile.
  virtual Status Barrier() = 0;
  // Hands r to whoever builds the report (the parent, or MPI rank 0).
  virtual Status Report(const TaskRecord& r) = 0;

 protected:
  TaskContext(int rank, int ntasks) : rank_(rank), ntasks_(ntasks) {}

 private:
  int rank_, ntasks_;
};

struct TaskRunResult {
  std::vector<TaskRecord> records;  // from every task, in arrival order
  int failed_tasks = 0;             // exited non-zero or killed
  bool interrupted = false;         // the parent got SIGINT or SIGTERM
  bool reporter = true;             // false on MPI ranks other than 0: print nothing
};

// Forks ntasks processes; task i runs body(ctx with rank i) and exits with
// its return value. Returns when all have exited.
// REQUIRES: the calling process has no other threads (fork), ntasks >= 1.
TaskRunResult RunTasks(int ntasks, const std::function<int(TaskContext&)>& body);

// --- MPI (mpi_tasks.cc; inert unless built with SFS_HAVE_MPI) -----------------

// True when built with MPI. Whether this process runs under mpirun is read
// from the launcher's environment (OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_RANK).
bool BuiltWithMpi();
// Under mpirun (built with MPI): MPI_Init, and the world's size (0 otherwise).
// Call once, first thing in main(); MpiFinish() before returning.
int MpiStart(int* argc, char*** argv);
void MpiFinish();
// This process's MPI rank (0 outside MPI).
int MpiRank();
// Under mpirun: true iff ok on every rank (MPI_Allreduce); else ok.
bool MpiAllOk(bool ok);

// The task count from -np (kTasksNotGiven if absent) and the MPI world size
// (0 = not under mpirun): the world size under mpirun (-np, if given, must
// match), else -np or 1. EINVAL with a one-line reason.
constexpr int64_t kTasksNotGiven = -1;
Status ResolveTasks(int64_t np, int mpi_size, int* ntasks);

// Under mpirun: runs body once on each rank (TaskContext rank = MPI rank),
// Barrier = MPI_Barrier, and gathers every rank's records on rank 0
// (timestamps shifted onto rank 0's clock, measured at a barrier). A rank
// whose body fails aborts the whole job (MPI_Abort), as IOR does. Only rank
// 0's result has reporter set; its failed_tasks counts the failed ranks.
// REQUIRES: MpiStart() returned > 0.
TaskRunResult RunMpiTasks(const std::function<int(TaskContext&)>& body);

// RunMpiTasks under mpirun, else RunTasks(ntasks, body).
TaskRunResult RunAllTasks(int ntasks, const std::function<int(TaskContext&)>& body);

}  // namespace sfs::bench
