// Striped I/O through libsfs against a real sfs-mds and 4 sfs-oss processes.
//
// Every file written here has a twin: a local reference file that gets the
// same pwrite/ftruncate calls. After each phase the StripeFS file is read back
// (through the writing client and through a fresh one) and compared with the
// reference byte for byte, so holes, short reads at EOF and truncation are
// checked against what a local file system does. Layouts: 1, 3 and 4 stripes
// of 64 KiB and 1 MiB; writes are random and also placed across every stripe
// boundary of the file.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <random>

#include <gtest/gtest.h>

#include "tests/harness/fixture.h"

namespace sfs::testing {
namespace {

using client::Attr;
using client::Client;
using client::File;
using client::LayoutSpec;

constexpr uint64_t kKiB = 1024, kMiB = 1024 * 1024;

LayoutSpec Striped(int count, uint64_t size) {
  LayoutSpec l;
  l.stripe_count = count;
  l.stripe_size = size;
  return l;
}

// A StripeFS file and its local reference twin.
struct Twin {
  std::shared_ptr<File> file;
  int ref = -1;
  uint64_t size = 0;
};

class IoTest : public SharedClusterTest<IoTest> {
 public:
  static ClusterOptions Options() {
    ClusterOptions o;
    o.name = "io";
    return o;
  }

 protected:
  void TearDown() override {
    for (int fd : ref_fds_) close(fd);
    SharedClusterTest::TearDown();
  }

