// Mirrored layouts (sfs setstripe -N, docs/redundancy.md) through a real
// sfs-mount over real daemons: an IOR-style shared file written by several
// processes while one OSS is SIGKILLed and never restarted completes and
// reads back byte for byte; the copy that missed writes is marked stale at
// the MDS (sfs getstripe says so); once its OSS is back the MDS resyncs it in
// the background (or `sfs mirror resync` does, also under a writer), after
// which the OTHER copy's OSS may die and the data still reads back; a hung
// OSS is failed over within the RPC timeout; bad input gets a one-line error.
//
// Reads must reach the OSSes rather than the page cache: the file's clean
// pages are dropped with posix_fadvise(POSIX_FADV_DONTNEED) before each read.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "common/metrics/http_server.h"
#include "tests/harness/fixture.h"
#include "tests/harness/subprocess.h"

namespace sfs::testing {
namespace {

constexpr size_t kStripe = 64 * 1024;

struct SfsRun {
  int exit = -1;
  std::string out;  // stdout and stderr
};

class FuseMirrorTest : public ClusterPerTest {
 protected:
  ClusterOptions Options() override {
    ClusterOptions o;
    o.name = "fuse-mirror";
    o.num_oss = 3;
    o.ost_timeout_ms = 2000;
    o.metrics = true;  // the resync's progress (sfs_mds_mirror_resync_*)
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
    std::string log = cluster().root() + "/logs/sfs-" + std::to_string(++n) + ".log";
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
    close(fd);
    return got;
  }

  std::string mnt_;
  std::unique_ptr<client::Client> client_;
};

TEST_F(FuseMirrorTest, SharedFileSurvivesAnOssKilledMidRunAndNeverRestarted) {
  ASSERT_EQ(mkdir((mnt_ + "/d").c_str(), 0755), 0);
  SfsRun set = Sfs({"setstripe", "-N", "2", "-c", "2", "-S", "64K", mnt_ + "/d"});
  ASSERT_EQ(set.exit, 0) << set.out;
  SfsRun dir = Sfs({"getstripe", "-d", mnt_ + "/d"});
  EXPECT_NE(dir.out.find("mirror_count:  2"), std::string::npos) << dir.out;

  // IOR-style: kTasks processes, each writing its blocks of every segment
  // (block b of task t at (b * kTasks + t) * kBlock), fsync, close.
  constexpr int kTasks = 4, kSegments = 24;
  constexpr size_t kBlock = 48 * 1024;  // not a stripe multiple: pieces straddle stripes
  const size_t size = size_t{kTasks} * kSegments * kBlock;
  std::mt19937_64 rng(PerTestSeed());
  auto bytes = RandomBytes(rng, size);
  const std::string data(bytes.begin(), bytes.end());
  const std::string path = mnt_ + "/d/shared";
  {
    int fd = open(path.c_str(), O_CREAT | O_WRONLY, 0644);
    ASSERT_GE(fd, 0);
    close(fd);
  }
  client::LayoutSpec l = LayoutOf("/d/shared");
  ASSERT_EQ(l.mirror_count, 2u);
  ASSERT_EQ(l.objects.size(), 4u);
  EXPECT_NE(l.objects[0].ost, l.objects[2].ost);
  EXPECT_NE(l.objects[1].ost, l.objects[3].ost);
  const int victim = cluster().OssOfOst(*client_, l.objects[0].ost);
  ASSERT_GE(victim, 0);

  // Blocks written so far, shared with the children, and whether the OSS is
  // dead yet: each writer holds its second half until it is, so that the OSS
  // dies mid-run however fast the writers are.
  auto* written = static_cast<std::atomic<int>*>(mmap(nullptr, 2 * sizeof(std::atomic<int>),
                                                      PROT_READ | PROT_WRITE,
                                                      MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(written, MAP_FAILED);
  new (written) std::atomic<int>(0);
  std::atomic<int>* killed = new (written + 1) std::atomic<int>(0);
  std::vector<pid_t> kids;
  for (int t = 0; t < kTasks; ++t) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int fd = open(path.c_str(), O_WRONLY);
      if (fd < 0) _exit(10);
      for (int s = 0; s < kSegments; ++s) {
        if (s == kSegments / 2) {
          const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
          while (killed->load() == 0 && std::chrono::steady_clock::now() < give_up) {
            std::this_thread::yield();
          }
        }
        const size_t off = (size_t{static_cast<size_t>(s)} * kTasks + t) * kBlock;
        if (pwrite(fd, data.data() + off, kBlock, static_cast<off_t>(off)) != static_cast<ssize_t>(kBlock)) _exit(11);
        written->fetch_add(1);
      }
      if (fsync(fd) != 0) _exit(12);
      _exit(close(fd) == 0 ? 0 : 13);
    }
    kids.push_back(pid);
  }
  const int total = kTasks * kSegments;
  EXPECT_TRUE(PollUntil([&] { return written->load() >= total / 2; }, std::chrono::seconds(60)));
  const Status kill = cluster().KillOss(victim);
  const int at_kill = written->load();
  killed->store(1);
  ASSERT_TRUE(kill.ok()) << kill.ToString();
  for (pid_t pid : kids) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "a writer failed: status " << status << " (1x = open, write, fsync, close)";
  }
  munmap(written, 2 * sizeof(std::atomic<int>));
  EXPECT_LT(at_kill, total) << "the OSS died after the run, not during it";

  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(static_cast<size_t>(st.st_size), size);
  std::string got = ReadBack(path, size);
  EXPECT_TRUE(SameBytes(got, data)) << "the mirrored file lost data with one OSS down";

