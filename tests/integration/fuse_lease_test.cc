// Metadata leases (issue 6) end to end: real MDS, OSSes, sfs-mounts and a
// libsfs client with leases on. A mount caches a regular file's name and
// attributes for the MDS's lease; a change through another mount must be
// visible there as soon as the changing syscall returned (chmod, truncate,
// unlink, rename over it); a mount that stops answering (SIGSTOP) delays a
// change only until its lease runs out; two mounts that would wait for each
// other's directory lock do not (the MDS breaks the cycle); after an MDS restart, whose lease table starts
// empty, a change is still seen by the other mount; a libsfs client's
// invalidation handler has run before the other client's unlink returns.
// Directories: names created, removed or renamed through one mount, and a
// directory's mode and mtime, are seen at once by a mount that cached the
// directory, a name in it as absent, or made it itself (complete there).
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "tests/harness/fixture.h"

namespace sfs::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

constexpr auto kLeaseAndMargin = milliseconds(5500);  // sfs-mds defaults

struct stat StatOf(const std::string& path) {
  struct stat st{};
  EXPECT_EQ(stat(path.c_str(), &st), 0) << path << ": " << strerror(errno);
  return st;
}

int StatErr(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? 0 : errno;
}

class LeaseTest : public MountedTest<LeaseTest> {
 public:
  static constexpr int kMounts = 2;
  static ClusterOptions Options() {
    ClusterOptions o;
    o.name = "lease";
    return o;
  }
};

TEST_F(LeaseTest, AChmodOnOneMountIsSeenByAStatOnTheOtherAtOnce) {
  ASSERT_TRUE(WriteFile(On(0, "f"), "data"));
  ASSERT_EQ(StatOf(On(1, "f")).st_mode & 0777, 0644u);  // mount 1 caches it
  ASSERT_EQ(chmod(On(0, "f").c_str(), 0600), 0);
  EXPECT_EQ(StatOf(On(1, "f")).st_mode & 0777, 0600u);
}

TEST_F(LeaseTest, ATruncateOnOneMountIsSeenByAStatOnTheOtherAtOnce) {
  ASSERT_TRUE(WriteFile(On(0, "f"), std::string(10000, 'a')));
  ASSERT_EQ(StatOf(On(1, "f")).st_size, 10000);
  ASSERT_EQ(truncate(On(0, "f").c_str(), 123), 0);
  EXPECT_EQ(StatOf(On(1, "f")).st_size, 123);
  std::string s;
  ASSERT_TRUE(ReadFile(On(1, "f"), &s));
  EXPECT_EQ(s.size(), 123u);
}

TEST_F(LeaseTest, AnUnlinkOnOneMountIsSeenByAStatOnTheOtherAtOnce) {
  ASSERT_TRUE(WriteFile(On(0, "f"), "data"));
  ASSERT_EQ(StatErr(On(1, "f")), 0);
  ASSERT_EQ(unlink(On(0, "f").c_str()), 0);
  EXPECT_EQ(StatErr(On(1, "f")), ENOENT);
}

TEST_F(LeaseTest, ARenameOverAFileIsSeenByAStatOnTheOtherAtOnce) {
  ASSERT_TRUE(WriteFile(On(0, "old"), "old"));
  ASSERT_TRUE(WriteFile(On(0, "new"), "the new one"));
  struct stat before = StatOf(On(1, "old"));
  ASSERT_EQ(StatOf(On(1, "new")).st_size, 11);
  ASSERT_EQ(rename(On(0, "new").c_str(), On(0, "old").c_str()), 0);
  struct stat after = StatOf(On(1, "old"));
  EXPECT_NE(after.st_ino, before.st_ino);
  EXPECT_EQ(after.st_size, 11);
  EXPECT_EQ(StatErr(On(1, "new")), ENOENT);
}