  Twin CreateTwin(const std::string& name, const LayoutSpec& layout) {
    Twin t;
    Attr attr;
    auto f = client().Create(kRoot, client::kRootIno, name, 0644, O_RDWR | O_CREAT | O_EXCL,
                             &attr, &layout);
    EXPECT_TRUE(f.ok()) << f.status().ToString();
    if (f.ok()) t.file = *f;
    std::string ref = cluster().root() + "/ref-" + name;
    t.ref = open(ref.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
    ref_fds_.push_back(t.ref);
    return t;
  }

  void Write(Twin& t, uint64_t off, const std::vector<uint8_t>& data) {
    auto n = client().Write(*t.file, off, data);
    ASSERT_TRUE(n.ok()) << "write " << data.size() << "@" << off << ": " << n.status().ToString();
    ASSERT_EQ(*n, data.size());
    ASSERT_EQ(pwrite(t.ref, data.data(), data.size(), static_cast<off_t>(off)),
              static_cast<ssize_t>(data.size()));
    t.size = std::max(t.size, off + data.size());
  }

  void Truncate(Twin& t, uint64_t size) {
    client::SetAttrArgs a;
    a.valid = client::kSetSize;
    a.size = size;
    auto r = client().SetAttr(kRoot, t.file->ino(), a);
    ASSERT_TRUE(r.ok()) << "truncate to " << size << ": " << r.status().ToString();
    EXPECT_EQ(r->size, size);
    ASSERT_EQ(ftruncate(t.ref, static_cast<off_t>(size)), 0);
    t.size = size;
  }

  // Reads [off, off+len) from both and compares, including the short count at EOF.
  void ExpectRangeMatches(Client& c, File& f, const Twin& t, uint64_t off, uint64_t len) {
    std::vector<uint8_t> got(len, 0xEE), want(len, 0);
    auto n = c.Read(f, off, got);
    ASSERT_TRUE(n.ok()) << "read " << len << "@" << off << ": " << n.status().ToString();
    ssize_t w = pread(t.ref, want.data(), len, static_cast<off_t>(off));
    ASSERT_EQ(*n, static_cast<size_t>(w)) << "read count at " << off << " (file size " << t.size
                                          << ")";
    got.resize(*n);
    want.resize(static_cast<size_t>(w));
    int64_t diff = FirstDifference(got, want);
    ASSERT_EQ(diff, -1) << "first wrong byte at file offset " << off + diff;
  }

  void ExpectWholeFileMatches(Client& c, File& f, const Twin& t) {
    for (uint64_t off = 0; off < t.size + 1; off += 3 * kMiB + 1) {
      ExpectRangeMatches(c, f, t, off, 3 * kMiB + 1);
      if (HasFatalFailure()) return;
    }
  }

  // Closes the file, then checks size and contents through a fresh client.
  void CloseAndVerifyWithFreshClient(Twin& t) {
    ASSERT_TRUE(client().Close(t.file).ok());
    auto c2 = cluster().Connect();
    ASSERT_TRUE(c2.ok()) << c2.status().ToString();
    Attr attr;
    auto f2 = (*c2)->Open(kRoot, t.file->ino(), O_RDONLY, &attr);
    ASSERT_TRUE(f2.ok()) << f2.status().ToString();
    EXPECT_EQ(attr.size, t.size);
    ExpectWholeFileMatches(**c2, **f2, t);
    EXPECT_TRUE((*c2)->Close(*f2).ok());
  }

  std::vector<int> ref_fds_;
};

struct Geometry {
  int count;
  uint64_t size;
};

class StripedIoTest : public IoTest, public ::testing::WithParamInterface<Geometry> {};

TEST_P(StripedIoTest, RandomWritesAndReadsMatchALocalReferenceFile) {
  auto [count, ssize] = GetParam();
  std::mt19937_64 rng(PerTestSeed());
  Twin t = CreateTwin(TestName(), Striped(count, ssize));
  ASSERT_TRUE(t.file);
  uint64_t span = ssize * count * 3 + ssize / 2;  // three full stripe rows and a bit
  const int ops = LongRun() ? 2000 : 150;
  for (int i = 0; i < ops; ++i) {
    uint64_t off = rng() % span;
    uint64_t len = 1 + rng() % (i % 4 == 0 ? 2 * count * ssize : 4 * kKiB);
    ASSERT_NO_FATAL_FAILURE(Write(t, off, RandomBytes(rng, len)));
    uint64_t roff = rng() % (span + ssize);
    ASSERT_NO_FATAL_FAILURE(ExpectRangeMatches(client(), *t.file, t, roff, 1 + rng() % span));
  }
  ASSERT_NO_FATAL_FAILURE(ExpectWholeFileMatches(client(), *t.file, t));
  CloseAndVerifyWithFreshClient(t);
}

TEST_P(StripedIoTest, WritesAcrossEveryStripeBoundaryReadBackExactly) {
  auto [count, ssize] = GetParam();
  std::mt19937_64 rng(PerTestSeed());
  Twin t = CreateTwin(TestName(), Striped(count, ssize));
  ASSERT_TRUE(t.file);
  for (uint64_t b = ssize; b <= ssize * count * 2; b += ssize) {
    uint64_t before = 1 + rng() % 4096, after = 1 + rng() % 4096;
    ASSERT_NO_FATAL_FAILURE(Write(t, b - before, RandomBytes(rng, before + after)));
    ASSERT_NO_FATAL_FAILURE(ExpectRangeMatches(client(), *t.file, t, b - 1, 2));
  }
  // One write spanning every stripe of two rows, unaligned at both ends.
  ASSERT_NO_FATAL_FAILURE(Write(t, 7, RandomBytes(rng, ssize * count * 2)));
  ASSERT_NO_FATAL_FAILURE(ExpectWholeFileMatches(client(), *t.file, t));
  CloseAndVerifyWithFreshClient(t);
}

TEST_P(StripedIoTest, TruncateDownThenUpReadsZerosWhereDataWas) {
  auto [count, ssize] = GetParam();
  std::mt19937_64 rng(PerTestSeed());
  Twin t = CreateTwin(TestName(), Striped(count, ssize));
  ASSERT_TRUE(t.file);
  uint64_t full = ssize * count * 2 + 12345;
  ASSERT_NO_FATAL_FAILURE(Write(t, 0, RandomBytes(rng, full)));
  for (uint64_t size : {full - 1, ssize * count + ssize / 3, ssize - 1, uint64_t{0}}) {
    ASSERT_NO_FATAL_FAILURE(Truncate(t, size));
    ASSERT_NO_FATAL_FAILURE(ExpectWholeFileMatches(client(), *t.file, t));
  }
  ASSERT_NO_FATAL_FAILURE(Write(t, ssize / 2, RandomBytes(rng, 100)));
  ASSERT_NO_FATAL_FAILURE(Truncate(t, full));  // up: the old data must not come back
  ASSERT_NO_FATAL_FAILURE(ExpectWholeFileMatches(client(), *t.file, t));
  CloseAndVerifyWithFreshClient(t);
}

INSTANTIATE_TEST_SUITE_P(Layouts, StripedIoTest,
                         ::testing::Values(Geometry{1, 64 * kKiB}, Geometry{3, 64 * kKiB},
                                           Geometry{4, 64 * kKiB}, Geometry{1, kMiB},
                                           Geometry{3, kMiB}, Geometry{4, kMiB}),
                         [](const auto& info) {
                           return std::to_string(info.param.count) + "x" +
                                  std::to_string(info.param.size / kKiB) + "K";
                         });

TEST_F(IoTest, SparseFileReadsZerosInItsHoles) {
  std::mt19937_64 rng(PerTestSeed());
  Twin t = CreateTwin(TestName(), Striped(4, 64 * kKiB));
  ASSERT_TRUE(t.file);
  ASSERT_NO_FATAL_FAILURE(Write(t, 5 * kMiB + 3, RandomBytes(rng, 10)));
  ASSERT_NO_FATAL_FAILURE(Write(t, 70 * kKiB, RandomBytes(rng, 10)));
  ASSERT_NO_FATAL_FAILURE(ExpectWholeFileMatches(client(), *t.file, t));
  std::vector<uint8_t> hole(64 * kKiB, 0xEE);
  auto n = client().Read(*t.file, 2 * kMiB, hole);  // in objects never written there
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, hole.size());
  EXPECT_EQ(std::count(hole.begin(), hole.end(), 0), static_cast<long>(hole.size()));
  CloseAndVerifyWithFreshClient(t);
}

TEST_F(IoTest, ReadAtOrPastEndOfFileReturnsZeroBytes) {
  Twin t = CreateTwin(TestName(), Striped(3, 64 * kKiB));
  ASSERT_TRUE(t.file);
  ASSERT_NO_FATAL_FAILURE(Write(t, 0, std::vector<uint8_t>(1000, 'x')));
  std::vector<uint8_t> buf(4096);
  auto at_end = client().Read(*t.file, 1000, buf);
  auto past_end = client().Read(*t.file, 10 * kMiB, buf);
  ASSERT_TRUE(at_end.ok() && past_end.ok());
  EXPECT_EQ(*at_end, 0u);
  EXPECT_EQ(*past_end, 0u);
  CloseAndVerifyWithFreshClient(t);
}

// The objects of a file, which must exist on disk once written and fsync'd.
std::vector<std::string> ObjectPaths(TestCluster& cluster, Client& c, const File& f) {
  std::vector<std::string> paths;
  for (const auto& o : f.layout().objects) paths.push_back(cluster.ObjectPath(c, o.ost, o.oid));
  return paths;
}

bool NoneExist(const std::vector<std::string>& paths) {
  return std::none_of(paths.begin(), paths.end(),
                      [](const std::string& p) { return std::filesystem::exists(p); });
}

TEST_F(IoTest, ObjectsOfARemovedFileAreDestroyedOnTheirOsts) {
  std::mt19937_64 rng(PerTestSeed());
  Twin t = CreateTwin(TestName(), Striped(4, 64 * kKiB));
  ASSERT_TRUE(t.file);
  ASSERT_NO_FATAL_FAILURE(Write(t, 0, RandomBytes(rng, 512 * kKiB)));
  ASSERT_TRUE(client().Fsync(*t.file, false).ok());
  auto paths = ObjectPaths(cluster(), client(), *t.file);
  ASSERT_EQ(paths.size(), 4u);
  for (const auto& p : paths) ASSERT_TRUE(std::filesystem::exists(p)) << p;
  ASSERT_TRUE(client().Close(t.file).ok());
  ASSERT_TRUE(client().Unlink(kRoot, client::kRootIno, TestName()).ok());
  EXPECT_TRUE(PollUntil([&] { return NoneExist(paths); }, std::chrono::seconds(30)))
      << "objects still on the OSTs 30 s after unlink, e.g. " << paths[0];
}

TEST_F(IoTest, FsyncReportsTheSizeToTheMdsBeforeItReturns) {
  // The MDS half of Fsync (size report, then SyncReq) runs beside the OSS
  // syncs; both must be done when it returns.
  std::mt19937_64 rng(PerTestSeed());
  Twin t = CreateTwin(TestName(), Striped(3, 64 * kKiB));
  ASSERT_TRUE(t.file);
  ASSERT_NO_FATAL_FAILURE(Write(t, 0, RandomBytes(rng, 200 * kKiB + 17)));
  ASSERT_TRUE(client().Fsync(*t.file, false).ok());
  auto c2 = cluster().Connect();
  ASSERT_TRUE(c2.ok()) << c2.status().ToString();
  auto attr = (*c2)->GetAttr(kRoot, t.file->ino());
  ASSERT_TRUE(attr.ok()) << attr.status().ToString();
  EXPECT_EQ(attr->size, t.size) << "size seen by another client after fsync, before close";
  EXPECT_TRUE(client().SyncMetadata().ok());
  ASSERT_TRUE(client().Close(t.file).ok());
}

TEST_F(IoTest, AFileUnlinkedWhileOpenKeepsItsDataUntilTheLastClose) {
  std::mt19937_64 rng(PerTestSeed());
  Twin t = CreateTwin(TestName(), Striped(4, 64 * kKiB));
  ASSERT_TRUE(t.file);
  ASSERT_NO_FATAL_FAILURE(Write(t, 0, RandomBytes(rng, 300 * kKiB)));
  ASSERT_TRUE(client().Fsync(*t.file, false).ok());
  auto paths = ObjectPaths(cluster(), client(), *t.file);
  ASSERT_TRUE(client().Unlink(kRoot, client::kRootIno, TestName()).ok());
  EXPECT_EQ(client().Lookup(kRoot, client::kRootIno, TestName()).status().code(), ENOENT);
  ASSERT_NO_FATAL_FAILURE(ExpectWholeFileMatches(client(), *t.file, t));
  ASSERT_NO_FATAL_FAILURE(Write(t, 1000, RandomBytes(rng, 100 * kKiB)));
  ASSERT_NO_FATAL_FAILURE(ExpectWholeFileMatches(client(), *t.file, t));
  ASSERT_TRUE(client().Close(t.file).ok());
  EXPECT_TRUE(PollUntil([&] { return NoneExist(paths); }, std::chrono::seconds(30)))
      << "orphan's objects still on the OSTs 30 s after its last close";
}

}  // namespace
}  // namespace sfs::testing
