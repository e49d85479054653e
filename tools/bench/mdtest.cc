// `sfs-bench mdtest` (see mdtest.h): options, the per-task body and the run.
//
// Names: the tree of iteration I is BASE/mdtest.I; with -u task T works in
// BASE/mdtest.I/task.T, else every task works in the tree's top directory.
// Items are dir.T.K and file.T.K (unique across tasks in a shared directory).
// Item paths are built in one reused string: no allocation per operation
// beyond what the backend itself does.
#include "tools/bench/mdtest.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <functional>

#include "tools/bench/args.h"
#include "tools/bench/tasks.h"

namespace sfs::bench {
namespace {

enum MdPhase {
  kDirCreate,
  kDirStat,
  kDirRemove,
  kFileCreate,
  kFileStat,
  kFileRead,
  kFileRemove,
  kTreeCreate,
  kTreeRemove,
  kNumPhases
};
const char* const kKeys[] = {"dir_create", "dir_stat",    "dir_remove",  "file_create", "file_stat",
                             "file_read",  "file_remove", "tree_create", "tree_remove"};
const char* const kLabels[] = {"Directory creation", "Directory stat", "Directory removal",
                               "File creation",      "File stat",      "File read",
                               "File removal",       "Tree creation",  "Tree removal"};
constexpr int kMaxReports = 10;

void ErrLine(const std::string& s) {
  std::string line = "sfs-bench mdtest: " + s + "\n";
  (void)!::write(STDERR_FILENO, line.data(), line.size());
}

std::string TreeDir(const MdtestOptions& o, int it) {
  std::string b = o.base;
  if (b.empty() || b.back() != '/') b += '/';
  return b + "mdtest." + std::to_string(it);
}

std::string WorkDir(const MdtestOptions& o, int it, int rank) {
  std::string t = TreeDir(o, it);
  return o.unique_dir ? t + "/task." + std::to_string(rank) : t;
}

class MdtestTask {
 public:
  MdtestTask(const MdtestOptions& o, TaskContext& ctx, Backend& b)
      : o_(o), ctx_(ctx), b_(b), data_(o.write_bytes, 0x5a) {}

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
  using Op = std::function<Status(const std::string& path)>;

  Status Iteration(int it) {
    SFS_RETURN_IF_ERROR(Tree(it, kTreeCreate));
    if (o_.dirs) {
      SFS_RETURN_IF_ERROR(Items(it, kDirCreate, "dir.", [this](auto& p) { return b_.Mkdir(p); }));
      SFS_RETURN_IF_ERROR(
          Items(it, kDirStat, "dir.", [this](auto& p) { return StatItem(p, true); }));
      SFS_RETURN_IF_ERROR(Items(it, kDirRemove, "dir.", [this](auto& p) { return b_.Rmdir(p); }));
    }
    if (o_.files) {
      SFS_RETURN_IF_ERROR(Items(it, kFileCreate, "file.", [this](auto& p) { return Create(p); }));
      SFS_RETURN_IF_ERROR(
          Items(it, kFileStat, "file.", [this](auto& p) { return StatItem(p, false); }));
      SFS_RETURN_IF_ERROR(Items(it, kFileRead, "file.", [this](auto& p) { return ReadItem(p); }));
      SFS_RETURN_IF_ERROR(
          Items(it, kFileRemove, "file.", [this](auto& p) { return b_.Unlink(p); }));
    }
    return Tree(it, kTreeRemove);
  }

  // One timed phase: op on every item of this task.
  Status Items(int it, MdPhase phase, const char* kind, const Op& op) {
    std::string path =
        WorkDir(o_, it, ctx_.rank()) + "/" + kind + std::to_string(ctx_.rank()) + ".";
    size_t prefix = path.size();
    errors_ = 0;
    SFS_RETURN_IF_ERROR(ctx_.Barrier());
    TaskRecord rec{it, phase, NowNs()};
    rec.io_start_ns = rec.start_ns;
    for (int64_t i = 0; i < o_.items; ++i) {
      path.resize(prefix);
      path += std::to_string(i);
      SFS_RETURN_IF_ERROR(op(path));
    }
    rec.io_end_ns = rec.end_ns = NowNs();
    rec.ops = static_cast<uint64_t>(o_.items);
    rec.errors = errors_;
    return ctx_.Report(rec);
  }

