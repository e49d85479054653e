// Deferred closes (issue 6; mds.proto "Deferred closes") end to end: real
// MDS, OSSes and sfs-mounts. A mount answers the RELEASE of a handle that
// wrote nothing at once and hands the close to the MDS with its next request,
// a flusher after -o close_delay_ms, or at unmount. What must hold: a file
// unlinked while open still loses its objects after its last close; a close
// is never lost (unmount delivers it); and the MDS has it before the mount's
// next request is answered. The MDS's client timeout is set far beyond the
// tests' waits, so only a delivered close can end an open here; the
// "open for write" check of a migration shows whether it did.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "tests/harness/fixture.h"

namespace sfs::testing {
namespace {

using std::chrono::milliseconds;

class CloseTest : public SharedClusterTest<CloseTest> {
 public:
  static ClusterOptions Options() {
    ClusterOptions o;
    o.name = "close";
    o.client_timeout_ms = 600000;
    return o;
  }

 protected:
  // Mounts with options and makes this test's directory there (through the
  // mount, so that the mount holds it complete and answers lookups in it).
  void MountWith(const std::vector<std::string>& options) {
    auto m = cluster().Mount({}, options);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    mnt_ = *m;
    rel_ = "/" + TestName();
    ASSERT_EQ(mkdir((mnt_ + rel_).c_str(), 0755), 0) << strerror(errno);
  }
  std::string P(const std::string& name) const { return mnt_ + rel_ + "/" + name; }
  uint64_t InoOf(const std::string& name) {
    auto a = client().ResolvePath(kRoot, rel_ + "/" + name);
    EXPECT_TRUE(a.ok()) << a.status().ToString();
    return a.ok() ? a->ino : 0;
  }
  std::vector<client::StripeObject> ObjectsOf(const std::string& name) {
    auto l = client().GetLayout(kRoot, InoOf(name));
    EXPECT_TRUE(l.ok()) << l.status().ToString();
    return l.ok() ? l->objects : std::vector<client::StripeObject>{};
  }
  bool AnyObjectExists(const std::vector<client::StripeObject>& objects) {
    for (const auto& o : objects) {
      if (access(cluster().ObjectPath(client(), o.ost, o.oid).c_str(), F_OK) == 0) return true;
    }
    return false;
  }
  // Writes name (closed: a handle that wrote closes at once), then opens it
  // read-only, unlinks it and closes that handle: the close is deferred and
  // is the file's last. Returns its objects, which exist on the OSSes.
  std::vector<client::StripeObject> OrphanClosedByAReader(const std::string& name) {
    EXPECT_TRUE(WriteFile(P(name), std::string(200 * 1024, 'o')));
    std::vector<client::StripeObject> objects = ObjectsOf(name);
    EXPECT_FALSE(objects.empty());
    EXPECT_TRUE(AnyObjectExists(objects));
    int fd = open(P(name).c_str(), O_RDONLY);
    EXPECT_GE(fd, 0) << strerror(errno);
    EXPECT_EQ(unlink(P(name).c_str()), 0) << strerror(errno);
    EXPECT_EQ(close(fd), 0);
    return objects;
  }
  // Opens an existing file for writing and closes it without a write: a
  // deferred close of a write open, which a migration would find busy.
  void OpenForWriteAndClose(const std::string& name) {
    int fd = open(P(name).c_str(), O_WRONLY);
    ASSERT_GE(fd, 0) << strerror(errno);
    ASSERT_EQ(close(fd), 0);
  }
  // A FUSE request the kernel queues after the RELEASEs sent before it, and
  // that sfs-mount answers without the MDS (a lookup in a complete
  // directory): once it returns, sfs-mount has read those RELEASEs.
  void AfterReleasesRead() {
    struct stat st;
    ASSERT_NE(stat(P("absent-" + std::to_string(++barriers_)).c_str(), &st), 0);
  }
  Status MigrateToOneStripe(const std::string& name) {
    client::LayoutSpec spec;
    spec.stripe_count = 1;
    return client().Migrate(kRoot, InoOf(name), spec).status();
  }

