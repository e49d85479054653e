// Counters from a test cluster's /metrics: the OSSes' summed, the MDS's
// requests by op (qos, cache, EC, mirror-lock and statahead tests).
#pragma once

#include <chrono>
#include <string>

#include <gtest/gtest.h>

#include "common/metrics/http_server.h"
#include "tests/harness/cluster.h"
#include "tests/harness/test_util.h"
#include "tests/integration/exposition.h"

namespace sfs::testing {

// The sum of `series` (as rendered) over every OSS; a failed scrape fails the test.
inline double OssSum(TestCluster& cluster, const std::string& series) {
  double sum = 0;
  for (int i = 0; i < cluster.num_oss(); ++i) {
    Result<std::string> body = metrics::HttpGet(cluster.oss_metrics_address(i), "/metrics");
    EXPECT_TRUE(body.ok()) << body.status().ToString();
    if (body.ok()) sum += Sample(*body, series);
  }
  return sum;
}

// Requests of `op` the MDS has served (sfs_mds_requests_total); a failed
// scrape fails the test.
inline double MdsRequests(TestCluster& cluster, const std::string& op) {
  Result<std::string> body = metrics::HttpGet(cluster.mds_metrics_address(), "/metrics");
  EXPECT_TRUE(body.ok()) << body.status().ToString();
  return body.ok() ? Sample(*body, "sfs_mds_requests_total{op=\"" + op + "\"}") : 0;
}

// Until every OSS has `n` QoS rules in force (they come with heartbeats).
inline bool WaitForQosRules(TestCluster& cluster, int n) {
  return PollUntil(
      [&] { return OssSum(cluster, "sfs_oss_qos_rules") == n * cluster.num_oss(); },
      std::chrono::seconds(20));
}

}  // namespace sfs::testing
