// Write-behind through a real sfs-mount (issue 6; client/lib/write_behind.h):
// a write on a write-only handle is answered once copied and reaches the
// OSSes in the background. What must hold: every byte arrives (another mount
// reads them after close), this mount reads its own writes before close,
// a later write to the same bytes lands last, a truncate after pending writes
// gives the right size and bytes, and a write that fails in the background
// is reported by fsync or close, never lost silently.
//
// Mounts use a small window (-o write_behind_kb=256) so that the writers
// also wait for room (back-pressure) during the tests; the last test checks
// the bound itself through libsfs with every OSS stopped.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sys/syscall.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <numeric>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "tests/harness/fixture.h"

namespace sfs::testing {
namespace {

constexpr size_t kStripe = 64 * 1024;
const std::vector<std::string> kWb = {"write_behind_kb=256", "rpc_timeout_ms=1500"};

class FuseWriteBehindTest : public ClusterPerTest {
 protected:
  ClusterOptions Options() override {
    ClusterOptions o;
    o.name = "fuse-wb";
    o.num_oss = 2;
    o.ost_timeout_ms = 2000;
    return o;
  }
  // Mounts n mounts with write-behind on; makes /d with 2 stripes of 64 KiB
  // (one on each OSS).
  void MountAll(int n) {
    for (int i = 0; i < n; ++i) {
      auto m = cluster().Mount({}, kWb);
      ASSERT_TRUE(m.ok()) << m.status().ToString();
      mnt_.push_back(*m);
    }
    auto c = cluster().Connect();
    ASSERT_TRUE(c.ok());
    client_ = std::move(*c);
    ASSERT_EQ(mkdir((mnt_[0] + "/d").c_str(), 0755), 0);
    auto dir = client_->ResolvePath(kRoot, "/d");
    ASSERT_TRUE(dir.ok());
    client::LayoutSpec wide{.stripe_size = kStripe, .stripe_count = 2};
    ASSERT_TRUE(client_->SetLayout(kRoot, dir->ino, wide, false).ok());
  }
  // Writes data at `order` of unaligned pieces of `piece` bytes through fd.
  static void WritePieces(int fd, const std::string& data, size_t piece,
                          const std::vector<size_t>& order) {
    for (size_t i : order) {
      size_t off = i * piece;
      size_t n = std::min(piece, data.size() - off);
      ASSERT_EQ(pwrite(fd, data.data() + off, n, static_cast<off_t>(off)),
                static_cast<ssize_t>(n))
          << strerror(errno);
    }
  }
  static std::string ReadAll(const std::string& path) {
    std::string got;
    EXPECT_TRUE(ReadFile(path, &got)) << path;
    return got;
  }

