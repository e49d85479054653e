// The last POSIX gaps (issue 15), through a real sfs-mount on 1 MDS and 4
// OSSes, every file striped 4 wide with 64 KiB stripes: set-id bits dropped
// by a non-owner's write, truncate and O_TRUNC open, as on ext4.
#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <random>

#include <gtest/gtest.h>

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
  void TearDown() override {
    for (int fd : fds_) close(fd);
    MountedTest::TearDown();
  }
  int Open(const std::string& name, int flags, mode_t mode = 0644) {
    int fd = open(P(name).c_str(), flags, mode);
    EXPECT_GE(fd, 0) << "open " << name << ": " << strerror(errno);
    if (fd >= 0) fds_.push_back(fd);
    return fd;
  }
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

  std::vector<int> fds_;
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

}  // namespace
}  // namespace sfs::testing