  // Tree creation: task 0 makes the top directory, then (-u) every task its
  // own; removal in the reverse order. Barriers inside keep the order.
  Status Tree(int it, MdPhase phase) {
    bool top = ctx_.rank() == 0;
    SFS_RETURN_IF_ERROR(ctx_.Barrier());
    TaskRecord rec{it, phase, NowNs()};
    if (phase == kTreeCreate) {
      if (top) SFS_RETURN_IF_ERROR(b_.Mkdir(TreeDir(o_, it)));
      SFS_RETURN_IF_ERROR(ctx_.Barrier());
      if (o_.unique_dir) SFS_RETURN_IF_ERROR(b_.Mkdir(WorkDir(o_, it, ctx_.rank())));
    } else {
      if (o_.unique_dir) SFS_RETURN_IF_ERROR(b_.Rmdir(WorkDir(o_, it, ctx_.rank())));
      SFS_RETURN_IF_ERROR(ctx_.Barrier());
      if (top) SFS_RETURN_IF_ERROR(b_.Rmdir(TreeDir(o_, it)));
    }
    rec.io_start_ns = rec.start_ns;
    rec.io_end_ns = rec.end_ns = NowNs();
    rec.ops = (top ? 1 : 0) + (o_.unique_dir ? 1 : 0);
    return ctx_.Report(rec);
  }

  Status Create(const std::string& path) {
    // As mdtest's POSIX backend creates: O_CREAT|O_RDWR.
    SFS_ASSIGN_OR_RETURN(auto f, b_.Open(path, O_CREAT | O_RDWR));
    if (!data_.empty()) SFS_RETURN_IF_ERROR(f->WriteAt(0, data_));
    return f->Close();
  }

  // A wrong type or size is a verification error (counted, reported), not a failure.
  Status StatItem(const std::string& path, bool dir) {
    SFS_ASSIGN_OR_RETURN(BenchStat st, b_.Stat(path));
    if (st.is_dir != dir)
      Mismatch(path, dir ? "not a directory" : "a directory");
    else if (!dir && st.size != o_.write_bytes)
      Mismatch(path, "size " + std::to_string(st.size));
    return Status::Ok();
  }

  Status ReadItem(const std::string& path) {
    SFS_ASSIGN_OR_RETURN(auto f, b_.Open(path, O_RDONLY));
    if (!data_.empty()) {
      SFS_ASSIGN_OR_RETURN(size_t n, f->ReadAt(0, data_));
      if (n != data_.size()) Mismatch(path, "read " + std::to_string(n) + " bytes");
    }
    return f->Close();
  }

  void Mismatch(const std::string& path, const std::string& what) {
    if (++errors_ <= kMaxReports) {
      ErrLine("verify: task " + std::to_string(ctx_.rank()) + ": " + path + ": " + what +
              ", expected " + std::to_string(o_.write_bytes) + "-byte file");
    }
  }