  std::vector<std::string> mnt_;
  std::unique_ptr<client::Client> client_;
};

TEST_F(FuseWriteBehindTest, ManySmallUnalignedWritesThenCloseAreAllReadByAnotherMount) {
  MountAll(2);
  std::mt19937_64 rng(PerTestSeed());
  auto bytes = RandomBytes(rng, 4 * 1024 * 1024 + 12345);
  std::string data(bytes.begin(), bytes.end());
  constexpr size_t kPiece = 47008;
  std::vector<size_t> order((data.size() + kPiece - 1) / kPiece);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  int fd = open((mnt_[0] + "/d/f").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0) << strerror(errno);
  WritePieces(fd, data, kPiece, order);
  // Rewrites of bytes still in flight land after the first writes.
  for (int round = 0; round < 3; ++round) {
    for (size_t off = 1000; off < 900000; off += 150001) {
      std::string again(5000, static_cast<char>('a' + round));
      ASSERT_EQ(pwrite(fd, again.data(), again.size(), static_cast<off_t>(off)), 5000);
      data.replace(off, again.size(), again);
    }
  }
  ASSERT_EQ(close(fd), 0) << strerror(errno);
  std::string got = ReadAll(mnt_[1] + "/d/f");
  EXPECT_EQ(got.size(), data.size());
  EXPECT_TRUE(SameBytes(got, data)) << "the other mount reads different bytes";
  struct stat st {};
  ASSERT_EQ(stat((mnt_[1] + "/d/f").c_str(), &st), 0);
  EXPECT_EQ(static_cast<size_t>(st.st_size), data.size());
  EXPECT_GE(static_cast<size_t>(st.st_blocks) * 512, data.size()) << "blocks count every write";
}

// Adjacent writes from two handles in file order, as IOR's strided tasks
// send them: gathered into larger OSS calls, every byte in place.
TEST_F(FuseWriteBehindTest, AdjacentWritesFromTwoHandlesAreGatheredWithoutLosingAByte) {
  MountAll(2);
  std::mt19937_64 rng(PerTestSeed());
  auto bytes = RandomBytes(rng, 3 * 1024 * 1024 + 4321);
  std::string data(bytes.begin(), bytes.end());
  const std::string path = mnt_[0] + "/d/f";
  int fds[2] = {open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), -1};
  ASSERT_GE(fds[0], 0) << strerror(errno);
  fds[1] = open(path.c_str(), O_WRONLY);
  ASSERT_GE(fds[1], 0) << strerror(errno);
  constexpr size_t kPiece = 4099;
  for (size_t i = 0, off = 0; off < data.size(); ++i, off += kPiece) {
    size_t n = std::min(kPiece, data.size() - off);
    ASSERT_EQ(pwrite(fds[i % 2], data.data() + off, n, static_cast<off_t>(off)),
              static_cast<ssize_t>(n))
        << strerror(errno);
  }
  ASSERT_EQ(close(fds[0]), 0) << strerror(errno);
  ASSERT_EQ(close(fds[1]), 0) << strerror(errno);
  EXPECT_TRUE(SameBytes(ReadAll(mnt_[1] + "/d/f"), data));
}

TEST_F(FuseWriteBehindTest, ThisMountReadsItsOwnWritesBeforeClose) {
  MountAll(1);
  std::mt19937_64 rng(PerTestSeed());
  auto bytes = RandomBytes(rng, 1024 * 1024 + 777);
  std::string data(bytes.begin(), bytes.end());
  const std::string path = mnt_[0] + "/d/f";
  int wfd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(wfd, 0) << strerror(errno);
  int rfd = open(path.c_str(), O_RDONLY);
  ASSERT_GE(rfd, 0) << strerror(errno);
  std::vector<size_t> order((data.size() + 4095) / 4096);
  std::iota(order.begin(), order.end(), 0);
  WritePieces(wfd, data, 4096, order);
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(static_cast<size_t>(st.st_size), data.size());
  std::string got(data.size(), '\0');
  ASSERT_EQ(pread(rfd, got.data(), got.size(), 0), static_cast<ssize_t>(data.size()))
      << strerror(errno);
  EXPECT_TRUE(SameBytes(got, data)) << "a read through another fd misses pending writes";
  EXPECT_TRUE(SameBytes(ReadAll(path), data)) << "a fresh open misses pending writes";
  close(rfd);
  ASSERT_EQ(close(wfd), 0) << strerror(errno);
}

TEST_F(FuseWriteBehindTest, TruncateAfterPendingWritesGivesTheRightSizeAndBytes) {
  MountAll(2);
  std::mt19937_64 rng(PerTestSeed());
  auto bytes = RandomBytes(rng, 2 * 1024 * 1024);
  std::string data(bytes.begin(), bytes.end());
  const std::string path = mnt_[0] + "/d/f";
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0) << strerror(errno);
  std::vector<size_t> order((data.size() + 9999) / 10000);
  std::iota(order.begin(), order.end(), 0);
  WritePieces(fd, data, 10000, order);
  ASSERT_EQ(ftruncate(fd, 300001), 0) << strerror(errno);
  data.resize(300001);
  struct stat st {};
  ASSERT_EQ(fstat(fd, &st), 0);
  EXPECT_EQ(st.st_size, 300001);
  // Writes after the truncate, behind and past the new end.
  ASSERT_EQ(pwrite(fd, "tail", 4, 500000), 4);
  data.resize(500000, '\0');
  data += "tail";
  ASSERT_EQ(truncate(path.c_str(), 400000), 0) << "truncate by path: " << strerror(errno);
  data.resize(400000);
  ASSERT_EQ(close(fd), 0) << strerror(errno);
  EXPECT_TRUE(SameBytes(ReadAll(path), data));
  std::string other = ReadAll(mnt_[1] + "/d/f");
  EXPECT_EQ(other.size(), data.size());
  EXPECT_TRUE(SameBytes(other, data));
}

