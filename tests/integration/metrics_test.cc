// Metrics and jobstats (issue 20) on a real cluster: 1 MDS and 2 OSSes with
// --metrics-listen, and a FUSE mount with -o metrics_listen. A process with
// SFS_JOBID=jobA writes through the mount; the OSSes' /metrics show exactly
// those bytes for job="jobA", the MDS counts the creates and the errors by
// errno, and Debian's promtool accepts every daemon's exposition.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <string>

#include "common/metrics/http_server.h"
#include "tests/harness/fixture.h"

namespace sfs::testing {
namespace {

// The value of the sample `series` (name and labels exactly as rendered), or
// 0 if the exposition has no such line.
double Sample(const std::string& exposition, const std::string& series) {
  size_t pos = 0;
  while ((pos = exposition.find(series + " ", pos)) != std::string::npos) {
    if (pos == 0 || exposition[pos - 1] == '\n') {
      return std::strtod(exposition.c_str() + pos + series.size() + 1, nullptr);
    }
    pos += series.size();
  }
  return 0;
}

class MetricsTest : public SharedClusterTest<MetricsTest> {
 public:
  static ClusterOptions Options() {
    ClusterOptions o;
    o.name = "metrics";
    o.num_oss = 2;
    o.metrics = true;
    return o;
  }
  static void SetUpTestSuite() {
    SharedClusterTest::SetUpTestSuite();
    if (!start_.ok()) return;
    auto m = cluster_->Mount({}, {"metrics_listen=127.0.0.1:0"});
    if (!m.ok()) {
      start_ = m.status();
      return;
    }
    mounts_.push_back(*m);
    // The mount's stdout goes to its log: its METRICS line is there.
    std::string log;
    ReadFile(cluster_->root() + "/logs/mount0.log", &log);
    std::smatch match;
    if (std::regex_search(log, match, std::regex("METRICS (\\S+)"))) mount_metrics_ = match[1];
  }

 protected:
  std::string Scrape(const std::string& address) {
    Result<std::string> body = metrics::HttpGet(address, "/metrics");
    EXPECT_TRUE(body.ok()) << address << ": " << body.status().ToString();
    return body.ok() ? *body : std::string();
  }
  double OssSum(const std::string& series) {
    double sum = 0;
    for (int i = 0; i < cluster().num_oss(); ++i) {
      sum += Sample(Scrape(cluster().oss_metrics_address(i)), series);
    }
    return sum;
  }
  // Runs cmd in a shell with SFS_JOBID=job in its environment.
  void RunAsJob(const std::string& job, const std::string& cmd) {
    std::string out;
    ASSERT_EQ(RunShell("env SFS_JOBID=" + job + " sh -c '" + cmd + "'", &out), 0) << out;
  }
  std::string Dir() { return mount(0); }

