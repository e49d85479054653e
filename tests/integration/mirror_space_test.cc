// fallocate(2) and punch-hole of mirrored files (docs/redundancy.md,
// "Concurrent writers") through real daemons and FUSE mounts: they go to
// every good copy under the same cluster-wide range lock as writes, so
// punches, zero ranges and allocations racing with overlapping writes of a
// second mount leave the copies byte-for-byte equal on the OSSes' disks
// (and `sfs scrub` clean); with one copy's OSS SIGKILLed they succeed, mark
// that copy stale (sfs getstripe says so) and, once the OSS is back and the
// MDS has resynced it, the copies are equal again.
#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "tests/harness/fixture.h"
#include "tests/harness/subprocess.h"
#include "tests/integration/hold_proxy.h"
#include "oss.pb.h"

namespace sfs::testing {
namespace {

constexpr size_t kStripe = 64 << 10;

struct SfsRun {
  int exit = -1;
  std::string out;  // stdout and stderr
};

class MirrorSpaceTest : public ClusterPerTest {
 protected:
  ClusterOptions Options() override {
    ClusterOptions o;
    o.name = "mirror-space";
    o.num_oss = 3;
    o.cluster_key = true;
    o.ost_timeout_ms = 2000;
    return o;
  }

  void SetUp() override {
    ClusterPerTest::SetUp();
    auto mnt = cluster().Mount({}, {"rpc_timeout_ms=3000"});
    ASSERT_TRUE(mnt.ok()) << mnt.status().ToString();
    mnt_ = *mnt;
    auto c = cluster().Connect();
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    client_ = std::move(*c);
  }

