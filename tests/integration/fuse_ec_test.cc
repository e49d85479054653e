// Erasure-coded layouts (sfs setstripe --ec K+M, docs/redundancy.md) through
// a real sfs-mount over real daemons: a 2+1 file written with whole rows,
// unaligned overwrites, an extending tail and a hole reads back byte for
// byte, and again with one OSS SIGKILLed (rebuilt from the other chunks);
// writes go on with the OSS down and mark its object stale; a hung OSS
// (SIGSTOP) is read around within the RPC timeout; an IOR-style
// shared file written by several processes while an OSS dies reads back;
// a row written in pieces (as the kernel hands a large write over) goes out
// as one full row that reads nothing back; two mounts read-modify-writing the same rows at once leave parity that
// rebuilds the data (the cluster-wide row lock); a truncate inside a row
// keeps parity right; bad input gets a one-line error and exit 2.
//
// Reads must reach the OSSes rather than the page cache: the file's clean
// pages are dropped with posix_fadvise(POSIX_FADV_DONTNEED) before each read.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <set>

#include "common/metrics/http_server.h"
#include "tests/harness/fixture.h"
#include "tests/harness/subprocess.h"
#include "tests/integration/exposition.h"
#include "tests/integration/oss_metrics.h"

namespace sfs::testing {
namespace {

constexpr size_t kChunk = 64 * 1024;  // -S 64K: a 2+1 row is 128 KiB

struct SfsRun {
  int exit = -1;
  std::string out;  // stdout and stderr
};

class FuseEcTest : public ClusterPerTest {
 protected:
  ClusterOptions Options() override {
    ClusterOptions o;
    o.name = "fuse-ec";
    o.num_oss = 4;  // one more than 2+1 needs
    o.cluster_key = true;  // every chunk call carries the MDS-signed capability
    o.ost_timeout_ms = 2000;
    o.metrics = true;  // sfs_oss_read_bytes_total
    return o;
  }

  // Lock requests the MDS has served (EC row locks among them).
  uint64_t LockRequests() { return static_cast<uint64_t>(MdsRequests(cluster(), "lock")); }

