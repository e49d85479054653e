// sfs-mount's statahead (client/fuse/stat_ahead.h) through real mounts: a
// run of stat(2)s in a directory is answered from one listing (the MDS's
// request counters say so), and nothing it holds outlives a change — one
// made through another mount (revoked by the MDS) or through the same mount
// (which the MDS does not revoke for its own requester). The same for the
// kernel's READDIRPLUS entries, which carry what is left of their leases.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <functional>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

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

// rm's loop (mdtest -r): each unlink of a file's only link forgets just that
// name, so the listing the first lookups started answers the rest.
TEST_F(StatAheadMountTest, AnUnlinkLoopKeepsTheListing) {
  constexpr int kFiles = 300;
  MakeDir("rm", kFiles);
  const uint64_t lookups = MdsRequests("lookup");
  for (int i = 0; i < kFiles; ++i) {
    ASSERT_EQ(unlink(On(0, "rm/f" + std::to_string(i)).c_str()), 0) << i << strerror(errno);
  }
  const uint64_t asked = MdsRequests("lookup") - lookups;
  EXPECT_LT(asked, kFiles / 4u) << "lookups at the MDS for " << kFiles << " unlinks";
  for (int i = 0; i < kFiles; i += 37) {
    EXPECT_EQ(SizeOf(On(0, "rm/f" + std::to_string(i))), -ENOENT) << i;
    EXPECT_EQ(SizeOf(On(1, "rm/f" + std::to_string(i))), -ENOENT) << i;
  }
  EXPECT_EQ(rmdir(On(0, "rm").c_str()), 0) << strerror(errno);
}

// find(1)'s walk: each name stat(2)ed as readdir(3) returns it. Returns the
// names and, in *stat_errors, the names whose stat failed with their errno.
std::vector<std::string> WalkAndStat(const std::string& dir,
                                     std::vector<std::pair<std::string, int>>* stat_errors,
                                     const std::function<void(int)>& after_entry = {}) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return names;
  int n = 0;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    names.push_back(name);
    struct stat st {};
    if (stat((dir + "/" + name).c_str(), &st) != 0) stat_errors->emplace_back(name, errno);
    if (after_entry) after_entry(n);
    ++n;
  }
  closedir(d);
  return names;
}

// READDIRPLUS hands the kernel each entry's attributes with what is left of
// the lease the MDS granted for the listing, so find(1)'s stats need no
// LOOKUP (the mount has no statahead: the kernel's cache alone answers).
TEST_F(StatAheadMountTest, StatsAfterReaddirPlusAreAnsweredByTheKernel) {
  constexpr int kFiles = 300;
  MakeDir("plus", kFiles);
  Result<std::string> plain = cluster().Mount({}, {"nostatahead"});
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  const std::string dir = *plain + rel_ + "/plus";
  const uint64_t lookups = MdsRequests("lookup");
  std::vector<std::pair<std::string, int>> errors;
  std::vector<std::string> names = WalkAndStat(dir, &errors);
  const uint64_t asked = MdsRequests("lookup") - lookups;
  EXPECT_EQ(names.size(), static_cast<size_t>(kFiles));
  EXPECT_TRUE(errors.empty()) << errors.size() << " stats failed, first " << errors[0].first;
  EXPECT_LT(asked, kFiles / 10u) << "lookups at the MDS for " << kFiles << " stats";

  // A change through another mount after the listing: the MDS revokes it.
  ASSERT_EQ(chmod(On(1, "plus/f7").c_str(), 0600), 0);
  ASSERT_EQ(truncate(On(1, "plus/f8").c_str(), 4321), 0);
  struct stat st {};
  ASSERT_EQ(stat((dir + "/f7").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(SizeOf(dir + "/f8"), 4321);
  EXPECT_TRUE(cluster().Unmount(*plain).ok());
}

// A page of the listing held by the open directory is older than an unlink
// and a chmod made through the same mount while the walk is under way (the
// MDS revokes nothing for its own requester): the names readdir returns
// after them must not come with leases on what they were before.
TEST_F(StatAheadMountTest, ChangesThroughTheSameMountDuringTheWalkAreSeenByStat) {
  constexpr int kFiles = 200;
  MakeDir("walk", kFiles);
  Result<std::string> plain = cluster().Mount({}, {"nostatahead"});
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  const std::string dir = *plain + rel_ + "/walk";
  // Name order: "f98" and "f99" are the last names of the listing, far past
  // the kernel's first reply but in the first page the MDS sends.
  std::vector<std::pair<std::string, int>> errors;
  bool changed = false;
  std::vector<std::string> names = WalkAndStat(dir, &errors, [&](int n) {
    if (n != 0) return;
    changed = unlink((dir + "/f98").c_str()) == 0 && chmod((dir + "/f99").c_str(), 0600) == 0;
  });
  ASSERT_TRUE(changed) << strerror(errno);
  for (const auto& [name, err] : errors) {
    EXPECT_EQ(name, "f98") << "stat failed: " << strerror(err);
    EXPECT_EQ(err, ENOENT);
  }
  EXPECT_EQ(SizeOf(dir + "/f98"), -ENOENT);
  struct stat st {};
  ASSERT_EQ(stat((dir + "/f99").c_str(), &st), 0) << strerror(errno);
  EXPECT_EQ(st.st_mode & 07777, 0600u) << "the listing's mode, from before the chmod";
  EXPECT_TRUE(cluster().Unmount(*plain).ok());
}

}  // namespace
}  // namespace sfs::testing
