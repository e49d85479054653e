// Faults seen through a real sfs-mount: an OSS killed under an open file makes
// I/O to its stripes fail with EIO after the mount's rpc timeout (mounted with
// -o rpc_timeout_ms=1500), never returns wrong data, leaves the other stripes
// and the namespace working, and the mount recovers once the OSS is back.
//
// Reads must reach the OSSes rather than the page cache, so the test drops
// the file's clean pages with posix_fadvise(POSIX_FADV_DONTNEED) before
// each read.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <random>

#include <gtest/gtest.h>

#include "tests/harness/fixture.h"

namespace sfs::testing {
namespace {

constexpr size_t kStripe = 64 * 1024;

class FuseFaultTest : public ClusterPerTest {
 protected:
  ClusterOptions Options() override {
    ClusterOptions o;
    o.name = "fuse-fault";
    o.ost_timeout_ms = 2000;
    return o;
  }

  // What ReadAndCheck returns for a read that came back short: the range lies
  // inside the file, so success is all of it; a short read is what the kernel
  // gives when a later part of the range failed, and is not "recovered".
  static constexpr int kShortRead = -1;

  // Reads [off, off+len) of fd past the page cache; returns 0 iff all len
  // bytes came back, else the errno or kShortRead. Whatever came back must be
  // `want`'s bytes, short or not.
  static int ReadAndCheck(int fd, const std::string& want, size_t off, size_t len) {
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    std::string got(len, '\0');
    ssize_t n = pread(fd, got.data(), len, static_cast<off_t>(off));
    if (n < 0) return errno;
    got.resize(static_cast<size_t>(n));
    EXPECT_TRUE(SameBytes(got, want.substr(off, got.size()))) << "WRONG DATA at " << off;
    if (got.size() == len) return 0;
    std::fprintf(stderr, "short read at %zu: %zd of %zu bytes\n", off, n, len);
    return kShortRead;
  }
};

TEST_F(FuseFaultTest, KilledOssGivesEioThroughTheMountAndTheMountRecoversAfterRestart) {
  auto mnt = cluster().Mount({}, {"rpc_timeout_ms=1500"});
  ASSERT_TRUE(mnt.ok()) << mnt.status().ToString();
  auto c = cluster().Connect();
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(mkdir((*mnt + "/d").c_str(), 0755), 0);
  auto dir = (*c)->ResolvePath(kRoot, "/d");
  ASSERT_TRUE(dir.ok());
  client::LayoutSpec wide{.stripe_size = kStripe, .stripe_count = 4};
  ASSERT_TRUE((*c)->SetLayout(kRoot, dir->ino, wide, false).ok());

  std::mt19937_64 rng(PerTestSeed());
  auto bytes = RandomBytes(rng, 16 * kStripe);
  std::string data(bytes.begin(), bytes.end());
  std::string path = *mnt + "/d/f";
  ASSERT_TRUE(WriteFile(path, data));
  int fd = open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ReadAndCheck(fd, data, 0, data.size()), 0);

  auto attr = (*c)->ResolvePath(kRoot, "/d/f");
  ASSERT_TRUE(attr.ok());
  auto layout = (*c)->GetLayout(kRoot, attr->ino);
  ASSERT_TRUE(layout.ok() && layout->objects.size() == 4u);
  int victim = cluster().OssOfOst(**c, layout->objects[1].ost);
  ASSERT_GE(victim, 0);
  ASSERT_TRUE(cluster().KillOss(victim).ok());

  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(ReadAndCheck(fd, data, kStripe, kStripe), EIO) << "read of the dead OSS's stripe";
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  EXPECT_EQ(ReadAndCheck(fd, data, 0, kStripe), 0) << "stripe 0 lives on another OSS";
  // An O_RDWR handle writes behind (docs/durability.md): the failure comes
  // back from the write itself or, once the background write failed, fsync.
  int werr = ErrnoOf(pwrite(fd, "x", 1, kStripe + 5));
  if (werr == 0) werr = ErrnoOf(fsync(fd));
  EXPECT_EQ(werr, EIO) << "write to the dead stripe";
  struct stat st {};
  EXPECT_EQ(stat(path.c_str(), &st), 0) << "metadata does not need the OSS";

  ASSERT_TRUE(cluster().RestartOss(victim).ok());
  EXPECT_TRUE(PollUntil([&] { return ReadAndCheck(fd, data, 0, data.size()) == 0; },
                        std::chrono::seconds(30)))
      << "the mount did not recover after the OSS came back";
  ASSERT_EQ(pwrite(fd, "y", 1, kStripe + 5), 1) << strerror(errno);
  data[kStripe + 5] = 'y';
  EXPECT_EQ(ReadAndCheck(fd, data, 0, data.size()), 0);
  close(fd);
}

}  // namespace
}  // namespace sfs::testing