  // Bytes of object data the OSSs have read, all of them together.
  uint64_t OssReadBytes() {
    return static_cast<uint64_t>(OssSum(cluster(), "sfs_oss_read_bytes_total"));
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
    std::string log = cluster().root() + "/logs/sfs-ec-" + std::to_string(++n) + ".log";
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

  // An EC 2+1 directory d with 64 KiB chunks.
  void MakeEcDir(const std::string& d) {
    ASSERT_EQ(mkdir((mnt_ + d).c_str(), 0755), 0);
    SfsRun set = Sfs({"setstripe", "--ec", "2+1", "-S", "64K", mnt_ + d});
    ASSERT_EQ(set.exit, 0) << set.out;
  }

  // Reads all of path past the page cache; "" (and a failure) on error.
  static std::string ReadBack(const std::string& path, size_t size) {
    int fd = open(path.c_str(), O_RDONLY);
    EXPECT_GE(fd, 0) << strerror(errno);
    if (fd < 0) return {};
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    std::string got(size, '\0');
    size_t done = 0;
    while (done < size) {
      ssize_t n = pread(fd, got.data() + done, size - done, static_cast<off_t>(done));
      if (n <= 0) {
        ADD_FAILURE() << "read at " << done << ": " << (n < 0 ? strerror(errno) : "EOF");
        close(fd);
        return {};
      }
      done += static_cast<size_t>(n);
    }
    char extra;
    EXPECT_EQ(pread(fd, &extra, 1, static_cast<off_t>(size)), 0) << "bytes past st_size";
    close(fd);
    return got;
  }

  // pwrite of data[off, off + len) into fd and into want (grown as a file grows).
  static void PutAt(int fd, std::string* want, const std::string& data, size_t off, size_t len) {
    ASSERT_EQ(pwrite(fd, data.data() + off, len, static_cast<off_t>(off)),
              static_cast<ssize_t>(len))
        << strerror(errno) << " at " << off;
    if (want->size() < off + len) want->resize(off + len, '\0');
    want->replace(off, len, data, off, len);
  }

  std::string mnt_;
  std::unique_ptr<client::Client> client_;
};

TEST_F(FuseEcTest, FullRowAndUnalignedWritesReadBackAlsoWithAnOssKilled) {
  MakeEcDir("/d");
  SfsRun dir = Sfs({"getstripe", "-d", mnt_ + "/d"});
  EXPECT_NE(dir.out.find("ec:            2+1"), std::string::npos) << dir.out;
  const std::string path = mnt_ + "/d/f";
  std::mt19937_64 rng(PerTestSeed());
  auto bytes = RandomBytes(rng, 3 << 20);
  const std::string data(bytes.begin(), bytes.end());
  std::string want;
  int fd = open(path.c_str(), O_CREAT | O_RDWR, 0644);
  ASSERT_GE(fd, 0) << strerror(errno);
  client::LayoutSpec l = LayoutOf("/d/f");
  ASSERT_EQ(l.ec_data, 2u);
  ASSERT_EQ(l.ec_parity, 1u);
  ASSERT_EQ(l.objects.size(), 3u);
  EXPECT_FALSE(l.capability.empty()) << "the cluster runs without a key";
  std::set<uint32_t> osts;
  for (const auto& o : l.objects) osts.insert(o.ost);
  EXPECT_EQ(osts.size(), 3u) << "the chunks of a row share an OST";

  PutAt(fd, &want, data, 0, 1 << 20);             // 8 whole rows
  PutAt(fd, &want, data, 5000, 70000);            // inside rows 0: read-modify-write
  PutAt(fd, &want, data, 300000, 200000);         // unaligned, across rows
  PutAt(fd, &want, data, (1 << 20), 12345);       // extends, a short last row
  PutAt(fd, &want, data, (2 << 20) + 100, 1000);  // past a hole of ~1 MiB
  ASSERT_EQ(fsync(fd), 0) << strerror(errno);
  ASSERT_EQ(close(fd), 0);
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(static_cast<size_t>(st.st_size), want.size());
  EXPECT_TRUE(SameBytes(ReadBack(path, want.size()), want)) << "healthy read";

  // Object 0 holds data chunk 0 of row 0: with its OSS gone, reads rebuild it.
  const int victim = cluster().OssOfOst(*client_, l.objects[0].ost);
  ASSERT_GE(victim, 0);
  ASSERT_TRUE(cluster().KillOss(victim).ok());
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(SameBytes(ReadBack(path, want.size()), want)) << "degraded read";
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3))
      << "degraded read took longer than the mount's RPC timeout";

