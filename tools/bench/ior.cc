// `sfs-bench ior`: the per-task body (write, write-check, read phases of
// every iteration, each started by a barrier) and the run around it:
// preflight checks, forking the tasks, cleanup after an interrupt, report.
//
// The tool must not be the bottleneck: each task allocates one aligned
// transfer buffer and its offset schedule once; without verification the
// buffer is filled once and written as it is, with verification the pattern
// is generated in place for each transfer (at memory speed).
#include "tools/bench/ior.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "tools/bench/pattern.h"
#include "tools/bench/tasks.h"

namespace sfs::bench {
namespace {

enum IorPhase { kWrite = 0, kRead = 1, kWriteCheck = 2 };
constexpr int kMaxReportsPerPhase = 10;

struct FreeDeleter {
  void operator()(uint8_t* p) const { std::free(p); }
};

// One line to stderr in a single write(2), so tasks' lines never interleave.
void ErrLine(const std::string& s) {
  std::string line = "sfs-bench ior: " + s + "\n";
  (void)!::write(STDERR_FILENO, line.data(), line.size());
}

std::string Hex(const uint8_t* p, size_t n) {
  std::string out;
  char b[4];
  for (size_t i = 0; i < n; ++i) {
    std::snprintf(b, sizeof(b), "%02x", p[i]);
    out += b;
  }
  return out;
}

class IorTask {
 public:
  IorTask(const IorOptions& o, TaskContext& ctx, Backend& b) : o_(o), ctx_(ctx), b_(b) {
    size_t size = (o.geom.transfer + 4095) / 4096 * 4096;
    buf_.reset(static_cast<uint8_t*>(std::aligned_alloc(4096, size)));
    offsets_.reserve(o.geom.TransfersPerTask());
    // The fixed data of runs without verification: anything but zeros.
    FillPattern(PatternKey(ctx.rank(), 0, 0), 0, Buffer());
  }

  int Run() {
    for (int it = 0; it < o_.iterations; ++it) {
      Status st = Iteration(it);
      if (!st.ok()) {
        if (st.code() != ECANCELED)
          ErrLine("task " + std::to_string(ctx_.rank()) + ": " + st.ToString());
        return 1;
      }
    }
    return 0;
  }

 private:
  std::span<uint8_t> Buffer() { return {buf_.get(), o_.geom.transfer}; }
  int Rank() const { return ctx_.rank(); }

  Status Iteration(int it) {
    if (o_.write) {
      SFS_RETURN_IF_ERROR(WritePhase(it));
      if (o_.verify_write) SFS_RETURN_IF_ERROR(ReadPhase(it, kWriteCheck, Rank(), true));
    }
    if (o_.read) {
      int src = o_.reorder ? (Rank() + 1) % ctx_.ntasks() : Rank();
      SFS_RETURN_IF_ERROR(ReadPhase(it, kRead, src, o_.verify_read));
    }
    if (o_.keep) return Status::Ok();
    SFS_RETURN_IF_ERROR(ctx_.Barrier());  // nobody is still reading
    if (!o_.geom.file_per_process && Rank() != 0) return Status::Ok();
    Status st = b_.Unlink(IorFileName(o_, Rank()));
    return st.code() == ENOENT ? Status::Ok() : st;
  }

  Status WritePhase(int it) {
    BuildSchedule(o_.geom, Rank(), o_.random, PatternKey(Rank(), it, 1000), &offsets_);
    uint64_t key = PatternKey(Rank(), it, 0);
    SFS_RETURN_IF_ERROR(ctx_.Barrier());
    TaskRecord rec{it, kWrite, NowNs()};
    // IOR's POSIX backend creates with O_CREAT|O_RDWR (no O_TRUNC): a file system
    // that treats write-only handles differently is measured as IOR sees it.
    int flags = O_CREAT | (o_.open_wronly ? O_WRONLY : O_RDWR);
    SFS_ASSIGN_OR_RETURN(auto f, b_.Open(IorFileName(o_, Rank()), flags));
    rec.io_start_ns = NowNs();
    for (uint64_t off : offsets_) {
      if (o_.fill_pattern()) FillPattern(key, off, Buffer());
      SFS_RETURN_IF_ERROR(f->WriteAt(off, Buffer()));
    }
    if (o_.fsync) SFS_RETURN_IF_ERROR(f->Sync());
    rec.io_end_ns = NowNs();
    SFS_RETURN_IF_ERROR(f->Close());
    rec.end_ns = NowNs();
    rec.bytes = offsets_.size() * o_.geom.transfer;
    rec.ops = offsets_.size();
    return ctx_.Report(rec);
  }

