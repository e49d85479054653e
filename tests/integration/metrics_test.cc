// Metrics and jobstats (issue 20) on a real cluster: 1 MDS and 2 OSSes with
// --metrics-listen, and a FUSE mount with -o metrics_listen. A process with
// SFS_JOBID=jobA writes through the mount; the OSSes' /metrics show exactly
// those bytes for job="jobA", the MDS counts the creates and the errors by
// errno, Debian's promtool accepts every daemon's exposition and a real
// Prometheus server scrapes them all.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <string>

#include "common/metrics/http_server.h"
#include "tests/harness/fixture.h"
#include "tests/integration/exposition.h"
#include "tests/integration/mini_json.h"

namespace sfs::testing {
namespace {


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
    mount_metrics_ = MetricsAddressInLog(cluster_->root() + "/logs/mount0.log");
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
  // Every endpoint, MDS first, then the OSSes, as sfs stats/top arguments.
  std::string Endpoints() {
    std::string s = cluster().mds_metrics_address();
    for (int i = 0; i < cluster().num_oss(); ++i) s += " " + cluster().oss_metrics_address(i);
    return s;
  }

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

TEST_F(MetricsTest, SfsStatsJsonSumsEachEndpointAndItsJobs) {
  RunAsJob("jobD", "head -c 12345 /dev/zero > " + Dir() + "/d && sync " + Dir() + "/d");
  std::string out;
  ASSERT_EQ(RunShell(SfsBinary() + " stats --json " + Endpoints(), &out), 0) << out;
  std::optional<Json> j = Json::Parse(out);
  ASSERT_TRUE(j.has_value()) << out;
  const std::vector<Json>& eps = (*j)["endpoints"].arr;
  ASSERT_EQ(eps.size(), 1u + cluster().num_oss()) << out;
  EXPECT_EQ(eps[0]["kind"].str, "mds");
  EXPECT_GE(eps[0]["ops"]["create"]["requests"].num, 1.0) << out;
  double job_bytes = 0;
  for (size_t i = 1; i < eps.size(); ++i) {
    EXPECT_EQ(eps[i]["kind"].str, "oss") << out;
    EXPECT_TRUE(eps[i]["ok"].b) << out;
    job_bytes += eps[i]["jobs"]["jobD"]["write_bytes"].num;
  }
  EXPECT_EQ(job_bytes, 12345.0) << out;
}

TEST_F(MetricsTest, SfsStatsMdsFindsEveryDaemonsEndpointThroughTheMds) {
  std::string out;
  ASSERT_EQ(RunShell(SfsBinary() + " stats --json --mds " + cluster().mds_address(), &out), 0)
      << out;
  std::optional<Json> j = Json::Parse(out);
  ASSERT_TRUE(j.has_value()) << out;
  const std::vector<Json>& eps = (*j)["endpoints"].arr;
  ASSERT_EQ(eps.size(), 1u + cluster().num_oss()) << out;
  EXPECT_EQ(eps[0]["address"].str, cluster().mds_metrics_address());
  EXPECT_EQ(eps[0]["kind"].str, "mds");
  for (int i = 0; i < cluster().num_oss(); ++i) {
    EXPECT_EQ(eps[1 + i]["kind"].str, "oss") << out;
    EXPECT_TRUE(out.find(cluster().oss_metrics_address(i)) != std::string::npos) << out;
  }
}

TEST_F(MetricsTest, SfsStatsOfADeadEndpointIsAOneLineErrorAndExit1) {
  std::string out;
  EXPECT_EQ(RunShell(SfsBinary() + " stats 127.0.0.1:1 2>&1", &out), 1) << out;
  EXPECT_NE(out.find("sfs stats: 127.0.0.1:1: "), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
}

// Under a pseudo-terminal (script(1)), two refreshes while a job writes: the
// screen is cleared with ANSI codes and shows the job and every OSS.
TEST_F(MetricsTest, SfsTopShowsPerOssAndPerJobRatesOnATerminal) {
  // jobT has written before the first scrape, so both frames list it; it
  // keeps writing while top runs.
  RunAsJob("jobT", "head -c 4096 /dev/urandom > " + Dir() + "/t0 && sync " + Dir() + "/t0");
  std::string out;
  std::string top = SfsBinary() + " top --iterations 2 --interval-ms 300 " + Endpoints();
  std::string writer =
      "env SFS_JOBID=jobT sh -c 'for i in 1 2 3 4 5 6 7 8; do head -c 262144 "
      "/dev/urandom > " +
      Dir() + "/t$i; sync " + Dir() + "/t$i; done' &";
  ASSERT_EQ(RunShell(writer + " script -qfec '" + top + "' /dev/null; wait", &out), 0) << out;
  EXPECT_GE(std::count(out.begin(), out.end(), '\x1b'), 4) << out;  // 2 x "ESC[H ESC[2J"
  EXPECT_NE(out.find("sfs top - "), std::string::npos) << out;
  EXPECT_NE(out.find("JOB (OSS I/O)"), std::string::npos) << out;
  for (int i = 0; i < cluster().num_oss(); ++i) {
    EXPECT_NE(out.find(cluster().oss_metrics_address(i)), std::string::npos) << out;
  }
  EXPECT_NE(out.find("jobT"), std::string::npos) << out;
}

TEST_F(MetricsTest, SfsTopOnceWithoutATerminalPrintsOnePlainFrame) {
  std::string out;
  ASSERT_EQ(
      RunShell(SfsBinary() + " top --once --interval-ms 100 " + Endpoints() + " < /dev/null", &out),
      0)
      << out;
  EXPECT_EQ(out.find('\x1b'), std::string::npos) << out;
  EXPECT_NE(out.find(cluster().mds_metrics_address() + " "), std::string::npos) << out;
  EXPECT_NE(out.find(" mds "), std::string::npos) << out;
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


// A free TCP port on loopback for a program that cannot be told port 0 and
// report it (Prometheus): bound, read and released; taken again at once.
uint16_t FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (fd >= 0) ::close(fd);
    return 0;
  }
  ::close(fd);
  return ntohs(a.sin_port);
}

// A real Prometheus server (Debian's) scrapes every daemon and the mount, as
// an operator's would: each target is up, and a job's bytes written through
// the mount are there to query with the job label (honor_labels keeps our
// job="..." instead of renaming it exported_job).
TEST_F(MetricsTest, PrometheusServerScrapesEveryDaemonAndTheJobsBytes) {
  const char* promtool = std::getenv("SFS_PROMTOOL");
  ASSERT_TRUE(promtool != nullptr && *promtool != '\0')
      << "promtool not found at configure time: run scripts/install-deps.sh";
  std::string prometheus = std::filesystem::path(promtool).parent_path() / "prometheus";
  ASSERT_TRUE(std::filesystem::exists(prometheus)) << prometheus << " (Debian package prometheus)";
  RunAsJob("jobP", "head -c 100000 /dev/zero > " + Dir() + "/prom && sync " + Dir() + "/prom");
  std::vector<std::string> targets = {cluster().mds_metrics_address(), mount_metrics_};
  for (int i = 0; i < cluster().num_oss(); ++i) targets.push_back(cluster().oss_metrics_address(i));
  std::string dir = cluster().root() + "/prometheus";
  std::filesystem::create_directories(dir);
  {
    std::ofstream conf(dir + "/prometheus.yml");
    conf << "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
         << "scrape_configs:\n  - job_name: stripefs\n    honor_labels: true\n"
         << "    static_configs:\n      - targets: [";
    for (size_t i = 0; i < targets.size(); ++i) conf << (i ? ", " : "") << "'" << targets[i] << "'";
    conf << "]\n";
  }
  std::string check;
  ASSERT_EQ(RunShell(std::string(promtool) + " check config " + dir + "/prometheus.yml", &check), 0)
      << check;
  uint16_t port = FreePort();
  ASSERT_NE(port, 0);
  std::string web = "127.0.0.1:" + std::to_string(port);
  auto server = Subprocess::Spawn({prometheus, "--config.file=" + dir + "/prometheus.yml",
                                   "--storage.tsdb.path=" + dir + "/data",
                                   "--web.listen-address=" + web},
                                  dir + "/prometheus.log", SIGKILL, /*capture_stdout=*/false);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  // Polled until every target has been scraped up and the job's bytes are in,
  // or a minute has passed (the scrape interval is 1 s).
  auto query = [&](const std::string& q) {
    Result<std::string> body = metrics::HttpGet(web, "/api/v1/query?query=" + q);
    return body.ok() ? *body : std::string();
  };
  std::string up, bytes;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    ASSERT_TRUE((*server)->Running()) << TailFile(dir + "/prometheus.log", 20);
    // count(up == 1): the number of targets scraped successfully.
    up = query("count(up%3D%3D1)");
    bytes = query("sum(sfs_oss_job_write_bytes_total%7Bjob%3D%22jobP%22%7D)");
    if (up.find("\"" + std::to_string(targets.size()) + "\"]") != std::string::npos &&
        bytes.find("\"100000\"]") != std::string::npos) {
      break;
    }
    (*server)->Wait(std::chrono::milliseconds(200));  // exits early only if it dies
  }
  EXPECT_NE(up.find("\"" + std::to_string(targets.size()) + "\"]"), std::string::npos)
      << "not every target is up: " << up << "\n" << query("up");
  EXPECT_NE(bytes.find("\"100000\"]"), std::string::npos) << bytes;
  (*server)->Terminate(std::chrono::seconds(10));
}

}  // namespace
}  // namespace sfs::testing
