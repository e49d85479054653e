// bench-smoke against a real cluster (1 MDS, 2 OSS from the build tree,
// started by tests/harness): sfs-bench ior and mdtest with -a SFS (libsfs,
// no FUSE) and with -a POSIX through a FUSE mount, tiny sizes, verification
// on, files striped over both OSTs in 64 KiB stripes so every transfer
// crosses servers. Skipped when the daemons are not built.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "tests/bench_smoke/bench_run.h"
#include "tests/harness/fixture.h"

namespace sfs::testing {
namespace {

using bench_test::BenchRun;
using bench_test::PhaseStat;
using bench_test::RunBench;
using bench_test::TempDir;
using bench_test::TopField;

bool Executable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

void ExpectGoodRun(const BenchRun& r, const std::vector<std::string>& phases, const char* metric) {
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_EQ(TopField(r.out, "verify_errors"), "0") << r.out;
  for (const std::string& p : phases) EXPECT_GT(PhaseStat(r.out, p, metric, "min"), 0) << p;
}

class BenchClusterTest : public SharedClusterTest<BenchClusterTest> {
 public:
  static ClusterOptions Options() {
    ClusterOptions o;
    o.name = "bench";
    o.num_oss = 2;
    return o;
  }

 protected:
  void SetUp() override {
    if (!Executable(MdsBinary()) || !Executable(OssBinary())) {
      GTEST_SKIP() << "sfs-mds / sfs-oss not built";
    }
    SharedClusterTest::SetUp();
  }

  // A directory of this test's own whose files stripe over every OST in 64 KiB stripes.
  std::string StripedDir() {
    std::string name = "bench_" + TestName();
    auto d = client().Mkdir(kRoot, client::kRootIno, name, 0777);
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    client::LayoutSpec spec;
    spec.stripe_count = -1;
    spec.stripe_size = 64 << 10;
    EXPECT_TRUE(client().SetLayout(kRoot, d->ino, spec, false).ok());
    return "/" + name;
  }

  std::vector<std::string> Sfs(std::vector<std::string> args) {
    args.insert(args.begin() + 1, {"-a", "SFS", "--mds", cluster().mds_address()});
    return args;
  }

  TempDir out_;  // where sfs-bench's stdout/stderr go
};

TEST_F(BenchClusterTest, IorOverLibsfsVerifiesFilePerProcessAndSharedStrided) {
  std::string d = StripedDir();
  ExpectGoodRun(RunBench(Sfs({"ior", "-F", "-np", "2", "-b", "256K", "-t", "64K", "-s", "2", "-w",
                              "-r", "-W", "-R", "-e", "-C", "-o", d + "/fpp", "--json"}),
                         out_.path()),
                {"write", "read"}, "bw_mib_s");
  ExpectGoodRun(RunBench(Sfs({"ior", "-np", "3", "-b", "128K", "-t", "32K", "-s", "2", "-z", "-w",
                              "-r", "-W", "-R", "-C", "-o", d + "/shared", "--json"}),
                         out_.path()),
                {"write", "read"}, "bw_mib_s");
  auto left = client().ResolvePath(kRoot, d + "/shared");
  EXPECT_EQ(left.status().code(), ENOENT) << "without -k the file is removed";
}

TEST_F(BenchClusterTest, IorThroughTheMountVerifies) {
  if (!Executable(MountBinary())) GTEST_SKIP() << "sfs-mount not built";
  std::string d = StripedDir();
  auto mnt = cluster().Mount();
  ASSERT_TRUE(mnt.ok()) << mnt.status().ToString();
  ExpectGoodRun(RunBench({"ior", "-a", "POSIX", "-F", "-np", "2", "-b", "256K", "-t", "64K", "-w",
                          "-r", "-W", "-R", "-e", "-C", "-o", *mnt + d + "/fpp", "--json"},
                         out_.path()),
                {"write", "read"}, "bw_mib_s");
  ExpectGoodRun(RunBench({"mdtest", "-a", "POSIX", "-np", "2", "-n", "10", "-u", "-w", "1K", "-d",
                          *mnt + d, "--json"},
                         out_.path()),
                {"file_create", "file_stat", "file_read", "file_remove", "dir_create"},
                "ops_per_s");
  EXPECT_TRUE(cluster().Unmount(*mnt).ok());
}

TEST_F(BenchClusterTest, MdtestOverLibsfsReportsEveryRate) {
  std::string d = StripedDir();
  ExpectGoodRun(RunBench(Sfs({"mdtest", "-np", "2", "-n", "20", "-u", "-w", "4K", "-i", "2", "-d",
                              d, "--json"}),
                         out_.path()),
                {"dir_create", "dir_stat", "dir_remove", "file_create", "file_stat", "file_read",
                 "file_remove", "tree_create", "tree_remove"},
                "ops_per_s");
  ExpectGoodRun(
      RunBench(Sfs({"mdtest", "-np", "2", "-n", "20", "-D", "-d", d, "--json"}), out_.path()),
      {"dir_create", "dir_stat", "dir_remove"}, "ops_per_s");
}

TEST_F(BenchClusterTest, IorOverLibsfsNamesAByteOverwrittenBetweenPhases) {
  std::string d = StripedDir();
  std::vector<std::string> common{"ior", "-np", "2", "-b", "128K", "-t", "32K", "-o", d + "/c"};
  auto w = common;
  w.insert(w.end(), {"-w", "-W", "-k"});
  ASSERT_EQ(RunBench(Sfs(w), out_.path()).exit_code, 0);
  // Offset 200003 is task 1's (its block is [128K, 256K)), on the second OST.
  auto a = client().ResolvePath(kRoot, d + "/c");
  ASSERT_TRUE(a.ok());
  auto f = client().Open(kRoot, a->ino, O_RDWR, nullptr);
  ASSERT_TRUE(f.ok());
  uint8_t b = 0;
  ASSERT_TRUE(client().Read(**f, 200003, {&b, 1}).ok());
  b ^= 0xff;
  ASSERT_TRUE(client().Write(**f, 200003, {&b, 1}).ok());
  ASSERT_TRUE(client().Close(*f).ok());
  auto r = common;
  r.insert(r.end(), {"-r", "-R"});
  BenchRun run = RunBench(Sfs(r), out_.path());
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("verify: task 1 (data of task 1, iteration 0), file " + d +
                         "/c, offset 200003: expected"),
            std::string::npos)
      << run.err;
}

}  // namespace
}  // namespace sfs::testing
