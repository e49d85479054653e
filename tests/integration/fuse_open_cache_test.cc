// The open cache (client/lib/open_cache.h) through real mounts: a read-only
// open kept past its close is taken over by the next open of the file within
// its lease, and the MDS's request counters show that no open reached it.
// What must hold besides: a change made through another mount (which revokes
// the lease) or through the same mount (which revokes nothing for its own
// requester) ends the kept opens, so the next open sees the change; and a
// file unlinked elsewhere still loses its objects once no one uses it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "common/metrics/http_server.h"
#include "tests/harness/fixture.h"
#include "tests/integration/exposition.h"

namespace sfs::testing {
namespace {

using std::chrono::milliseconds;

class OpenCacheMountTest : public SharedClusterTest<OpenCacheMountTest> {
 public:
  static ClusterOptions Options() {
    ClusterOptions o;
    o.name = "opencache";
    o.metrics = true;  // sfs_mds_requests_total{op="open"|"create"}
    return o;
  }
  // Two mounts; mount 0 serves its metrics, whose release counter tells
  // when it has answered a close's RELEASE (which the kernel sends after
  // close(2) has returned).
  static void SetUpTestSuite() {
    SharedClusterTest::SetUpTestSuite();
    for (int i = 0; start_.ok() && i < 2; ++i) {
      auto m = i == 0 ? cluster_->Mount({}, {"metrics_listen=127.0.0.1:0"}) : cluster_->Mount();
      if (!m.ok()) {
        start_ = m.status();
        return;
      }
      mounts_.push_back(*m);
    }
    mount_metrics_ = MetricsAddressInLog(cluster_->root() + "/logs/mount0.log");
    if (mount_metrics_.empty()) start_ = Status(EIO, "no METRICS line in mount 0's log");
  }

 protected:
  void SetUp() override {
    SharedClusterTest::SetUp();
    if (HasFatalFailure()) return;
    rel_ = "/" + TestName();
    ASSERT_EQ(mkdir((mount(0) + rel_).c_str(), 0755), 0) << strerror(errno);
  }
  std::string On(int i, const std::string& name) const { return mount(i) + rel_ + "/" + name; }
  static double Scrape(const std::string& address, const std::string& series) {
    Result<std::string> m = metrics::HttpGet(address, "/metrics");
    EXPECT_TRUE(m.ok()) << address << ": " << m.status().ToString();
    return m.ok() ? Sample(*m, series) : 0;
  }
  // Opens that reached the MDS: OpenReqs, and CreateReqs (the kernel sends
  // an O_CREAT open of a name it has not cached as a create).
  uint64_t MdsOpens() {
    const std::string& mds = cluster().mds_metrics_address();
    return static_cast<uint64_t>(Scrape(mds, "sfs_mds_requests_total{op=\"open\"}") +
                                 Scrape(mds, "sfs_mds_requests_total{op=\"create\"}"));
  }
  double Releases() { return Scrape(mount_metrics_, "sfs_fuse_requests_total{op=\"release\"}"); }
  // The file through mount i: open, read all, close; through mount 0, also
  // waits until the mount has answered the close's RELEASE (kept the open).
  std::string Read(int i, const std::string& name) {
    const double released = i == 0 ? Releases() : 0;
    std::string out;
    EXPECT_TRUE(ReadFile(On(i, name), &out)) << name << ": " << strerror(errno);
    if (i == 0) {
      EXPECT_TRUE(PollUntil([&] { return Releases() > released; }, milliseconds(10000)));
    }
    return out;
  }
  uint64_t InoOf(const std::string& name) {
    auto a = client().ResolvePath(kRoot, rel_ + "/" + name);
    EXPECT_TRUE(a.ok()) << a.status().ToString();
    return a.ok() ? a->ino : 0;
  }
  bool AnyObjectExists(const std::vector<client::StripeObject>& objects) {
    for (const auto& o : objects) {
      if (access(cluster().ObjectPath(client(), o.ost, o.oid).c_str(), F_OK) == 0) return true;
    }
    return false;
  }

