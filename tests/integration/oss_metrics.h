// The OSSes' /metrics summed over a test cluster (qos_test, tenant_qos_test).
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

// Until every OSS has `n` QoS rules in force (they come with heartbeats).
inline bool WaitForQosRules(TestCluster& cluster, int n) {
  return PollUntil(
      [&] { return OssSum(cluster, "sfs_oss_qos_rules") == n * cluster.num_oss(); },
      std::chrono::seconds(20));
}

}  // namespace sfs::testing
