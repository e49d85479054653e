// Cached mirror-range locks (mds/lock/lock_table.h "Cached locks",
// docs/redundancy.md "Concurrent writers") through real daemons and two
// FUSE mounts: a lone writer of a mirrored file takes the lock once and
// keeps it (its later writes ask the MDS for no lock); a second mount's
// write of the same file recalls it and goes on (no wait for a timeout),
// the mounts' writes interleave with the copies equal byte for byte on the
// OSSes' disks; and a resync of a closed file recalls the lock its last
// writer kept, so that writer writes the resynced copy from then on; and
// queued writes to the same copies go out in batches, not one call each.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "common/metrics/http_server.h"
#include "tests/harness/fixture.h"
#include "tests/harness/subprocess.h"
#include "tests/integration/exposition.h"
#include "tests/integration/oss_metrics.h"

namespace sfs::testing {
namespace {

constexpr size_t kWrite = 47008;  // IOR's strided-write size in docs/benchmarks.md

class MirrorLockCacheTest : public ClusterPerTest {
 protected:
  ClusterOptions Options() override {
    ClusterOptions o;
    o.name = "mirror-lock-cache";
    o.num_oss = 3;
    o.ost_timeout_ms = 2000;
    o.metrics = true;  // sfs_mds_requests_total{op="lock"}
    return o;
  }

  void SetUp() override {
    ClusterPerTest::SetUp();
    for (int i = 0; i < 2; ++i) {
      auto mnt = cluster().Mount({}, {"rpc_timeout_ms=3000"});
      ASSERT_TRUE(mnt.ok()) << mnt.status().ToString();
      mnt_[i] = *mnt;
    }
    auto c = cluster().Connect();
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    client_ = std::move(*c);
    ASSERT_EQ(mkdir((mnt_[0] + "/d").c_str(), 0755), 0);
    std::string log = cluster().root() + "/logs/sfs-setstripe.log";
    Result<int> st = RunCommand({SfsBinary(), "setstripe", "-N", "2", "-c", "1", mnt_[0] + "/d"},
                                log, std::chrono::seconds(60));
    ASSERT_TRUE(st.ok() && WIFEXITED(*st) && WEXITSTATUS(*st) == 0);
  }

  uint64_t LockRequests() { return static_cast<uint64_t>(MdsRequests(cluster(), "lock")); }

  // Write calls (write and write_v requests) the OSSes have served.
  uint64_t OssWriteCalls() {
    return static_cast<uint64_t>(OssSum(cluster(), "sfs_oss_requests_total{op=\"write\"}") +
                                 OssSum(cluster(), "sfs_oss_requests_total{op=\"write_v\"}"));
  }

  client::LayoutSpec LayoutOf(const std::string& rel) {
    auto attr = client_->ResolvePath(kRoot, rel);
    EXPECT_TRUE(attr.ok()) << rel;
    if (!attr.ok()) return {};
    auto l = client_->GetLayout(kRoot, attr->ino);
    EXPECT_TRUE(l.ok()) << l.status().ToString();
    return l.ok() ? *l : client::LayoutSpec{};
  }

  static size_t StaleCount(const client::LayoutSpec& l) {
    size_t n = 0;
    for (const auto& o : l.objects) n += o.stale ? 1 : 0;
    return n;
  }

  // Both copies of the one-stripe mirrored file rel hold exactly `want`, on
  // their OSSes' disks.
  void ExpectCopiesHold(const std::string& rel, const std::string& want) {
    client::LayoutSpec l = LayoutOf(rel);
    ASSERT_EQ(l.objects.size(), 2u);
    EXPECT_EQ(StaleCount(l), 0u);
    std::string copy[2];
    for (int c = 0; c < 2; ++c) {
      const std::string obj = cluster().ObjectPath(*client_, l.objects[c].ost, l.objects[c].oid);
      ASSERT_FALSE(obj.empty());
      ASSERT_TRUE(ReadFile(obj, &copy[c])) << obj;
    }
    EXPECT_TRUE(SameBytes(copy[0], copy[1])) << "the copies differ";
    EXPECT_TRUE(SameBytes(copy[0], want)) << "copy 0 does not hold the file";
  }

  // pwrite + fsync of want[off, off + len) through fd.
  static void WriteSynced(int fd, const std::string& want, size_t off, size_t len) {
    ASSERT_EQ(pwrite(fd, want.data() + off, len, static_cast<off_t>(off)),
              static_cast<ssize_t>(len))
        << strerror(errno);
    ASSERT_EQ(fsync(fd), 0) << strerror(errno);
  }

  std::string Data(size_t size, int salt) {
    std::mt19937_64 rng(PerTestSeed() + salt);
    auto bytes = RandomBytes(rng, size);
    return std::string(bytes.begin(), bytes.end());
  }