  SfsRun Sfs(const std::vector<std::string>& args) {
    static int n = 0;
    std::string log = cluster().root() + "/logs/sfs-space-" + std::to_string(++n) + ".log";
    std::vector<std::string> argv{SfsBinary()};
    argv.insert(argv.end(), args.begin(), args.end());
    SfsRun r;
    Result<int> st = RunCommand(argv, log, std::chrono::seconds(60));
    if (st.ok() && WIFEXITED(*st)) r.exit = WEXITSTATUS(*st);
    ReadFile(log, &r.out);
    return r;
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

  // A mirror-2 directory of one stripe per copy.
  void MakeMirrorDir(const std::string& d) {
    ASSERT_EQ(mkdir((mnt_ + d).c_str(), 0755), 0);
    SfsRun set = Sfs({"setstripe", "-N", "2", "-c", "1", mnt_ + d});
    ASSERT_EQ(set.exit, 0) << set.out;
  }

  // The bytes of copy c of a one-stripe mirrored file, from its OSS's disk.
  std::string CopyOnDisk(const client::LayoutSpec& l, int c) {
    const std::string obj = cluster().ObjectPath(*client_, l.objects[c].ost, l.objects[c].oid);
    EXPECT_FALSE(obj.empty());
    std::string bytes;
    EXPECT_TRUE(ReadFile(obj, &bytes)) << obj;
    return bytes;
  }

  // Both copies of the one-stripe mirrored file rel hold exactly `want`.
  void ExpectCopiesHold(const std::string& rel, const std::string& want) {
    client::LayoutSpec l = LayoutOf(rel);
    ASSERT_EQ(l.objects.size(), 2u);
    EXPECT_EQ(StaleCount(l), 0u);
    const std::string a = CopyOnDisk(l, 0), b = CopyOnDisk(l, 1);
    EXPECT_TRUE(SameBytes(a, b)) << "the copies differ";
    EXPECT_TRUE(SameBytes(a, want)) << "copy 0 does not hold the file";
  }

  std::string Data(size_t size, int salt = 0) {
    std::mt19937_64 rng(PerTestSeed() + salt);
    auto bytes = RandomBytes(rng, size);
    return std::string(bytes.begin(), bytes.end());
  }

  std::string mnt_;
  std::unique_ptr<client::Client> client_;
};

// One mount punches holes, zeroes ranges and allocates over a span a second
// mount keeps writing (for as long as it writes), every call colliding with
// the other's: the copies end up equal byte for byte (each got both mounts'
// calls in one order).
TEST_F(MirrorSpaceTest, PunchAndFallocateRacingWithWritesOfAnotherMountLeaveTheCopiesEqual) {
  MakeMirrorDir("/m");
  constexpr size_t kSpan = 2 << 20;  // every call falls in here: they collide
  ASSERT_TRUE(WriteFile(mnt_ + "/m/f", Data(kSpan)));
  auto second = cluster().Mount({}, {"rpc_timeout_ms=3000"});
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  constexpr int kWrites = 200;
  std::atomic<bool> writing{true};
  int space_calls = 0, failed_space = 0, failed_writes = 0;
  auto spacer = [&] {
    int fd = open((mnt_ + "/m/f").c_str(), O_RDWR);
    ASSERT_GE(fd, 0) << strerror(errno);
    const int modes[] = {FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, FALLOC_FL_ZERO_RANGE,
                         FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, FALLOC_FL_KEEP_SIZE, 0};
    std::mt19937_64 rng(PerTestSeed() + 1);
    while (writing.load()) {
      const off_t off = static_cast<off_t>(rng() % (kSpan - 1));
      const off_t len = static_cast<off_t>(1 + rng() % std::min<size_t>(1 << 20, kSpan - off));
      failed_space += fallocate(fd, modes[space_calls++ % 5], off, len) != 0;
    }
    EXPECT_EQ(fsync(fd), 0);
    close(fd);
  };
  auto writer = [&] {
    int fd = open((*second + "/m/f").c_str(), O_RDWR);  // written through
    ASSERT_GE(fd, 0) << strerror(errno);
    const std::string mine(kSpan, 'w');
    std::mt19937_64 rng(PerTestSeed() + 2);
    for (int i = 0; i < kWrites; ++i) {
      const size_t off = rng() % (kSpan - 1);
      const size_t len = 1 + rng() % std::min<size_t>(1 << 20, kSpan - off);
      failed_writes += pwrite(fd, mine.data(), len, static_cast<off_t>(off)) !=
                       static_cast<ssize_t>(len);
    }
    EXPECT_EQ(fsync(fd), 0);
    close(fd);
  };
  std::thread a(spacer);
  std::thread b([&] {
    writer();
    writing.store(false);
  });
  a.join();
  b.join();
  EXPECT_GT(space_calls, kWrites / 4) << "too few fallocate calls to race with the writes";
  EXPECT_EQ(failed_space, 0) << "fallocate calls failed";
  EXPECT_EQ(failed_writes, 0) << "writes failed";
  client::LayoutSpec l = LayoutOf("/m/f");
  ASSERT_EQ(l.objects.size(), 2u);
  EXPECT_EQ(StaleCount(l), 0u);
  const std::string c0 = CopyOnDisk(l, 0), c1 = CopyOnDisk(l, 1);
  ASSERT_EQ(c0.size(), kSpan);
  ASSERT_EQ(c1.size(), kSpan);
  size_t differ = 0;
  for (size_t i = 0; i < kSpan; ++i) differ += c0[i] != c1[i];
  EXPECT_EQ(differ, 0u) << "the copies differ in " << differ << " bytes";
  // Both kinds of call really landed: some written bytes and some zeroed.
  EXPECT_NE(c0.find('w'), std::string::npos);
  EXPECT_NE(c0.find(std::string(64, '\0')), std::string::npos);
  SfsRun scrub = Sfs({"scrub", "-v", mnt_ + "/m"});
  EXPECT_EQ(scrub.exit, 0) << scrub.out;
  EXPECT_NE(scrub.out.find("0 bad object(s), 0 mismatch(es)"), std::string::npos) << scrub.out;
}

// With copy 1's OSS SIGKILLed, a punch and a size-extending fallocate both
// succeed and mark that copy stale; once the OSS is back the MDS resyncs it
// (the file closed) and both copies hold the punched, extended file.
TEST_F(MirrorSpaceTest, PunchAndFallocateWithACopysOssDownMarkItStaleAndResyncHealsIt) {
  MakeMirrorDir("/d");
  const std::string path = mnt_ + "/d/f";
  std::string want = Data(8 * kStripe);
  ASSERT_TRUE(WriteFile(path, want));
  client::LayoutSpec l = LayoutOf("/d/f");
  ASSERT_EQ(l.objects.size(), 2u);
  const int down = cluster().OssOfOst(*client_, l.objects[1].ost);
  ASSERT_GE(down, 0);
  ASSERT_NE(down, cluster().OssOfOst(*client_, l.objects[0].ost));
  int fd = open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0) << strerror(errno);
  ASSERT_TRUE(cluster().KillOss(down).ok());

  ASSERT_EQ(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, kStripe + 5, 2 * kStripe), 0)
      << strerror(errno);
  std::memset(want.data() + kStripe + 5, 0, 2 * kStripe);
  EXPECT_TRUE(LayoutOf("/d/f").objects[1].stale) << "the punch's missed copy is not stale";
  ASSERT_EQ(fallocate(fd, 0, 6 * kStripe, 4 * kStripe), 0) << strerror(errno);
  want.resize(10 * kStripe, '\0');
  ASSERT_EQ(fallocate(fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, 7, 100), 0)
      << strerror(errno);
  std::memset(want.data() + 7, 0, 100);
  struct stat st {};
  ASSERT_EQ(fstat(fd, &st), 0);
  EXPECT_EQ(static_cast<size_t>(st.st_size), want.size());
  ASSERT_EQ(fsync(fd), 0) << strerror(errno);
  ASSERT_EQ(close(fd), 0);
  client::LayoutSpec after = LayoutOf("/d/f");
  EXPECT_FALSE(after.objects[0].stale);
  EXPECT_TRUE(after.objects[1].stale);
  SfsRun get = Sfs({"getstripe", path});
  EXPECT_EQ(get.exit, 0) << get.out;
  EXPECT_NE(get.out.find("stale"), std::string::npos) << get.out;