  // Writes go on without it: its object is marked stale, reads still right.
  fd = open(path.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  PutAt(fd, &want, data, 70000, 100000);
  PutAt(fd, &want, data, 0, 256 * 1024);  // whole rows with a chunk missing
  EXPECT_EQ(fsync(fd), 0) << strerror(errno);
  EXPECT_EQ(close(fd), 0);
  client::LayoutSpec after = LayoutOf("/d/f");
  ASSERT_EQ(after.objects.size(), 3u);
  EXPECT_TRUE(after.objects[0].stale);
  EXPECT_FALSE(after.objects[1].stale);
  EXPECT_FALSE(after.objects[2].stale);
  SfsRun get = Sfs({"getstripe", path});
  EXPECT_EQ(get.exit, 0) << get.out;
  EXPECT_NE(get.out.find("ec:            2+1"), std::string::npos) << get.out;
  EXPECT_NE(get.out.find("stale"), std::string::npos) << get.out;
  EXPECT_TRUE(SameBytes(ReadBack(path, want.size()), want)) << "read after a degraded write";

  // The OSS comes back: its stale object is still never read.
  ASSERT_TRUE(cluster().RestartOss(victim).ok());
  EXPECT_TRUE(SameBytes(ReadBack(path, want.size()), want)) << "the stale object was read";
}

TEST_F(FuseEcTest, RowsWrittenInPiecesGoOutAsFullRowsThatReadNothingBack) {
  // Every row arrives in four pieces, out of order, one of them written
  // twice (the later bytes must win), as a 4 MiB write(2) reaches the mount
  // as 1 MiB pieces from FUSE threads. Each piece alone would be a
  // read-modify-write of its row: 5 x 32 KiB read per row. Write-behind
  // assembles the row, so the OSSs read nothing (a row may go in part if
  // the machine stalls the writer past the hold: two rows' worth allowed).
  MakeEcDir("/d");
  const std::string path = mnt_ + "/d/pieces";
  constexpr size_t kRow = 2 * kChunk, kPiece = kRow / 4, kRows = 16;
  std::mt19937_64 rng(PerTestSeed());
  auto a = RandomBytes(rng, (kRows + 1) * kRow), b = RandomBytes(rng, (kRows + 1) * kRow);
  const std::string data(a.begin(), a.end()), older(b.begin(), b.end());
  std::string want;
  int fd = open(path.c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0) << strerror(errno);
  const uint64_t read_before = OssReadBytes();
  for (size_t r = 0; r < kRows; ++r) {
    PutAt(fd, &want, older, r * kRow + kPiece, kPiece);
    for (size_t p : {2, 1, 0, 3}) PutAt(fd, &want, data, r * kRow + p * kPiece, kPiece);
  }
  ASSERT_EQ(fsync(fd), 0) << strerror(errno);
  EXPECT_LE(OssReadBytes() - read_before, 2 * kRow)
      << "rows were read-modify-written piece by piece";
  // A row left in part goes at the barrier, read-modify-written.
  PutAt(fd, &want, data, kRows * kRow + kPiece, kPiece);
  ASSERT_EQ(fsync(fd), 0) << strerror(errno);
  ASSERT_EQ(close(fd), 0);
  ASSERT_EQ(want.substr(0, kRows * kRow), data.substr(0, kRows * kRow));
  EXPECT_TRUE(SameBytes(ReadBack(path, want.size()), want)) << "healthy read";
  // Parity is right: without object 0 every row rebuilds its chunk 0.
  client::LayoutSpec l = LayoutOf("/d/pieces");
  const int victim = cluster().OssOfOst(*client_, l.objects[0].ost);
  ASSERT_GE(victim, 0);
  ASSERT_TRUE(cluster().KillOss(victim).ok());
  EXPECT_TRUE(SameBytes(ReadBack(path, want.size()), want)) << "parity disagrees with the data";
}

TEST_F(FuseEcTest, ALoneWriterKeepsItsRowLockAndASecondMountRecallsIt) {
  // 24 row writes, each synced (its own WriteEc): with a lock per write they
  // cost 48 MDS lock requests (lock, unlock). A lone writer keeps the
  // file's range lock, as mirrors do, and asks the MDS once or twice. A
  // second mount's writes recall it; parity stays right for both.
  MakeEcDir("/d");
  constexpr size_t kRow = 2 * kChunk, kRows = 24;
  std::mt19937_64 rng(PerTestSeed());
  auto bytes = RandomBytes(rng, kRows * kRow);
  const std::string data(bytes.begin(), bytes.end());
  std::string want;
  int fd = open((mnt_ + "/d/kept").c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0) << strerror(errno);
  const uint64_t before = LockRequests();
  for (size_t r = 0; r < kRows; ++r) {
    PutAt(fd, &want, data, r * kRow, kRow);
    ASSERT_EQ(fdatasync(fd), 0) << strerror(errno);
  }
  EXPECT_LE(LockRequests() - before, 2u) << "a lock request per row write";
  // Another mount writes every other row, each half of it (read-modify-write).
  auto second = cluster().Mount({}, {"rpc_timeout_ms=3000"});
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  auto other = RandomBytes(rng, kRows * kRow);
  const std::string theirs(other.begin(), other.end());
  int fd2 = open((*second + "/d/kept").c_str(), O_WRONLY);
  ASSERT_GE(fd2, 0) << strerror(errno);
  for (size_t r = 0; r < kRows; r += 2) {
    PutAt(fd2, &want, theirs, r * kRow + kChunk / 2, kChunk);
    ASSERT_EQ(fdatasync(fd2), 0) << strerror(errno);
    PutAt(fd, &want, data, r * kRow + kRow / 2, kChunk / 4);  // the first mount again
    ASSERT_EQ(fdatasync(fd), 0) << strerror(errno);
  }
  ASSERT_EQ(close(fd2), 0);
  ASSERT_EQ(close(fd), 0);
  EXPECT_TRUE(SameBytes(ReadBack(mnt_ + "/d/kept", want.size()), want)) << "healthy read";
  client::LayoutSpec l = LayoutOf("/d/kept");
  const int victim = cluster().OssOfOst(*client_, l.objects[1].ost);
  ASSERT_GE(victim, 0);
  ASSERT_TRUE(cluster().KillOss(victim).ok());
  EXPECT_TRUE(SameBytes(ReadBack(mnt_ + "/d/kept", want.size()), want))
      << "parity disagrees with the data";
}

TEST_F(FuseEcTest, AHungOssIsReadAroundWithinTheRpcTimeout) {
  MakeEcDir("/d");
  const std::string path = mnt_ + "/d/h";
  std::mt19937_64 rng(PerTestSeed());
  auto bytes = RandomBytes(rng, 1 << 20);
  const std::string want(bytes.begin(), bytes.end());
  ASSERT_TRUE(WriteFile(path, want));
  const int hung = cluster().OssOfOst(*client_, LayoutOf("/d/h").objects[0].ost);
  ASSERT_GE(hung, 0);
  ASSERT_TRUE(cluster().KillOss(hung, SIGSTOP).ok());
  // Connections to it stay open and unanswered: each read call waits at
  // most min(2 s, timeout / 2) for it, then rebuilds its chunks.
  const auto t0 = std::chrono::steady_clock::now();
  const std::string got = ReadBack(path, want.size());
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_TRUE(cluster().KillOss(hung, SIGCONT).ok());
  EXPECT_TRUE(SameBytes(got, want)) << "read with an OSS hung";
  EXPECT_LT(took, std::chrono::seconds(3)) << "the read waited out the mount's RPC timeout";
}

TEST_F(FuseEcTest, SharedFileSurvivesAnOssKilledMidRun) {
  MakeEcDir("/d");
  // IOR-style: kTasks processes, each writing its blocks of every segment
  // (block b of task t at (b * kTasks + t) * kBlock). 48 KiB blocks are not
  // row-aligned: neighbouring tasks read-modify-write the same rows at once.
  constexpr int kTasks = 4, kSegments = 24;
  constexpr size_t kBlock = 48 * 1024;
  const size_t size = size_t{kTasks} * kSegments * kBlock;
  std::mt19937_64 rng(PerTestSeed());
  auto bytes = RandomBytes(rng, size);
  const std::string data(bytes.begin(), bytes.end());
  const std::string path = mnt_ + "/d/shared";
  ASSERT_TRUE(WriteFile(path, ""));
  client::LayoutSpec l = LayoutOf("/d/shared");
  ASSERT_EQ(l.objects.size(), 3u);
  const int victim = cluster().OssOfOst(*client_, l.objects[1].ost);
  ASSERT_GE(victim, 0);
  auto* written =
      static_cast<std::atomic<int>*>(mmap(nullptr, sizeof(std::atomic<int>), PROT_READ | PROT_WRITE,
                                          MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(written, MAP_FAILED);
  new (written) std::atomic<int>(0);
  std::vector<pid_t> kids;
  for (int t = 0; t < kTasks; ++t) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int fd = open(path.c_str(), O_WRONLY);
      if (fd < 0) _exit(10);
      for (int s = 0; s < kSegments; ++s) {
        const size_t off = (size_t{static_cast<size_t>(s)} * kTasks + t) * kBlock;
        if (pwrite(fd, data.data() + off, kBlock, static_cast<off_t>(off)) !=
            static_cast<ssize_t>(kBlock))
          _exit(11);
        written->fetch_add(1);
      }
      if (fsync(fd) != 0) _exit(12);
      _exit(close(fd) == 0 ? 0 : 13);
    }
    kids.push_back(pid);
  }
  const int total = kTasks * kSegments;
  EXPECT_TRUE(PollUntil([&] { return written->load() >= total / 3; }, std::chrono::seconds(60)));
  ASSERT_TRUE(cluster().KillOss(victim).ok());
  const int at_kill = written->load();
  for (pid_t pid : kids) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "a writer failed: status " << status << " (1x = open, write, fsync, close)";
  }
  munmap(written, sizeof(std::atomic<int>));
  EXPECT_LT(at_kill, total) << "the OSS died after the run, not during it";
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(static_cast<size_t>(st.st_size), size);
  EXPECT_TRUE(SameBytes(ReadBack(path, size), data)) << "the EC file lost data with one OSS down";
  EXPECT_TRUE(LayoutOf("/d/shared").objects[1].stale);
}

TEST_F(FuseEcTest, TwoMountsReadModifyWritingOneRowLeaveParityRight) {
  MakeEcDir("/d");
  auto second = cluster().Mount({}, {"rpc_timeout_ms=3000"});
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  // Mount A writes data chunk 0 of every row, mount B chunk 1, 8 KiB at a
  // time and in the same order: each write is a read-modify-write of the
  // same columns of the same row the other is updating at that moment.
  constexpr size_t kRows = 24, kPiece = 8 * 1024;
  const size_t size = kRows * 2 * kChunk;
  std::mt19937_64 rng(PerTestSeed());
  auto bytes = RandomBytes(rng, size);
  const std::string data(bytes.begin(), bytes.end());
  const std::string name = "/d/rows";
  ASSERT_TRUE(WriteFile(mnt_ + name, std::string(size, '\0')));
  std::vector<pid_t> kids;
  for (int chunk = 0; chunk < 2; ++chunk) {
    const std::string path = (chunk == 0 ? mnt_ : *second) + name;
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int fd = open(path.c_str(), O_WRONLY);
      if (fd < 0) _exit(10);
      for (size_t r = 0; r < kRows; ++r) {
        for (size_t col = 0; col < kChunk; col += kPiece) {
          const size_t off = r * 2 * kChunk + chunk * kChunk + col;
          if (pwrite(fd, data.data() + off, kPiece, static_cast<off_t>(off)) !=
              static_cast<ssize_t>(kPiece))
            _exit(11);
          if (fdatasync(fd) != 0) _exit(12);  // each write to the OSSs now, not batched
        }
      }
      _exit(close(fd) == 0 ? 0 : 13);
    }
    kids.push_back(pid);
  }
  for (pid_t pid : kids) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a writer failed: " << status;
  }
  EXPECT_TRUE(SameBytes(ReadBack(mnt_ + name, size), data)) << "healthy read";
  // Without object 0 two rows in three rebuild a data chunk from the other
  // and parity: parity computed without the other mount's bytes shows here.
  client::LayoutSpec l = LayoutOf(name);
  const int victim = cluster().OssOfOst(*client_, l.objects[0].ost);
  ASSERT_GE(victim, 0);
  ASSERT_TRUE(cluster().KillOss(victim).ok());
  EXPECT_TRUE(SameBytes(ReadBack(mnt_ + name, size), data)) << "parity disagrees with the data";
}

