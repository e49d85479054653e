// The GET /metrics server over real loopback sockets, and Debian's promtool
// accepting what the registry renders.
#include "common/metrics/http_server.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "common/metrics/job_stats.h"
#include "common/metrics/metrics.h"

namespace sfs::metrics {
namespace {

TEST(MetricsHttpServerTest, ServesTheRenderedExpositionOnAnEphemeralPort) {
  int scrapes = 0;
  auto server = MetricsHttpServer::Start("127.0.0.1", 0, [&] {
    ++scrapes;
    return std::string("x_total 1\n");
  });
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  ASSERT_NE((*server)->port(), 0);
  std::string addr = "127.0.0.1:" + std::to_string((*server)->port());
  Result<std::string> body = HttpGet(addr, "/metrics");
  ASSERT_TRUE(body.ok()) << body.status().ToString();
  EXPECT_EQ(*body, "x_total 1\n");
  EXPECT_TRUE(HttpGet(addr, "/metrics").ok());
  EXPECT_EQ(scrapes, 2);
}

TEST(MetricsHttpServerTest, OtherPathsAre404) {
  auto server = MetricsHttpServer::Start("127.0.0.1", 0, [] { return std::string(); });
  ASSERT_TRUE(server.ok());
  Result<std::string> body = HttpGet("127.0.0.1:" + std::to_string((*server)->port()), "/nope");
  ASSERT_FALSE(body.ok());
  EXPECT_NE(body.status().message().find("HTTP 404"), std::string::npos)
      << body.status().ToString();
}

TEST(MetricsHttpServerTest, APortInUseIsAnErrorNotACrash) {
  auto a = MetricsHttpServer::Start("127.0.0.1", 0, [] { return std::string(); });
  ASSERT_TRUE(a.ok());
  auto b = MetricsHttpServer::Start("127.0.0.1", (*a)->port(), [] { return std::string(); });
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), EADDRINUSE) << b.status().ToString();
}

TEST(MetricsHttpServerTest, GetOfAClosedPortIsConnectionRefused) {
  uint16_t port;
  {
    auto a = MetricsHttpServer::Start("127.0.0.1", 0, [] { return std::string(); });
    ASSERT_TRUE(a.ok());
    port = (*a)->port();
  }
  Result<std::string> body = HttpGet("127.0.0.1:" + std::to_string(port), "/metrics");
  ASSERT_FALSE(body.ok());
  EXPECT_EQ(body.status().code(), ECONNREFUSED) << body.status().ToString();
  EXPECT_EQ(HttpGet("nonsense", "/metrics").status().code(), EINVAL);
}

// promtool (Debian package prometheus; scripts/install-deps.sh) lints what
// every metric type renders to, label escaping included.
TEST(MetricsExpositionTest, PromtoolCheckMetricsAcceptsTheRegistrysOutput) {
  const char* promtool = std::getenv("SFS_PROMTOOL");
  ASSERT_TRUE(promtool != nullptr && *promtool != '\0')
      << "promtool not found at configure time: run scripts/install-deps.sh";
  Registry r;
  r.AddCounter("sfs_test_requests_total", "Requests by op.", {"op"}).With({"read"}).Inc(2);
  r.AddGauge("sfs_test_inflight_requests", "In flight.").With({}).Set(3);
  Histogram& h =
      r.AddHistogram("sfs_test_request_duration_seconds", "Latency.", {"op"}).With({"read"});
  h.ObserveNanos(123'456);
  JobStats jobs("sfs_test_job");
  jobs.Add("a \"quoted\\ job\n", 1, 2);
  r.AddCollector([&](Writer& w) { jobs.Render(w); });
  std::string path = ::testing::TempDir() + "/exposition.txt";
  std::ofstream(path) << r.Render();
  std::string cmd = std::string(promtool) + " check metrics < " + path + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[512];
  while (fgets(buf, sizeof buf, p) != nullptr) out += buf;
  int rc = pclose(p);
  EXPECT_EQ(rc, 0) << out << "\n" << r.Render();
}

}  // namespace
}  // namespace sfs::metrics
