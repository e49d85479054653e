// Tenants and QoS together (issue 17; docs/security.md "Tenants in
// capabilities") on a real cluster: one sfs-mds and two sfs-oss with a
// cluster key and --metrics-listen, an admin FUSE mount of the default
// tenant, and two tenants' FUSE mounts. The MDS writes each mount's tenant
// into the capabilities it signs, and the OSSes take the tenant for QoS from
// there alone: a `tenant:` rule holds that tenant's mount to its limit (the
// CI check: not over it by more than 10%), whatever job id the mount's
// processes claim, while the other tenant's I/O is not in its class at all.
// The KV tier takes its tenant from the MDS's KV grant alike: tenant B's
// client, with its own grant, cannot read or probe a block tenant A put.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "client/lib/kv.h"
#include "common/metrics/http_server.h"
#include "tests/harness/fixture.h"
#include "tests/integration/exposition.h"
#include "tests/integration/oss_metrics.h"

namespace sfs::testing {
namespace {

namespace fs = std::filesystem;

class TenantQosTest : public SharedClusterTest<TenantQosTest> {
 public:
  static ClusterOptions Options() {
    ClusterOptions o;
    o.name = "tenant-qos";
    o.num_oss = 2;
    o.metrics = true;
    o.cluster_key = true;  // capabilities on: the OSSes learn tenants from them
    o.oss_args = {"--kv-capacity", "16M"};
    return o;
  }
  static constexpr int kMounts = 1;  // the admin's, default tenant