TEST_F(FuseEcTest, TruncateInsideARowKeepsParityRight) {
  MakeEcDir("/d");
  const std::string path = mnt_ + "/d/t";
  std::mt19937_64 rng(PerTestSeed());
  auto bytes = RandomBytes(rng, 300000);
  std::string want(bytes.begin(), bytes.end());
  ASSERT_TRUE(WriteFile(path, want));
  ASSERT_EQ(truncate(path.c_str(), 150001), 0) << strerror(errno);  // row 1, chunk 0
  want.resize(150001);
  ASSERT_EQ(truncate(path.c_str(), 400000), 0) << strerror(errno);  // a hole after it
  want.resize(400000, '\0');
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(static_cast<size_t>(st.st_size), want.size());
  EXPECT_TRUE(SameBytes(ReadBack(path, want.size()), want)) << "healthy read";
  // Lose the object with data chunk 1 of row 1 (cut to nothing): rebuilt
  // from chunk 0 and parity, it must read as zeros, not the old bytes.
  client::LayoutSpec l = LayoutOf("/d/t");
  const int victim = cluster().OssOfOst(*client_, l.objects[2].ost);  // (1 + 1) mod 3
  ASSERT_GE(victim, 0);
  ASSERT_TRUE(cluster().KillOss(victim).ok());
  EXPECT_TRUE(SameBytes(ReadBack(path, want.size()), want)) << "degraded read after truncate";
}

