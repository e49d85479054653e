// bench-smoke: sfs-bench ior and mdtest on tiny sizes against a local temp
// directory with -a POSIX, so the benchmark never rots: every mode runs with
// verification on and reports positive figures; verification failures,
// bad options and Ctrl-C behave as documented.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "tests/bench_smoke/bench_run.h"

namespace sfs::bench_test {
namespace {

using Args = std::vector<std::string>;

// Runs and checks: exit 0, no verify errors, every listed phase positive.
void ExpectGoodRun(const BenchRun& r, const std::vector<std::string>& phases, const char* metric) {
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_EQ(TopField(r.out, "verify_errors"), "0") << r.out;
  EXPECT_EQ(TopField(r.out, "ok"), "true") << r.out;
  for (const std::string& p : phases) {
    EXPECT_GT(PhaseStat(r.out, p, metric, "min"), 0) << p << " in " << r.out;
  }
}

TEST(BenchSmoke, IorFilePerProcessVerifiesWriteAndReadAndReportsPositiveBandwidth) {
  TempDir d;
  BenchRun r =
      RunBench({"ior", "-a", "POSIX", "-F", "-np", "2",  "-b", "64K", "-t", "16K",   "-s",
                "2",   "-w", "-r",    "-W", "-R",  "-e", "-i", "2",   "-o", d / "f", "--json"},
               d.path());
  ExpectGoodRun(r, {"write", "read"}, "bw_mib_s");
  EXPECT_GT(PhaseStat(r.out, "read", "ops_per_s", "min"), 0);
  EXPECT_TRUE(d.Entries().empty()) << "without -k the test files are removed";
}

TEST(BenchSmoke, IorSharedFileStridedRandomReorderedVerifies) {
  TempDir d;
  BenchRun r = RunBench({"ior", "-np", "3", "-b", "32K", "-t", "8K", "-s", "3", "-z", "-C", "-w",
                         "-r", "-W", "-R", "-o", d / "shared", "--json"},
                        d.path());
  ExpectGoodRun(r, {"write", "read"}, "bw_mib_s");
}

TEST(BenchSmoke, IorKeepLeavesTheFileAndAReadOnlyRunVerifiesIt) {
  TempDir d;
  BenchRun w = RunBench({"ior", "-np", "2", "-b", "64K", "-t", "8K", "-s", "2", "-w", "-W", "-k",
                         "-o", d / "kept", "--json"},
                        d.path());
  ExpectGoodRun(w, {"write"}, "bw_mib_s");
  EXPECT_EQ(std::filesystem::file_size(d / "kept"), 2u * 2 * 64 * 1024);
  BenchRun r = RunBench({"ior", "-np", "2", "-b", "64K", "-t", "8K", "-s", "2", "-r", "-R", "-C",
                         "-o", d / "kept", "--json"},
                        d.path());
  ExpectGoodRun(r, {"read"}, "bw_mib_s");
}

TEST(BenchSmoke, IorWithAWrongVerificationSeedFailsNamingTaskAndOffset) {
  TempDir d;
  BenchRun r = RunBench({"ior", "-np", "2", "-b", "16K", "-t", "8K", "-w", "-r", "-R",
                         "--verify-seed-offset", "1", "-o", d / "f"},
                        d.path());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("verify: task 0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("offset 0: expected"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("VERIFY FAILED"), std::string::npos) << r.out;
}

TEST(BenchSmoke, IorNamesTheOffsetOfACorruptedByte) {
  TempDir d;
  BenchRun w = RunBench(
      {"ior", "-np", "2", "-b", "64K", "-t", "16K", "-w", "-k", "-W", "-o", d / "c"}, d.path());
  ASSERT_EQ(w.exit_code, 0) << w.err;
  {
    std::fstream f(d / "c", std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(70003);
    char c = static_cast<char>(f.get() ^ 0x5a);
    f.seekp(70003);
    f.put(c);
  }
  BenchRun r = RunBench(
      {"ior", "-np", "2", "-b", "64K", "-t", "16K", "-r", "-R", "-o", d / "c", "--json"}, d.path());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("verify: task 1 (data of task 1, iteration 0), file " + (d / "c") +
                       ", offset 70003: expected"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(TopField(r.out, "verify_errors"), "1");
  EXPECT_TRUE(d.Entries().empty()) << "a read-only run without -k removes the file";
}

TEST(BenchSmoke, IorRejectsBadCombinationsWithOneLineBeforeAnyIo) {
  TempDir d;
  const std::vector<Args> bad = {
      {"ior", "-b", "64K", "-t", "24K", "-o", d / "x"},
      {"ior", "-C", "-np", "1", "-o", d / "x"},
      {"ior", "-a", "SFS", "-o", "/x"},
      {"ior", "-np"},
      {"ior", "--bogus"},
  };
  for (const Args& a : bad) {
    BenchRun r = RunBench(a, d.path());
    EXPECT_EQ(r.exit_code, 2) << a[1];
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  BenchRun r = RunBench({"ior", "-o", d / "missing/x"}, d.path());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("No such file"), std::string::npos) << r.err;
  EXPECT_TRUE(d.Entries().empty());
}

TEST(BenchSmoke, IorInterruptedWithCtrlCRemovesItsFiles) {
  TempDir d;
  // Many small iterations: long enough to be interrupted, little I/O.
  pid_t pid = StartBench({"ior", "-F", "-np", "2", "-b", "64K", "-t", "8K", "-w", "-r", "-i",
                          "1000000", "-o", d / "int"},
                         d.path());
  ASSERT_GT(pid, 0);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!std::filesystem::exists(d / "int.00000000") &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polling for the first file
  }
  ::kill(-pid, SIGINT);  // the whole process group, as a terminal's Ctrl-C
  BenchRun r = FinishBench(pid, d.path());
  EXPECT_EQ(r.exit_code, 130) << r.err;
  EXPECT_NE(r.out.find("INTERRUPTED"), std::string::npos);
  EXPECT_TRUE(d.Entries().empty());
}

TEST(BenchSmoke, MdtestUniqueDirsReportsPositiveRatesAndLeavesNothing) {
  TempDir d;
  BenchRun r = RunBench({"mdtest", "-a", "POSIX", "-np", "2", "-n", "20", "-u", "-w", "100", "-i",
                         "2", "-d", d.path(), "--json"},
                        d.path());
  ExpectGoodRun(r,
                {"dir_create", "dir_stat", "dir_remove", "file_create", "file_stat", "file_read",
                 "file_remove", "tree_create", "tree_remove"},
                "ops_per_s");
  EXPECT_TRUE(d.Entries().empty());
}

TEST(BenchSmoke, MdtestSharedDirFilesOnlyRunsOnlyFilePhases) {
  TempDir d;
  BenchRun r =
      RunBench({"mdtest", "-np", "3", "-n", "10", "-F", "-d", d.path(), "--json"}, d.path());
  ExpectGoodRun(r, {"file_create", "file_stat", "file_read", "file_remove"}, "ops_per_s");
  EXPECT_EQ(r.out.find("dir_create"), std::string::npos);
}

TEST(BenchSmoke, TextReportHasIorSummaryTable) {
  TempDir d;
  BenchRun r = RunBench({"ior", "-b", "16K", "-t", "8K", "-o", d / "t"}, d.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Summary of all tests:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nwrite "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nread "), std::string::npos) << r.out;
}

// sfs-bench train's short form (issue 18): POSIX on a temp dir, 40 files.
TEST(BenchSmoke, TrainPreparesReadsEveryEpochAndReportsThem) {
  TempDir d;
  BenchRun r = RunBench({"train", "-o", d / "ds", "-n", "40", "--workers", "3", "--epochs", "2",
                         "--prepare", "--json"},
                        d.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"mode\": \"posix\", \"files\": 40"), std::string::npos) << r.out;
  size_t epochs = 0;
  for (size_t at = 0; (at = r.out.find("\"seconds\"", at)) != std::string::npos; ++at) ++epochs;
  EXPECT_EQ(epochs, 2u) << r.out;
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(d / "ds"),
                          std::filesystem::directory_iterator{}), 40);
  // Files it did not write are detected, not read as samples.
  std::ofstream(d / "ds/s000007", std::ios::trunc) << "short";
  BenchRun bad = RunBench({"train", "-o", d / "ds", "-n", "40", "--epochs", "1"}, d.path());
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("s000007: wrong size or bytes"), std::string::npos) << bad.err;
  // --hint needs the cache: a usage error.
  EXPECT_EQ(RunBench({"train", "-o", d / "ds", "--hint"}, d.path()).exit_code, 2);
}