  std::string mnt_[2];
  std::unique_ptr<client::Client> client_;
};

TEST_F(MirrorLockCacheTest, ALoneWriterKeepsTheLockAndASecondMountRecallsIt) {
  constexpr int kWrites = 40;
  const std::string a = Data(2 * kWrites * kWrite, 1), b = Data(2 * kWrites * kWrite, 2);
  std::string want(2 * kWrites * kWrite, '\0');
  const std::string rel = "/d/f";
  int fd0 = open((mnt_[0] + rel).c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(fd0, 0) << strerror(errno);
  // Mount 0 alone: strided writes, each synced (each its own flush and, with
  // a lock per write, two lock calls). The lock is taken once.
  const uint64_t before = LockRequests();
  for (int i = 0; i < kWrites; ++i) {
    const size_t off = 2 * i * kWrite;
    want.replace(off, kWrite, a, off, kWrite);
    WriteSynced(fd0, want, off, kWrite);
  }
  EXPECT_LE(LockRequests() - before, 2u) << "a lone writer asked for a lock per write";

  // Mount 1 writes the gaps: each of its writes must get the lock mount 0
  // keeps, recalled (a lock nobody gives back would hold it until mount 0
  // expired as a client, far past the mount's RPC timeout).
  int fd1 = open((mnt_[1] + rel).c_str(), O_RDWR);
  ASSERT_GE(fd1, 0) << strerror(errno);
  for (int i = 0; i < kWrites; ++i) {
    const size_t off = (2 * i + 1) * kWrite;
    want.replace(off, kWrite, b, off, kWrite);
    WriteSynced(fd1, want, off, kWrite);
  }
  // Then both over the same bytes in turn: the lock goes back and forth.
  for (int i = 0; i < 10; ++i) {
    const size_t off = i * 3 * kWrite / 2;
    const std::string& src = i % 2 == 0 ? a : b;
    want.replace(off, 2 * kWrite, src, off + 7, 2 * kWrite);
    WriteSynced(i % 2 == 0 ? fd0 : fd1, want, off, 2 * kWrite);
  }
  ASSERT_EQ(close(fd0), 0);
  ASSERT_EQ(close(fd1), 0);
  ExpectCopiesHold(rel, want);
}

TEST_F(MirrorLockCacheTest, AResyncRecallsTheLockAClosedFilesWriterKept) {
  const std::string rel = "/d/g";
  std::string want = Data(20 * kWrite, 3);
  ASSERT_TRUE(WriteFile(mnt_[0] + rel, want));  // mount 0 keeps the lock
  client::LayoutSpec l = LayoutOf(rel);
  ASSERT_EQ(l.objects.size(), 2u);
  const int oss0 = cluster().OssOfOst(*client_, l.objects[0].ost);
  ASSERT_GE(oss0, 0);
  // Copy 0's OSS away: mount 0's next write marks it stale (and mount 0
  // remembers so), then the file is closed.
  ASSERT_TRUE(cluster().KillOss(oss0).ok());
  const std::string more = Data(4 * kWrite, 4);
  want.replace(kWrite, more.size(), more);
  {
    int fd = open((mnt_[0] + rel).c_str(), O_WRONLY);
    ASSERT_GE(fd, 0) << strerror(errno);
    WriteSynced(fd, want, kWrite, more.size());
    ASSERT_EQ(close(fd), 0);
  }
  EXPECT_EQ(StaleCount(LayoutOf(rel)), 1u);
  // Back: the resync takes the file's lock, so mount 0 gives it back.
  ASSERT_TRUE(cluster().RestartOss(oss0).ok());
  ASSERT_TRUE(cluster().WaitForOstsUp(3).ok());
  ASSERT_TRUE(PollUntil([&] { return StaleCount(LayoutOf(rel)) == 0; }, std::chrono::seconds(30)))
      << "the MDS did not resync the stale copy";
  // Mount 0 writes again: under a new grant, whose copy generation tells it
  // copy 0 is good, so both copies get the write.
  const std::string last = Data(3 * kWrite, 5);
  want.replace(10 * kWrite, last.size(), last);
  {
    int fd = open((mnt_[0] + rel).c_str(), O_WRONLY);
    ASSERT_GE(fd, 0) << strerror(errno);
    WriteSynced(fd, want, 10 * kWrite, last.size());
    ASSERT_EQ(close(fd), 0);
  }
  ExpectCopiesHold(rel, want);
}

TEST_F(MirrorLockCacheTest, StridedWritesOfAMirroredFileGoOutInBatches) {
  // IOR's strided pattern from one process: writes with holes between
  // (write-behind gathers none), each acknowledged when queued. Queued
  // writes to the same copies' OSTs go out as one batch, a write_v per
  // OSS, as they do for a plain file: far fewer calls than one per copy
  // per write (each write alone cost 2 calls, and the OSSes' CPU with it).
  constexpr int kWrites = 96;
  const std::string rel = "/d/s";
  std::string want(2 * kWrites * kWrite, '\0');
  const std::string data = Data(kWrites * kWrite, 6);
  int fd = open((mnt_[0] + rel).c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(fd, 0) << strerror(errno);
  const uint64_t before = OssWriteCalls();
  for (int i = 0; i < kWrites; ++i) {
    const size_t off = size_t{2} * i * kWrite;
    want.replace(off, kWrite, data, size_t{i} * kWrite, kWrite);
    ASSERT_EQ(pwrite(fd, data.data() + size_t{i} * kWrite, kWrite, static_cast<off_t>(off)),
              static_cast<ssize_t>(kWrite))
        << strerror(errno);
  }
  ASSERT_EQ(fsync(fd), 0) << strerror(errno);
  const uint64_t calls = OssWriteCalls() - before;
  EXPECT_LT(calls, uint64_t{kWrites}) << "one write call per copy would be " << 2 * kWrites;
  EXPECT_GE(calls, 2u) << "both copies are written";
  ASSERT_EQ(close(fd), 0);
  want.resize((2 * kWrites - 1) * kWrite);  // the file ends with the last write
  ExpectCopiesHold(rel, want);
}

}  // namespace
}  // namespace sfs::testing