// Many small writes to several files at once, from several threads: batches
// go to each OSS as vectored calls (OssRequest.write_v) carrying many files'
// extents in one bulk, adjacent ones merged. Every byte must land in its own
// file at its own offset (a misplaced extent shows as a difference).
TEST_F(FuseWriteBehindTest, ScatteredSmallWritesToManyFilesAtOnceLandInTheirOwnFiles) {
  MountAll(2);
  constexpr int kFiles = 6;
  constexpr size_t kSize = 512 * 1024;
  std::mt19937_64 rng(PerTestSeed());
  std::vector<std::string> want(kFiles);
  std::vector<std::vector<std::pair<size_t, size_t>>> writes(kFiles);  // (offset, length)
  for (int f = 0; f < kFiles; ++f) {
    auto bytes = RandomBytes(rng, kSize);
    want[f].assign(bytes.begin(), bytes.end());
    // 4 KiB-aligned pages, odd-sized pieces and adjacent pairs, in random order.
    for (size_t off = 0; off < kSize;) {
      size_t n = rng() % 3 == 0 ? 1 + rng() % 9000 : 4096 - off % 4096;
      n = std::min(n, kSize - off);
      writes[f].emplace_back(off, n);
      off += n;
    }
    std::shuffle(writes[f].begin(), writes[f].end(), rng);
  }
  std::vector<int> fds(kFiles);
  for (int f = 0; f < kFiles; ++f) {
    fds[f] = open((mnt_[0] + "/d/v" + std::to_string(f)).c_str(), O_WRONLY | O_CREAT, 0644);
    ASSERT_GE(fds[f], 0) << strerror(errno);
  }
  std::vector<std::thread> writers;
  std::atomic<int> failed{0};
  for (int f = 0; f < kFiles; ++f) {
    writers.emplace_back([&, f] {
      for (auto [off, n] : writes[f]) {
        if (pwrite(fds[f], want[f].data() + off, n, static_cast<off_t>(off)) !=
            static_cast<ssize_t>(n)) {
          ++failed;
        }
      }
    });
  }
  for (std::thread& t : writers) t.join();
  EXPECT_EQ(failed, 0);
  for (int f = 0; f < kFiles; ++f) ASSERT_EQ(close(fds[f]), 0) << strerror(errno);
  for (int f = 0; f < kFiles; ++f) {
    EXPECT_TRUE(SameBytes(ReadAll(mnt_[1] + "/d/v" + std::to_string(f)), want[f])) << "file " << f;
  }
}

