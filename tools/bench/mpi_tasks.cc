// Benchmark tasks as MPI ranks (see tasks.h), for sfs-bench built with MPI
// (meson -Dmpi=enabled; Debian's libopenmpi-dev or libmpich-dev) and started
// by mpirun: every rank is one task, barriers are MPI_Barrier, and the
// per-phase records are gathered on rank 0, which prints the report. Without
// MPI at build time, or without mpirun at run time, sfs-bench forks its tasks
// (tasks.cc) and only ResolveTasks/RunAllTasks of this file do anything.
//
// Clocks: each rank stamps with its own CLOCK_MONOTONIC, which is not
// comparable across nodes. At the start, right after a barrier, every rank
// reads its clock and rank 0 broadcasts its reading; each rank then shifts
// its stamps by the difference, so the phase times rank 0 computes (last
// end - first start, as IOR) are off by at most the barrier's exit skew.
#include <cstdlib>
#include <cstring>
#include <string>

#include "tools/bench/tasks.h"

#ifdef SFS_HAVE_MPI
#include <mpi.h>
#endif

namespace sfs::bench {
namespace {

int g_mpi_size = 0;  // > 0 once MpiStart() initialised MPI
int g_mpi_rank = 0;

bool UnderMpirun() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK"}) {
    const char* s = std::getenv(v);
    if (s != nullptr && *s != '\0') return true;
  }
  return false;
}

#ifdef SFS_HAVE_MPI

class MpiTaskContext final : public TaskContext {
 public:
  MpiTaskContext(int rank, int ntasks, int64_t skew_ns)
      : TaskContext(rank, ntasks), skew_ns_(skew_ns) {}

  Status Barrier() override {
    if (MPI_Barrier(MPI_COMM_WORLD) != MPI_SUCCESS) return Status(ECANCELED, "MPI_Barrier failed");
    return Status::Ok();
  }

  Status Report(const TaskRecord& r) override {
    TaskRecord s = r;
    for (int64_t* t : {&s.start_ns, &s.io_start_ns, &s.io_end_ns, &s.end_ns}) {
      if (*t != 0) *t -= skew_ns_;
    }
    records_.push_back(s);
    return Status::Ok();
  }

  const std::vector<TaskRecord>& records() const { return records_; }

 private:
  int64_t skew_ns_;  // this rank's clock minus rank 0's
  std::vector<TaskRecord> records_;
};

// This rank's clock minus rank 0's, read right after a barrier.
int64_t ClockSkew() {
  MPI_Barrier(MPI_COMM_WORLD);
  int64_t now = NowNs();
  int64_t root = now;
  MPI_Bcast(&root, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
  return now - root;
}

// Every rank's records, as bytes, on rank 0 (empty elsewhere).
std::vector<TaskRecord> GatherRecords(const std::vector<TaskRecord>& mine) {
  int size = g_mpi_size;
  int bytes = static_cast<int>(mine.size() * sizeof(TaskRecord));
  std::vector<int> counts(size), displs(size);
  MPI_Gather(&bytes, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  int total = 0;
  for (int i = 0; i < size && g_mpi_rank == 0; ++i) {
    displs[i] = total;
    total += counts[i];
  }
  std::vector<TaskRecord> all(g_mpi_rank == 0 ? total / sizeof(TaskRecord) : 0);
  MPI_Gatherv(mine.data(), bytes, MPI_BYTE, all.data(), counts.data(), displs.data(), MPI_BYTE, 0,
              MPI_COMM_WORLD);
  return all;
}

#endif  // SFS_HAVE_MPI

}  // namespace

bool BuiltWithMpi() {
#ifdef SFS_HAVE_MPI
  return true;
#else
  return false;
#endif
}

int MpiStart(int* argc, char*** argv) {
#ifdef SFS_HAVE_MPI
  if (!UnderMpirun()) return 0;
  if (MPI_Init(argc, argv) != MPI_SUCCESS) return 0;
  MPI_Comm_size(MPI_COMM_WORLD, &g_mpi_size);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_mpi_rank);
  return g_mpi_size;
#else
  (void)argc;
  (void)argv;
  (void)UnderMpirun;
  return 0;
#endif
}

void MpiFinish() {
#ifdef SFS_HAVE_MPI
  if (g_mpi_size > 0) MPI_Finalize();
  g_mpi_size = 0;
#endif
}

int MpiRank() { return g_mpi_rank; }

bool MpiAllOk(bool ok) {
#ifdef SFS_HAVE_MPI
  if (g_mpi_size > 0) {
    int mine = ok ? 1 : 0, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    return all != 0;
  }
#endif
  return ok;
}

Status ResolveTasks(int64_t np, int mpi_size, int* ntasks) {
  if (mpi_size > 0) {
    if (np != kTasksNotGiven && np != mpi_size) {
      return Status(EINVAL, "-np " + std::to_string(np) + " differs from mpirun's " +
                                std::to_string(mpi_size) + " ranks (the ranks are the tasks)");
    }
    *ntasks = mpi_size;
    return Status::Ok();
  }
  if (np == kTasksNotGiven) np = 1;
  if (np < 1 || np > 4096) return Status(EINVAL, "-np must be in [1, 4096]");
  *ntasks = static_cast<int>(np);
  return Status::Ok();
}

TaskRunResult RunMpiTasks(const std::function<int(TaskContext&)>& body) {
  TaskRunResult res;
#ifdef SFS_HAVE_MPI
  MpiTaskContext ctx(g_mpi_rank, g_mpi_size, ClockSkew());
  int code = body(ctx);
  if (code != 0) {
    std::fflush(stdout);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, code);  // the others may wait in a barrier for us
  }
  res.records = GatherRecords(ctx.records());
  res.reporter = g_mpi_rank == 0;
#else
  (void)body;
  res.failed_tasks = 1;
#endif
  return res;
}

TaskRunResult RunAllTasks(int ntasks, const std::function<int(TaskContext&)>& body) {
  if (g_mpi_size > 0) return RunMpiTasks(body);
  return RunTasks(ntasks, body);
}

}  // namespace sfs::bench
