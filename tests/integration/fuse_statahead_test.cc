// sfs-mount's statahead (client/fuse/stat_ahead.h) through real mounts: a
// run of stat(2)s in a directory is answered from one listing (the MDS's
// request counters say so), and nothing it holds outlives a change — one
// made through another mount (revoked by the MDS) or through the same mount
// (which the MDS does not revoke for its own requester).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "common/metrics/http_server.h"
#include "tests/harness/fixture.h"
#include "tests/integration/exposition.h"

namespace sfs::testing {
namespace {

class StatAheadMountTest : public MountedTest<StatAheadMountTest> {
 public:
  static constexpr int kMounts = 2;
  static ClusterOptions Options() {
    ClusterOptions o;
    o.name = "statahead";
    o.metrics = true;  // sfs_mds_requests_total{op="lookup"|"readdir"}
    return o;
  }

 protected:
  uint64_t MdsRequests(const std::string& op) {
    Result<std::string> m = metrics::HttpGet(cluster().mds_metrics_address(), "/metrics");
    if (!m.ok()) return 0;
    return static_cast<uint64_t>(Sample(*m, "sfs_mds_requests_total{op=\"" + op + "\"}"));
  }
  // Files d/f0..f(n-1) of sizes 1..n, made through mount 1 (so mount 0's
  // kernel has none of their names cached).
  void MakeDir(const std::string& d, int n) {
    ASSERT_EQ(mkdir(On(1, d).c_str(), 0755), 0) << strerror(errno);
    for (int i = 0; i < n; ++i) {
      ASSERT_TRUE(WriteFile(On(1, d + "/f" + std::to_string(i)), std::string(i + 1, 'x')));
    }
  }
  static long SizeOf(const std::string& path) {
    struct stat st {};
    return stat(path.c_str(), &st) == 0 ? static_cast<long>(st.st_size) : -errno;
  }
  // Stats d/f0..f7 through mount 0 (the trigger) and waits until the MDS has
  // answered the listing they start.
  void Trigger(const std::string& d) {
    const uint64_t listed = MdsRequests("readdir");
    for (int i = 0; i < 8; ++i) ASSERT_EQ(SizeOf(On(0, d + "/f" + std::to_string(i))), i + 1);
    ASSERT_TRUE(PollUntil([&] { return MdsRequests("readdir") > listed; },
                          std::chrono::seconds(10)));
  }
};

TEST_F(StatAheadMountTest, ARunOfStatsInADirectoryIsAnsweredFromOneListing) {
  constexpr int kFiles = 1000;
  MakeDir("many", kFiles);
  const uint64_t lookups = MdsRequests("lookup");
  const uint64_t listed = MdsRequests("readdir");
  for (int i = 0; i < kFiles; ++i) {
    ASSERT_EQ(SizeOf(On(0, "many/f" + std::to_string(i))), i + 1) << i;
  }
  const uint64_t asked = MdsRequests("lookup") - lookups;
  EXPECT_LT(asked, kFiles / 2u) << "lookups at the MDS for " << kFiles << " stats";
  EXPECT_GE(MdsRequests("readdir") - listed, 1u);
}

TEST_F(StatAheadMountTest, ChangesThroughAnotherMountAfterTheListingAreSeen) {
  MakeDir("other", 64);
  Trigger("other");
  ASSERT_EQ(truncate(On(1, "other/f40").c_str(), 12345), 0);
  ASSERT_EQ(chmod(On(1, "other/f41").c_str(), 0600), 0);
  ASSERT_EQ(unlink(On(1, "other/f42").c_str()), 0);
  ASSERT_EQ(rename(On(1, "other/f43").c_str(), On(1, "other/g43").c_str()), 0);
  int fd = open(On(1, "other/f44").c_str(), O_WRONLY | O_APPEND);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, std::string(100, 'y').data(), 100), 100);
  ASSERT_EQ(close(fd), 0);

  EXPECT_EQ(SizeOf(On(0, "other/f40")), 12345);
  struct stat st {};
  ASSERT_EQ(stat(On(0, "other/f41").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(SizeOf(On(0, "other/f42")), -ENOENT);
  EXPECT_EQ(SizeOf(On(0, "other/f43")), -ENOENT);
  EXPECT_EQ(SizeOf(On(0, "other/g43")), 44);
  EXPECT_EQ(SizeOf(On(0, "other/f44")), 45 + 100);
  EXPECT_EQ(SizeOf(On(0, "other/f45")), 46) << "an unchanged neighbour";
}

TEST_F(StatAheadMountTest, AChangeThroughTheSameMountIsSeenByItsOtherNames) {
  MakeDir("same", 64);
  // f50 and f51 become two names of one inode before the listing.
  ASSERT_EQ(unlink(On(1, "same/f51").c_str()), 0);
  ASSERT_EQ(link(On(1, "same/f50").c_str(), On(1, "same/f51").c_str()), 0);
  Trigger("same");
  // Through mount 0: unlink one name (nlink 2 -> 1), grow the file through
  // it first. The other name's entry in the listing predates both.
  int fd = open(On(0, "same/f50").c_str(), O_WRONLY | O_APPEND);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "zz", 2), 2);
  ASSERT_EQ(close(fd), 0);
  ASSERT_EQ(unlink(On(0, "same/f50").c_str()), 0);
  struct stat st {};
  ASSERT_EQ(stat(On(0, "same/f51").c_str(), &st), 0);
  EXPECT_EQ(st.st_nlink, 1u);
  EXPECT_EQ(st.st_size, 51 + 2);
}

}  // namespace
}  // namespace sfs::testing
