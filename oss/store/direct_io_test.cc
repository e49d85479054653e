// The store's O_DIRECT path (direct_io.h): large aligned transfers from
// aligned buffers go direct, everything else buffered, and bytes written
// either way read back the same either way, with and without checksums.
#include "oss/store/direct_io.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "oss/store/object_store.h"
#include "oss/testing/store_fixture.h"
#include "oss/testing/temp_dir.h"

namespace sfs::oss {
namespace {

constexpr size_t kKiB = 1024;
constexpr size_t kMiB = 1024 * kKiB;

bool IsDirect(int fd) { return (::fcntl(fd, F_GETFL) & O_DIRECT) != 0; }

// Counts the bytes that went through O_DIRECT descriptors.
class RecordingEnv : public EnvWrapper {
 public:
  RecordingEnv() : EnvWrapper(DefaultEnv()) {}
  ssize_t Pwrite(int fd, const void* buf, size_t n, uint64_t off) override {
    ssize_t r = EnvWrapper::Pwrite(fd, buf, n, off);
    if (r > 0 && IsDirect(fd)) direct_written += static_cast<uint64_t>(r);
    return r;
  }
  ssize_t Pread(int fd, void* buf, size_t n, uint64_t off) override {
    ssize_t r = EnvWrapper::Pread(fd, buf, n, off);
    if (r > 0 && IsDirect(fd)) direct_read += static_cast<uint64_t>(r);
    return r;
  }
  std::atomic<uint64_t> direct_written{0};
  std::atomic<uint64_t> direct_read{0};
};

// A 4 KiB-aligned buffer, as the OSS receives bulk into (rpc::BulkPool).
struct AlignedBuf {
  explicit AlignedBuf(size_t n)
      : size(n), data(static_cast<uint8_t*>(std::aligned_alloc(4096, (n + 4095) / 4096 * 4096))) {}
  ~AlignedBuf() { std::free(data); }
  std::span<uint8_t> span() { return {data, size}; }
  size_t size;
  uint8_t* data;
};

void Fill(std::span<uint8_t> b, uint8_t seed) {
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(seed + i * 7 + (i >> 12));
}

// True iff a file made in a fresh directory under base opens with O_DIRECT.
bool TakesODirect(const std::string& base) {
  TempDir probe_dir(base);
  if (probe_dir.path().empty()) return false;
  int fd = ::open((probe_dir.path() + "/probe").c_str(), O_RDWR | O_CREAT | O_DIRECT, 0644);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

// These cases need a file system that takes O_DIRECT, and tmpfs (often /tmp)
// refuses it before Linux 6.6: $TMPDIR (or /tmp) when it takes it, else
// /var/tmp, which is on disk on Debian. "" when neither does.
std::string DirectIoBase() {
  for (const std::string& base : {TempDir::DefaultBase(), std::string("/var/tmp")}) {
    if (TakesODirect(base)) return base;
  }
  return "";
}

class DirectIoTest : public ::testing::TestWithParam<bool> {
 protected:
  // No O_DIRECT directory fails the case rather than skipping it: the store's
  // direct path is what these cases are for.
  void SetUp() override {
    std::string base = DirectIoBase();
    ASSERT_FALSE(base.empty()) << "neither " << TempDir::DefaultBase()
                               << " nor /var/tmp takes O_DIRECT: set TMPDIR to a directory "
                                  "on a disk file system";
    dir_ = std::make_unique<TempDir>(base);
    ASSERT_FALSE(dir_->path().empty()) << "cannot make a directory under " << base;
    FileStoreOptions opts;
    opts.checksums = GetParam();
    opts.env = &env_;
    auto s = OpenFileObjectStore(dir_->path() + "/ost0", opts);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(s).value();
  }

  // The object's bytes [off, off + n) read through a buffer of the given alignment.
  std::vector<uint8_t> ReadBack(uint64_t oid, uint64_t off, size_t n, bool aligned) {
    std::vector<uint8_t> out(n);
    if (aligned) {
      AlignedBuf b(n);
      auto r = store_->Read(oid, off, b.span());
      EXPECT_TRUE(r.ok()) << r.status().ToString();
      std::copy(b.data, b.data + n, out.begin());
    } else {
      std::vector<uint8_t> b(n + 1);  // data() + 1: never 4 KiB-aligned
      auto r = store_->Read(oid, off, {b.data() + 1, n});
      EXPECT_TRUE(r.ok()) << r.status().ToString();
      std::copy(b.begin() + 1, b.end(), out.begin());
    }
    return out;
  }

  // Evicts the object's clean pages from the page cache.
  void DropCache(uint64_t oid) {
    int fd = ::open(ObjectFile(dir_->path() + "/ost0", oid).c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }

  std::unique_ptr<TempDir> dir_;  // under DirectIoBase(); outlives store_
  RecordingEnv env_;
  std::unique_ptr<ObjectStore> store_;
};

TEST_P(DirectIoTest, AnAlignedOneMiBWriteGoesDirectAndReadsBackBothWays) {
  AlignedBuf data(kMiB);
  Fill(data.span(), 1);
  ASSERT_TRUE(store_->Write(7, 4 * kMiB, data.span(), false).ok());
  EXPECT_EQ(env_.direct_written.load(), kMiB);
  std::vector<uint8_t> want(data.data, data.data + kMiB);
  EXPECT_EQ(ReadBack(7, 4 * kMiB, kMiB, /*aligned=*/true), want);
  EXPECT_EQ(env_.direct_read.load(), kMiB);  // not cached after a direct write: read direct
  EXPECT_EQ(ReadBack(7, 4 * kMiB, kMiB, /*aligned=*/false), want);
  EXPECT_EQ(ReadBack(7, 4 * kMiB, kMiB, /*aligned=*/true), want);  // now cached: buffered
  EXPECT_EQ(env_.direct_read.load(), kMiB);
}

TEST_P(DirectIoTest, AnUnalignedWriteSendsOnlyItsAlignedMiddleDirect) {
  AlignedBuf buf(kMiB + 8192);
  // Offset 1000 into an aligned buffer at file offset 1000: the middle lines up.
  std::span<uint8_t> data = buf.span().subspan(1000, kMiB);
  Fill(data, 2);
  ASSERT_TRUE(store_->Write(8, 1000, data, false).ok());
  EXPECT_EQ(env_.direct_written.load(), (kMiB + 1000) / 4096 * 4096 - 4096);
  std::vector<uint8_t> want(data.begin(), data.end());
  EXPECT_EQ(ReadBack(8, 1000, kMiB, true), want);
  EXPECT_EQ(ReadBack(8, 1000, kMiB, false), want);
}

TEST_P(DirectIoTest, SmallOrMisalignedWritesStayBuffered) {
  AlignedBuf small(32 * kKiB);
  Fill(small.span(), 3);
  ASSERT_TRUE(store_->Write(9, 0, small.span(), false).ok());
  std::vector<uint8_t> odd(kMiB + 1);
  ASSERT_TRUE(store_->Write(9, 0, {odd.data() + 1, kMiB}, false).ok());  // buffer not aligned
  EXPECT_EQ(env_.direct_written.load(), 0u);
}

// Buffered writes into pages a direct write then covers, and the reverse:
// every read sees the last bytes written, cached or not.
TEST_P(DirectIoTest, BufferedAndDirectWritesOfOneObjectStayCoherent) {
  const size_t n = 2 * kMiB;
  std::vector<uint8_t> want(n, 0);
  AlignedBuf big(n);
  Fill(big.span(), 4);
  std::vector<uint8_t> small(6000);
  for (int round = 0; round < 3; ++round) {
    // Small buffered writes, some inside what the direct write will cover.
    for (uint64_t off : {uint64_t{100}, uint64_t{300000}, uint64_t{kMiB + 5}}) {
      for (size_t i = 0; i < small.size(); ++i) small[i] = static_cast<uint8_t>(round * 50 + i);
      ASSERT_TRUE(store_->Write(10, off, small, false).ok());
      std::copy(small.begin(), small.end(), want.begin() + static_cast<ptrdiff_t>(off));
    }
    EXPECT_EQ(ReadBack(10, 0, n, false), want);  // pages now cached
    // A direct write over the first MiB (its pages were dirty in the cache).
    Fill(big.span(), static_cast<uint8_t>(round + 10));
    ASSERT_TRUE(store_->Write(10, 0, big.span().first(kMiB), false).ok());
    std::copy(big.data, big.data + kMiB, want.begin());
    uint64_t direct_before = env_.direct_read.load();
    std::vector<uint8_t> first(want.begin(), want.begin() + kMiB);
    EXPECT_EQ(ReadBack(10, 0, kMiB, true), first) << "round " << round;
    EXPECT_GT(env_.direct_read.load(), direct_before);  // the direct write left it uncached
    EXPECT_EQ(ReadBack(10, 0, n, false), want) << "round " << round;
    EXPECT_EQ(ReadBack(10, 0, n, true), want) << "round " << round;
  }
  EXPECT_GE(env_.direct_written.load(), 3 * kMiB);
}

TEST_P(DirectIoTest, ADirectWriteWithSyncAndATruncateReadBackExactly) {
  AlignedBuf data(kMiB);
  Fill(data.span(), 5);
  ASSERT_TRUE(store_->Write(11, 0, data.span(), /*sync=*/true).ok());
  ASSERT_TRUE(store_->Truncate(11, 300000).ok());
  auto attr = store_->Stat(11);
  ASSERT_TRUE(attr.ok());
  EXPECT_EQ(attr->size, 300000u);
  AlignedBuf back(kMiB);
  auto got = store_->Read(11, 0, back.span());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, 300000u);
  EXPECT_TRUE(std::equal(back.data, back.data + 300000, data.data));
  EXPECT_TRUE(std::all_of(back.data + 300000, back.data + kMiB, [](uint8_t b) { return b == 0; }));
}

TEST_P(DirectIoTest, ADirectReadPastTheEndOfAnObjectGivesZeros) {
  const size_t size = kMiB + 200 * kKiB + 123;  // large enough to be read direct
  AlignedBuf data(2 * kMiB);
  Fill(data.span(), 6);
  ASSERT_TRUE(store_->Write(12, 0, data.span().first(size), /*sync=*/true).ok());
  DropCache(12);  // the buffered tail page too, so the whole read goes direct
  AlignedBuf back(2 * kMiB);
  std::fill(back.data, back.data + 2 * kMiB, 0xEE);
  auto got = store_->Read(12, 0, back.span());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, size);
  EXPECT_GT(env_.direct_read.load(), 0u);
  EXPECT_TRUE(std::equal(back.data, back.data + *got, data.data));
  EXPECT_TRUE(
      std::all_of(back.data + *got, back.data + 2 * kMiB, [](uint8_t b) { return b == 0; }));
}

TEST_P(DirectIoTest, AnUncachedSmallObjectIsReadBufferedSoItStaysCached) {
  AlignedBuf data(256 * kKiB);
  Fill(data.span(), 7);
  ASSERT_TRUE(store_->Write(13, 0, data.span(), /*sync=*/true).ok());
  EXPECT_EQ(env_.direct_written.load(), 256 * kKiB);  // written direct: nothing cached
  DropCache(13);
  std::vector<uint8_t> want(data.data, data.data + 256 * kKiB);
  EXPECT_EQ(ReadBack(13, 0, 256 * kKiB, /*aligned=*/true), want);
  EXPECT_EQ(ReadBack(13, 0, 256 * kKiB, /*aligned=*/true), want);
  EXPECT_EQ(env_.direct_read.load(), 0u);
}

INSTANTIATE_TEST_SUITE_P(ChecksumsOnAndOff, DirectIoTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Checked" : "Unchecked"; });

}  // namespace
}  // namespace sfs::oss
