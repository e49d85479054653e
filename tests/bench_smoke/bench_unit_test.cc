// Unit tests of sfs-bench's pieces: the IOR offset schedules (every byte of
// the test file covered exactly once in every mode), the verification
// pattern, option parsing and validation, the timing fold, and the task
// runner's barriers and failure handling. No servers, no files.
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "tools/bench/ior.h"
#include "tools/bench/mdtest.h"
#include "tools/bench/pattern.h"
#include "tools/bench/report.h"
#include "tools/bench/schedule.h"
#include "tools/bench/tasks.h"

namespace sfs::bench {
namespace {

// How many times each transfer-sized slot of each file is written by all tasks.
std::vector<std::vector<int>> Coverage(const IorGeometry& g, bool random) {
  int files = g.file_per_process ? g.ntasks : 1;
  std::vector<std::vector<int>> hits(files, std::vector<int>(g.FileSize() / g.transfer, 0));
  std::vector<uint64_t> offs;
  for (int t = 0; t < g.ntasks; ++t) {
    BuildSchedule(g, t, random, 42 + t, &offs);
    EXPECT_EQ(offs.size(), g.TransfersPerTask());
    for (uint64_t off : offs) {
      EXPECT_EQ(off % g.transfer, 0u);
      EXPECT_LT(off, g.FileSize());
      hits[g.file_per_process ? t : 0][off / g.transfer]++;
    }
  }
  return hits;
}

void ExpectEveryByteOnce(const IorGeometry& g, bool random) {
  for (const auto& file : Coverage(g, random)) {
    EXPECT_TRUE(std::all_of(file.begin(), file.end(), [](int h) { return h == 1; }));
  }
}

TEST(Schedule, FilePerProcessSegmentedCoversEveryByteOnce) {
  ExpectEveryByteOnce({64 << 10, 16 << 10, 3, 4, true}, false);
}

TEST(Schedule, SharedFileStridedCoversEveryByteOnce) {
  ExpectEveryByteOnce({64 << 10, 8 << 10, 5, 3, false}, false);
}

TEST(Schedule, RandomOrderCoversEveryByteOnceInBothLayouts) {
  ExpectEveryByteOnce({32 << 10, 4 << 10, 4, 3, false}, true);
  ExpectEveryByteOnce({32 << 10, 4 << 10, 4, 3, true}, true);
}

TEST(Schedule, SharedBlocksFollowIorsSegmentedFormula) {
  IorGeometry g{1 << 20, 1 << 20, 3, 4, false};
  EXPECT_EQ(BlockOffset(g, 0, 0), 0u);
  EXPECT_EQ(BlockOffset(g, 2, 0), 2u << 20);
  EXPECT_EQ(BlockOffset(g, 1, 2), (2u * 4 + 1) << 20);
  std::vector<uint64_t> offs;
  BuildSchedule(g, 3, false, 0, &offs);
  EXPECT_EQ(offs, (std::vector<uint64_t>{3u << 20, 7u << 20, 11u << 20}));
}

TEST(Schedule, RandomOrderDiffersFromSequentialAndDependsOnSeed) {
  IorGeometry g{1 << 20, 4 << 10, 1, 1, true};
  std::vector<uint64_t> seq, a, b;
  BuildSchedule(g, 0, false, 1, &seq);
  BuildSchedule(g, 0, true, 1, &a);
  BuildSchedule(g, 0, true, 2, &b);
  EXPECT_NE(a, seq);
  EXPECT_NE(a, b);
}

TEST(Pattern, FilledDataChecksCleanAndAFlippedByteIsFoundExactly) {
  std::vector<uint8_t> buf(4096);
  uint64_t key = PatternKey(3, 1, 0);
  FillPattern(key, 8192, buf);
  EXPECT_EQ(CheckPattern(key, 8192, buf), -1);
  buf[1234] ^= 1;
  uint64_t bad = 0;
  EXPECT_EQ(CheckPattern(key, 8192, buf, &bad), 1234);
  EXPECT_EQ(bad, 1u);
}

TEST(Pattern, DataOfAnotherTaskIterationOrOffsetFails) {
  std::vector<uint8_t> buf(1024);
  FillPattern(PatternKey(1, 0, 0), 0, buf);
  // The first word already differs (the first differing byte is within it).
  for (uint64_t key : {PatternKey(2, 0, 0), PatternKey(1, 1, 0), PatternKey(1, 0, 1)}) {
    int64_t first = CheckPattern(key, 0, buf);
    EXPECT_GE(first, 0);
    EXPECT_LT(first, 8);
  }
  uint64_t bad = 0;
  EXPECT_GE(CheckPattern(PatternKey(1, 0, 0), 1024, buf, &bad), 0);
  EXPECT_EQ(bad, buf.size() / 8) << "data at the wrong offset fails in every word";
}

Result<IorOptions> ParseIor(std::vector<std::string> args, bool* help = nullptr) {
  args.insert(args.begin(), "ior");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  bool h = false;
  return ParseIorOptions(static_cast<int>(argv.size()), argv.data(), help ? help : &h);
}

TEST(IorOptions, ParsesAnIorCommandLine) {
  auto o = ParseIor({"-a", "POSIX", "-F", "-np", "4", "-b", "64M", "-t", "1M", "-s", "2", "-we",
                     "-C", "-i", "3", "-o", "/tmp/x", "-k", "--json"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->ntasks(), 4);
  EXPECT_EQ(o->geom.block, 64u << 20);
  EXPECT_EQ(o->geom.transfer, 1u << 20);
  EXPECT_EQ(o->geom.segments, 2u);
  EXPECT_TRUE(o->geom.file_per_process && o->write && o->fsync && o->reorder && o->keep && o->json);
  EXPECT_FALSE(o->read);
  EXPECT_EQ(o->iterations, 3);
  EXPECT_EQ(IorFileName(*o, 3), "/tmp/x.00000003");
}

TEST(IorOptions, NeitherWriteNorReadMeansBothWithIorsDefaults) {
  auto o = ParseIor({});
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o->write && o->read);
  EXPECT_EQ(o->geom.block, 1u << 20);
  EXPECT_EQ(o->geom.transfer, 256u << 10);
  EXPECT_EQ(o->paths, std::vector<std::string>{"testFile"});
  EXPECT_EQ(IorFileName(*o, 5), "testFile");
}

TEST(IorOptions, BadCombinationsAreOneLineErrors) {
  for (auto args : std::vector<std::vector<std::string>>{{"-b", "1M", "-t", "300K"},
                                                         {"-C"},
                                                         {"-t", "12"},
                                                         {"-a", "SFS"},
                                                         {"-a", "SFS", "--mds", "h:1", "-o", "rel"},
                                                         {"--mds", "h:1"},
                                                         {"-a", "NFS"},
                                                         {"-W", "-r"},
                                                         {"-np", "0"},
                                                         {"-i", "x"},
                                                         {"-b"},
                                                         {"stray"}}) {
    auto o = ParseIor(args);
    EXPECT_FALSE(o.ok()) << args[0];
    EXPECT_EQ(o.status().code(), EINVAL);
    EXPECT_EQ(o.status().message().find('\n'), std::string::npos);
  }
}

TEST(IorOptions, SfsNeedsMdsAndAnAbsolutePath) {
  auto o = ParseIor({"-a", "sfs", "--mds=127.0.0.1:7700"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->backend.api, Api::kSfs);
  EXPECT_EQ(o->paths, std::vector<std::string>{"/testFile"});
}

TEST(IorOptions, SeveralPathsAreUsedRoundRobinSoReorderedReadsGoThroughTheOtherMount) {
  auto o = ParseIor({"-np", "4", "-C", "-o", "/mnt/a/f,/mnt/b/f"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  ASSERT_EQ(o->paths, (std::vector<std::string>{"/mnt/a/f", "/mnt/b/f"}));
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_EQ(IorPath(*o, rank), rank % 2 == 0 ? "/mnt/a/f" : "/mnt/b/f");
    // Shared file: every task opens the same name, through its own mount.
    EXPECT_EQ(IorFileName(*o, rank, (rank + 1) % 4), IorPath(*o, rank));
  }
  auto fpp = ParseIor({"-np", "3", "-F", "-o", "/a/f,/b/f,/c/f"});
  ASSERT_TRUE(fpp.ok()) << fpp.status().ToString();
  // Task 2 reads task 0's file through its own (third) path.
  EXPECT_EQ(IorFileName(*fpp, 2, 0), "/c/f.00000000");
  EXPECT_EQ(IorFileName(*fpp, 1), "/b/f.00000001");
  for (auto args : std::vector<std::vector<std::string>>{{"-np", "2", "-o", "/a/f,"},
                                                         {"-np", "2", "-o", ",/a/f"},
                                                         {"-np", "2", "-o", "/a/f,,/b/f"},
                                                         {"-np", "2", "-o", "/a,/b,/c"}}) {
    auto bad = ParseIor(args);
    EXPECT_EQ(bad.status().code(), EINVAL) << args[3];
  }
}

TEST(IorOptions, UnderMpirunTheRanksAreTheTasks) {
  std::vector<std::string> args{"ior", "-C"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  bool help = false;
  auto o = ParseIorOptions(static_cast<int>(argv.size()), argv.data(), &help, 4);
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->ntasks(), 4);
  int n = 0;
  EXPECT_TRUE(ResolveTasks(4, 4, &n).ok());
  EXPECT_EQ(ResolveTasks(3, 4, &n).code(), EINVAL);
  EXPECT_TRUE(ResolveTasks(kTasksNotGiven, 0, &n).ok());
  EXPECT_EQ(n, 1);
}

TEST(MdtestOptions, ParsesAndRejectsFilesOnlyWithDirsOnly) {
  std::vector<std::string> args{"mdtest", "-n", "50", "-F", "-u", "-w", "4K", "-np", "2"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  bool help = false;
  auto o = ParseMdtestOptions(static_cast<int>(argv.size()), argv.data(), &help);
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_TRUE(o->files && !o->dirs && o->unique_dir);
  EXPECT_EQ(o->write_bytes, 4096u);
  EXPECT_EQ(o->items, 50);
  std::string d = "-D";
  argv.push_back(d.data());
  EXPECT_FALSE(ParseMdtestOptions(static_cast<int>(argv.size()), argv.data(), &help).ok());
}

TEST(Report, PhaseTimeIsFirstStartToLastEnd) {
  std::vector<TaskRecord> recs = {
      {0, 1, 1000000000, 1100000000, 2000000000, 2100000000, 1 << 20, 1, 0},
      {0, 1, 1050000000, 1200000000, 2900000000, 3000000000, 1 << 20, 1, 0},
      {0, 2, 0, 0, 5, 5, 7, 7, 0},
  };
  std::vector<IterResult> r = Aggregate(recs, 1);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_DOUBLE_EQ(r[0].total_s, 2.0);
  EXPECT_DOUBLE_EQ(r[0].open_s, 0.2);
  EXPECT_DOUBLE_EQ(r[0].io_s, 1.8);
  EXPECT_DOUBLE_EQ(r[0].MiBps(), 1.0);
  EXPECT_DOUBLE_EQ(r[0].Rate(), 1.0);
}

TEST(Report, JsonWriterPlacesCommasAndEscapes) {
  JsonWriter w;
  w.Open('{').Key("a").Int(1).Key("b").Open('[').Num(0.5).Str("x\"y").Close(']');
  w.Key("c").Bool(true).Close('}');
  EXPECT_EQ(w.str(), "{\"a\":1,\"b\":[0.5,\"x\\\"y\"],\"c\":true}");
}

TEST(Tasks, BarrierHoldsEveryTaskUntilTheLastArrives) {
  TaskRunResult run = RunTasks(3, [](TaskContext& ctx) {
    TaskRecord r{0, 0, NowNs()};
    if (ctx.rank() == 2) std::this_thread::sleep_for(std::chrono::milliseconds(50));  // a slow task
    r.io_start_ns = NowNs();
    if (!ctx.Barrier().ok()) return 1;
    r.end_ns = NowNs();
    return ctx.Report(r).ok() ? 0 : 1;
  });
  EXPECT_EQ(run.failed_tasks, 0);
  ASSERT_EQ(run.records.size(), 3u);
  int64_t last_arrival = 0;
  for (const TaskRecord& r : run.records) last_arrival = std::max(last_arrival, r.io_start_ns);
  for (const TaskRecord& r : run.records) EXPECT_GE(r.end_ns, last_arrival);
}

TEST(Tasks, AFailedTaskReleasesTheOthersFromTheirBarrier) {
  TaskRunResult run = RunTasks(3, [](TaskContext& ctx) {
    if (ctx.rank() == 1) return 3;
    return ctx.Barrier().code() == ECANCELED ? 0 : 1;
  });
  EXPECT_EQ(run.failed_tasks, 1);
  EXPECT_FALSE(run.interrupted);
}

}  // namespace
}  // namespace sfs::bench
