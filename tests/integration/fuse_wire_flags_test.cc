// Wire flags through a real sfs-mount (client/fuse/wire_flags.h): the kernel
// takes FUSE_DIRECT_IO_ALLOW_MMAP from the INIT reply and direct-I/O opens
// get FOPEN_PARALLEL_DIRECT_WRITES. What a test can see from outside: the
// mount's log line with the kernel's verdict on each, that writers of one
// file through write-only (direct-I/O, parallel) handles all complete with
// every byte in place, both while they extend the file and while they
// rewrite it, and that -o nowireflags mounts and works with neither. And the
// INIT max_pages (-o max_read_kb, default 4 MiB): a cold sequential read of a
// file striped in 4 MiB units costs one OSS read per stripe unit, where 1 MiB
// READs cost four.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "common/metrics/http_server.h"
#include "tests/harness/fixture.h"
#include "tests/integration/exposition.h"
#include "tests/integration/oss_metrics.h"

namespace sfs::testing {
namespace {

constexpr size_t kMiB = 1 << 20;
constexpr size_t kPiece = 128 * 1024;  // each write(2): several per MiB, so the writers interleave

// True iff the running kernel is at least major.minor.
bool KernelAtLeast(int major, int minor) {
  utsname u{};
  int got_major = 0, got_minor = 0;
  if (uname(&u) != 0 || std::sscanf(u.release, "%d.%d", &got_major, &got_minor) != 2) return false;
  return got_major > major || (got_major == major && got_minor >= minor);
}

class FuseWireFlagsTest : public MountedTest<FuseWireFlagsTest> {
 public:
  static ClusterOptions Options() {
    ClusterOptions o;
    o.name = "fuse-wire";  // 4 OSSes: MountedTest stripes every test's directory 4 wide
    o.metrics = true;      // OSS read requests, for the READ size
    return o;
  }

 protected:
  // The first "wire flags:" line of any mount's log that contains `want`,
  // polled for (the line is written once the INIT reply is out); "" if none.
  std::string WireFlagsLine(const std::string& want) {
    std::string found;
    PollUntil(
        [&] {
          std::error_code ec;
          for (const auto& e : std::filesystem::directory_iterator(cluster().root() + "/logs", ec)) {
            if (e.path().filename().string().rfind("mount", 0) != 0) continue;
            std::string log;
            if (!ReadFile(e.path().string(), &log)) continue;
            for (size_t at = log.find("wire flags: "); at != std::string::npos;
                 at = log.find("wire flags: ", at + 1)) {
              std::string line = log.substr(at, log.find('\n', at) - at);
              if (line.find(want) == std::string::npos) continue;
              found = line;
              return true;
            }
          }
          return false;
        },
        std::chrono::milliseconds(10000));
    return found;
  }

  // Read requests served by all OSSes so far.
  uint64_t OssReads() {
    return static_cast<uint64_t>(OssSum(cluster(), "sfs_oss_requests_total{op=\"read\"}"));
  }