TEST_F(LeaseTest, AStoppedMountDelaysAnUnlinkOnlyUntilItsLeaseRunsOut) {
  ASSERT_TRUE(WriteFile(On(0, "f"), "data"));
  ASSERT_EQ(StatErr(On(1, "f")), 0);  // mount 1 takes a lease
  auto granted = steady_clock::now();
  ASSERT_TRUE(cluster().SignalMount(mount(1), SIGSTOP).ok());
  int rc = unlink(On(0, "f").c_str());
  auto took = steady_clock::now() - granted;
  ASSERT_TRUE(cluster().SignalMount(mount(1), SIGCONT).ok());
  EXPECT_EQ(rc, 0) << strerror(errno);
  EXPECT_LE(took, kLeaseAndMargin + milliseconds(2500));
  EXPECT_GE(took, milliseconds(1000)) << "mount 1 held no lease: nothing was waited for";
  EXPECT_EQ(StatErr(On(1, "f")), ENOENT);
}

// Each unlink holds its own mount's directory lock while its MDS reply waits
// for the other mount, whose invalidation of the name needs that same lock
// on the other side. The MDS breaks that wait cycle, so neither waits out a
// lease (5.5 s): both finish well inside half of it, and afterwards neither
// mount sees either name.
TEST_F(LeaseTest, TwoMountsUnlinkingFilesTheOtherCachesInOneDirectoryBothFinish) {
  ASSERT_TRUE(WriteFile(On(0, "a"), "a"));
  ASSERT_TRUE(WriteFile(On(1, "b"), "b"));
  for (int m = 0; m < 2; ++m) {
    ASSERT_EQ(StatErr(On(m, "a")), 0);
    ASSERT_EQ(StatErr(On(m, "b")), 0);
  }
  auto start = steady_clock::now();
  int rc_a = -1;
  std::thread t([&] { rc_a = unlink(On(0, "b").c_str()) == 0 ? 0 : errno; });
  int rc_b = unlink(On(1, "a").c_str()) == 0 ? 0 : errno;
  t.join();
  EXPECT_EQ(rc_a, 0);
  EXPECT_EQ(rc_b, 0);
  EXPECT_LT(steady_clock::now() - start, kLeaseAndMargin / 2);
  for (int m = 0; m < 2; ++m) {
    EXPECT_EQ(StatErr(On(m, "a")), ENOENT) << "mount " << m;
    EXPECT_EQ(StatErr(On(m, "b")), ENOENT) << "mount " << m;
  }
}

TEST_F(LeaseTest, ALibsfsClientWithLeasesHearsOfAnotherClientsUnlinkBeforeItReturns) {
  client::Options o;
  o.mds_address = cluster().mds_address();
  o.leases = true;
  auto c = client::Client::Connect(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  std::mutex mu;
  std::vector<client::Invalidation> heard;
  (*c)->WatchInvalidations([&](const client::Invalidation& i) {
    std::lock_guard<std::mutex> l(mu);
    heard.push_back(i);
  });
  ASSERT_TRUE(WriteFile(P("f"), "data"));
  auto dir = client().ResolvePath(kRoot, rel_);
  ASSERT_TRUE(dir.ok());
  client::Attr a;
  ASSERT_TRUE(PollUntil([&] {  // the first lease comes once the watch has polled
    auto r = (*c)->Lookup(kRoot, dir->ino, "f");
    if (r.ok()) a = *r;
    return r.ok() && r->lease_ms > 0;
  }, milliseconds(5000)));
  EXPECT_EQ(a.lease_ms, 5000u);
  ASSERT_TRUE(client().Unlink(kRoot, dir->ino, "f").ok());
  std::lock_guard<std::mutex> l(mu);
  // The lookup leased the file and its directory: the attributes of both,
  // then the name on each lease.
  ASSERT_EQ(heard.size(), 4u);
  EXPECT_EQ(heard[0].ino, a.ino);
  EXPECT_EQ(heard[0].parent, 0u);
  EXPECT_EQ(heard[1].ino, dir->ino);
  EXPECT_EQ(heard[1].parent, 0u);
  EXPECT_EQ(heard[2].ino, a.ino);
  EXPECT_EQ(heard[2].parent, dir->ino);
  EXPECT_EQ(heard[2].name, "f");
  EXPECT_EQ(heard[3].ino, dir->ino);
  EXPECT_EQ(heard[3].parent, dir->ino);
  EXPECT_EQ(heard[3].name, "f");
}

// ---- Directory leases: a directory's attributes and names, absent ones
// included, are cached for the lease; a change of a name in it through
// another mount is revoked first. ----

std::set<std::string> Listing(const std::string& dir) {
  std::set<std::string> names;
  DIR* d = opendir(dir.c_str());
  EXPECT_NE(d, nullptr) << dir << ": " << strerror(errno);
  if (d == nullptr) return names;
  while (dirent* e = readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
      names.insert(e->d_name);
    }
  }
  closedir(d);
  return names;
}