  const MdtestOptions& o_;
  TaskContext& ctx_;
  Backend& b_;
  std::vector<uint8_t> data_;
  uint64_t errors_ = 0;
};

int TaskMain(const MdtestOptions& o, TaskContext& ctx) {
  Result<std::unique_ptr<Backend>> b = MakeBackend(o.backend);
  if (!b.ok()) {
    ErrLine("task " + std::to_string(ctx.rank()) + ": " + b.status().ToString());
    return 1;
  }
  MdtestTask task(o, ctx, **b);
  return task.Run();
}

struct RawMd {
  std::string api = "POSIX";
  int64_t ntasks = kTasksNotGiven, iterations = 1;
  bool files_only = false, dirs_only = false;
};

void Register(ArgParser& p, MdtestOptions& o, RawMd& raw) {
  p.Text("-a", &raw.api, "API: POSIX (syscalls on a path) or SFS (libsfs)");
  p.Text("--mds", &o.backend.mds, "HOST:PORT of the MDS, for -a SFS");
  p.Int("-n", &o.items, "items (files and/or directories) per task [100]");
  p.Flag("-F", &raw.files_only, "files only");
  p.Flag("-D", &raw.dirs_only, "directories only");
  p.Flag("-u", &o.unique_dir, "a working directory per task (else one shared)");
  p.Size("-w", &o.write_bytes, "bytes written to each file, read back in the read phase [0]");
  p.Int("-np", &raw.ntasks, "tasks: processes forked on this node [1]; under mpirun, the ranks");
  p.Int("-i", &raw.iterations, "iterations [1]");
  p.Text("-d", &o.base, "base directory [.; / with -a SFS]");
  p.Flag("--json", &o.json, "print the results as one JSON object");
}

Status Finish(const RawMd& raw, int mpi_size, MdtestOptions* o) {
  SFS_ASSIGN_OR_RETURN(o->backend.api, ParseApi(raw.api));
  SFS_RETURN_IF_ERROR(ResolveTasks(raw.ntasks, mpi_size, &o->ntasks));
  if (raw.iterations < 1) return Status(EINVAL, "-i must be at least 1");
  if (o->items < 1) return Status(EINVAL, "-n must be at least 1");
  if (raw.files_only && raw.dirs_only) return Status(EINVAL, "-F and -D exclude each other");
  if (o->write_bytes > (64u << 20)) return Status(EINVAL, "-w must be at most 64M");
  o->iterations = static_cast<int>(raw.iterations);
  o->files = !raw.dirs_only;
  o->dirs = !raw.files_only;
  bool sfs = o->backend.api == Api::kSfs;
  if (o->base.empty()) o->base = sfs ? "/" : ".";
  if (sfs && o->backend.mds.empty()) return Status(EINVAL, "-a SFS needs --mds HOST:PORT");
  if (!sfs && !o->backend.mds.empty()) return Status(EINVAL, "--mds is for -a SFS");
  if (sfs && o->base[0] != '/') return Status(EINVAL, "-d with -a SFS is a path starting with /");
  return Status::Ok();
}

RunReport BuildReport(const MdtestOptions& o, const TaskRunResult& run) {
  RunReport r;
  r.command = "mdtest";
  r.bandwidth = false;
  r.params = {{"api", ApiName(o.backend.api)},
              {"mds", o.backend.mds},
              {"base_dir", o.base},
              {"tasks", std::to_string(o.ntasks), true},
              {"items_per_task", std::to_string(o.items), true},
              {"items", o.files && o.dirs ? "files+dirs"
                        : o.files         ? "files"
                                          : "dirs"},
              {"unique_dir", o.unique_dir ? "yes" : "no"},
              {"write_bytes", std::to_string(o.write_bytes), true},
              {"iterations", std::to_string(o.iterations), true}};
  for (int p = 0; p < kNumPhases; ++p) {
    std::vector<IterResult> iters = Aggregate(run.records, p);
    if (!iters.empty()) r.phases.push_back({kKeys[p], kLabels[p], std::move(iters)});
  }
  for (const TaskRecord& t : run.records) r.verify_errors += t.errors;
  r.failed_tasks = run.failed_tasks;
  r.interrupted = run.interrupted;
  return r;
}

// After an interrupt or a failure: remove every name the run may have made.
void Cleanup(const MdtestOptions& o, const TaskRunResult& run) {
  Result<std::unique_ptr<Backend>> b = MakeBackend(o.backend);
  if (!b.ok()) return;
  int last = 0;
  for (const TaskRecord& t : run.records) last = std::max(last, static_cast<int>(t.iteration));
  for (int it = 0; it <= last && it < o.iterations; ++it) {
    for (int t = 0; t < o.ntasks; ++t) {
      std::string w = WorkDir(o, it, t) + "/";
      for (int64_t i = 0; i < o.items; ++i) {
        (void)(*b)->Unlink(w + "file." + std::to_string(t) + "." + std::to_string(i));
        (void)(*b)->Rmdir(w + "dir." + std::to_string(t) + "." + std::to_string(i));
      }
      if (o.unique_dir) (void)(*b)->Rmdir(WorkDir(o, it, t));
    }
    (void)(*b)->Rmdir(TreeDir(o, it));
  }
}

Status Preflight(const MdtestOptions& o) {
  SFS_ASSIGN_OR_RETURN(std::unique_ptr<Backend> b, MakeBackend(o.backend));
  Result<BenchStat> st = b->Stat(o.base);
  if (!st.ok()) return Status(st.status().code(), "-d " + st.status().message());
  if (!st->is_dir) return Status(ENOTDIR, "-d " + o.base + ": not a directory");
  return Status::Ok();
}

}  // namespace

Result<MdtestOptions> ParseMdtestOptions(int argc, char** argv, bool* help, int mpi_size) {
  MdtestOptions o;
  RawMd raw;
  ArgParser p;
  Register(p, o, raw);
  SFS_RETURN_IF_ERROR(p.Parse(argc, argv));
  *help = p.help_requested();
  if (*help) return o;
  SFS_RETURN_IF_ERROR(Finish(raw, mpi_size, &o));
  return o;
}

std::string MdtestUsage() {
  MdtestOptions o;
  RawMd raw;
  ArgParser p;
  Register(p, o, raw);
  return "usage: sfs-bench mdtest [options]\n\n"
         "mdtest-style metadata test: N tasks create, stat, read and remove files and\n"
         "directories in a shared directory or one each (-u).\n\n" +
         p.Help() +
         "\nexamples:\n"
         "  sfs-bench mdtest -a POSIX -np 4 -n 1000 -u -d /mnt/sfs/md\n"
         "  sfs-bench mdtest -a SFS --mds host:7700 -np 4 -n 1000 -F -w 4K -d /md\n";
}

int RunMdtest(int argc, char** argv, int mpi_size) {
  bool help = false;
  const bool say = MpiRank() == 0;  // under mpirun, rank 0 speaks for all
  Result<MdtestOptions> o = ParseMdtestOptions(argc, argv, &help, mpi_size);
  if (!o.ok()) {
    if (say) {
      std::fprintf(stderr, "sfs-bench mdtest: %s (see sfs-bench mdtest --help)\n",
                   o.status().message().c_str());
    }
    return 2;
  }
  if (help) {
    if (say) std::fputs(MdtestUsage().c_str(), stdout);
    return 0;
  }
  Status pre = Preflight(*o);
  if (!pre.ok()) {
    std::fprintf(stderr, "sfs-bench mdtest: %s\n",
                 pre.message().empty() ? pre.ToString().c_str() : pre.message().c_str());
  }
  if (!MpiAllOk(pre.ok())) return 1;
  const MdtestOptions& opts = *o;
  TaskRunResult run =
      RunAllTasks(opts.ntasks, [&opts](TaskContext& ctx) { return TaskMain(opts, ctx); });
  if (!run.reporter) return 0;
  if (run.interrupted || run.failed_tasks > 0) Cleanup(opts, run);
  RunReport report = BuildReport(opts, run);
  if (opts.json)
    std::printf("%s\n", ReportJson(report).c_str());
  else
    PrintMdtestText(report, stdout);
  if (run.interrupted) return 130;
  return report.ok() ? 0 : 1;
}

}  // namespace sfs::bench