  // Writes [i MiB, i+1 MiB) of path with want's bytes from thread i through
  // its own write-only handle, all threads at once.
  void WriteHalvesAtOnce(const std::string& path, const std::vector<uint8_t>& want) {
    std::vector<std::thread> writers;
    std::vector<int> errors(want.size() / kMiB, 0);
    for (size_t i = 0; i < errors.size(); ++i) {
      writers.emplace_back([&, i] {
        int fd = open(path.c_str(), O_WRONLY);
        if (fd < 0) {
          errors[i] = errno;
          return;
        }
        for (size_t off = i * kMiB; off < (i + 1) * kMiB && errors[i] == 0; off += kPiece) {
          if (pwrite(fd, want.data() + off, kPiece, static_cast<off_t>(off)) !=
              static_cast<ssize_t>(kPiece)) {
            errors[i] = errno;
          }
        }
        if (close(fd) != 0 && errors[i] == 0) errors[i] = errno;
      });
    }
    for (auto& t : writers) t.join();
    for (size_t i = 0; i < errors.size(); ++i) {
      EXPECT_EQ(errors[i], 0) << "writer " << i << ": " << strerror(errors[i]);
    }
  }
};

TEST_F(FuseWireFlagsTest, TheMountLogSaysTheKernelTookBothFlags) {
  if (!KernelAtLeast(6, 6)) GTEST_SKIP() << "FUSE_DIRECT_IO_ALLOW_MMAP needs Linux >= 6.6";
  std::string line = WireFlagsLine("kernel FUSE 7.");
  ASSERT_FALSE(line.empty()) << "no wire flags line in " << cluster().root() << "/logs/mount*";
  EXPECT_NE(line.find("FUSE_DIRECT_IO_ALLOW_MMAP accepted"), std::string::npos) << line;
  EXPECT_NE(line.find("FOPEN_PARALLEL_DIRECT_WRITES accepted"), std::string::npos) << line;
}

TEST_F(FuseWireFlagsTest, AColdSequentialReadCostsOneOssReadPerFourMiBStripeUnit) {
  unsigned limit = 0;
  std::string knob;
  if (ReadFile("/proc/sys/fs/fuse/max_pages_limit", &knob)) limit = std::stoul(knob);
  if (limit < 1024) GTEST_SKIP() << "fs.fuse.max_pages_limit " << limit << " < 1024 (not root?)";
  ASSERT_NE(WireFlagsLine("READ requests up to 4096 KiB").find("pages asked"), std::string::npos);
  auto d = client().ResolvePath(kRoot, rel_);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  client::LayoutSpec l;
  l.stripe_count = 4;
  l.stripe_size = 4 * kMiB;
  ASSERT_TRUE(client().SetLayout(kRoot, d->ino, l, false).ok());
  std::mt19937_64 rng(PerTestSeed());
  std::vector<uint8_t> want = RandomBytes(rng, 32 * kMiB);
  ASSERT_TRUE(WriteFile(P("shard"), std::string(want.begin(), want.end())));
  int fd = Open("shard", O_RDONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);  // cold: every byte from the OSSes
  const uint64_t before = OssReads();
  std::vector<uint8_t> got(want.size());
  for (size_t off = 0; off < got.size(); off += 4 * kMiB) {
    ASSERT_EQ(pread(fd, got.data() + off, 4 * kMiB, static_cast<off_t>(off)), 4 * kMiB) << off;
  }
  const uint64_t reads = OssReads() - before;
  EXPECT_TRUE(got == want);
  // 8 stripe units: 8 reads of 4 MiB; 1 MiB READs would take 32. Readahead
  // may cut a unit once where its window ends, hence the slack.
  EXPECT_GE(reads, 8u);
  EXPECT_LE(reads, 12u);
}

TEST_F(FuseWireFlagsTest, TwoWritersOfDisjointMiBsOfOneFileBothCompleteAndItReadsBack) {
  std::string path = P("shared");
  ASSERT_TRUE(WriteFile(path, ""));
  std::mt19937_64 rng(PerTestSeed());
  // First a fresh file (each write extends it: the kernel serialises those),
  // then a rewrite inside the size (these run side by side).
  for (int round = 0; round < 2; ++round) {
    std::vector<uint8_t> want = RandomBytes(rng, 2 * kMiB);
    WriteHalvesAtOnce(path, want);
    std::string got;
    ASSERT_TRUE(ReadFile(path, &got));
    EXPECT_TRUE(SameBytes(got, std::string(want.begin(), want.end()))) << "round " << round;
  }
}

TEST_F(FuseWireFlagsTest, ASharedMappingOfAReadWriteHandleWorksBesideADirectWriter) {
  std::string path = P("mapped");
  ASSERT_TRUE(WriteFile(path, std::string(64 * 1024, 'a')));
  int writer = open(path.c_str(), O_WRONLY);  // direct I/O
  ASSERT_GE(writer, 0) << strerror(errno);
  int rw = open(path.c_str(), O_RDWR);
  ASSERT_GE(rw, 0) << strerror(errno);
  void* map = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, rw, 0);
  ASSERT_NE(map, MAP_FAILED) << strerror(errno);
  static_cast<char*>(map)[0] = 'm';
  EXPECT_EQ(msync(map, 4096, MS_SYNC), 0) << strerror(errno);
  EXPECT_EQ(pwrite(writer, "w", 1, 8192), 1) << strerror(errno);
  EXPECT_EQ(munmap(map, 4096), 0);
  EXPECT_EQ(close(rw), 0);
  EXPECT_EQ(close(writer), 0);
  std::string got;
  ASSERT_TRUE(ReadFile(path, &got));
  ASSERT_EQ(got.size(), 64u * 1024);
  EXPECT_EQ(got[0], 'm');
  EXPECT_EQ(got[8192], 'w');
}

TEST_F(FuseWireFlagsTest, NowireflagsMountsWithNeitherFlagAndStillWorks) {
  auto m = cluster().Mount({}, {"nowireflags"});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_FALSE(WireFlagsLine("off (-o nowireflags)").empty());
  std::string path = *m + rel_ + "/plain";
  std::string want(3 * kPiece + 17, 'p');
  ASSERT_TRUE(WriteFile(path, want));
  std::string got;
  ASSERT_TRUE(ReadFile(path, &got));
  EXPECT_TRUE(SameBytes(got, want));
  EXPECT_TRUE(cluster().Unmount(*m).ok());
}

}  // namespace
}  // namespace sfs::testing