// The shards mode: tar-style shards read front to back in --read-size reads,
// every byte of each read's first and last words checked.
TEST(BenchSmoke, TrainShardsReadsEveryShardWholeEachEpochAndCatchesWrongBytes) {
  TempDir d;
  BenchRun r = RunBench({"train", "-o", d / "sh", "--shards", "5", "--shard-size", "3M",
                         "--read-size", "256K", "--workers", "2", "--epochs", "2", "--prepare",
                         "--json"},
                        d.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"shards\": 5"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"dataset_bytes\": 15728640"), std::string::npos) << r.out;
  size_t whole = 0;  // every epoch read every byte of every shard
  for (size_t at = 0; (at = r.out.find("\"bytes\": 15728640,", at)) != std::string::npos; ++at) {
    ++whole;
  }
  EXPECT_EQ(whole, 2u) << r.out;
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(std::filesystem::file_size(d / ("sh/shard-000" + std::to_string(i))), 3u << 20);
  }
  {  // a wrong word at a read's start, and a shard cut short
    std::fstream f(d / "sh/shard-0002", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(1 << 20);
    f.write("XXXXXXXX", 8);
  }
  BenchRun bad = RunBench({"train", "-o", d / "sh", "--shards", "5", "--shard-size", "3M",
                           "--read-size", "256K", "--epochs", "1"},
                          d.path());
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("shard-0002: wrong bytes at 1048576"), std::string::npos) << bad.err;
  std::filesystem::resize_file(d / "sh/shard-0002", 1 << 20);
  bad = RunBench({"train", "-o", d / "sh", "--shards", "5", "--shard-size", "3M", "--epochs", "1"},
                 d.path());
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("shard-0002: wrong size"), std::string::npos) << bad.err;
  // A read size of 0 is a usage error.
  EXPECT_EQ(RunBench({"train", "-o", d / "sh", "--shards", "5", "--read-size", "0"}, d.path())
                .exit_code,
            2);
}

}  // namespace
}  // namespace sfs::bench_test
