// A seeded random-operation data checker through a real sfs-mount.
//
// One file striped 4 wide with 64 KiB stripes (set with libsfs SetLayout on
// its directory before it is created) gets a random mix of pwrite, ftruncate,
// mmap writes (MAP_SHARED + msync) and reopen (close, then open again, which
// exercises flush-on-close and close-to-open); every operation is applied to
// a local reference file too. After every step the whole mounted file and its
// size are compared with the reference. At the end the file is read through
// libsfs directly, bypassing the kernel's cache, so what reached the OSSes is
// checked too. ~2,000 operations by default, 20,000 with SFS_LONG=1; replay
// a failure with the SFS_SEED the report prints.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <random>
#include <sstream>

#include <gtest/gtest.h>

#include "tests/harness/fixture.h"

namespace sfs::testing {
namespace {

constexpr uint64_t kStripe = 64 * 1024;
constexpr uint64_t kMaxSize = 4 * kStripe * 5 + 1234;  // five stripe rows and a bit

class FuseRandomOpsTest : public MountedTest<FuseRandomOpsTest> {
 public:
  static ClusterOptions Options() {
    ClusterOptions o;
    o.name = "random-ops";
    return o;
  }

 protected:
  void TearDown() override {
    if (fd_ >= 0) close(fd_);
    if (ref_ >= 0) close(ref_);
    MountedTest::TearDown();
  }

  void DoWrite(uint64_t off, uint64_t len) {
    auto data = RandomBytes(rng_, len);
    ASSERT_EQ(pwrite(fd_, data.data(), len, static_cast<off_t>(off)), static_cast<ssize_t>(len))
        << strerror(errno);
    ASSERT_EQ(pwrite(ref_, data.data(), len, static_cast<off_t>(off)), static_cast<ssize_t>(len));
  }

  void DoTruncate(uint64_t size) {
    ASSERT_EQ(ftruncate(fd_, static_cast<off_t>(size)), 0) << strerror(errno);
    ASSERT_EQ(ftruncate(ref_, static_cast<off_t>(size)), 0);
  }

  // Writes [off, off+len) through a shared mapping; REQUIRES: off+len <= size.
  void DoMmapWrite(uint64_t off, uint64_t len) {
    uint64_t start = off & ~uint64_t{4095};
    size_t map_len = off + len - start;
    void* p = mmap(nullptr, map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd_,
                   static_cast<off_t>(start));
    ASSERT_NE(p, MAP_FAILED) << strerror(errno);
    auto data = RandomBytes(rng_, len);
    memcpy(static_cast<char*>(p) + (off - start), data.data(), len);
    ASSERT_EQ(msync(p, map_len, MS_SYNC), 0) << strerror(errno);
    ASSERT_EQ(munmap(p, map_len), 0);
    ASSERT_EQ(pwrite(ref_, data.data(), len, static_cast<off_t>(off)), static_cast<ssize_t>(len));
  }

  void DoReopen() {
    ASSERT_EQ(close(fd_), 0) << strerror(errno);
    fd_ = open(path_.c_str(), O_RDWR);
    ASSERT_GE(fd_, 0) << strerror(errno);
  }

  uint64_t RefSize() {
    struct stat st {};
    fstat(ref_, &st);
    return static_cast<uint64_t>(st.st_size);
  }

  // Whole-file comparison of the mount with the reference.
  void ExpectMatchesReference(const std::string& after) {
    struct stat st {};
    ASSERT_EQ(fstat(fd_, &st), 0);
    uint64_t size = RefSize();
    ASSERT_EQ(static_cast<uint64_t>(st.st_size), size) << "size after " << after;
    std::vector<uint8_t> got(size + 100), want(size);
    ssize_t n = pread(fd_, got.data(), got.size(), 0);
    ASSERT_EQ(n, static_cast<ssize_t>(size)) << "read count after " << after;
    got.resize(size);
    ASSERT_EQ(pread(ref_, want.data(), size, 0), static_cast<ssize_t>(size));
    int64_t diff = FirstDifference(got, want);
    ASSERT_EQ(diff, -1) << "first wrong byte at " << diff << " (stripe " << diff / kStripe % 4
                        << ") after " << after;
  }

  // One random operation; returns its description.
  std::string Step() {
    std::ostringstream what;
    uint64_t size = RefSize();
    uint64_t off = rng_() % kMaxSize;
    // Lengths: mostly small and unaligned, sometimes a whole stripe row or more.
    uint64_t len = 1 + (rng_() % 4 == 0 ? rng_() % (5 * kStripe) : rng_() % 9000);
    len = std::min(len, kMaxSize - off + 1);
    switch (rng_() % 10) {
      case 0: case 1: case 2: case 3:
        what << "pwrite " << len << "@" << off;
        DoWrite(off, len);
        break;
      case 4: case 5:
        off = rng_() % 3 == 0 ? (rng_() % 21) * kStripe + rng_() % 3 - 1 : rng_() % kMaxSize;
        what << "ftruncate " << off;
        DoTruncate(std::min(off, kMaxSize));
        break;
      case 6: case 7:
        if (size < 2) return "skip";
        off = rng_() % (size - 1);
        len = 1 + rng_() % std::min<uint64_t>(size - off, 3 * kStripe);
        what << "mmap write " << len << "@" << off;
        DoMmapWrite(off, len);
        break;
      case 8:
        what << "reopen";
        DoReopen();
        break;
      default:
        what << "read-only check";
        break;
    }
    return what.str();
  }

  std::mt19937_64 rng_;
  std::string path_;
  int fd_ = -1;
  int ref_ = -1;
};

TEST_F(FuseRandomOpsTest, RandomWritesTruncatesAndMmapWritesMatchALocalReference) {
  rng_.seed(PerTestSeed());
  path_ = P("data");
  fd_ = open(path_.c_str(), O_CREAT | O_RDWR, 0644);
  ASSERT_GE(fd_, 0) << strerror(errno);
  ref_ = open((cluster().root() + "/random-ops.ref").c_str(), O_CREAT | O_RDWR | O_TRUNC, 0644);
  ASSERT_GE(ref_, 0);
  const int ops = LongRun() ? 20000 : 2000;
  for (int i = 0; i < ops; ++i) {
    std::string what = Step();
    ASSERT_FALSE(HasFatalFailure()) << "op " << i << ": " << what;
    ASSERT_NO_FATAL_FAILURE(ExpectMatchesReference("op " + std::to_string(i) + ": " + what));
  }
  ASSERT_EQ(fsync(fd_), 0);

  // What reached the servers, read without the kernel's page cache.
  auto attr = client().ResolvePath(kRoot, rel_ + "/data");
  ASSERT_TRUE(attr.ok()) << attr.status().ToString();
  client::Attr a;
  auto f = client().Open(kRoot, attr->ino, O_RDONLY, &a);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_EQ((*f)->layout().objects.size(), 4u) << "the directory's 4-wide layout was inherited";
  uint64_t size = RefSize();
  EXPECT_EQ(a.size, size);
  std::vector<uint8_t> got(size), want(size);
  auto n = client().Read(**f, 0, got);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, size);
  ASSERT_EQ(pread(ref_, want.data(), size, 0), static_cast<ssize_t>(size));
  EXPECT_EQ(FirstDifference(got, want), -1) << "libsfs sees different bytes than the mount";
  EXPECT_TRUE(client().Close(*f).ok());
}

}  // namespace
}  // namespace sfs::testing