  std::string rel_;
  static inline std::string mount_metrics_;
};

TEST_F(OpenCacheMountTest, OpeningAFileAgainWithinItsLeaseAsksTheMdsNothing) {
  const std::string data(300 * 1024, 'a');
  ASSERT_TRUE(WriteFile(On(1, "f"), data));
  const uint64_t before = MdsOpens();
  ASSERT_EQ(Read(0, "f"), data);
  const uint64_t first = MdsOpens();
  EXPECT_EQ(first, before + 1) << "the first open asks the MDS";
  for (int i = 0; i < 5; ++i) ASSERT_EQ(Read(0, "f"), data) << i;
  EXPECT_EQ(MdsOpens(), first) << "each later open took over the open the last close kept";
}

TEST_F(OpenCacheMountTest, AnotherMountsRewriteIsReadAtTheNextOpen) {
  ASSERT_TRUE(WriteFile(On(1, "f"), std::string(200 * 1024, 'a')));
  ASSERT_EQ(Read(0, "f"), std::string(200 * 1024, 'a'));  // mount 0 keeps its open
  // Same size: only the revoked lease (the writer's close reports its size
  // and mtime) can tell mount 0 that its kept open is out of date.
  const std::string rewritten(200 * 1024, 'b');
  ASSERT_TRUE(WriteFile(On(1, "f"), rewritten));
  const uint64_t before = MdsOpens();
  EXPECT_EQ(Read(0, "f"), rewritten);
  EXPECT_EQ(MdsOpens(), before + 1) << "the kept open ended with the lease: a new open";
}

TEST_F(OpenCacheMountTest, ThisMountsOwnChangeEndsItsKeptOpens) {
  ASSERT_TRUE(WriteFile(On(0, "f"), "first"));
  ASSERT_EQ(Read(0, "f"), "first");
  // A change the MDS refuses changes nothing: an rmdir of a directory that
  // is not empty (the kernel sends it; it cannot know).
  ASSERT_EQ(mkdir(On(0, "d").c_str(), 0755), 0) << strerror(errno);
  ASSERT_TRUE(WriteFile(On(0, "d/x"), "x"));
  ASSERT_EQ(Read(0, "f"), "first");  // kept again after those changes
  uint64_t before = MdsOpens();
  ASSERT_NE(rmdir(On(0, "d").c_str()), 0);
  ASSERT_EQ(errno, ENOTEMPTY);
  ASSERT_EQ(Read(0, "f"), "first");
  EXPECT_EQ(MdsOpens(), before) << "the refused rmdir left the kept open";
  // A change of this mount's own: the MDS revokes none of its leases.
  ASSERT_EQ(chmod(On(0, "f").c_str(), 0600), 0) << strerror(errno);
  before = MdsOpens();
  ASSERT_EQ(Read(0, "f"), "first");
  EXPECT_EQ(MdsOpens(), before + 1) << "the chmod ended the kept open";
  // This mount's own rewrite (a write open, then a close that reports a size).
  before = MdsOpens();
  ASSERT_TRUE(WriteFile(On(0, "f"), "second"));
  EXPECT_EQ(Read(0, "f"), "second");
  EXPECT_EQ(MdsOpens(), before + 2) << "the write open, then a new read open";
}

TEST_F(OpenCacheMountTest, AFileUnlinkedThroughAnotherMountLosesItsObjects) {
  ASSERT_TRUE(WriteFile(On(1, "f"), std::string(200 * 1024, 'o')));
  auto l = client().GetLayout(kRoot, InoOf("f"));
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  const std::vector<client::StripeObject> objects = l->objects;
  ASSERT_FALSE(objects.empty());
  ASSERT_EQ(Read(0, "f").size(), 200u * 1024);  // mount 0 keeps its open
  ASSERT_EQ(unlink(On(1, "f").c_str()), 0) << strerror(errno);
  // The unlink revoked mount 0's lease; the kept open became a deferred
  // close, sent within close_delay_ms. The cluster's client timeout is far
  // longer than this wait, so only that close can end the open.
  EXPECT_TRUE(PollUntil([&] { return !AnyObjectExists(objects); }, milliseconds(4000)))
      << "the objects of a file no one uses any more are destroyed";
}

TEST_F(OpenCacheMountTest, AWriterOpeningTheFileElsewhereEndsTheKeptOpen) {
  ASSERT_TRUE(WriteFile(On(1, "f"), "abc"));
  ASSERT_EQ(Read(0, "f"), "abc");  // mount 0 keeps its open, which says no writer is there
  // Mount 1 opens it for writing and keeps it open: nothing changes at the
  // MDS that a lease covers, yet a reader's open must now see the writer
  // (OpenResp.write_opens), so the MDS revokes mount 0's lease.
  int fd = ::open(On(1, "f").c_str(), O_WRONLY);
  ASSERT_GE(fd, 0) << strerror(errno);
  const uint64_t before = MdsOpens();
  EXPECT_EQ(Read(0, "f"), "abc");
  EXPECT_EQ(MdsOpens(), before + 1) << "the kept open ended when the writer came";
  ASSERT_EQ(pwrite(fd, "x", 1, 0), 1);
  ASSERT_EQ(close(fd), 0);
  EXPECT_EQ(Read(0, "f"), "xbc");
}

TEST_F(OpenCacheMountTest, ReadAndWriteOpensOfTheSameFileDoNotShareAKeptOpen) {
  ASSERT_TRUE(WriteFile(On(0, "f"), "abc"));
  ASSERT_EQ(Read(0, "f"), "abc");  // kept
  const uint64_t before = MdsOpens();
  int fd = ::open(On(0, "f").c_str(), O_RDWR);
  ASSERT_GE(fd, 0) << strerror(errno);
  ASSERT_EQ(pwrite(fd, "x", 1, 0), 1);
  ASSERT_EQ(close(fd), 0);
  EXPECT_EQ(MdsOpens(), before + 1) << "a write open is always the MDS's";
  EXPECT_EQ(Read(0, "f"), "xbc");
}

}  // namespace
}  // namespace sfs::testing