  // Reads what task `src` wrote; checks it against the pattern when verify.
  Status ReadPhase(int it, IorPhase phase, int src, bool verify) {
    BuildSchedule(o_.geom, src, o_.random, PatternKey(Rank(), it, 2000 + phase), &offsets_);
    // A read-only run checks data a `-w -k` run left (written as iteration 0).
    int written_in = o_.write ? it : 0;
    uint64_t key = PatternKey(src, written_in, o_.verify_seed_offset);
    if (o_.drop_caches) SFS_RETURN_IF_ERROR(DropCachesOnce());
    SFS_RETURN_IF_ERROR(ctx_.Barrier());
    TaskRecord rec{it, phase, NowNs()};
    std::string file = IorFileName(o_, Rank(), src);  // src's file, through our own path
    SFS_ASSIGN_OR_RETURN(auto f, b_.Open(file, O_RDONLY));
    rec.io_start_ns = NowNs();
    reports_ = 0;
    for (uint64_t off : offsets_) {
      SFS_ASSIGN_OR_RETURN(size_t n, f->ReadAt(off, Buffer()));
      if (n < o_.geom.transfer)
        rec.errors += ShortRead(it, src, file, off, n);
      else if (verify)
        rec.errors += Check(it, src, file, off, key);
    }
    rec.io_end_ns = NowNs();
    SFS_RETURN_IF_ERROR(f->Close());
    rec.end_ns = NowNs();
    rec.bytes = offsets_.size() * o_.geom.transfer;
    rec.ops = offsets_.size();
    if (reports_ > kMaxReportsPerPhase) {
      ErrLine("task " + std::to_string(Rank()) + ": " +
              std::to_string(reports_ - kMaxReportsPerPhase) + " more verify errors not shown");
    }
    return ctx_.Report(rec);
  }

  // Task 0 drops the node's page cache between two barriers.
  Status DropCachesOnce() {
    SFS_RETURN_IF_ERROR(ctx_.Barrier());
    if (Rank() == 0 && !DropCaches() && !warned_) {
      ErrLine("warning: cannot drop caches (/proc/sys/vm/drop_caches needs root)");
    }
    warned_ = true;
    return Status::Ok();
  }

  std::string Where(int it, int src, const std::string& file, uint64_t off) const {
    return "verify: task " + std::to_string(Rank()) + " (data of task " + std::to_string(src) +
           ", iteration " + std::to_string(it) + "), file " + file + ", offset " +
           std::to_string(off);
  }

  uint64_t ShortRead(int it, int src, const std::string& file, uint64_t off, size_t n) {
    if (++reports_ <= kMaxReportsPerPhase) {
      ErrLine(Where(it, src, file, off + n) + ": expected " + std::to_string(o_.geom.transfer - n) +
              " more bytes, found end of file");
    }
    return (o_.geom.transfer - n + 7) / 8;
  }

  uint64_t Check(int it, int src, const std::string& file, uint64_t off, uint64_t key) {
    uint64_t bad = 0;
    int64_t first = CheckPattern(key, off, Buffer(), &bad);
    if (first < 0 || ++reports_ > kMaxReportsPerPhase) return bad;
    uint64_t word_at = static_cast<uint64_t>(first) & ~7ULL;
    uint64_t want = PatternWord(key, off + word_at);
    const uint8_t* w = reinterpret_cast<const uint8_t*>(&want);
    const uint8_t* got = buf_.get() + word_at;
    size_t b = static_cast<size_t>(first) - word_at;
    ErrLine(Where(it, src, file, off + first) + ": expected " + Hex(w + b, 1) + ", found " +
            Hex(got + b, 1) + " (8 bytes at " + std::to_string(off + word_at) + ": expected " +
            Hex(w, 8) + ", found " + Hex(got, 8) + "; " + std::to_string(bad) +
            " bad words in this transfer)");
    return bad;
  }