TEST_F(FuseEcTest, BadInputGetsAOneLineErrorAndExit2) {
  ASSERT_EQ(mkdir((mnt_ + "/d").c_str(), 0755), 0);
  auto one_line = [](const SfsRun& r) { return std::count(r.out.begin(), r.out.end(), '\n') == 1; };
  for (const char* bad : {"0+1", "2+0", "2", "2+x", "+1", "30+3"}) {
    SfsRun r = Sfs({"setstripe", "--ec", bad, mnt_ + "/d"});
    EXPECT_EQ(r.exit, 2) << bad << ": " << r.out;
    EXPECT_TRUE(one_line(r)) << r.out;
    EXPECT_NE(r.out.find("bad EC geometry"), std::string::npos) << r.out;
  }
  SfsRun wide = Sfs({"setstripe", "--ec", "3+2", mnt_ + "/d"});  // 5 > 4 OSTs
  EXPECT_EQ(wide.exit, 2) << wide.out;
  EXPECT_TRUE(one_line(wide)) << wide.out;
  EXPECT_NE(wide.out.find("needs 5 OSTs"), std::string::npos) << wide.out;
  SfsRun both = Sfs({"setstripe", "--ec", "2+1", "-N", "2", mnt_ + "/d"});
  EXPECT_EQ(both.exit, 2) << both.out;
  EXPECT_TRUE(one_line(both)) << both.out;
  SfsRun count = Sfs({"setstripe", "--ec", "2+1", "-c", "2", mnt_ + "/d"});
  EXPECT_EQ(count.exit, 2) << count.out;
  // Nothing of that changed the directory's default.
  EXPECT_EQ(LayoutOf("/d").ec_data, 0u);

  // Straight to the MDS (the CLI checks first): K+M more than the OSTs up.
  auto dir = client_->ResolvePath(kRoot, "/d");
  ASSERT_TRUE(dir.ok());
  client::LayoutSpec ec;
  ec.ec_data = 3;
  ec.ec_parity = 1;
  ASSERT_TRUE(client_->SetLayout(kRoot, dir->ino, ec, false).ok()) << "3+1 on 4 OSTs";
  ASSERT_TRUE(cluster().KillOss(0).ok());
  ASSERT_TRUE(cluster().WaitForOstsUp(3).ok());
  Status st = client_->SetLayout(kRoot, dir->ino, ec, false);
  EXPECT_EQ(st.code(), EINVAL) << st.ToString();
  EXPECT_NE(st.message().find("needs 4 OSTs"), std::string::npos) << st.message();
  // A create under the 3+1 default with an OST down cannot place 4 chunks: EINVAL.
  int fd = open((mnt_ + "/d/f").c_str(), O_CREAT | O_WRONLY, 0644);
  EXPECT_EQ(fd, -1);
  EXPECT_EQ(errno, EINVAL);
  if (fd >= 0) close(fd);
  ASSERT_TRUE(cluster().RestartOss(0).ok());
  ASSERT_TRUE(cluster().WaitForOstsUp(4).ok());

  // EC on a file with data: EINVAL (sfs migrate does that), layout unchanged.
  ASSERT_TRUE(WriteFile(mnt_ + "/plain", "some data"));
  SfsRun withdata = Sfs({"setstripe", "--ec", "2+1", mnt_ + "/plain"});
  EXPECT_EQ(withdata.exit, 2) << withdata.out;
  EXPECT_TRUE(one_line(withdata)) << withdata.out;
  EXPECT_NE(withdata.out.find("sfs migrate"), std::string::npos) << withdata.out;
  EXPECT_EQ(LayoutOf("/plain").ec_data, 0u);
}

}  // namespace
}  // namespace sfs::testing