  static inline std::string mount_metrics_;
};

TEST_F(MetricsTest, EveryDaemonPrintsItsMetricsAddress) {
  EXPECT_FALSE(cluster().mds_metrics_address().empty());
  for (int i = 0; i < cluster().num_oss(); ++i) {
    EXPECT_FALSE(cluster().oss_metrics_address(i).empty()) << "oss" << i;
  }
  EXPECT_FALSE(mount_metrics_.empty()) << "no METRICS line in the mount's log";
}

TEST_F(MetricsTest, OssJobBytesMatchWhatTheJobWrote) {
  const std::string series = "sfs_oss_job_write_bytes_total{job=\"jobA\"}";
  double before = OssSum(series);
  // 3 MiB + 5 bytes: several stripes, write-behind batches and a tail.
  RunAsJob("jobA", "head -c 3145733 /dev/urandom > " + Dir() + "/a && sync " + Dir() + "/a");
  EXPECT_EQ(OssSum(series) - before, 3145733.0);
  RunAsJob("jobA", "cat " + Dir() + "/a > /dev/null");
  // Reads may be rounded up to pages and read ahead: at least the file.
  EXPECT_GE(OssSum("sfs_oss_job_read_bytes_total{job=\"jobA\"}"), 3145733.0);
  EXPECT_GE(OssSum("sfs_oss_job_ops_total{job=\"jobA\"}"), 2.0);
}

TEST_F(MetricsTest, MdsCountsCreatesPerOpAndPerJob) {
  const std::string creates = "sfs_mds_requests_total{op=\"create\"}";
  std::string m = Scrape(cluster().mds_metrics_address());
  double before = Sample(m, creates);
  RunAsJob("jobB", "touch " + Dir() + "/c1 " + Dir() + "/c2 " + Dir() + "/c3");
  m = Scrape(cluster().mds_metrics_address());
  EXPECT_EQ(Sample(m, creates) - before, 3.0);
  EXPECT_GE(Sample(m, "sfs_mds_job_ops_total{job=\"jobB\"}"), 3.0);
  EXPECT_GE(Sample(m, "sfs_mds_request_duration_seconds_count{op=\"create\"}"), 3.0);
}

TEST_F(MetricsTest, MdsCountsErrorsByErrno) {
  const std::string enoent = "sfs_mds_errors_total{op=\"lookup\",errno=\"ENOENT\"}";
  double before = Sample(Scrape(cluster().mds_metrics_address()), enoent);
  EXPECT_EQ(client().Lookup(kRoot, client::kRootIno, "no-such-name").status().code(), ENOENT);
  EXPECT_EQ(Sample(Scrape(cluster().mds_metrics_address()), enoent) - before, 1.0);
}

TEST_F(MetricsTest, MountCountsFuseOpsAndBytes) {
  ASSERT_FALSE(mount_metrics_.empty());
  double before = Sample(Scrape(mount_metrics_), "sfs_fuse_write_bytes_total");
  RunAsJob("jobC", "head -c 100000 /dev/zero > " + Dir() + "/m");
  std::string m = Scrape(mount_metrics_);
  EXPECT_EQ(Sample(m, "sfs_fuse_write_bytes_total") - before, 100000.0);
  EXPECT_GE(Sample(m, "sfs_fuse_requests_total{op=\"create\"}"), 1.0);
  EXPECT_GE(Sample(m, "sfs_fuse_request_duration_seconds_count{op=\"write\"}"), 1.0);
}

TEST_F(MetricsTest, OssReportsEachOstsSpaceAndState) {
  for (int i = 0; i < cluster().num_oss(); ++i) {
    std::string m = Scrape(cluster().oss_metrics_address(i));
    EXPECT_TRUE(
        std::regex_search(m, std::regex("\nsfs_ost_up\\{ost=\"\\d+\",uuid=\"[0-9a-f]+\"\\} 1\n")))
        << m;
    EXPECT_FALSE(std::regex_search(m, std::regex("\nsfs_ost_up\\{[^}]*\\} 0\n"))) << m;
    EXPECT_TRUE(std::regex_search(m, std::regex("\nsfs_ost_free_bytes\\{ost=\"\\d+\"\\} [1-9]")))
        << m;
  }
}

// promtool check metrics: the real Prometheus linter, on every endpoint.
TEST_F(MetricsTest, PromtoolAcceptsEveryDaemonsExposition) {
  const char* promtool = std::getenv("SFS_PROMTOOL");
  ASSERT_TRUE(promtool != nullptr && *promtool != '\0')
      << "promtool not found at configure time: run scripts/install-deps.sh";
  RunAsJob("jobA", "echo x > " + Dir() + "/p");  // some job series in every exposition
  std::vector<std::string> endpoints = {cluster().mds_metrics_address(), mount_metrics_};
  for (int i = 0; i < cluster().num_oss(); ++i) {
    endpoints.push_back(cluster().oss_metrics_address(i));
  }
  for (const std::string& e : endpoints) {
    std::string path = cluster().root() + "/scrape.txt";
    std::ofstream(path) << Scrape(e);
    std::string out;
    EXPECT_EQ(RunShell(std::string(promtool) + " check metrics < " + path, &out), 0) << e << ":\n"
                                                                                     << out;
  }
}

}  // namespace
}  // namespace sfs::testing