TEST_F(LeaseTest, ANameCreatedOnOneMountIsSeenAtOnceByTheOtherThatFoundItAbsent) {
  ASSERT_EQ(StatErr(On(1, "x")), ENOENT);  // mount 1 caches "x" as absent
  ASSERT_EQ(StatErr(On(1, "x")), ENOENT);
  ASSERT_TRUE(WriteFile(On(0, "x"), "x"));
  EXPECT_EQ(StatErr(On(1, "x")), 0);
  EXPECT_EQ(Listing(On(1, "")), std::set<std::string>{"x"});
  ASSERT_EQ(mkdir(On(0, "d").c_str(), 0755), 0);
  ASSERT_EQ(symlink("x", On(0, "l").c_str()), 0);
  EXPECT_EQ(StatErr(On(1, "d")), 0);
  EXPECT_EQ(StatErr(On(1, "l")), 0);
}

TEST_F(LeaseTest, RemovesAndRenamesOnOneMountAreSeenAtOnceByTheOther) {
  ASSERT_TRUE(WriteFile(On(0, "a"), "a"));
  ASSERT_EQ(mkdir(On(0, "sub").c_str(), 0755), 0);
  ASSERT_EQ(StatErr(On(1, "a")), 0);
  ASSERT_EQ(StatErr(On(1, "b")), ENOENT);
  ASSERT_EQ(StatErr(On(1, "sub")), 0);
  ASSERT_EQ(Listing(On(1, "")), (std::set<std::string>{"a", "sub"}));
  ASSERT_EQ(rename(On(0, "a").c_str(), On(0, "b").c_str()), 0);
  EXPECT_EQ(StatErr(On(1, "a")), ENOENT);
  EXPECT_EQ(StatErr(On(1, "b")), 0);
  ASSERT_EQ(rename(On(0, "sub").c_str(), On(0, "sub2").c_str()), 0);
  EXPECT_EQ(StatErr(On(1, "sub")), ENOENT);
  EXPECT_EQ(StatErr(On(1, "sub2")), 0);
  EXPECT_EQ(Listing(On(1, "")), (std::set<std::string>{"b", "sub2"}));
  ASSERT_EQ(rmdir(On(0, "sub2").c_str()), 0);
  ASSERT_EQ(unlink(On(0, "b").c_str()), 0);
  EXPECT_EQ(StatErr(On(1, "sub2")), ENOENT);
  EXPECT_EQ(StatErr(On(1, "b")), ENOENT);
  EXPECT_EQ(Listing(On(1, "")), std::set<std::string>{});
  ASSERT_EQ(mkdir(On(0, "sub2").c_str(), 0755), 0);  // the same name, a new directory
  EXPECT_EQ(StatErr(On(1, "sub2")), 0);
}

TEST_F(LeaseTest, ADirectorysModeAndMtimeChangedOnOneMountAreSeenAtOnceByTheOther) {
  ASSERT_EQ(mkdir(On(0, "d").c_str(), 0755), 0);
  struct stat before = StatOf(On(1, "d"));  // cached on mount 1
  ASSERT_EQ(before.st_mode & 0777, 0755u);
  ASSERT_EQ(chmod(On(0, "d").c_str(), 0700), 0);
  EXPECT_EQ(StatOf(On(1, "d")).st_mode & 0777, 0700u);
  before = StatOf(On(1, "d"));
  ASSERT_TRUE(WriteFile(On(0, "d/f"), "f"));
  struct stat after = StatOf(On(1, "d"));
  EXPECT_NE(std::make_pair(after.st_mtim.tv_sec, after.st_mtim.tv_nsec),
            std::make_pair(before.st_mtim.tv_sec, before.st_mtim.tv_nsec));
}