  ASSERT_TRUE(cluster().RestartOss(down).ok());
  ASSERT_TRUE(cluster().WaitForOstsUp(3).ok());
  EXPECT_TRUE(
      PollUntil([&] { return StaleCount(LayoutOf("/d/f")) == 0; }, std::chrono::seconds(30)))
      << "the MDS did not resync the copy the fallocate calls missed";
  ExpectCopiesHold("/d/f", want);
  SfsRun scrub = Sfs({"scrub", "-v", mnt_ + "/d"});
  EXPECT_EQ(scrub.exit, 0) << scrub.out;
  EXPECT_NE(scrub.out.find("0 bad object(s), 0 mismatch(es)"), std::string::npos) << scrub.out;
}

// The copy on OSS 1 behind a HoldProxy (hold_proxy.h): its calls can be held
// and let go in an order of the test's choosing.
class MirrorSpaceHeldTest : public MirrorSpaceTest {
 protected:
  ClusterOptions Options() override {
    EXPECT_TRUE(proxy_.Start().ok());
    ClusterOptions o = MirrorSpaceTest::Options();
    o.name = "mirror-space-held";
    o.num_oss = 2;
    o.oss_args_of[1] = {"--advertise", "127.0.0.1:" + std::to_string(proxy_.port())};
    return o;
  }

  void SetUp() override {
    MirrorSpaceTest::SetUp();
    if (HasFatalFailure()) return;
    proxy_.SetUpstream(cluster().oss_address(1));
  }

  static bool IsFallocate(const std::string& payload) {
    proto::OssRequest req;
    return req.ParseFromString(payload) && req.has_fallocate();
  }

  HoldProxy proxy_;
};

// A write of a second mount has reached one copy and is held on its way to
// the other when this mount punches the same range. Without the range lock
// the punch reaches both copies at once, and the held copy is made to take
// it before the write: the copies would differ (zeros on one, the write on
// the other). With the lock the punch waits for the write on both copies.
TEST_F(MirrorSpaceHeldTest, APunchNeverOvertakesAWriteOnOneCopyOnly) {
  MakeMirrorDir("/h");
  constexpr size_t kLen = 8192;
  ASSERT_TRUE(WriteFile(mnt_ + "/h/f", std::string(kLen, 'i')));
  client::LayoutSpec l = LayoutOf("/h/f");
  ASSERT_EQ(l.objects.size(), 2u);
  const int free_copy = cluster().OssOfOst(*client_, l.objects[0].ost) == 0 ? 0 : 1;
  auto second = cluster().Mount({}, {"rpc_timeout_ms=10000"});  // its write is held a while
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  const int wfd = open((*second + "/h/f").c_str(), O_RDWR);  // written through
  const int pfd = open((mnt_ + "/h/f").c_str(), O_RDWR);
  ASSERT_GE(wfd, 0) << strerror(errno);
  ASSERT_GE(pfd, 0) << strerror(errno);
  proxy_.Hold();
  const std::string w(kLen, 'w');
  ssize_t wrote = -1;
  std::thread writer([&] { wrote = pwrite(wfd, w.data(), kLen, 0); });
  EXPECT_TRUE(PollUntil([&] { return CopyOnDisk(l, free_copy).substr(0, kLen) == w; },
                        std::chrono::seconds(10)))
      << "the write did not reach the copy whose OSS is not held";
  ASSERT_TRUE(proxy_.WaitKept(1, std::chrono::seconds(10)).ok()) << "the write was not held";
  int punched = -1;
  std::thread puncher([&] {
    punched = fallocate(pfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, kLen);
  });
  // Unlocked, the punch would be held too within a moment; locked it waits
  // for the write, so this deadline passing is the locked outcome.
  if (proxy_.WaitKept(2, std::chrono::seconds(1)).ok()) {
    auto first = proxy_.Release(std::chrono::seconds(10), IsFallocate);
    ASSERT_TRUE(first.ok()) << first.status().ToString();
  }
  auto rest = proxy_.Release(std::chrono::seconds(10));
  ASSERT_TRUE(rest.ok()) << rest.status().ToString();
  writer.join();
  puncher.join();
  EXPECT_EQ(wrote, static_cast<ssize_t>(kLen)) << strerror(errno);
  EXPECT_EQ(punched, 0) << strerror(errno);
  close(wfd);
  close(pfd);
  ExpectCopiesHold("/h/f", std::string(kLen, '\0'));  // the write, then the punch, on both
}

}  // namespace
}  // namespace sfs::testing
