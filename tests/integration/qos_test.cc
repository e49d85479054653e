// OSS QoS (issue 17; docs/qos.md) on a real cluster: 1 MDS and 2 OSSes with
// --metrics-listen and a FUSE mount. `sfs qos set` at the MDS reaches every
// OSS with its heartbeats; a job held to a write rate cannot go faster than it
// (a lower bound on its elapsed time, which a loaded machine only lengthens),
// and its bytes and delays are counted under its class, while another job's
// are not; rules survive an MDS restart; bad input is one line and exit 1/2.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "common/metrics/http_server.h"
#include "tests/harness/fixture.h"
#include "tests/integration/exposition.h"
#include "tests/integration/oss_metrics.h"
#include "tests/integration/mini_json.h"

namespace sfs::testing {
namespace {


class QosTest : public SharedClusterTest<QosTest> {
 public:
  static ClusterOptions Options() {
    ClusterOptions o;
    o.name = "qos";
    o.num_oss = 2;
    o.metrics = true;
    return o;
  }
  static constexpr int kMounts = 1;

 protected:
  std::string Sfs(const std::string& args) {
    return SfsBinary() + " qos " + args + " --mds " + cluster().mds_address() + " 2>&1";
  }
  double OssSum(const std::string& series) { return sfs::testing::OssSum(cluster(), series); }
  bool WaitForRules(int n) { return WaitForQosRules(cluster(), n); }
  void RunAsJob(const std::string& job, const std::string& cmd) {
    std::string out;
    ASSERT_EQ(RunShell("env SFS_JOBID=" + job + " sh -c '" + cmd + "'", &out), 0) << out;
  }
};

TEST_F(QosTest, ALimitedJobIsHeldToItsRateAndAnotherJobIsNot) {
  std::string out;
  ASSERT_EQ(RunShell(Sfs("set job:slow --write-mibps 2"), &out), 0) << out;
  ASSERT_TRUE(WaitForRules(1)) << "the OSSes never applied the rule";
  const std::string slow_bytes = "sfs_oss_qos_write_bytes_total{class=\"job:slow\"}";
  const std::string slow_delayed = "sfs_oss_qos_delayed_total{class=\"job:slow\"}";
  const std::string other_bytes = "sfs_oss_qos_write_bytes_total{class=\"other\"}";
  double before_other = OssSum(other_bytes);

  // 6 MiB at 2 MiB/s on one OSS (one stripe): at least 2.95 s however fast
  // the machine and whatever the requests' sizes (bytes are charged before
  // they go, with 50 ms of burst).
  auto t0 = std::chrono::steady_clock::now();
  RunAsJob("slow", "dd if=/dev/zero of=" + mount() + "/slow bs=1M count=6 conv=fsync 2>/dev/null");
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(secs, 2.72) << "6 MiB under a 2 MiB/s limit: over it by more than 10%";
  EXPECT_EQ(OssSum(slow_bytes), 6.0 * (1 << 20));
  EXPECT_GE(OssSum(slow_delayed), 2.0);

  // Another job has no rule: its bytes go to "other", none to job:slow.
  RunAsJob("fast", "dd if=/dev/zero of=" + mount() + "/fast bs=1M count=6 conv=fsync 2>/dev/null");
  EXPECT_EQ(OssSum(slow_bytes), 6.0 * (1 << 20));
  EXPECT_EQ(OssSum(other_bytes) - before_other, 6.0 * (1 << 20));

  // The data is whole: QoS delays requests, it never drops one.
  ASSERT_EQ(RunShell("cmp -n 6291456 /dev/zero " + mount() + "/slow && "
                     "test $(stat -c %s " + mount() + "/slow) = 6291456", &out), 0) << out;

  ASSERT_EQ(RunShell(Sfs("remove job:slow"), &out), 0) << out;
  ASSERT_TRUE(WaitForRules(0)) << "the OSSes kept a removed rule";
}

TEST_F(QosTest, ShowListsRulesAsSetAndJsonParses) {
  std::string out;
  ASSERT_EQ(RunShell(Sfs("set tenant:default --reserve-iops 200 --weight 3"), &out), 0) << out;
  ASSERT_EQ(RunShell(Sfs("set resync --read-mibps 50 --write-mibps 50"), &out), 0) << out;
  ASSERT_EQ(RunShell(Sfs("show --json"), &out), 0) << out;
  std::optional<Json> j = Json::Parse(out);
  ASSERT_TRUE(j.has_value()) << out;
  const std::vector<Json>& rules = (*j)["rules"].arr;
  ASSERT_EQ(rules.size(), 2u) << out;
  EXPECT_EQ(rules[0]["class"].str, "resync");
  EXPECT_EQ(rules[0]["write_mibps"].num, 50);
  EXPECT_EQ(rules[0]["weight"].num, 1);
  EXPECT_EQ(rules[1]["class"].str, "tenant:default");
  EXPECT_EQ(rules[1]["reserve_iops"].num, 200);
  EXPECT_EQ(rules[1]["weight"].num, 3);
  out.clear();  // RunShell appends
  ASSERT_EQ(RunShell(Sfs("show resync"), &out), 0) << out;
  EXPECT_NE(out.find("resync"), std::string::npos) << out;
  EXPECT_EQ(out.find("tenant:default"), std::string::npos) << out;
  ASSERT_TRUE(WaitForRules(2));
  ASSERT_EQ(RunShell(Sfs("remove resync") + " && " + Sfs("remove tenant:default"), &out), 0) << out;
  ASSERT_TRUE(WaitForRules(0));
}

TEST_F(QosTest, BadInputIsOneLineAndChangesNothing) {
  struct Case {
    std::string args;
    int rc;
    std::string says;
  } cases[] = {
      {"set bogus --iops 100", 1, "job:NAME, tenant:NAME or resync"},
      {"set job: --iops 100", 1, "1 to 120 characters"},
      {"set job:x --iops -5", 2, "bad value '-5' for --iops"},
      {"set job:x --weight 0", 2, "bad value '0' for --weight"},
      {"set job:x --write-mibps 0.1", 1, "at least 1 MiB/s"},
      {"set job:x --iops 5", 1, "at least 10"},
      {"set job:x --iops 100 --reserve-iops 500", 1, "cannot exceed"},
      {"show --iops 5", 2, "rates go with 'set' only"},
      {"remove job:never-set", 1, "no QoS rule for 'job:never-set'"},
      {"frobnicate job:x", 2, "unknown operation 'frobnicate'"},
  };
  for (const Case& c : cases) {
    std::string out;
    EXPECT_EQ(RunShell(Sfs(c.args), &out), c.rc) << c.args << ": " << out;
    EXPECT_NE(out.find(c.says), std::string::npos) << c.args << ": " << out;
    if (c.rc == 1) EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << c.args << ": " << out;
  }
  // Only root changes rules; anyone may list them.
  client::QosRuleInfo rule{.name = "job:x", .iops = 100};
  EXPECT_EQ(client().QosSet(kUser, rule).code(), EPERM);
  Result<std::vector<client::QosRuleInfo>> rules = client().ListQos();
  ASSERT_TRUE(rules.ok()) << rules.status().ToString();
  EXPECT_TRUE(rules->empty());
}

TEST_F(QosTest, RulesSurviveAnMdsRestart) {
  std::string out;
  ASSERT_EQ(RunShell(Sfs("set job:ckpt --write-mibps 400 --iops 5000"), &out), 0) << out;
  ASSERT_TRUE(cluster().KillMds().ok());
  ASSERT_TRUE(cluster().RestartMds().ok());
  ASSERT_EQ(RunShell(Sfs("show job:ckpt --json"), &out), 0) << out;
  std::optional<Json> j = Json::Parse(out);
  ASSERT_TRUE(j.has_value()) << out;
  ASSERT_EQ((*j)["rules"].arr.size(), 1u) << out;
  EXPECT_EQ((*j)["rules"].arr[0]["write_mibps"].num, 400);
  EXPECT_EQ((*j)["rules"].arr[0]["iops"].num, 5000);
  ASSERT_TRUE(WaitForRules(1)) << "the OSSes did not get the rule from the restarted MDS";
  ASSERT_EQ(RunShell(Sfs("remove job:ckpt"), &out), 0) << out;
}

}  // namespace
}  // namespace sfs::testing