// A directory mount 1 made itself is complete there: a lookup of a name it
// does not hold is answered by sfs-mount alone. A name another mount
// creates in it must still be seen at once, in lookups and listings.
TEST_F(LeaseTest, ANameCreatedElsewhereInADirectoryThisMountMadeIsSeenAtOnce) {
  ASSERT_EQ(mkdir(On(1, "mine").c_str(), 0755), 0);
  ASSERT_EQ(StatErr(On(1, "mine/x")), ENOENT);
  ASSERT_TRUE(WriteFile(On(1, "mine/own"), "own"));
  ASSERT_EQ(StatErr(On(1, "mine/own")), 0);
  ASSERT_TRUE(WriteFile(On(0, "mine/x"), "x"));
  EXPECT_EQ(StatErr(On(1, "mine/x")), 0);
  EXPECT_EQ(StatErr(On(1, "mine/y")), ENOENT);
  ASSERT_TRUE(WriteFile(On(0, "mine/y"), "y"));
  EXPECT_EQ(StatErr(On(1, "mine/y")), 0);
  EXPECT_EQ(Listing(On(1, "mine")), (std::set<std::string>{"own", "x", "y"}));
  ASSERT_EQ(unlink(On(0, "mine/own").c_str()), 0);
  EXPECT_EQ(StatErr(On(1, "mine/own")), ENOENT);
}

// A directory mount 1 listed whole under its lease is complete there too.
TEST_F(LeaseTest, NamesChangedElsewhereInADirectoryThisMountListedAreSeenAtOnce) {
  ASSERT_EQ(mkdir(On(0, "d").c_str(), 0755), 0);
  ASSERT_TRUE(WriteFile(On(0, "d/a"), "a"));
  ASSERT_EQ(Listing(On(1, "d")), std::set<std::string>{"a"});
  ASSERT_EQ(StatErr(On(1, "d/x")), ENOENT);
  ASSERT_TRUE(WriteFile(On(0, "d/x"), "x"));
  EXPECT_EQ(StatErr(On(1, "d/x")), 0);
  ASSERT_EQ(Listing(On(1, "d")), (std::set<std::string>{"a", "x"}));
  ASSERT_TRUE(WriteFile(On(1, "d/y"), "y"));
  EXPECT_EQ(StatErr(On(1, "d/y")), 0);
  EXPECT_EQ(StatErr(On(1, "d/z")), ENOENT);
  ASSERT_EQ(unlink(On(0, "d/a").c_str()), 0);
  EXPECT_EQ(StatErr(On(1, "d/a")), ENOENT);
  ASSERT_EQ(rename(On(0, "d/x").c_str(), On(0, "d/z").c_str()), 0);
  EXPECT_EQ(StatErr(On(1, "d/z")), 0);
  EXPECT_EQ(StatErr(On(1, "d/x")), ENOENT);
}