  // The killed OSS's copies missed writes: stale at the MDS, and said so.
  client::LayoutSpec after = LayoutOf("/d/shared");
  for (size_t i = 0; i < after.objects.size(); ++i) {
    if (cluster().OssOfOst(*client_, after.objects[i].ost) == victim) {
      EXPECT_TRUE(after.objects[i].stale) << "object " << i;
    } else {
      EXPECT_FALSE(after.objects[i].stale) << "object " << i;
    }
  }
  SfsRun get = Sfs({"getstripe", path});
  EXPECT_EQ(get.exit, 0) << get.out;
  EXPECT_NE(get.out.find("stale"), std::string::npos) << get.out;
  EXPECT_NE(get.out.find("mirror_count:  2"), std::string::npos) << get.out;
}

TEST_F(FuseMirrorTest, ResyncRestoresTheStaleCopyAndThenTheOtherOssMayDie) {
  ASSERT_EQ(mkdir((mnt_ + "/d").c_str(), 0755), 0);
  ASSERT_EQ(Sfs({"setstripe", "--mirror-count", "2", "-c", "1", mnt_ + "/d"}).exit, 0);
  std::mt19937_64 rng(PerTestSeed());
  auto bytes = RandomBytes(rng, 40 * kStripe);
  std::string data(bytes.begin(), bytes.end());
  const std::string path = mnt_ + "/d/f";
  ASSERT_TRUE(WriteFile(path, data.substr(0, 20 * kStripe)));
  client::LayoutSpec l = LayoutOf("/d/f");
  ASSERT_EQ(l.objects.size(), 2u);
  const int a = cluster().OssOfOst(*client_, l.objects[0].ost);
  const int b = cluster().OssOfOst(*client_, l.objects[1].ost);
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  ASSERT_NE(a, b);

  // A down: reads fail over to B; a write goes on and marks A's copy stale.
  ASSERT_TRUE(cluster().KillOss(a).ok());
  EXPECT_TRUE(SameBytes(ReadBack(path, 20 * kStripe), data.substr(0, 20 * kStripe)))
      << "read with copy 0's OSS down";
  {
    int fd = open(path.c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(pwrite(fd, data.data() + 20 * kStripe, 20 * kStripe, 20 * kStripe),
              static_cast<ssize_t>(20 * kStripe)) << strerror(errno);
    std::memcpy(data.data() + 3, "overwritten", 11);  // and an overwrite of old data
    ASSERT_EQ(pwrite(fd, data.data() + 3, 11, 3), 11);
    ASSERT_EQ(fsync(fd), 0) << strerror(errno);
    ASSERT_EQ(close(fd), 0);
  }
  EXPECT_EQ(StaleCount(LayoutOf("/d/f")), 1u);
  EXPECT_TRUE(LayoutOf("/d/f").objects[0].stale);

  // A back: the MDS resyncs A's copy in the background (the writer closed).
  ASSERT_TRUE(cluster().RestartOss(a).ok());
  ASSERT_TRUE(cluster().WaitForOstsUp(3).ok());
  EXPECT_TRUE(PollUntil([&] { return StaleCount(LayoutOf("/d/f")) == 0; }, std::chrono::seconds(30)))
      << "the MDS did not resync the stale copy";
  SfsRun get = Sfs({"getstripe", path});
  EXPECT_EQ(get.out.find("stale"), std::string::npos) << get.out;
  // The MDS's metrics tell the resync's progress: one copy, the whole object.
  Result<std::string> m = metrics::HttpGet(cluster().mds_metrics_address(), "/metrics");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_NE(m->find("\nsfs_mds_mirror_resync_copies_total 1\n"), std::string::npos) << *m;
  EXPECT_NE(m->find("\nsfs_mds_mirror_resync_bytes_total " + std::to_string(40 * kStripe) + "\n"),
            std::string::npos)
      << *m;
  // The file leaves the wanted list just after its layout says ok.
  EXPECT_TRUE(PollUntil(
      [&] {
        auto again = metrics::HttpGet(cluster().mds_metrics_address(), "/metrics");
        return again.ok() &&
               again->find("\nsfs_mds_mirror_resync_pending_files 0\n") != std::string::npos;
      },
      std::chrono::seconds(10)));

  // Now B dies for good: the resynced copy on A alone holds the file, and
  // the mount (which had A's copy as stale) learns it is good from the MDS.
  ASSERT_TRUE(cluster().KillOss(b).ok());
  EXPECT_TRUE(SameBytes(ReadBack(path, data.size()), data)) << "read from the resynced copy alone";
  // And a resync with nothing stale is a no-op.
  SfsRun r = Sfs({"mirror", "resync", "-v", path});
  EXPECT_EQ(r.exit, 0) << r.out;
  EXPECT_NE(r.out.find("0 stale copies resynced"), std::string::npos) << r.out;
}

// The resync list is durable: a copy marked stale before an MDS restart is
// resynced by the restarted MDS once its OSS is back, with nobody asking.
TEST_F(FuseMirrorTest, AStaleCopyMarkedBeforeAnMdsRestartIsResyncedAfterIt) {
  ASSERT_EQ(mkdir((mnt_ + "/r").c_str(), 0755), 0);
  ASSERT_EQ(Sfs({"setstripe", "--mirror-count", "2", "-c", "1", mnt_ + "/r"}).exit, 0);
  std::mt19937_64 rng(PerTestSeed());
  auto bytes = RandomBytes(rng, 8 * kStripe);
  std::string data(bytes.begin(), bytes.end());
  const std::string path = mnt_ + "/r/f";
  ASSERT_TRUE(WriteFile(path, data.substr(0, 4 * kStripe)));
  client::LayoutSpec l = LayoutOf("/r/f");
  ASSERT_EQ(l.objects.size(), 2u);
  const int a = cluster().OssOfOst(*client_, l.objects[0].ost);
  const int b = cluster().OssOfOst(*client_, l.objects[1].ost);
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  ASSERT_TRUE(cluster().KillOss(a).ok());
  {
    int fd = open(path.c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(pwrite(fd, data.data() + 4 * kStripe, 4 * kStripe, 4 * kStripe),
              static_cast<ssize_t>(4 * kStripe)) << strerror(errno);
    ASSERT_EQ(fsync(fd), 0) << strerror(errno);
    ASSERT_EQ(close(fd), 0);
  }
  ASSERT_EQ(StaleCount(LayoutOf("/r/f")), 1u);
  // sfs df and sfs servers say the file system is degraded.
  SfsRun df = Sfs({"df", mnt_});
  EXPECT_NE(df.out.find(" 1 mirrored file(s) with a stale copy (resync pending)"),
            std::string::npos)
      << df.out;
  SfsRun servers = Sfs({"servers", "--json", mnt_});
  EXPECT_NE(servers.out.find("\"degraded_files\":1"), std::string::npos) << servers.out;
  ASSERT_TRUE(cluster().KillMds().ok());
  ASSERT_TRUE(cluster().RestartMds().ok());
  ASSERT_TRUE(cluster().RestartOss(a).ok());
  ASSERT_TRUE(cluster().WaitForOstsUp(3).ok());
  EXPECT_TRUE(PollUntil([&] { return StaleCount(LayoutOf("/r/f")) == 0; }, std::chrono::seconds(30)))
      << "the restarted MDS did not resync the copy marked stale before it";
  EXPECT_TRUE(PollUntil([&] { return Sfs({"df", mnt_}).out.find("degraded") == std::string::npos; },
                        std::chrono::seconds(10)))
      << Sfs({"df", mnt_}).out;
  // The resynced copy alone holds every byte.
  ASSERT_TRUE(cluster().KillOss(b).ok());
  EXPECT_TRUE(SameBytes(ReadBack(path, data.size()), data)) << "read from the resynced copy alone";
}

// `sfs mirror resync` does not mark a copy ok under a writer. The MDS's own
// resyncer may (under the file's range lock, docs/redundancy.md "Under
// writers") and may get there first: then the copy is already ok.
TEST_F(FuseMirrorTest, ResyncByHandRunsUnderAWriterThatKeepsTheFileOpen) {
  ASSERT_EQ(mkdir((mnt_ + "/d").c_str(), 0755), 0);
  ASSERT_EQ(Sfs({"setstripe", "-N", "2", "-c", "1", mnt_ + "/d"}).exit, 0);
  const std::string path = mnt_ + "/d/f";
  std::string data(8 * kStripe, 'a');
  ASSERT_TRUE(WriteFile(path, data));
  client::LayoutSpec l = LayoutOf("/d/f");
  const int a = cluster().OssOfOst(*client_, l.objects[1].ost);
  ASSERT_GE(a, 0);
  int fd = open(path.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(cluster().KillOss(a).ok());
  ASSERT_EQ(pwrite(fd, "bbbb", 4, 100), 4);
  ASSERT_EQ(fsync(fd), 0) << strerror(errno);
  EXPECT_TRUE(LayoutOf("/d/f").objects[1].stale);
  ASSERT_TRUE(cluster().RestartOss(a).ok());
  ASSERT_TRUE(cluster().WaitForOstsUp(3).ok());
  // Under the whole-file lock, with the writer's handle still open. (The
  // MDS's resyncer may have healed it first under the same lock: then
  // nothing is left stale.)
  SfsRun r = Sfs({"mirror", "resync", "-v", path});
  ASSERT_EQ(r.exit, 0) << r.out;
  EXPECT_TRUE(r.out.find("1 stale copy resynced") != std::string::npos ||
              r.out.find("0 stale copies resynced") != std::string::npos)
      << r.out;
  EXPECT_FALSE(LayoutOf("/d/f").objects[1].stale);
  data.replace(100, 4, "bbbb");
  // The writer goes on: its next write reaches the resynced copy too.
  ASSERT_EQ(pwrite(fd, "cccc", 4, 5 * kStripe), 4);
  ASSERT_EQ(fsync(fd), 0) << strerror(errno);
  data.replace(5 * kStripe, 4, "cccc");
  // Copy 0's OSS gone: the resynced copy 1 has both writes, and is read at
  // once (its OSS lifts its fence at the latest at its next heartbeat; the
  // client asks again meanwhile rather than failing the read).
  ASSERT_TRUE(cluster().KillOss(cluster().OssOfOst(*client_, l.objects[0].ost)).ok());
  EXPECT_TRUE(SameBytes(ReadBack(path, data.size()), data));
  EXPECT_EQ(close(fd), 0);
}

TEST_F(FuseMirrorTest, AHungOssIsFailedOverWithinTheRpcTimeout) {
  ASSERT_EQ(mkdir((mnt_ + "/d").c_str(), 0755), 0);
  ASSERT_EQ(Sfs({"setstripe", "-N", "2", "-c", "1", mnt_ + "/d"}).exit, 0);
  std::mt19937_64 rng(PerTestSeed());
  auto bytes = RandomBytes(rng, 16 * kStripe);
  std::string data(bytes.begin(), bytes.end());
  const std::string path = mnt_ + "/d/f";
  ASSERT_TRUE(WriteFile(path, data));
  client::LayoutSpec l = LayoutOf("/d/f");
  const int hung = cluster().OssOfOst(*client_, l.objects[0].ost);
  ASSERT_GE(hung, 0);
  ASSERT_TRUE(cluster().KillOss(hung, SIGSTOP).ok());
  // Reads: each call waits at most min(2 s, 3 s / 2) for the hung copy.
  auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(SameBytes(ReadBack(path, data.size()), data)) << "read with copy 0's OSS hung";
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3))
      << "fail-over took longer than the mount's RPC timeout";
  // Writes: the hung copy is marked stale after one RPC timeout; no error.
  int fd = open(path.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(pwrite(fd, "zz", 2, 7), 2) << strerror(errno);
  EXPECT_EQ(fsync(fd), 0) << strerror(errno);
  EXPECT_EQ(close(fd), 0);
  data.replace(7, 2, "zz");
  EXPECT_TRUE(LayoutOf("/d/f").objects[0].stale);
  ASSERT_TRUE(cluster().KillOss(hung, SIGCONT).ok());
  EXPECT_TRUE(SameBytes(ReadBack(path, data.size()), data)) << "the stale copy was read";
}

TEST_F(FuseMirrorTest, BadInputGetsAOneLineError) {
  ASSERT_EQ(mkdir((mnt_ + "/d").c_str(), 0755), 0);
  // Three OSTs: four copies is out of range, and so is 0 or junk.
  SfsRun four = Sfs({"setstripe", "-N", "4", mnt_ + "/d"});
  EXPECT_EQ(four.exit, 2) << four.out;
  EXPECT_NE(four.out.find("bad mirror count"), std::string::npos) << four.out;
  EXPECT_EQ(Sfs({"setstripe", "-N", "x", mnt_ + "/d"}).exit, 2);
  auto dir = client_->ResolvePath(kRoot, "/d");
  ASSERT_TRUE(dir.ok());
  // More copies than OSTs, through the MDS directly (the CLI checks first).
  client::LayoutSpec too_many;
  too_many.mirror_count = 3;
  too_many.stripe_count = 1;
  ASSERT_TRUE(client_->SetLayout(kRoot, dir->ino, too_many, false).ok()) << "3 copies on 3 OSTs";
  ASSERT_TRUE(cluster().KillOss(0).ok());
  ASSERT_TRUE(cluster().WaitForOstsUp(2).ok());
  client::LayoutSpec again = too_many;
  Status st = client_->SetLayout(kRoot, dir->ino, again, false);
  EXPECT_EQ(st.code(), EINVAL) << st.ToString();
  EXPECT_NE(st.message().find("exceeds the 2 OSTs up"), std::string::npos) << st.message();
  // Creating a file under the 3-copy default with an OST down: EINVAL too.
  int fd = open((mnt_ + "/d/f").c_str(), O_CREAT | O_WRONLY, 0644);
  EXPECT_EQ(fd, -1);
  EXPECT_EQ(errno, EINVAL);
  if (fd >= 0) close(fd);
  ASSERT_TRUE(cluster().RestartOss(0).ok());
  ASSERT_TRUE(cluster().WaitForOstsUp(3).ok());

  // Mirror count on a file with data: EINVAL, and the file keeps its layout.
  ASSERT_TRUE(WriteFile(mnt_ + "/plain", "some data"));
  SfsRun withdata = Sfs({"setstripe", "-N", "2", mnt_ + "/plain"});
  EXPECT_EQ(withdata.exit, 1) << withdata.out;
  EXPECT_NE(withdata.out.find("cannot change its mirror count"), std::string::npos) << withdata.out;
  EXPECT_EQ(std::count(withdata.out.begin(), withdata.out.end(), '\n'), 1) << withdata.out;
  EXPECT_EQ(LayoutOf("/plain").Copies(), 1u);
  auto plain = client_->ResolvePath(kRoot, "/plain");
  ASSERT_TRUE(plain.ok());
  client::LayoutSpec two;
  two.mirror_count = 2;
  EXPECT_EQ(client_->SetLayout(kRoot, plain->ino, two, false).code(), EINVAL);
  // Resync of a file that is not mirrored.
  SfsRun notm = Sfs({"mirror", "resync", mnt_ + "/plain"});
  EXPECT_EQ(notm.exit, 1) << notm.out;
  EXPECT_NE(notm.out.find("not mirrored"), std::string::npos) << notm.out;
}

}  // namespace
}  // namespace sfs::testing
