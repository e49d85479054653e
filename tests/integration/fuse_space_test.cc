// The last POSIX gaps (issue 15), through a real sfs-mount on 1 MDS and 4
// OSSes, every file striped 4 wide with 64 KiB stripes so that each range
// spans several objects on several OSSes: set-id bits dropped by a
// non-owner's write, fallocate's four modes, lseek SEEK_DATA/SEEK_HOLE,
// copy_file_range done by the OSSes (same OST and pulled from another OSS),
// and O_TMPFILE refused cleanly.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/falloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <random>

#include "tests/harness/fixture.h"

namespace sfs::testing {
namespace {

constexpr off_t kK = 1024;
constexpr off_t kStripe = 64 * kK;

class FuseSpaceTest : public MountedTest<FuseSpaceTest> {
 public:
  static ClusterOptions Options() {
    ClusterOptions o;
    o.name = "space";
    return o;
  }

 protected:
  // A file of n random bytes (seeded by n), opened O_RDWR.
  int Random(const std::string& name, size_t n, std::string* data) {
    std::mt19937_64 rng(n);
    std::vector<uint8_t> b = RandomBytes(rng, n);
    data->assign(b.begin(), b.end());
    int fd = Open(name, O_CREAT | O_RDWR | O_TRUNC);
    EXPECT_EQ(pwrite(fd, data->data(), n, 0), static_cast<ssize_t>(n));
    return fd;
  }
  // An empty file laid out 4 x 64 KiB from OST start_ost (stripe i on OST
  // (start_ost + i) % 4), opened O_RDWR.
  int OnOsts(const std::string& name, int start_ost) {
    int fd = Open(name, O_CREAT | O_RDWR | O_TRUNC);
    auto a = client().ResolvePath(kRoot, rel_ + "/" + name);
    EXPECT_TRUE(a.ok()) << a.status().ToString();
    client::LayoutSpec l;
    l.stripe_count = 4;
    l.stripe_size = kStripe;
    l.start_ost = start_ost;
    Status st = client().SetLayout(kRoot, a->ino, l, false);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return fd;
  }
  std::string Pread(int fd, size_t n, off_t off) {
    std::string s(n, '\0');
    ssize_t r = pread(fd, s.data(), n, off);
    s.resize(r < 0 ? 0 : static_cast<size_t>(r));
    return s;
  }
  struct stat Fstat(int fd) {
    struct stat st {};
    EXPECT_EQ(fstat(fd, &st), 0) << strerror(errno);
    return st;
  }
  // copy_file_range of all n bytes (looping over short copies).
  void Copy(int in, off_t in_off, int out, off_t out_off, size_t n) {
    while (n > 0) {
      ssize_t r = copy_file_range(in, &in_off, out, &out_off, n, 0);
      ASSERT_GT(r, 0) << strerror(errno);
      n -= static_cast<size_t>(r);
    }
  }

};

// ---- set-id bits ------------------------------------------------------------

// As ext4: the write succeeds and drops S_ISUID, and S_ISGID with group-exec.
TEST_F(FuseSpaceTest, NonOwnerWriteToSetuidFileSucceedsAndClearsTheBits) {
  for (int acc : {O_WRONLY, O_RDWR}) {
    const std::string f = P(acc == O_WRONLY ? "wo" : "rw");
    ASSERT_TRUE(WriteFile(f, "root's"));
    ASSERT_EQ(chmod(f.c_str(), 06777), 0);
    int rc = RunAsUser(1000, 1000, [&] {
      int fd = open(f.c_str(), acc);
      if (fd < 0) return errno;
      int err = ErrnoOf(pwrite(fd, "user", 4, 0));
      close(fd);
      return err;
    });
    EXPECT_EQ(rc, 0) << strerror(rc);
    struct stat st {};
    ASSERT_EQ(stat(f.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0777u) << (acc == O_WRONLY ? "O_WRONLY" : "O_RDWR");
    std::string got;
    ASSERT_TRUE(ReadFile(f, &got));
    EXPECT_EQ(got, "user's");
  }
}

TEST_F(FuseSpaceTest, SetgidWithoutGroupExecAndRootsWritesKeepTheirBits) {
  const std::string f = P("g");
  ASSERT_TRUE(WriteFile(f, "x"));
  ASSERT_EQ(chmod(f.c_str(), 02666), 0);  // mandatory-locking marker, not set-id
  int rc = RunAsUser(1000, 1000, [&] {
    int fd = open(f.c_str(), O_WRONLY);
    if (fd < 0) return errno;
    int err = ErrnoOf(write(fd, "y", 1));
    close(fd);
    return err;
  });
  EXPECT_EQ(rc, 0) << strerror(rc);
  struct stat st {};
  ASSERT_EQ(stat(f.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 02666u);
  ASSERT_EQ(chmod(f.c_str(), 04755), 0);
  ASSERT_TRUE(WriteFile(f, "root has CAP_FSETID"));
  ASSERT_EQ(stat(f.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 04755u);
}

TEST_F(FuseSpaceTest, NonOwnerTruncateAndOTruncClearSetuid) {
  const std::string f = P("t");
  ASSERT_TRUE(WriteFile(f, "0123456789"));
  ASSERT_EQ(chmod(f.c_str(), 04666), 0);
  int rc = RunAsUser(1000, 1000, [&] { return ErrnoOf(truncate(f.c_str(), 5)); });
  EXPECT_EQ(rc, 0) << "truncate: " << strerror(rc);
  ASSERT_EQ(chmod(f.c_str(), 06676), 0);
  rc = RunAsUser(1000, 1000, [&] {
    int fd = open(f.c_str(), O_WRONLY);
    int err = ErrnoOf(ftruncate(fd, 3));
    close(fd);
    return err;
  });
  EXPECT_EQ(rc, 0) << "ftruncate: " << strerror(rc);
  struct stat st {};
  ASSERT_EQ(stat(f.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0676u) << "S_ISGID with group-exec goes too";
  EXPECT_EQ(st.st_size, 3);
  ASSERT_EQ(chmod(f.c_str(), 04666), 0);
  rc = RunAsUser(1000, 1000, [&] {
    int fd = open(f.c_str(), O_WRONLY | O_TRUNC);
    if (fd < 0) return errno;
    close(fd);
    return 0;
  });
  EXPECT_EQ(rc, 0) << "O_TRUNC: " << strerror(rc);
  ASSERT_EQ(stat(f.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0666u);
  EXPECT_EQ(st.st_size, 0);
}

// Page-cache handles (-o rdwr_cache): the kernel's own drop before the
// write would be a chmod as the writer; the write must still succeed.
TEST_F(FuseSpaceTest, NonOwnerWriteThroughThePageCacheClearsSetuid) {
  auto m = cluster().Mount({}, {"rdwr_cache"});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const std::string f = *m + rel_ + "/pc";
  ASSERT_TRUE(WriteFile(f, "root's"));
  ASSERT_EQ(chmod(f.c_str(), 04777), 0);
  int rc = RunAsUser(1000, 1000, [&] {
    int fd = open(f.c_str(), O_RDWR);
    if (fd < 0) return errno;
    int err = ErrnoOf(pwrite(fd, "user", 4, 0));
    close(fd);
    return err;
  });
  EXPECT_EQ(rc, 0) << strerror(rc);
  struct stat st {};
  ASSERT_EQ(stat(f.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0777u);
  ASSERT_TRUE(cluster().Unmount(*m).ok());
}

// ---- fallocate ----------------------------------------------------------------

TEST_F(FuseSpaceTest, FallocateModeZeroAllocatesAndExtendsAcrossStripes) {
  int fd = Open("f", O_CREAT | O_RDWR);
  ASSERT_EQ(pwrite(fd, "head", 4, 0), 4);
  const off_t len = 5 * kStripe + 123;  // all four objects, one twice
  ASSERT_EQ(fallocate(fd, 0, 0, len), 0) << strerror(errno);
  struct stat st = Fstat(fd);
  EXPECT_EQ(st.st_size, len);
  EXPECT_GE(st.st_blocks * 512, len - 4 * kK);
  EXPECT_EQ(Pread(fd, 4, 0), "head");
  EXPECT_EQ(Pread(fd, 1000, 3 * kStripe), std::string(1000, '\0'));
  struct stat other {};  // the MDS has the size too
  ASSERT_EQ(stat(P("f").c_str(), &other), 0);
  EXPECT_EQ(other.st_size, len);
}

TEST_F(FuseSpaceTest, FallocateKeepSizeAllocatesWithoutGrowing) {
  std::string data;
  int fd = Random("f", 100 * kK, &data);
  ASSERT_EQ(fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 16 * kStripe), 0) << strerror(errno);
  struct stat st = Fstat(fd);
  EXPECT_EQ(st.st_size, 100 * kK);
  EXPECT_GE(st.st_blocks * 512, 16 * kStripe);
  EXPECT_TRUE(SameBytes(Pread(fd, data.size() + 10, 0), data));
}

TEST_F(FuseSpaceTest, PunchHoleZeroesTheRangeOnEveryObjectAndKeepsTheSize) {
  std::string data;
  int fd = Random("f", 8 * kStripe, &data);
  const off_t off = 50 * kK, len = 300 * kK;  // parts of five stripe units
  ASSERT_EQ(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, len), 0)
      << strerror(errno);
  std::fill(data.begin() + off, data.begin() + off + len, '\0');
  EXPECT_EQ(Fstat(fd).st_size, 8 * kStripe);
  EXPECT_TRUE(SameBytes(Pread(fd, data.size(), 0), data));
}

TEST_F(FuseSpaceTest, ZeroRangeZeroesAndGrowsUnlessKeepSize) {
  std::string data;
  int fd = Random("f", 4 * kStripe, &data);
  ASSERT_EQ(fallocate(fd, FALLOC_FL_ZERO_RANGE, 10000, 100000), 0) << strerror(errno);
  std::fill(data.begin() + 10000, data.begin() + 110000, '\0');
  EXPECT_TRUE(SameBytes(Pread(fd, data.size(), 0), data));
  ASSERT_EQ(fallocate(fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, 3 * kStripe, 9 * kStripe), 0);
  std::fill(data.begin() + 3 * kStripe, data.end(), '\0');
  EXPECT_EQ(Fstat(fd).st_size, 4 * kStripe);
  EXPECT_TRUE(SameBytes(Pread(fd, data.size(), 0), data));
  ASSERT_EQ(fallocate(fd, FALLOC_FL_ZERO_RANGE, 2 * kStripe, 5 * kStripe), 0);
  data.resize(7 * kStripe, '\0');
  std::fill(data.begin() + 2 * kStripe, data.end(), '\0');
  EXPECT_EQ(Fstat(fd).st_size, 7 * kStripe);
  EXPECT_TRUE(SameBytes(Pread(fd, data.size() + 1, 0), data));
}

TEST_F(FuseSpaceTest, FallocateRejectsWhatLinuxRejects) {
  int fd = Open("f", O_CREAT | O_RDWR);
  EXPECT_EQ(fallocate(fd, 0, 0, 0), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(fallocate(fd, FALLOC_FL_COLLAPSE_RANGE, 0, kStripe), -1);
  EXPECT_EQ(errno, EOPNOTSUPP);
  int ro = Open("f", O_RDONLY);
  EXPECT_EQ(fallocate(ro, 0, 0, 10), -1);
  EXPECT_EQ(errno, EBADF);
}

// ---- SEEK_DATA / SEEK_HOLE ------------------------------------------------------

TEST_F(FuseSpaceTest, SeekDataAndHoleFollowTheObjectsHoles) {
  int fd = Open("f", O_CREAT | O_RDWR);
  const std::string page(4 * kK, 'd');
  const off_t far = 1024 * kK;  // row 4: object 0 again, at 256 KiB
  ASSERT_EQ(pwrite(fd, page.data(), page.size(), 0), 4 * kK);
  ASSERT_EQ(pwrite(fd, page.data(), page.size(), far), 4 * kK);
  EXPECT_EQ(lseek(fd, 0, SEEK_DATA), 0);
  EXPECT_EQ(lseek(fd, 0, SEEK_HOLE), 4 * kK);
  EXPECT_EQ(lseek(fd, 4 * kK, SEEK_DATA), far);
  EXPECT_EQ(lseek(fd, 2 * kStripe + 5, SEEK_HOLE), 2 * kStripe + 5);
  EXPECT_EQ(lseek(fd, far + 100, SEEK_DATA), far + 100);
  EXPECT_EQ(lseek(fd, far, SEEK_HOLE), far + 4 * kK);  // the end of file
  EXPECT_EQ(lseek(fd, far + 4 * kK, SEEK_DATA), -1);
  EXPECT_EQ(errno, ENXIO);
  EXPECT_EQ(lseek(fd, far + 4 * kK, SEEK_HOLE), -1);
  EXPECT_EQ(errno, ENXIO);
  ASSERT_EQ(ftruncate(fd, 2 * far), 0);  // a hole to the new end: no data there
  EXPECT_EQ(lseek(fd, far + 4 * kK, SEEK_DATA), -1);
  EXPECT_EQ(errno, ENXIO);
  EXPECT_EQ(lseek(fd, far + 8 * kK, SEEK_HOLE), far + 8 * kK);
}

TEST_F(FuseSpaceTest, SeekSeesAPunchedHoleInTheMiddle) {
  std::string data;
  int fd = Random("f", 8 * kStripe, &data);
  // Stripe units 1-3 of row 0: objects 1, 2 and 3 lose their first unit.
  ASSERT_EQ(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, kStripe, 3 * kStripe), 0);
  EXPECT_EQ(lseek(fd, 0, SEEK_HOLE), kStripe);
  EXPECT_EQ(lseek(fd, kStripe, SEEK_DATA), 4 * kStripe);
  EXPECT_EQ(lseek(fd, 4 * kStripe, SEEK_HOLE), 8 * kStripe);
}

// ---- copy_file_range ----------------------------------------------------------

// Stripe i of both files on one OST: each object is copied by its own OSS.
TEST_F(FuseSpaceTest, CopyFileRangeBetweenFilesOnTheSameOsts) {
  std::mt19937_64 rng(3);
  std::vector<uint8_t> b = RandomBytes(rng, 1024 * kK + 12345);
  const std::string data(b.begin(), b.end());
  int src = OnOsts("src", 0);
  int dst = OnOsts("dst", 0);
  ASSERT_EQ(pwrite(src, data.data(), data.size(), 0), static_cast<ssize_t>(data.size()));
  Copy(src, 0, dst, 0, data.size());
  EXPECT_EQ(Fstat(dst).st_size, static_cast<off_t>(data.size()));
  EXPECT_TRUE(SameBytes(Pread(dst, data.size() + 1, 0), data));
}

// Stripe i of the source on OST i, of the destination on OST i+1: every
// piece is pulled by the destination's OSS from another OSS; the offsets
// are unaligned, so pieces are cut at both files' stripe boundaries.
TEST_F(FuseSpaceTest, CopyFileRangeAcrossOssesAtUnalignedOffsets) {
  std::string data;
  int src = OnOsts("src", 0);
  std::mt19937_64 rng(7);
  std::vector<uint8_t> b = RandomBytes(rng, 700 * kK);
  data.assign(b.begin(), b.end());
  ASSERT_EQ(pwrite(src, data.data(), data.size(), 0), static_cast<ssize_t>(data.size()));
  int dst = OnOsts("dst", 1);
  const off_t in_off = 1000, out_off = 77777, n = 300000;
  Copy(src, in_off, dst, out_off, n);
  std::string want(out_off, '\0');
  want += data.substr(in_off, n);
  EXPECT_EQ(Fstat(dst).st_size, out_off + n);
  EXPECT_TRUE(SameBytes(Pread(dst, want.size() + 1, 0), want));
  struct stat st {};
  ASSERT_EQ(stat(P("dst").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, out_off + n);
}

TEST_F(FuseSpaceTest, CopyFileRangeIsShortAtEndOfFileAndKeepsHoles) {
  int src = Open("src", O_CREAT | O_RDWR);
  ASSERT_EQ(pwrite(src, "tail", 4, 5 * kStripe), 4);  // a hole, then 4 bytes
  int dst = Open("dst", O_CREAT | O_RDWR);
  ASSERT_EQ(pwrite(dst, std::string(6 * kStripe, 'x').data(), 6 * kStripe, 0), 6 * kStripe);
  off_t in = 0, out = 0;
  EXPECT_EQ(copy_file_range(src, &in, dst, &out, 100 * kStripe, 0), 5 * kStripe + 4);
  std::string want(5 * kStripe, '\0');
  want += "tail";
  want += std::string(kStripe - 4, 'x');
  EXPECT_TRUE(SameBytes(Pread(dst, want.size() + 1, 0), want));
  EXPECT_EQ(lseek(dst, 0, SEEK_DATA), 5 * kStripe) << "the copied hole stays a hole";
  in = 5 * kStripe + 4;
  EXPECT_EQ(copy_file_range(src, &in, dst, &out, 10, 0), 0);
}

TEST_F(FuseSpaceTest, CopyFileRangeBetweenDifferentLayouts) {
  std::string data;
  int src = Random("src", 500 * kK, &data);
  int dst = Open("dst", O_CREAT | O_RDWR);
  auto a = client().ResolvePath(kRoot, rel_ + "/dst");
  ASSERT_TRUE(a.ok());
  client::LayoutSpec l;
  l.stripe_count = 3;
  l.stripe_size = 128 * kK;
  ASSERT_TRUE(client().SetLayout(kRoot, a->ino, l, false).ok());
  Copy(src, 0, dst, 4096, data.size());
  EXPECT_TRUE(SameBytes(Pread(dst, data.size() + 1, 4096), data));
}

// cp(1) within the mount: coreutils 9.1 finds a sparse source's data with
// SEEK_DATA/SEEK_HOLE (strace: it then reads and writes only the data).
TEST_F(FuseSpaceTest, CpWithinTheMountKeepsContentSizeAndHoles) {
  std::string data;
  int src = Random("src", 300 * kK, &data);
  ASSERT_EQ(ftruncate(src, 3 * 1024 * kK), 0);  // a 2.7 MiB hole at the end
  data.resize(3 * 1024 * kK, '\0');
  const std::string cmd = "cp '" + P("src") + "' '" + P("dst") + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  int dst = Open("dst", O_RDONLY);
  EXPECT_EQ(Fstat(dst).st_size, 3 * 1024 * kK);
  EXPECT_TRUE(SameBytes(Pread(dst, data.size() + 1, 0), data));
  EXPECT_LT(Fstat(dst).st_blocks * 512, 1024 * kK) << "the hole was not written";
}

// ---- O_TMPFILE ----------------------------------------------------------------

// libfuse 3.14 has no tmpfile op: the kernel's FUSE_TMPFILE gets ENOSYS,
// which it reports as EOPNOTSUPP (fuse_ops.h); the directory is untouched.
TEST_F(FuseSpaceTest, OTmpfileFailsCleanlyWithEopnotsupp) {
  for (int i = 0; i < 2; ++i) {
    int fd = open(dir_.c_str(), O_TMPFILE | O_RDWR, 0600);
    EXPECT_EQ(fd, -1);
    EXPECT_EQ(errno, EOPNOTSUPP) << strerror(errno);
    if (fd >= 0) close(fd);
  }
  auto page = client().Readdir(kRoot, client().ResolvePath(kRoot, rel_)->ino, "", 10, false);
  ASSERT_TRUE(page.ok());
  EXPECT_TRUE(page->entries.empty());
}

}  // namespace
}  // namespace sfs::testing