 protected:
  std::string Sfs(const std::string& args) {
    return SfsBinary() + " " + args + " --mds " + cluster().mds_address() + " 2>&1";
  }
  std::string KeyPath(const std::string& name) { return cluster().root() + "/" + name + ".key"; }
  // A tenant over a fresh directory of the admin mount, and its mount.
  std::string MountTenant(const std::string& name) {
    fs::create_directories(mount() + "/" + name);
    fs::permissions(mount() + "/" + name, fs::perms::all);
    std::string out;
    EXPECT_EQ(RunShell(Sfs("tenant create " + name + " --fileset /" + name + " --key-out " +
                           KeyPath(name)), &out), 0) << out;
    auto m = cluster().Mount(cluster().root() + "/mnt-" + name,
                             {"tenant=" + name, "keyfile=" + KeyPath(name)});
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    return m.ok() ? *m : std::string();
  }
  double OssSum(const std::string& series) { return sfs::testing::OssSum(cluster(), series); }
  bool WaitForRules(int n) { return WaitForQosRules(cluster(), n); }
  // Seconds to write MiB mebibytes to path as job (SFS_JOBID), synced.
  double TimedWrite(const std::string& job, const std::string& path, int mib) {
    std::string out;
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(RunShell("env SFS_JOBID=" + job + " dd if=/dev/zero of=" + path +
                       " bs=1M count=" + std::to_string(mib) + " conv=fsync 2>&1", &out), 0)
        << out;
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  static std::string Bytes(const std::string& cls) {
    return "sfs_oss_qos_write_bytes_total{class=\"" + cls + "\"}";
  }
};

TEST_F(TenantQosTest, ATenantsRuleHoldsItsMountToItsLimitAndNotAnotherTenants) {
  std::string ma = MountTenant("qa");
  std::string mb = MountTenant("qb");
  ASSERT_FALSE(ma.empty());
  ASSERT_FALSE(mb.empty());
  std::string out;
  ASSERT_EQ(RunShell(Sfs("qos set tenant:qa --write-mibps 2"), &out), 0) << out;
  ASSERT_TRUE(WaitForRules(1)) << "the OSSes never applied the rule";

  // 6 MiB at 2 MiB/s on one OSS (one stripe): at least 2.95 s; a loaded
  // machine only lengthens it. Every byte is in tenant qa's class.
  double secs = TimedWrite("train", ma + "/a1", 6);
  EXPECT_GE(secs, 2.72) << "tenant qa wrote over its 2 MiB/s limit by more than 10%";
  EXPECT_EQ(OssSum(Bytes("tenant:qa")), 6.0 * (1 << 20));

  // Tenant qb has no rule: none of its bytes are qa's, all are unruled.
  double other_before = OssSum(Bytes("other"));
  TimedWrite("train", mb + "/b1", 6);
  EXPECT_EQ(OssSum(Bytes("tenant:qa")), 6.0 * (1 << 20));
  EXPECT_EQ(OssSum(Bytes("other")) - other_before, 6.0 * (1 << 20));
  ASSERT_EQ(RunShell("cmp -n 6291456 /dev/zero " + mb + "/b1", &out), 0) << out;
  ASSERT_EQ(RunShell(Sfs("qos remove tenant:qa"), &out), 0) << out;
  ASSERT_TRUE(WaitForRules(0));
}

// The job id is the client's word: neither a job that has a rule of its own
// nor the resync job id lets a limited tenant's mount out of its limit.
TEST_F(TenantQosTest, AJobIdTheClientChoosesDoesNotLiftItsTenantsLimit) {
  std::string mc = MountTenant("qc");
  ASSERT_FALSE(mc.empty());
  std::string out;
  ASSERT_EQ(RunShell(Sfs("qos set tenant:qc --write-mibps 2"), &out), 0) << out;
  ASSERT_EQ(RunShell(Sfs("qos set job:free --write-mibps 1000"), &out), 0) << out;
  ASSERT_TRUE(WaitForRules(2)) << "the OSSes never applied the rules";
  int n = 0;
  for (const std::string job : {"free", "sfs:resync"}) {
    double before = OssSum(Bytes("tenant:qc"));
    double secs = TimedWrite(job, mc + "/f" + std::to_string(n++), 4);
    EXPECT_GE(secs, 1.8) << "job " << job << ": 4 MiB at 2 MiB/s took less than 1.8 s";
    EXPECT_EQ(OssSum(Bytes("tenant:qc")) - before, 4.0 * (1 << 20)) << "job " << job;
  }
  EXPECT_EQ(OssSum(Bytes("job:free")), 0);
  EXPECT_EQ(OssSum(Bytes("resync")), 0);
  ASSERT_EQ(RunShell(Sfs("qos remove job:free") + " && " + Sfs("qos remove tenant:qc"), &out), 0)
      << out;
  ASSERT_TRUE(WaitForRules(0));
}

std::vector<uint8_t> Block(uint8_t seed) {
  std::vector<uint8_t> b(4096);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(seed + i * 7);
  return b;
}

TEST_F(TenantQosTest, ATenantsKvBlocksAreItsOwn) {
  std::string out;
  for (const char* t : {"ka", "kb"}) {
    fs::create_directories(mount() + "/" + t);
    ASSERT_EQ(RunShell(Sfs(std::string("tenant create ") + t + " --fileset /" + t +
                           " --key-out " + KeyPath(t)), &out), 0) << out;
  }
  // Each tenant's client, authenticated with its key, asks the MDS for a
  // KV capability and hands it to its KvClient.
  auto kv_as = [&](const std::string& tenant) -> std::unique_ptr<client::kv::KvClient> {
    client::Options o;
    o.mds_address = cluster().mds_address();
    o.tenant = tenant;
    o.keyfile = KeyPath(tenant);
    auto c = client::Client::Connect(o);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    if (!c.ok()) return nullptr;
    Result<std::string> cap = (*c)->KvCapability();
    EXPECT_TRUE(cap.ok() && !cap->empty()) << cap.status().ToString();
    if (!cap.ok()) return nullptr;
    client::kv::KvOptions k;
    k.mds_address = cluster().mds_address();
    k.transport = client::Transport::kTcp;
    k.capability = *cap;
    auto kv = client::kv::KvClient::Connect(k);
    EXPECT_TRUE(kv.ok()) << kv.status().ToString();
    return kv.ok() ? std::move(*kv) : nullptr;
  };
  auto a = kv_as("ka");
  auto b = kv_as("kb");
  ASSERT_TRUE(a && b);
  auto ns_a = a->Open("shared-name", 4096);
  auto ns_b = b->Open("shared-name", 4096);
  ASSERT_TRUE(ns_a.ok()) << ns_a.status().ToString();
  ASSERT_TRUE(ns_b.ok()) << ns_b.status().ToString();
  ASSERT_TRUE((*ns_a)->Put({"prefix-1", "g"}, Block(1)).ok());

  std::vector<uint8_t> buf(4096);
  auto hit = (*ns_a)->GetInto({"prefix-1", "g"}, buf);
  ASSERT_TRUE(hit.ok()) << hit.status().ToString();
  EXPECT_TRUE(*hit);
  EXPECT_EQ(buf, Block(1));
  // B names the same namespace, key and group: a miss, and no byte of A's.
  std::fill(buf.begin(), buf.end(), 0);
  auto miss = (*ns_b)->GetInto({"prefix-1", "g"}, buf);
  ASSERT_TRUE(miss.ok()) << miss.status().ToString();
  EXPECT_FALSE(*miss) << "tenant kb read tenant ka's block";
  EXPECT_EQ(buf, std::vector<uint8_t>(4096, 0));
  // B's own block under that name does not touch A's.
  ASSERT_TRUE((*ns_b)->Put({"prefix-1", "g"}, Block(2)).ok());
  ASSERT_TRUE((*ns_a)->GetInto({"prefix-1", "g"}, buf).ok());
  EXPECT_EQ(buf, Block(1));

  // A client without a tenant (the admin's) gets the default tenant's grant:
  // not A's blocks either.
  Result<std::string> def = client().KvCapability();
  ASSERT_TRUE(def.ok()) << def.status().ToString();
  client::kv::KvOptions k;
  k.mds_address = cluster().mds_address();
  k.transport = client::Transport::kTcp;
  k.capability = *def;
  auto d = client::kv::KvClient::Connect(k);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  auto ns_d = (*d)->Open("shared-name", 4096);
  ASSERT_TRUE(ns_d.ok()) << ns_d.status().ToString();
  auto dmiss = (*ns_d)->GetInto({"prefix-1", "g"}, buf);
  ASSERT_TRUE(dmiss.ok()) << dmiss.status().ToString();
  EXPECT_FALSE(*dmiss);
}

}  // namespace
}  // namespace sfs::testing