  const IorOptions& o_;
  TaskContext& ctx_;
  Backend& b_;
  std::unique_ptr<uint8_t, FreeDeleter> buf_;
  std::vector<uint64_t> offsets_;
  int reports_ = 0;
  bool warned_ = false;
};

int TaskMain(const IorOptions& o, TaskContext& ctx) {
  Result<std::unique_ptr<Backend>> b = MakeBackend(o.backend);
  if (!b.ok()) {
    ErrLine("task " + std::to_string(ctx.rank()) + ": " + b.status().ToString());
    return 1;
  }
  IorTask task(o, ctx, **b);
  return task.Run();
}

// Before forking: each test file's directory must exist (for -a SFS this
// also proves the MDS answers). The backend is gone before fork(), and it
// uses TCP: verbs state (device, protection domain) must not be inherited
// by the forked tasks, which open their own RDMA connections.
Status Preflight(const IorOptions& o) {
  BackendOptions tcp = o.backend;
  tcp.transport = "tcp";
  SFS_ASSIGN_OR_RETURN(std::unique_ptr<Backend> b, MakeBackend(tcp));
  for (const std::string& path : o.paths) {
    std::string dir = ParentDir(path);
    Result<BenchStat> st = b->Stat(dir);
    if (!st.ok()) return Status(st.status().code(), "-o " + path + ": " + st.status().message());
    if (!st->is_dir) return Status(ENOTDIR, "-o " + path + ": " + dir + " is not a directory");
  }
  return Status::Ok();
}

// After an interrupt or a failed task: remove what the tasks may have left.
void Cleanup(const IorOptions& o) {
  Result<std::unique_ptr<Backend>> b = MakeBackend(o.backend);
  if (!b.ok()) return;
  int files = o.geom.file_per_process ? o.ntasks() : 1;
  for (int i = 0; i < files; ++i) (void)(*b)->Unlink(IorFileName(o, i));
}

RunReport BuildReport(const IorOptions& o, const TaskRunResult& run) {
  RunReport r;
  r.command = "ior";
  r.params = IorParams(o);
  if (o.write) r.phases.push_back({"write", "write", Aggregate(run.records, kWrite)});
  if (o.read) r.phases.push_back({"read", "read", Aggregate(run.records, kRead)});
  for (const TaskRecord& t : run.records) r.verify_errors += t.errors;
  r.failed_tasks = run.failed_tasks;
  r.interrupted = run.interrupted;
  return r;
}

}  // namespace

int RunIor(int argc, char** argv, int mpi_size) {
  bool help = false;
  const bool say = MpiRank() == 0;  // under mpirun, rank 0 speaks for all
  Result<IorOptions> o = ParseIorOptions(argc, argv, &help, mpi_size);
  if (!o.ok()) {
    if (say) {
      std::fprintf(stderr, "sfs-bench ior: %s (see sfs-bench ior --help)\n",
                   o.status().message().c_str());
    }
    return 2;
  }
  if (help) {
    if (say) std::fputs(IorUsage().c_str(), stdout);
    return 0;
  }
  Status pre = Preflight(*o);
  if (!pre.ok()) {
    std::fprintf(stderr, "sfs-bench ior: %s\n",
                 pre.message().empty() ? pre.ToString().c_str() : pre.message().c_str());
  }
  if (!MpiAllOk(pre.ok())) return 1;
  const IorOptions& opts = *o;
  TaskRunResult run =
      RunAllTasks(opts.ntasks(), [&opts](TaskContext& ctx) { return TaskMain(opts, ctx); });
  if (!run.reporter) return 0;
  if (!opts.keep && (run.interrupted || run.failed_tasks > 0)) Cleanup(opts);
  RunReport report = BuildReport(opts, run);
  if (opts.json)
    std::printf("%s\n", ReportJson(report).c_str());
  else
    PrintIorText(report, opts.geom.block, opts.geom.transfer, stdout);
  if (run.interrupted) return 130;
  return report.ok() ? 0 : 1;
}

}  // namespace sfs::bench