// Mount 1's creates in a directory bring the directory's new attributes,
// which answer the kernel's GETATTRs there: they must be the MDS's (nlink
// after a mkdir, mtime after each change), and give way at once to a change
// through mount 0 or to mount 1's own chmod.
TEST_F(LeaseTest, ADirectorysAttributesFromItsOwnCreatesAreTheMdssAndGiveWayToChanges) {
  ASSERT_EQ(mkdir(On(1, "d").c_str(), 0755), 0);
  ASSERT_TRUE(WriteFile(On(1, "d/a"), "a"));
  ASSERT_EQ(mkdir(On(1, "d/sub").c_str(), 0755), 0);
  struct stat here = StatOf(On(1, "d"));
  struct stat there = StatOf(On(0, "d"));
  EXPECT_EQ(here.st_nlink, 3u);
  EXPECT_EQ(here.st_nlink, there.st_nlink);
  EXPECT_EQ(here.st_mtim.tv_nsec, there.st_mtim.tv_nsec);
  EXPECT_EQ(here.st_mtim.tv_sec, there.st_mtim.tv_sec);
  ASSERT_EQ(unlink(On(1, "d/a").c_str()), 0);
  here = StatOf(On(1, "d"));
  there = StatOf(On(0, "d"));
  EXPECT_EQ(here.st_mtim.tv_nsec, there.st_mtim.tv_nsec);
  ASSERT_EQ(chmod(On(0, "d").c_str(), 0711), 0);
  EXPECT_EQ(StatOf(On(1, "d")).st_mode & 0777, 0711u);
  ASSERT_TRUE(WriteFile(On(1, "d/b"), "b"));
  ASSERT_EQ(chmod(On(1, "d").c_str(), 0750), 0);
  EXPECT_EQ(StatOf(On(1, "d")).st_mode & 0777, 0750u);
  EXPECT_EQ(StatOf(On(0, "d")).st_mode & 0777, 0750u);
  ASSERT_TRUE(WriteFile(On(0, "d/c"), "c"));
  EXPECT_EQ(StatOf(On(1, "d")).st_mtim.tv_nsec, StatOf(On(0, "d")).st_mtim.tv_nsec);
}

// Both mounts hold the directory's lease and create in it at once: each
// create holds its own kernel's directory lock while the MDS waits for the
// other mount, whose invalidation needs that lock. The MDS breaks the cycle,
// so no create waits out a lease; every name is seen on both mounts after.
TEST_F(LeaseTest, TwoMountsCreatingInOneDirectoryNeverWaitOutALease) {
  ASSERT_EQ(Listing(On(0, "")).size(), 0u);
  ASSERT_EQ(StatErr(On(1, "none")), ENOENT);
  constexpr int kFiles = 20;
  steady_clock::duration slowest[2] = {};
  auto run = [&](int m) {
    for (int i = 0; i < kFiles; ++i) {
      auto start = steady_clock::now();
      EXPECT_TRUE(WriteFile(On(m, "m" + std::to_string(m) + "." + std::to_string(i)), "z"));
      slowest[m] = std::max(slowest[m], steady_clock::now() - start);
    }
  };
  std::thread t(run, 0);
  run(1);
  t.join();
  EXPECT_LT(slowest[0], kLeaseAndMargin / 2);
  EXPECT_LT(slowest[1], kLeaseAndMargin / 2);
  for (int m = 0; m < 2; ++m) {
    EXPECT_EQ(Listing(On(m, "")).size(), 2u * kFiles) << "mount " << m;
    for (int i = 0; i < kFiles; ++i) {
      EXPECT_EQ(StatErr(On(m, "m" + std::to_string(1 - m) + "." + std::to_string(i))), 0);
    }
  }
}

class LeaseRestartTest : public ClusterPerTest {};

TEST_F(LeaseRestartTest, AfterAnMdsRestartAChangeOnOneMountIsSeenByTheOther) {
  auto m0 = cluster().Mount();
  auto m1 = cluster().Mount();
  ASSERT_TRUE(m0.ok() && m1.ok());
  ASSERT_TRUE(WriteFile(*m0 + "/f", "data"));
  ASSERT_EQ(StatOf(*m1 + "/f").st_mode & 0777, 0644u);  // cached on mount 1
  ASSERT_TRUE(cluster().KillMds().ok());
  ASSERT_TRUE(cluster().RestartMds().ok());
  ASSERT_EQ(chmod((*m0 + "/f").c_str(), 0600), 0) << strerror(errno);
  EXPECT_EQ(StatOf(*m1 + "/f").st_mode & 0777, 0600u);
  ASSERT_EQ(unlink((*m0 + "/f").c_str()), 0);
  EXPECT_EQ(StatErr(*m1 + "/f"), ENOENT);
}

}  // namespace
}  // namespace sfs::testing