// The tail of a sequential stream is held back for more writes to gather
// into it (write_behind.h, "Holding"), but only briefly: writes left on an
// open handle, with no close, fsync or read to wait for them, reach the
// OSSes' object files on their own.
TEST_F(FuseWriteBehindTest, AStreamLeftOpenReachesTheOssesWithoutACloseOrFsync) {
  MountAll(1);
  std::mt19937_64 rng(PerTestSeed());
  auto bytes = RandomBytes(rng, 100000);
  const std::string data(bytes.begin(), bytes.end());
  const std::string path = mnt_[0] + "/d/s";
  int fd = open(path.c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_GE(fd, 0) << strerror(errno);
  auto attr = client_->ResolvePath(kRoot, "/d/s");
  ASSERT_TRUE(attr.ok());
  auto layout = client_->GetLayout(kRoot, attr->ino);
  ASSERT_TRUE(layout.ok() && layout->objects.size() == 2u);
  std::vector<size_t> order((data.size() + 9999) / 10000);
  std::iota(order.begin(), order.end(), 0);
  WritePieces(fd, data, 10000, order);  // each continues the last: a stream
  // Object 0 holds file bytes [0, 64 KiB), object 1 the rest.
  const std::string want[2] = {data.substr(0, kStripe), data.substr(kStripe)};
  std::string obj[2];
  bool landed = PollUntil(
      [&] {
        for (int i = 0; i < 2; ++i) {
          const auto& o = layout->objects[i];
          if (!ReadFile(cluster().ObjectPath(*client_, o.ost, o.oid), &obj[i])) return false;
        }
        return obj[0] == want[0] && obj[1] == want[1];
      },
      std::chrono::seconds(10));
  EXPECT_TRUE(landed) << "object sizes " << obj[0].size() << ", " << obj[1].size();
  ASSERT_EQ(close(fd), 0) << strerror(errno);
}

// Writes to the stripes of a killed OSS are acknowledged, then fail in the
// background: a later write on that handle (to a live stripe, which a
// synchronous write would complete), its close and another handle's fsync
// report it. (No process is forked while the fds are open: a child's close
// of an inherited fd is a FLUSH too, and takes the error, as on Linux.)
TEST_F(FuseWriteBehindTest, ABackgroundWriteToAKilledOssFailsAtTheNextWriteCloseAndFsync) {
  MountAll(1);
  const std::string a = mnt_[0] + "/d/a";
  const std::string b = mnt_[0] + "/d/b";
  std::string data(16 * kStripe, 'x');
  ASSERT_TRUE(WriteFile(a, data));
  ASSERT_TRUE(WriteFile(b, data));
  auto attr = client_->ResolvePath(kRoot, "/d/b");
  ASSERT_TRUE(attr.ok());
  auto layout = client_->GetLayout(kRoot, attr->ino);
  ASSERT_TRUE(layout.ok() && layout->objects.size() == 2u);
  int victim = cluster().OssOfOst(*client_, layout->objects[0].ost);
  ASSERT_GE(victim, 0);
  ASSERT_NE(cluster().OssOfOst(*client_, layout->objects[1].ost), victim);
  int fa = open(a.c_str(), O_WRONLY);
  int fb = open(b.c_str(), O_WRONLY);
  ASSERT_GE(fa, 0);
  ASSERT_GE(fb, 0);
  ASSERT_TRUE(cluster().KillOss(victim).ok());
  // Both files have a stripe on each OSS, so both writes reach the dead one.
  std::string y(data.size(), 'y');
  ASSERT_EQ(pwrite(fa, y.data(), y.size(), 0), static_cast<ssize_t>(y.size()))
      << "acknowledged before the OSS answers: " << strerror(errno);
  ASSERT_EQ(pwrite(fb, y.data(), y.size(), 0), static_cast<ssize_t>(y.size()))
      << strerror(errno);
  // fstat waits for the inode's pending writes (GETATTR barrier).
  struct stat st {};
  ASSERT_EQ(fstat(fa, &st), 0);
  ASSERT_EQ(fstat(fb, &st), 0);
  EXPECT_EQ(ErrnoOf(pwrite(fb, "z", 1, kStripe + 3)), EIO)
      << "a write after a failed one reports it (this stripe's OSS is alive)";
  EXPECT_EQ(ErrnoOf(close(fb)), EIO) << "close must report the failed background write";
  EXPECT_EQ(ErrnoOf(fsync(fa)), EIO) << "fsync must report the failed background write";
  close(fa);
}

// Queued small writes go out in batches of OSS calls (many files' writes in
// one round): a batch that meets a killed OSS fails only the writes of files
// with an object there; a file on the live OSS written in between keeps
// every byte and its fsync and close succeed.
TEST_F(FuseWriteBehindTest, ScatteredSmallWritesToTwoFilesFailOnlyOnTheFileWhoseOssIsKilled) {
  MountAll(2);
  ASSERT_EQ(mkdir((mnt_[0] + "/e").c_str(), 0755), 0);
  auto dir = client_->ResolvePath(kRoot, "/e");
  ASSERT_TRUE(dir.ok());
  client::LayoutSpec one{.stripe_size = kStripe, .stripe_count = 1};
  ASSERT_TRUE(client_->SetLayout(kRoot, dir->ino, one, false).ok());
  // Files until one has its object on each OSS.
  std::string on[2];
  for (int i = 0; i < 8 && (on[0].empty() || on[1].empty()); ++i) {
    const std::string name = "/e/f" + std::to_string(i);
    ASSERT_TRUE(WriteFile(mnt_[0] + name, std::string(kStripe, 'x')));
    auto attr = client_->ResolvePath(kRoot, name);
    ASSERT_TRUE(attr.ok());
    auto layout = client_->GetLayout(kRoot, attr->ino);
    ASSERT_TRUE(layout.ok() && layout->objects.size() == 1u);
    int oss = cluster().OssOfOst(*client_, layout->objects[0].ost);
    ASSERT_TRUE(oss == 0 || oss == 1) << oss;
    if (on[oss].empty()) on[oss] = name;
  }
  ASSERT_FALSE(on[0].empty() || on[1].empty()) << "placement never used one of the OSSes";
  int bad = open((mnt_[0] + on[0]).c_str(), O_WRONLY);
  int good = open((mnt_[0] + on[1]).c_str(), O_WRONLY);
  ASSERT_GE(bad, 0);
  ASSERT_GE(good, 0);
  ASSERT_TRUE(cluster().KillOss(0).ok());
  std::mt19937_64 rng(PerTestSeed());
  std::string expect(kStripe, 'x');
  std::vector<size_t> order(kStripe / 4096);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  for (size_t i : order) {  // 4 KiB writes, every other one to each file
    std::string piece(4096, static_cast<char>('a' + i % 26));
    // The dead file's writes start failing once one of them has failed.
    (void)pwrite(bad, piece.data(), piece.size(), static_cast<off_t>(i * 4096));
    ASSERT_EQ(pwrite(good, piece.data(), piece.size(), static_cast<off_t>(i * 4096)), 4096)
        << "the live file's writes are never refused: " << strerror(errno);
    expect.replace(i * 4096, piece.size(), piece);
  }
  EXPECT_EQ(ErrnoOf(fsync(good)), 0) << "no write of the live file may fail";
  EXPECT_EQ(ErrnoOf(fsync(bad)), EIO) << "the killed OSS's file reports its writes";
  EXPECT_EQ(ErrnoOf(close(good)), 0);
  close(bad);
  std::string got = ReadAll(mnt_[1] + on[1]);
  EXPECT_TRUE(SameBytes(got, expect)) << "the other mount reads different bytes";
}

// The window bounds memory: with every OSS stopped, a libsfs writer with a
// 1 MiB window gets exactly four 256 KiB writes acknowledged, then sleeps
// until the OSSes answer again; then all eight land and read back.
TEST_F(FuseWriteBehindTest, AWriterWaitsForRoomOnceTheWindowIsFull) {
  MountAll(1);
  client::Options o;
  o.mds_address = cluster().mds_address();
  o.rpc_timeout = std::chrono::milliseconds(60000);
  o.write_behind_bytes = 1 << 20;
  auto c = client::Client::Connect(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  auto dir = (*c)->ResolvePath(kRoot, "/d");
  ASSERT_TRUE(dir.ok());
  client::Attr a;
  auto f = (*c)->Create(kRoot, dir->ino, "w", 0644, O_WRONLY | O_CREAT, &a);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  std::mt19937_64 rng(PerTestSeed());
  constexpr size_t kWrite = 256 * 1024;
  std::vector<uint8_t> data = RandomBytes(rng, 8 * kWrite);
  for (int i = 0; i < cluster().num_oss(); ++i) ASSERT_TRUE(cluster().KillOss(i, SIGSTOP).ok());
  std::atomic<int> acked{0};
  std::atomic<pid_t> tid{0};
  std::thread writer([&] {
    tid = static_cast<pid_t>(syscall(SYS_gettid));
    for (size_t i = 0; i < 8; ++i) {
      auto n = (*c)->WriteBehind(*f, i * kWrite, std::span(data).subspan(i * kWrite, kWrite));
      if (!n.ok()) return;
      ++acked;
    }
  });
  auto sleeping = [&] {
    std::ifstream st("/proc/self/task/" + std::to_string(tid.load()) + "/stat");
    std::string line;
    std::getline(st, line);
    size_t paren = line.rfind(')');
    return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'S';
  };
  bool full = PollUntil([&] { return tid != 0 && acked == 4 && sleeping(); },
                        std::chrono::seconds(30));
  EXPECT_TRUE(full) << "acknowledged " << acked << " writes of 256 KiB with a 1 MiB window";
  EXPECT_EQ(acked, 4);
  for (int i = 0; i < cluster().num_oss(); ++i) ASSERT_TRUE(cluster().KillOss(i, SIGCONT).ok());
  writer.join();
  EXPECT_EQ(acked, 8);
  ASSERT_TRUE((*c)->Close(*f).ok());
  std::vector<uint8_t> back(data.size());
  auto r = client_->Open(kRoot, a.ino, O_RDONLY, nullptr);
  ASSERT_TRUE(r.ok());
  auto n = client_->Read(**r, 0, back);
  ASSERT_TRUE(n.ok() && *n == data.size()) << n.status().ToString();
  EXPECT_EQ(FirstDifference(back, data), -1);
  (void)client_->Close(*r);
}

}  // namespace
}  // namespace sfs::testing