  std::string mnt_;
  std::string rel_;
  int barriers_ = 0;
};

TEST_F(CloseTest, AFileUnlinkedWhileOpenLosesItsObjectsAfterItsDeferredLastClose) {
  ASSERT_NO_FATAL_FAILURE(MountWith({}));  // the default delay: the flusher sends the close
  std::vector<client::StripeObject> objects = OrphanClosedByAReader("f");
  EXPECT_TRUE(PollUntil([&] { return !AnyObjectExists(objects); }, milliseconds(20000)))
      << "the orphan's objects are destroyed once its last close reached the MDS";
  EXPECT_EQ(cluster().Unmount(mnt_).code(), 0);
}

TEST_F(CloseTest, AnUnmountDeliversTheClosesItDeferred) {
  ASSERT_NO_FATAL_FAILURE(MountWith({"close_delay_ms=600000"}));  // no flusher in time
  ASSERT_TRUE(WriteFile(P("w"), "data"));
  int fd = open(P("w").c_str(), O_WRONLY);
  ASSERT_GE(fd, 0) << strerror(errno);
  // Both closes come after the last request to the MDS, so only the unmount
  // can deliver them.
  std::vector<client::StripeObject> objects = OrphanClosedByAReader("f");
  ASSERT_EQ(close(fd), 0);
  ASSERT_NO_FATAL_FAILURE(AfterReleasesRead());
  ASSERT_TRUE(cluster().Unmount(mnt_).ok());  // returns once sfs-mount has exited
  Status st = MigrateToOneStripe("w");
  EXPECT_TRUE(st.ok()) << "the write open ended at the unmount: " << st.ToString();
  EXPECT_TRUE(PollUntil([&] { return !AnyObjectExists(objects); }, milliseconds(20000)))
      << "the orphan's last close reached the MDS at the unmount";
}

TEST_F(CloseTest, TheMountsNextMdsRequestCarriesItsDeferredCloses) {
  ASSERT_NO_FATAL_FAILURE(MountWith({"close_delay_ms=600000"}));
  ASSERT_TRUE(WriteFile(P("w"), "data"));
  ASSERT_NO_FATAL_FAILURE(OpenForWriteAndClose("w"));
  ASSERT_NO_FATAL_FAILURE(AfterReleasesRead());
  // A RELEASE being read is not yet its close queued: each try sends one more
  // request through the mount. The keepalive (every 5 s) would carry them too.
  int tries = 0;
  Status st;
  bool done = PollUntil([&] {
    ++tries;
    EXPECT_EQ(mkdir(P("carrier" + std::to_string(tries)).c_str(), 0755), 0) << strerror(errno);
    st = MigrateToOneStripe("w");
    return st.ok();
  }, milliseconds(3000));
  EXPECT_TRUE(done) << "the write open is still counted: " << st.ToString();
  EXPECT_LE(tries, 2) << "the first request or the one after it carried the close";
  EXPECT_EQ(cluster().Unmount(mnt_).code(), 0);
}

TEST_F(CloseTest, WithCloseDelayZeroACloseIsItsOwnRoundTrip) {
  ASSERT_NO_FATAL_FAILURE(MountWith({"close_delay_ms=0"}));
  ASSERT_TRUE(WriteFile(P("w"), "data"));
  ASSERT_NO_FATAL_FAILURE(OpenForWriteAndClose("w"));
  // RELEASE is answered only after the MDS has the close: poll for the reply
  // having come (the kernel sends it after close(2) returned).
  Status st;
  EXPECT_TRUE(PollUntil([&] { return (st = MigrateToOneStripe("w")).ok(); }, milliseconds(3000)))
      << st.ToString();
  EXPECT_EQ(cluster().Unmount(mnt_).code(), 0);
}

}  // namespace
}  // namespace sfs::testing
