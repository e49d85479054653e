// Resync and rebuild of redundant files (docs/redundancy.md "Rebuild") through
// real daemons and FUSE mounts: an EC 4+2 file whose chunk object an OSS missed
// while down is rebuilt by the MDS from the other chunks once that OSS is
// back; an OSS SIGKILLed and never restarted, declared lost with `sfs ost
// lost`, has its EC chunk objects and mirror copies rebuilt onto other OSTs
// (the layout names them, fsck says the files are whole), after which a
// further loss (M more OSSs for 4+2, the other copy for mirror-2) still reads
// back byte for byte; more losses than the code can take are EIO, never
// wrong data; an unknown OST index is a one-line error.
//
// Reads go through a mount made after the rebuild (its layouts are fresh)
// with the page cache dropped first (POSIX_FADV_DONTNEED).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "client/lib/mds_client.h"
#include "common/ondisk/chunk_crc.h"
#include "common/ondisk/ost_dir.h"
#include "tests/harness/fixture.h"
#include "tests/harness/subprocess.h"

namespace sfs::testing {
namespace {

using std::chrono::seconds;

struct SfsRun {
  int exit = -1;
  std::string out;  // stdout and stderr
};

class RebuildTest : public ClusterPerTest {
 protected:
  ClusterOptions Options() override {
    ClusterOptions o;
    o.name = "rebuild";
    o.num_oss = 7;  // 4+2 and one spare OST to rebuild onto
    o.cluster_key = true;
    o.ost_timeout_ms = 2000;
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
    std::string log = cluster().root() + "/logs/sfs-rebuild-" + std::to_string(++n) + ".log";
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

  static size_t NotOk(const client::LayoutSpec& l) {
    size_t n = 0;
    for (const auto& o : l.objects) n += o.stale ? 1 : 0;
    return n;
  }

  void MakeDir(const std::string& d, const std::vector<std::string>& stripe) {
    ASSERT_EQ(mkdir((mnt_ + d).c_str(), 0755), 0);
    std::vector<std::string> args{"setstripe"};
    args.insert(args.end(), stripe.begin(), stripe.end());
    args.push_back(mnt_ + d);
    SfsRun set = Sfs(args);
    ASSERT_EQ(set.exit, 0) << set.out;
  }

  // Reads all of path past the page cache; errno of the first failed read in *err.
  static std::string ReadBack(const std::string& path, size_t size, int* err = nullptr) {
    int fd = open(path.c_str(), O_RDONLY);
    if (fd < 0) {
      if (err) *err = errno;
      return {};
    }
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    std::string got(size, '\0');
    size_t done = 0;
    while (done < size) {
      ssize_t n = pread(fd, got.data() + done, size - done, static_cast<off_t>(done));
      if (n <= 0) {
        if (err) *err = n < 0 ? errno : 0;
        close(fd);
        return got.substr(0, done);
      }
      done += static_cast<size_t>(n);
    }
    close(fd);
    if (err) *err = 0;
    return got;
  }

  std::string Data(size_t size) {
    std::mt19937_64 rng(PerTestSeed());
    auto bytes = RandomBytes(rng, size);
    return std::string(bytes.begin(), bytes.end());
  }

  // Waits for the MDS to have nothing left to rebuild or resync.
  bool RebuildDone() {
    return PollUntil(
        [&] {
          auto s = client_->GetRebuildStatus();
          return s.ok() && s->objects_pending == 0 && s->files_pending == 0;
        },
        std::chrono::seconds(60), std::chrono::milliseconds(100));
  }

  void TearDown() override {
    if (!tmpfs_.empty()) {
      // Its OSS first (the tmpfs holds its open files), then the tmpfs.
      if (cluster().OssRunning(tmpfs_oss_)) (void)cluster().KillOss(tmpfs_oss_);
      umount2(tmpfs_.c_str(), MNT_DETACH);
    }
    ClusterPerTest::TearDown();
  }

  // Moves OSS oss's OST directory onto a tmpfs of `size` ("4m"), its files
  // copied over, and restarts it there: a small disk of its own.
  // Needs root (mount), as oss/store/enospc_test's tmpfs case.
  void PutOstOnTmpfs(int oss, const std::string& size) {
    ASSERT_TRUE(cluster().KillOss(oss).ok());
    const std::string dir = cluster().ost_dir(oss);
    ASSERT_EQ(rename(dir.c_str(), (dir + ".disk").c_str()), 0) << strerror(errno);
    ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
    if (mount("tmpfs", dir.c_str(), "tmpfs", 0, ("size=" + size).c_str()) != 0) {
      GTEST_SKIP() << "cannot mount a tmpfs here (needs root): " << strerror(errno);
    }
    tmpfs_ = dir;
    tmpfs_oss_ = oss;
    std::string out;
    ASSERT_EQ(RunShell("cp -a " + dir + ".disk/. " + dir + "/", &out), 0) << out;
    ASSERT_TRUE(cluster().RestartOss(oss).ok());
  }

  // Flips byte `off` of object (ost, oid) on its OSS's disk and puts the
  // matching crc in its sidecar, so the OSS reads it back without complaint:
  // only the copies' or the parity's agreement can tell.
  void FlipKeepingCrc(uint32_t ost, uint64_t oid, uint64_t off) {
    const std::string obj = cluster().ObjectPath(*client_, ost, oid);
    ASSERT_FALSE(obj.empty());
    int fd = open(obj.c_str(), O_RDWR);
    ASSERT_GE(fd, 0) << obj << ": " << strerror(errno);
    const uint64_t first = ondisk::ChunkFloor(off);
    std::vector<uint8_t> chunk(ondisk::kCrcChunk);
    const ssize_t n = pread(fd, chunk.data(), chunk.size(), static_cast<off_t>(first));
    ASSERT_GT(n, static_cast<ssize_t>(off - first)) << obj;
    chunk.resize(static_cast<size_t>(n));
    chunk[off - first] ^= 0x5a;
    ASSERT_EQ(pwrite(fd, chunk.data() + (off - first), 1, static_cast<off_t>(off)), 1);
    fsync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
    const uint32_t crc = ondisk::ChunkCrc(chunk);
    const ondisk::CrcEntry e{crc, crc};
    const std::vector<uint8_t> raw = ondisk::EncodeCrcEntries(std::span<const ondisk::CrcEntry>(&e, 1));
    const std::string side = ondisk::CrcPath(obj);
    fd = open(side.c_str(), O_RDWR);
    ASSERT_GE(fd, 0) << side << ": " << strerror(errno);
    const off_t at = static_cast<off_t>(first / ondisk::kCrcChunk * ondisk::kCrcEntrySize);
    ASSERT_EQ(pwrite(fd, raw.data(), raw.size(), at), static_cast<ssize_t>(raw.size()));
    fsync(fd);
    close(fd);
  }

  // The MDS's log so far.
  // The stale-copy fence test, on a directory striped as `stripe`.
  void OldLayoutReaderNeverGetsMissedBytes(const std::string& dir,
                                           const std::vector<std::string>& stripe);

  std::string MdsLog() {
    std::string log;
    ReadFile(cluster().root() + "/logs/mds.log", &log);
    return log;
  }

  std::string mnt_;
  std::unique_ptr<client::Client> client_;
  std::string tmpfs_;  // an OST directory on a tmpfs mounted by the test ("": none)
  int tmpfs_oss_ = -1;
};

size_t CountOf(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) ++n;
  return n;
}

// 4+2 with 64 KiB chunks: a row is 256 KiB. 3 MiB + a short tail + a hole.
constexpr size_t kEcSize = (3 << 20) + 70001;

TEST_F(RebuildTest, EcChunkMissedWhileAnOssWasDownIsResyncedWhenItReturns) {
  MakeDir("/e", {"--ec", "4+2", "-S", "64K"});
  const std::string path = mnt_ + "/e/f";
  const std::string first = Data(kEcSize);
  ASSERT_TRUE(WriteFile(path, first));
  client::LayoutSpec l = LayoutOf("/e/f");
  ASSERT_EQ(l.objects.size(), 6u);
  const int away = cluster().OssOfOst(*client_, l.objects[0].ost);
  ASSERT_GE(away, 0);
  ASSERT_TRUE(cluster().KillOss(away).ok());
  // Rewritten while it is away (a new version of every byte): its object goes stale.
  std::string want = first;
  std::reverse(want.begin(), want.end());
  ASSERT_TRUE(WriteFile(path, want));
  EXPECT_EQ(NotOk(LayoutOf("/e/f")), 1u) << "the missed chunk object is not stale";
  ASSERT_TRUE(cluster().RestartOss(away).ok());
  EXPECT_TRUE(PollUntil([&] { return NotOk(LayoutOf("/e/f")) == 0; }, seconds(60)))
      << "the MDS did not resync the stale chunk object";
  auto st = client_->GetRebuildStatus();
  ASSERT_TRUE(st.ok());
  EXPECT_GE(st->objects_done, 1u);
  EXPECT_GT(st->bytes_done, 0u);
  // The resynced object is now needed: two other OSSs die (M = 2), the
  // returned one's chunks must hold the rewritten bytes.
  ASSERT_TRUE(cluster().KillOss(cluster().OssOfOst(*client_, l.objects[1].ost)).ok());
  ASSERT_TRUE(cluster().KillOss(cluster().OssOfOst(*client_, l.objects[2].ost)).ok());
  auto fresh = cluster().Mount({}, {"rpc_timeout_ms=3000"});
  ASSERT_TRUE(fresh.ok());
  EXPECT_TRUE(SameBytes(ReadBack(*fresh + "/e/f", want.size()), want))
      << "the resynced chunk object holds wrong bytes";
}

TEST_F(RebuildTest, LostOstIsRebuiltElsewhereAndAFurtherLossIsSurvived) {
  MakeDir("/e", {"--ec", "4+2", "-S", "64K"});
  MakeDir("/m", {"-N", "2", "-c", "2", "-S", "64K"});
  const std::string ec_data = Data(kEcSize);
  std::string mirror_data = ec_data.substr(0, (2 << 20) + 4321);
  std::reverse(mirror_data.begin(), mirror_data.end());
  ASSERT_TRUE(WriteFile(mnt_ + "/e/f", ec_data));
  ASSERT_TRUE(WriteFile(mnt_ + "/m/f", mirror_data));
  client::LayoutSpec el = LayoutOf("/e/f");
  client::LayoutSpec ml = LayoutOf("/m/f");
  ASSERT_EQ(el.objects.size(), 6u);
  ASSERT_EQ(ml.objects.size(), 4u);
  // The OST holding EC chunk object 0; the mirror file must have a copy there
  // too for the test to cover both: pick an OST they share.
  std::set<uint32_t> ec_osts, m_osts;
  for (const auto& o : el.objects) ec_osts.insert(o.ost);
  for (const auto& o : ml.objects) m_osts.insert(o.ost);
  uint32_t lost = UINT32_MAX;
  for (uint32_t o : m_osts) {
    if (ec_osts.count(o)) lost = o;
  }
  ASSERT_NE(lost, UINT32_MAX) << "6 + 4 objects on 7 OSTs always share one";
  const int victim = cluster().OssOfOst(*client_, lost);
  ASSERT_GE(victim, 0);
  ASSERT_TRUE(cluster().KillOss(victim).ok());  // and never restarted

  SfsRun bad = Sfs({"ost", "lost", "99", "-m", mnt_});
  EXPECT_EQ(bad.exit, 1) << bad.out;
  EXPECT_NE(bad.out.find("no OST 99"), std::string::npos) << bad.out;
  EXPECT_EQ(std::count(bad.out.begin(), bad.out.end(), '\n'), 1) << bad.out;

  SfsRun declare = Sfs({"ost", "lost", std::to_string(lost), "-m", mnt_});
  ASSERT_EQ(declare.exit, 0) << declare.out;
  EXPECT_NE(declare.out.find("2 file(s) to rebuild"), std::string::npos) << declare.out;
  ASSERT_TRUE(RebuildDone()) << Sfs({"rebuild", "status", "-m", mnt_}).out;
  SfsRun status = Sfs({"rebuild", "status", "--json", "-m", mnt_});
  EXPECT_NE(status.out.find("\"lost_osts\":[" + std::to_string(lost) + "]"), std::string::npos)
      << status.out;
  EXPECT_NE(status.out.find("\"objects_pending\":0"), std::string::npos) << status.out;
  SfsRun df = Sfs({"df", mnt_});
  EXPECT_NE(df.out.find("LOST"), std::string::npos) << df.out;

  // Both layouts whole again, none on the lost OST; the EC file's chunks on
  // six distinct OSTs, each mirror stripe's copies on two.
  for (const char* f : {"/e/f", "/m/f"}) {
    client::LayoutSpec l = LayoutOf(f);
    EXPECT_EQ(NotOk(l), 0u) << f;
    std::string desc;
    for (const auto& o : l.objects) {
      EXPECT_NE(o.ost, lost) << f << " still uses the lost OST";
      desc += " " + std::to_string(o.ost) + ":" + std::to_string(o.oid);
    }
    const size_t stripes = l.ec_data != 0 ? 1 : 2;
    for (size_t s = 0; s < stripes; ++s) {
      std::set<uint32_t> osts;
      size_t n = 0;
      for (size_t i = s; i < l.objects.size(); i += stripes, ++n) osts.insert(l.objects[i].ost);
      EXPECT_EQ(osts.size(), n) << f << ": objects of one stripe share an OST:" << desc;
    }
  }

  // A further loss: two more OSSs of the EC file (M = 2), one of which holds
  // the mirror file's other copy of the rebuilt stripe.
  client::LayoutSpec el2 = LayoutOf("/e/f");
  client::LayoutSpec ml2 = LayoutOf("/m/f");
  int rebuilt_m = -1;
  for (size_t i = 0; i < ml.objects.size(); ++i) {
    if (ml.objects[i].ost == lost) rebuilt_m = static_cast<int>(i);
  }
  ASSERT_GE(rebuilt_m, 0);
  const uint32_t partner = ml2.objects[(rebuilt_m + 2) % 4].ost;  // the same stripe's other copy
  std::set<uint32_t> kill{partner};
  for (const auto& o : el2.objects) {
    if (kill.size() >= 2) break;
    bool rebuilt = std::none_of(el.objects.begin(), el.objects.end(),
                                [&](const client::StripeObject& x) { return x.oid == o.oid; });
    // Not an OST of the mirror file: its stripes keep a copy each.
    const bool mirror_ost = std::any_of(ml2.objects.begin(), ml2.objects.end(),
                                        [&](const client::StripeObject& x) { return x.ost == o.ost; });
    if (!rebuilt && !mirror_ost) kill.insert(o.ost);
  }
  ASSERT_EQ(kill.size(), 2u);
  for (uint32_t ost : kill) ASSERT_TRUE(cluster().KillOss(cluster().OssOfOst(*client_, ost)).ok());
  auto fresh = cluster().Mount({}, {"rpc_timeout_ms=3000"});
  ASSERT_TRUE(fresh.ok());
  int merr = 0;
  EXPECT_TRUE(SameBytes(ReadBack(*fresh + "/m/f", mirror_data.size(), &merr), mirror_data))
      << "the rebuilt mirror copy holds wrong bytes; errno " << merr << " killed " << *kill.begin()
      << "," << *kill.rbegin() << " partner " << partner;
  EXPECT_TRUE(SameBytes(ReadBack(*fresh + "/e/f", ec_data.size()), ec_data))
      << "the rebuilt EC chunk object holds wrong bytes";

  // One more EC loss than M: EIO, never wrong bytes.
  size_t ec_down = 0;
  for (const auto& o : el2.objects) ec_down += kill.count(o.ost);
  for (const auto& o : el2.objects) {
    if (ec_down > 2) break;
    if (kill.insert(o.ost).second) {
      ASSERT_TRUE(cluster().KillOss(cluster().OssOfOst(*client_, o.ost)).ok());
      ++ec_down;
    }
  }
  int err = 0;
  std::string got = ReadBack(*fresh + "/e/f", ec_data.size(), &err);
  EXPECT_EQ(err, EIO) << "read " << got.size() << " bytes of a file with 3 of 6 chunks gone";
  EXPECT_TRUE(SameBytes(got, ec_data.substr(0, got.size()))) << "wrong bytes before the EIO";

  // Offline fsck over the MDS and the OSTs still up: every redundant file
  // is whole (the 4+2 file has 3 chunks down but its layout is whole).
  client_.reset();
  ASSERT_TRUE(cluster().KillMds(SIGTERM).ok());
  std::string cmd = SfsBinary() + " fsck --mds-data " + cluster().root() + "/mds";
  std::string out = cmd + "\n";
  EXPECT_EQ(RunShell(cmd, &out), 0) << out;
  EXPECT_EQ(out.find("not fully redundant"), std::string::npos) << out;
}

// A byte flipped in one chunk object's file on an OSS disk: `sfs scrub`
// finds it (the OSS's crc check), queues the object, and the MDS rewrites it
// from the other chunks; scrub is clean after, and the repaired chunk holds
// the right bytes (read with two other OSSs dead, so that it is needed).
TEST_F(RebuildTest, AFlippedByteInOneChunkIsRepairedByScrub) {
  MakeDir("/e", {"--ec", "4+2", "-S", "64K"});
  const std::string want = Data(kEcSize);
  ASSERT_TRUE(WriteFile(mnt_ + "/e/f", want));
  SfsRun clean = Sfs({"scrub", mnt_ + "/e"});
  ASSERT_EQ(clean.exit, 0) << clean.out;
  EXPECT_NE(clean.out.find("scrubbed 1 file(s)"), std::string::npos) << clean.out;
  EXPECT_NE(clean.out.find("0 bad object(s)"), std::string::npos) << clean.out;
  client::LayoutSpec l = LayoutOf("/e/f");
  const std::string obj = cluster().ObjectPath(*client_, l.objects[0].ost, l.objects[0].oid);
  ASSERT_FALSE(obj.empty());
  {
    int fd = open(obj.c_str(), O_RDWR);
    ASSERT_GE(fd, 0) << obj << ": " << strerror(errno);
    uint8_t b = 0;
    ASSERT_EQ(pread(fd, &b, 1, 1000), 1);
    b ^= 0x10;
    ASSERT_EQ(pwrite(fd, &b, 1, 1000), 1);
    fsync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
  }
  SfsRun found = Sfs({"scrub", "-v", mnt_ + "/e"});
  EXPECT_EQ(found.exit, 1) << found.out;
  EXPECT_NE(found.out.find("1 bad object(s)"), std::string::npos) << found.out;
  EXPECT_NE(found.out.find("1 repair(s) queued"), std::string::npos) << found.out;
  EXPECT_NE(found.out.find("object 0 (OST " + std::to_string(l.objects[0].ost)), std::string::npos)
      << found.out;
  ASSERT_TRUE(RebuildDone()) << Sfs({"rebuild", "status", "-m", mnt_}).out;
  EXPECT_EQ(NotOk(LayoutOf("/e/f")), 0u);
  SfsRun again = Sfs({"scrub", mnt_ + "/e"});
  EXPECT_EQ(again.exit, 0) << again.out;
  ASSERT_TRUE(cluster().KillOss(cluster().OssOfOst(*client_, l.objects[1].ost)).ok());
  ASSERT_TRUE(cluster().KillOss(cluster().OssOfOst(*client_, l.objects[2].ost)).ok());
  auto fresh = cluster().Mount({}, {"rpc_timeout_ms=3000"});
  ASSERT_TRUE(fresh.ok());
  EXPECT_TRUE(SameBytes(ReadBack(*fresh + "/e/f", want.size()), want))
      << "the repaired chunk object holds wrong bytes";
}

// The same for a mirror-2 file: the rotted copy is found by scrub and
// resynced from the other, which is then killed: the repaired copy alone
// reads back right.
TEST_F(RebuildTest, AFlippedByteInOneMirrorCopyIsRepairedByScrub) {
  MakeDir("/m", {"-N", "2", "-c", "1"});
  const std::string want = Data((1 << 20) + 333);
  ASSERT_TRUE(WriteFile(mnt_ + "/m/f", want));
  client::LayoutSpec l = LayoutOf("/m/f");
  ASSERT_EQ(l.objects.size(), 2u);
  const std::string obj = cluster().ObjectPath(*client_, l.objects[0].ost, l.objects[0].oid);
  ASSERT_FALSE(obj.empty());
  {
    int fd = open(obj.c_str(), O_RDWR);
    ASSERT_GE(fd, 0) << obj << ": " << strerror(errno);
    uint8_t b = 0;
    ASSERT_EQ(pread(fd, &b, 1, 777777), 1);
    b ^= 0x01;
    ASSERT_EQ(pwrite(fd, &b, 1, 777777), 1);
    fsync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
  }
  SfsRun found = Sfs({"scrub", "-v", mnt_ + "/m"});
  EXPECT_EQ(found.exit, 1) << found.out;
  EXPECT_NE(found.out.find("1 bad object(s)"), std::string::npos) << found.out;
  EXPECT_NE(found.out.find("1 repair(s) queued"), std::string::npos) << found.out;
  ASSERT_TRUE(RebuildDone()) << Sfs({"rebuild", "status", "-m", mnt_}).out;
  EXPECT_EQ(NotOk(LayoutOf("/m/f")), 0u);
  SfsRun again = Sfs({"scrub", mnt_ + "/m"});
  EXPECT_EQ(again.exit, 0) << again.out;
  ASSERT_TRUE(cluster().KillOss(cluster().OssOfOst(*client_, l.objects[1].ost)).ok());
  auto fresh = cluster().Mount({}, {"rpc_timeout_ms=3000"});
  ASSERT_TRUE(fresh.ok());
  EXPECT_TRUE(SameBytes(ReadBack(*fresh + "/m/f", want.size()), want))
      << "the repaired copy holds wrong bytes";
}

// A byte changed in a data chunk with its crc made to match (the OSS cannot
// tell): scrub finds the row's parity disagreeing, finds that chunk 0 alone
// explains it (M = 2), and has that chunk rewritten, not the parity: the file
// then reads back as written, straight from its data chunks.
TEST_F(RebuildTest, ADataChunkThatDisagreesWithItsParityIsTheOneRepaired) {
  MakeDir("/e", {"--ec", "4+2", "-S", "64K"});
  const std::string want = Data(kEcSize);
  ASSERT_TRUE(WriteFile(mnt_ + "/e/f", want));
  client::LayoutSpec l = LayoutOf("/e/f");
  ASSERT_EQ(l.objects.size(), 6u);
  ASSERT_NO_FATAL_FAILURE(FlipKeepingCrc(l.objects[0].ost, l.objects[0].oid, 5000));  // row 0, D0
  SfsRun found = Sfs({"scrub", "-v", mnt_ + "/e"});
  EXPECT_EQ(found.exit, 1) << found.out;
  EXPECT_NE(found.out.find("1 bad object(s), 1 mismatch(es), 1 repair(s) queued"), std::string::npos)
      << found.out;
  EXPECT_NE(found.out.find("row 0: chunk 0 (object 0) disagrees"), std::string::npos) << found.out;
  ASSERT_TRUE(RebuildDone()) << Sfs({"rebuild", "status", "-m", mnt_}).out;
  EXPECT_EQ(NotOk(LayoutOf("/e/f")), 0u);
  SfsRun again = Sfs({"scrub", mnt_ + "/e"});
  EXPECT_EQ(again.exit, 0) << again.out;
  auto fresh = cluster().Mount({}, {"rpc_timeout_ms=3000"});
  ASSERT_TRUE(fresh.ok());
  EXPECT_TRUE(SameBytes(ReadBack(*fresh + "/e/f", want.size()), want))
      << "scrub repaired the parity from a wrong data chunk";
}

// Three copies, the first changed (crc matching): the other two outvote it,
// so the first, not the others, is rewritten; it alone then reads back right.
TEST_F(RebuildTest, AMirrorCopyOutvotedByTheOthersIsTheOneRepaired) {
  MakeDir("/m", {"-N", "3", "-c", "1"});
  const std::string want = Data((1 << 20) + 333);
  ASSERT_TRUE(WriteFile(mnt_ + "/m/f", want));
  client::LayoutSpec l = LayoutOf("/m/f");
  ASSERT_EQ(l.objects.size(), 3u);
  ASSERT_NO_FATAL_FAILURE(FlipKeepingCrc(l.objects[0].ost, l.objects[0].oid, 654321));
  SfsRun found = Sfs({"scrub", "-v", mnt_ + "/m"});
  EXPECT_EQ(found.exit, 1) << found.out;
  EXPECT_NE(found.out.find("1 bad object(s), 1 mismatch(es), 1 repair(s) queued"), std::string::npos)
      << found.out;
  EXPECT_NE(found.out.find("stripe 0 copy 0 differs from copy 1"), std::string::npos) << found.out;
  ASSERT_TRUE(RebuildDone()) << Sfs({"rebuild", "status", "-m", mnt_}).out;
  EXPECT_EQ(NotOk(LayoutOf("/m/f")), 0u);
  SfsRun again = Sfs({"scrub", mnt_ + "/m"});
  EXPECT_EQ(again.exit, 0) << again.out;
  ASSERT_TRUE(cluster().KillOss(cluster().OssOfOst(*client_, l.objects[1].ost)).ok());
  ASSERT_TRUE(cluster().KillOss(cluster().OssOfOst(*client_, l.objects[2].ost)).ok());
  auto fresh = cluster().Mount({}, {"rpc_timeout_ms=3000"});
  ASSERT_TRUE(fresh.ok());
  EXPECT_TRUE(SameBytes(ReadBack(*fresh + "/m/f", want.size()), want))
      << "the outvoted copy was not repaired";
}

// Two mounts writing overlapping unaligned ranges of one EC stripe at once
// leave data and parity consistent: scrub finds nothing.
TEST_F(RebuildTest, ScrubIsCleanAfterTwoMountsWriteOneEcStripe) {
  MakeDir("/e", {"--ec", "4+2", "-S", "64K"});
  const std::string data = Data(1 << 20);
  ASSERT_TRUE(WriteFile(mnt_ + "/e/f", data));
  auto second = cluster().Mount({}, {"rpc_timeout_ms=3000"});
  ASSERT_TRUE(second.ok());
  auto writer = [&](const std::string& m, int seed) {
    int fd = open((m + "/e/f").c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    std::mt19937_64 rng(PerTestSeed() + seed);
    for (int i = 0; i < 60; ++i) {
      const size_t off = rng() % (300 * 1024);  // rows 0 and 1 only: they collide
      const size_t len = 1 + rng() % 50000;
      ASSERT_EQ(pwrite(fd, data.data() + (rng() % 4096), len, static_cast<off_t>(off)),
                static_cast<ssize_t>(len));
    }
    EXPECT_EQ(fsync(fd), 0);
    close(fd);
  };
  std::thread a([&] { writer(mnt_, 1); });
  std::thread b([&] { writer(*second, 2); });
  a.join();
  b.join();
  SfsRun scrub = Sfs({"scrub", "-v", mnt_ + "/e"});
  EXPECT_EQ(scrub.exit, 0) << scrub.out;
  EXPECT_NE(scrub.out.find("0 bad object(s), 0 mismatch(es)"), std::string::npos) << scrub.out;
  EXPECT_NE(scrub.out.find("scrubbed 1 file(s) (0 busy"), std::string::npos) << scrub.out;
}

// Two mounts writing overlapping ranges of one mirrored file at once, each
// its own bytes: every copy ends up with the same bytes (each copy got the
// writes of both mounts in one order), byte for byte on the OSSes' disks,
// and scrub finds nothing.
TEST_F(RebuildTest, TwoMountsWritingOverlappingRangesOfAMirroredFileLeaveItsCopiesEqual) {
  MakeDir("/mw", {"-N", "2", "-c", "1"});
  constexpr size_t kSpan = 64 << 10;  // every write falls in here: they collide
  ASSERT_TRUE(WriteFile(mnt_ + "/mw/f", Data(kSpan)));
  auto second = cluster().Mount({}, {"rpc_timeout_ms=3000"});
  ASSERT_TRUE(second.ok());
  auto writer = [&](const std::string& m, int seed, int flags) {
    int fd = open((m + "/mw/f").c_str(), flags);
    ASSERT_GE(fd, 0) << strerror(errno);
    const std::string mine(kSpan, static_cast<char>('a' + seed));
    std::mt19937_64 rng(PerTestSeed() + seed);
    for (int i = 0; i < 300; ++i) {
      const size_t off = rng() % (kSpan - 1);
      const size_t len = 1 + rng() % std::min<size_t>(16 << 10, kSpan - off);
      ASSERT_EQ(pwrite(fd, mine.data(), len, static_cast<off_t>(off)), static_cast<ssize_t>(len));
    }
    EXPECT_EQ(fsync(fd), 0);
    close(fd);
  };
  // One through write-behind (O_WRONLY), one written through (O_RDWR).
  std::thread a([&] { writer(mnt_, 1, O_WRONLY); });
  std::thread b([&] { writer(*second, 2, O_RDWR); });
  a.join();
  b.join();
  client::LayoutSpec l = LayoutOf("/mw/f");
  ASSERT_EQ(l.objects.size(), 2u);
  EXPECT_EQ(NotOk(l), 0u);
  std::string copy[2];
  for (int c = 0; c < 2; ++c) {
    const std::string obj = cluster().ObjectPath(*client_, l.objects[c].ost, l.objects[c].oid);
    ASSERT_FALSE(obj.empty());
    ASSERT_TRUE(ReadFile(obj, &copy[c])) << obj;
  }
  ASSERT_EQ(copy[0].size(), kSpan);
  ASSERT_EQ(copy[1].size(), kSpan);
  size_t differ = 0;
  for (size_t i = 0; i < kSpan; ++i) differ += copy[0][i] != copy[1][i];
  EXPECT_EQ(differ, 0u) << "the copies differ in " << differ << " bytes";
  SfsRun scrub = Sfs({"scrub", "-v", mnt_ + "/mw"});
  EXPECT_EQ(scrub.exit, 0) << scrub.out;
  EXPECT_NE(scrub.out.find("0 bad object(s), 0 mismatch(es)"), std::string::npos) << scrub.out;
}

// The stale-copy fence (docs/redundancy.md): a client that fetched the
// layout before a copy was marked stale, and never noticed its OSS was
// away, reads the other copy once the OSS is back, not the bytes it missed;
// after the resync the copy holds the new bytes and is served again.
TEST_F(RebuildTest, AClientWithAnOldLayoutNeverReadsACopyThatMissedWrites) {
  OldLayoutReaderNeverGetsMissedBytes("/sf", {"-N", "2", "-c", "1"});
}

// The same for an EC 4+2 file: the reader's chunk 0 is refused and rebuilt
// from the others.
TEST_F(RebuildTest, AClientWithAnOldLayoutNeverReadsAnEcChunkThatMissedWrites) {
  OldLayoutReaderNeverGetsMissedBytes("/se", {"--ec", "4+2", "-S", "64K"});
}

void RebuildTest::OldLayoutReaderNeverGetsMissedBytes(const std::string& dir,
                                                      const std::vector<std::string>& stripe) {
  MakeDir(dir, stripe);
  const std::string rel = dir + "/f";
  constexpr size_t kSize = 256 << 10;
  const std::string first = Data(kSize);
  std::string second = first;
  std::reverse(second.begin(), second.end());
  ASSERT_TRUE(WriteFile(mnt_ + rel, first));
  // The reader: a libsfs client with the layout as it is now (both copies ok).
  auto attr = client_->ResolvePath(kRoot, rel);
  ASSERT_TRUE(attr.ok());
  client::Attr a;
  auto reader = client_->Open(kRoot, attr->ino, O_RDONLY, &a);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  std::vector<uint8_t> got(kSize);
  ASSERT_TRUE(client_->Read(**reader, 0, got).ok());
  ASSERT_TRUE(SameBytes(std::string(got.begin(), got.end()), first));
  // Its reads of offset 0 go to copy 0 first: that copy's OSS goes away.
  const client::StripeObject x = (*reader)->layout().objects[0];
  const int away = cluster().OssOfOst(*client_, x.ost);
  ASSERT_GE(away, 0);
  // A writer through the mount holds the file open (no resync meanwhile).
  int fd = open((mnt_ + rel).c_str(), O_RDWR);
  ASSERT_GE(fd, 0) << strerror(errno);
  ASSERT_TRUE(cluster().KillOss(away).ok());
  ASSERT_EQ(pwrite(fd, second.data(), kSize, 0), static_cast<ssize_t>(kSize)) << strerror(errno);
  ASSERT_EQ(fsync(fd), 0) << strerror(errno);
  ASSERT_EQ(NotOk(LayoutOf(rel)), 1u) << "the missed copy is not marked stale";
  // The MDS resyncs a file open for write under its whole redundancy range
  // lock: holding that lock here keeps the stale copy stale while the old
  // layout's reader reads (without it the resyncer, once the OSS is back,
  // could heal the copy first and the reads below would prove nothing).
  auto io = rpc::IoContext::Create(1);
  client::MdsClient mds(io->MakeTcpChannel(cluster().mds_address()), 0x5eed5eed,
                        std::chrono::milliseconds(10000));
  client::LockArgs hold;
  hold.ino = attr->ino;
  hold.owner = 0x0ed;
  hold.ec_rows = true;  // the redundancy lock space
  hold.lock.type = F_WRLCK;
  hold.wait = true;
  auto held = mds.Lock(hold, std::chrono::milliseconds(5000));
  ASSERT_TRUE(held.ok()) << held.status().ToString();
  ASSERT_TRUE(cluster().RestartOss(away).ok());
  const std::string log = cluster().root() + "/logs/oss" + std::to_string(away) + ".log";
  auto fenced = [&](const std::string& n) {
    std::string text;
    return ReadFile(log, &text) &&
           text.find("stale-copy fence: " + n + " object(s)") != std::string::npos;
  };
  ASSERT_TRUE(PollUntil([&] { return fenced("1"); }, seconds(30)))
      << "the returned OSS never learnt its copy is stale";
  // The copy on its disk really holds the old bytes: reading it would be wrong.
  std::string on_disk;
  ASSERT_TRUE(ReadFile(cluster().ObjectPath(*client_, x.ost, x.oid), &on_disk));
  // (Object 0 is the whole of a copy, or chunk 0 of an EC row: the first bytes.)
  ASSERT_FALSE(on_disk.empty());
  ASSERT_TRUE(SameBytes(on_disk, first.substr(0, on_disk.size())))
      << "the away copy is not the old one (test premise)";
  for (int round = 0; round < 2; ++round) {
    std::fill(got.begin(), got.end(), 0);
    auto r = client_->Read(**reader, 0, got);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(SameBytes(std::string(got.begin(), got.end()), second))
        << "round " << round << ": the old layout's reader got the bytes the copy missed";
  }
  // Closed: the MDS resyncs the copy, lifts the fence, and it holds the new bytes.
  hold.lock.type = F_UNLCK;
  hold.wait = false;
  ASSERT_TRUE(mds.Lock(hold, std::chrono::milliseconds(5000)).ok());
  ASSERT_EQ(close(fd), 0);
  EXPECT_TRUE(PollUntil([&] { return NotOk(LayoutOf(rel)) == 0; }, seconds(60)));
  EXPECT_TRUE(PollUntil([&] { return fenced("0"); }, seconds(30))) << "the fence was not lifted";
  ASSERT_TRUE(ReadFile(cluster().ObjectPath(*client_, x.ost, x.oid), &on_disk));
  ASSERT_FALSE(on_disk.empty());
  EXPECT_TRUE(SameBytes(on_disk, second.substr(0, on_disk.size())));
}

// Resync under a writer (docs/redundancy.md "Resync"): a mirrored file a
// job keeps open and goes on writing gets its stale copy resynced anyway
// (the MDS holds the file's mirror-range lock for the copy), and the writer
// writes the resynced copy from its next write on (its next grant carries
// the new copy generation): the copies end byte-equal and scrub is clean.
TEST_F(RebuildTest, AMirroredFileKeptOpenAndWrittenIsResyncedUnderItsWriter) {
  MakeDir("/rw", {"-N", "2", "-c", "1"});
  constexpr size_t kSize = 256 << 10;
  ASSERT_TRUE(WriteFile(mnt_ + "/rw/f", Data(kSize)));
  const client::LayoutSpec l = LayoutOf("/rw/f");
  ASSERT_EQ(l.objects.size(), 2u);
  const int away = cluster().OssOfOst(*client_, l.objects[0].ost);
  ASSERT_GE(away, 0);
  int fd = open((mnt_ + "/rw/f").c_str(), O_RDWR);
  ASSERT_GE(fd, 0) << strerror(errno);
  ASSERT_TRUE(cluster().KillOss(away).ok());
  const std::string second(kSize, 's');
  ASSERT_EQ(pwrite(fd, second.data(), kSize, 0), static_cast<ssize_t>(kSize)) << strerror(errno);
  ASSERT_EQ(fsync(fd), 0) << strerror(errno);
  ASSERT_EQ(NotOk(LayoutOf("/rw/f")), 1u) << "the missed copy is not marked stale";
  ASSERT_TRUE(cluster().RestartOss(away).ok());
  // The writer keeps writing through the resync and after it.
  std::atomic<bool> resynced{false}, stop{false};
  std::atomic<int> after{0}, failed{0};
  std::thread writer([&] {
    std::mt19937_64 rng(PerTestSeed());
    std::string buf(16 << 10, '\0');
    for (int i = 0; !stop.load(); ++i) {
      const size_t off = rng() % (kSize - buf.size());
      const size_t len = 1 + rng() % buf.size();
      std::fill(buf.begin(), buf.begin() + len, static_cast<char>('a' + i % 26));
      const bool was = resynced.load();
      if (pwrite(fd, buf.data(), len, static_cast<off_t>(off)) != static_cast<ssize_t>(len)) {
        failed.fetch_add(1);
        return;
      }
      if (was) after.fetch_add(1);
    }
  });
  bool done = PollUntil([&] { return NotOk(LayoutOf("/rw/f")) == 0; }, seconds(60));
  resynced.store(true);
  EXPECT_TRUE(done) << "a file kept open for write was never resynced";
  EXPECT_TRUE(PollUntil([&] { return after.load() >= 50 || failed.load() > 0; }, seconds(60)));
  stop.store(true);
  writer.join();
  EXPECT_EQ(failed.load(), 0) << "a write failed during the resync";
  ASSERT_EQ(fsync(fd), 0) << strerror(errno);
  std::string copy[2];
  for (int c = 0; c < 2; ++c) {
    const std::string obj = cluster().ObjectPath(*client_, l.objects[c].ost, l.objects[c].oid);
    ASSERT_FALSE(obj.empty());
    ASSERT_TRUE(ReadFile(obj, &copy[c])) << obj;
  }
  ASSERT_EQ(copy[0].size(), copy[1].size());
  size_t differ = 0;
  for (size_t i = 0; i < copy[0].size(); ++i) differ += copy[0][i] != copy[1][i];
  EXPECT_EQ(differ, 0u) << "the copies differ in " << differ << " bytes: the writer did not "
                           "write the resynced copy, or the copy raced a write";
  EXPECT_EQ(NotOk(LayoutOf("/rw/f")), 0u);
  ASSERT_EQ(close(fd), 0);
  SfsRun scrub = Sfs({"scrub", "-v", mnt_ + "/rw"});
  EXPECT_EQ(scrub.exit, 0) << scrub.out;
  EXPECT_NE(scrub.out.find("0 bad object(s), 0 mismatch(es)"), std::string::npos) << scrub.out;
}

// Every copy of one stripe lost: that stripe reads EIO, the other stripe
// reads right (never wrong bytes), the rest is rebuilt, and the file stays on
// the list with its unrecoverable objects (the rebuild cannot invent them).
TEST_F(RebuildTest, LosingEveryCopyOfAStripeIsEioForExactlyThatStripe) {
  constexpr size_t kUnit = 64 * 1024;
  MakeDir("/m", {"-N", "2", "-c", "2", "-S", "64K"});
  const std::string want = Data(8 * kUnit);
  ASSERT_TRUE(WriteFile(mnt_ + "/m/f", want));
  client::LayoutSpec l = LayoutOf("/m/f");
  ASSERT_EQ(l.objects.size(), 4u);
  const uint32_t a = l.objects[0].ost, b = l.objects[2].ost;  // stripe 0's copies
  ASSERT_NE(a, b);
  ASSERT_FALSE(std::set<uint32_t>({a, b}) == std::set<uint32_t>({l.objects[1].ost, l.objects[3].ost}))
      << "both stripes on the same two OSTs";
  // Both dead before either is declared (a copy pulled from an OSS that dies
  // mid-pull waits out the pulling OSS's timeout before it is tried again).
  for (uint32_t ost : {a, b}) ASSERT_TRUE(cluster().KillOss(cluster().OssOfOst(*client_, ost)).ok());
  for (uint32_t ost : {a, b}) {
    SfsRun r = Sfs({"ost", "lost", std::to_string(ost), "-m", mnt_});
    ASSERT_EQ(r.exit, 0) << r.out;
  }
  // Stripe 1's copies on a or b (if any) are rebuilt; stripe 0's two stay lost.
  EXPECT_TRUE(PollUntil([&] { return NotOk(LayoutOf("/m/f")) == 2; }, seconds(60)));
  client::LayoutSpec after = LayoutOf("/m/f");
  EXPECT_TRUE(after.objects[0].stale && after.objects[2].stale);
  EXPECT_TRUE(after.objects[0].lost && after.objects[2].lost);
  auto fresh = cluster().Mount({}, {"rpc_timeout_ms=3000"});
  ASSERT_TRUE(fresh.ok());
  int fd = open((*fresh + "/m/f").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  for (size_t u = 0; u < 8; ++u) {
    std::string got(kUnit, '\0');
    errno = 0;
    ssize_t n = pread(fd, got.data(), kUnit, static_cast<off_t>(u * kUnit));
    if (u % 2 == 0) {
      EXPECT_EQ(n, -1) << "unit " << u << " of the lost stripe returned bytes";
      EXPECT_EQ(errno, EIO) << "unit " << u;
    } else {
      ASSERT_EQ(n, static_cast<ssize_t>(kUnit)) << "unit " << u << ": " << strerror(errno);
      EXPECT_TRUE(SameBytes(got, want.substr(u * kUnit, kUnit))) << "unit " << u;
    }
  }
  close(fd);
  auto st = client_->GetRebuildStatus();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->files_pending, 1u);
  EXPECT_EQ(st->objects_pending, 2u);
}

// A full OST during rebuild: the one OST a lost chunk object can go to (the
// only one its file does not use) is a small tmpfs, filled up but for 1 MiB,
// less than the 1.5 MiB object. The rebuild pauses, saying so in `sfs rebuild
// status` and once in the MDS log, and goes on by itself when a file on that
// disk is removed; the rebuilt chunk then holds the right bytes.
TEST_F(RebuildTest, ARebuildOntoAFullOstPausesAndResumesWhenSpaceAppears) {
  MakeDir("/e", {"--ec", "4+2", "-S", "64K"});
  const std::string want = Data(6 << 20);  // 24 rows: 1.5 MiB per chunk object
  ASSERT_TRUE(WriteFile(mnt_ + "/e/f", want));
  client::LayoutSpec l = LayoutOf("/e/f");
  ASSERT_EQ(l.objects.size(), 6u);
  std::set<uint32_t> used;
  for (const auto& o : l.objects) used.insert(o.ost);
  uint32_t spare = 0;
  while (used.count(spare)) ++spare;
  const int spare_oss = cluster().OssOfOst(*client_, spare);
  ASSERT_GE(spare_oss, 0);
  ASSERT_NO_FATAL_FAILURE(PutOstOnTmpfs(spare_oss, "4m"));
  if (IsSkipped()) return;
  const std::string filler = tmpfs_ + "/filler";
  {
    int fd = open(filler.c_str(), O_WRONLY | O_CREAT, 0644);
    ASSERT_GE(fd, 0);
    const std::string block(64 << 10, 'x');
    off_t size = 0;
    for (ssize_t n; (n = write(fd, block.data(), block.size())) > 0;) size += n;
    EXPECT_EQ(errno, ENOSPC);
    ASSERT_EQ(ftruncate(fd, size - (1 << 20)), 0);  // 1 MiB left
    close(fd);
  }
  ASSERT_TRUE(PollUntil(
      [&] {
        auto osts = client_->ListOsts();
        return osts.ok() && spare < osts->size() && (*osts)[spare].up &&
               (*osts)[spare].avail_bytes < (3u << 19);
      },
      seconds(30)))
      << "the MDS never heard that OST " << spare << " is nearly full";
  ASSERT_TRUE(cluster().KillOss(cluster().OssOfOst(*client_, l.objects[0].ost)).ok());
  SfsRun declare = Sfs({"ost", "lost", std::to_string(l.objects[0].ost), "-m", mnt_});
  ASSERT_EQ(declare.exit, 0) << declare.out;
  const std::string paused = "OST " + std::to_string(spare) + " is full";
  ASSERT_TRUE(PollUntil(
      [&] {
        auto s = client_->GetRebuildStatus();
        return s.ok() && s->paused.size() == 1 && s->paused[0].find(paused) != std::string::npos;
      },
      seconds(30)))
      << Sfs({"rebuild", "status", "-m", mnt_}).out;
  SfsRun status = Sfs({"rebuild", "status", "-m", mnt_});
  EXPECT_NE(status.out.find("paused: " + paused), std::string::npos) << status.out;
  EXPECT_NE(status.out.find("1 object(s)"), std::string::npos) << status.out;
  EXPECT_TRUE(PollUntil([&] { return MdsLog().find("rebuild paused: " + paused) != std::string::npos; },
                        seconds(10)));
  EXPECT_EQ(NotOk(LayoutOf("/e/f")), 1u);

  ASSERT_EQ(unlink(filler.c_str()), 0);  // space appears
  ASSERT_TRUE(RebuildDone()) << Sfs({"rebuild", "status", "-m", mnt_}).out;
  client::LayoutSpec after = LayoutOf("/e/f");
  EXPECT_EQ(NotOk(after), 0u);
  EXPECT_EQ(after.objects[0].ost, spare);
  auto s = client_->GetRebuildStatus();
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->paused.empty());
  std::string log = MdsLog();
  EXPECT_EQ(CountOf(log, "rebuild paused: " + paused), 1u) << "logged once, not every pass";
  EXPECT_NE(log.find("rebuild resumed: OST " + std::to_string(spare)), std::string::npos);
  ASSERT_TRUE(cluster().KillOss(cluster().OssOfOst(*client_, l.objects[1].ost)).ok());
  ASSERT_TRUE(cluster().KillOss(cluster().OssOfOst(*client_, l.objects[2].ost)).ok());
  auto fresh = cluster().Mount({}, {"rpc_timeout_ms=3000"});
  ASSERT_TRUE(fresh.ok());
  EXPECT_TRUE(SameBytes(ReadBack(*fresh + "/e/f", want.size()), want))
      << "the chunk object rebuilt onto the freed OST holds wrong bytes";
}

// A lost OST's disk replaced by an empty one. With no other OST the 4+2 file
// could use (six OSSes), the rebuild waits; the OSS restarted on an empty
// directory where the old one was registers a new OST (a fresh index: indices
// are never reused, so nothing of the old disk is ever taken for the new) and
// the lost chunk object is rebuilt onto it.
class ReplacedOstTest : public RebuildTest {
 protected:
  ClusterOptions Options() override {
    ClusterOptions o = RebuildTest::Options();
    o.name = "replaced-ost";
    o.num_oss = 6;
    return o;
  }
};

TEST_F(ReplacedOstTest, ALostOstReplacedByAnEmptyOneIsRebuiltOntoIt) {
  MakeDir("/e", {"--ec", "4+2", "-S", "64K"});
  const std::string want = Data(kEcSize);
  ASSERT_TRUE(WriteFile(mnt_ + "/e/f", want));
  client::LayoutSpec l = LayoutOf("/e/f");
  ASSERT_EQ(l.objects.size(), 6u);
  const uint32_t lost = l.objects[0].ost;
  const int victim = cluster().OssOfOst(*client_, lost);
  ASSERT_GE(victim, 0);
  ASSERT_TRUE(cluster().KillOss(victim).ok());
  SfsRun declare = Sfs({"ost", "lost", std::to_string(lost), "-m", mnt_});
  ASSERT_EQ(declare.exit, 0) << declare.out;
  EXPECT_TRUE(PollUntil(
      [&] { return MdsLog().find("no OST up that the file does not use; waiting") != std::string::npos; },
      seconds(30)));
  auto waiting = client_->GetRebuildStatus();
  ASSERT_TRUE(waiting.ok());
  EXPECT_EQ(waiting->objects_pending, 1u);

  std::error_code ec;
  std::filesystem::remove_all(cluster().ost_dir(victim), ec);
  ASSERT_FALSE(ec) << ec.message();
  ASSERT_EQ(mkdir(cluster().ost_dir(victim).c_str(), 0755), 0);
  ASSERT_TRUE(cluster().RestartOss(victim).ok());
  ASSERT_TRUE(RebuildDone()) << Sfs({"rebuild", "status", "-m", mnt_}).out;
  client::LayoutSpec after = LayoutOf("/e/f");
  EXPECT_EQ(NotOk(after), 0u);
  EXPECT_GT(after.objects[0].ost, lost) << "not on a new OST";
  EXPECT_EQ(cluster().OssOfOst(*client_, after.objects[0].ost), victim)
      << "not rebuilt onto the replacement disk";
  ASSERT_TRUE(cluster().KillOss(cluster().OssOfOst(*client_, l.objects[1].ost)).ok());
  ASSERT_TRUE(cluster().KillOss(cluster().OssOfOst(*client_, l.objects[2].ost)).ok());
  auto fresh = cluster().Mount({}, {"rpc_timeout_ms=3000"});
  ASSERT_TRUE(fresh.ok());
  EXPECT_TRUE(SameBytes(ReadBack(*fresh + "/e/f", want.size()), want))
      << "the chunk object rebuilt onto the replacement holds wrong bytes";
}

// Three OSSes serving two OSTs each (six OSTs): the copies of every mirror
// stripe and the chunks of every EC file land on distinct OSSes, not just
// distinct OSTs, so one OSS lost (both its OSTs) costs each stripe one copy
// or chunk and everything reads back; a layout needing more OSSes than there
// are is a one-line error from the CLI and from the MDS.
class PlacementByOssTest : public RebuildTest {
 protected:
  ClusterOptions Options() override {
    ClusterOptions o = RebuildTest::Options();
    o.name = "placement-oss";
    o.num_oss = 3;
    o.osts_per_oss = 2;
    return o;
  }
};

TEST_F(PlacementByOssTest, CopiesAndChunksLandOnDistinctOsses) {
  auto osts = client_->ListOsts();
  ASSERT_TRUE(osts.ok());
  ASSERT_EQ(osts->size(), 6u);
  std::map<uint32_t, std::string> server;
  for (const auto& o : *osts) server[o.index] = o.address;
  MakeDir("/m", {"-N", "3", "-c", "2", "-S", "64K"});
  MakeDir("/m2", {"-N", "2", "-c", "3", "-S", "64K"});
  MakeDir("/e", {"--ec", "2+1", "-S", "64K"});
  std::map<std::string, std::string> written;
  for (const char* d : {"/m", "/m2", "/e"}) {
    for (int i = 0; i < 4; ++i) {
      const std::string f = std::string(d) + "/f" + std::to_string(i);
      written[f] = Data(300000 + 1000 * i);
      ASSERT_TRUE(WriteFile(mnt_ + f, written[f]));
      client::LayoutSpec l = LayoutOf(f);
      const size_t stripes = l.ec_data != 0 ? 1 : static_cast<size_t>(l.stripe_count);
      ASSERT_GT(stripes, 0u) << f;
      for (size_t s = 0; s < stripes; ++s) {
        std::set<std::string> servers;
        size_t n = 0;
        for (size_t k = s; k < l.objects.size(); k += stripes, ++n) {
          servers.insert(server[l.objects[k].ost]);
        }
        EXPECT_EQ(servers.size(), n) << f << " stripe " << s << ": two objects on one OSS";
      }
    }
  }
  ASSERT_EQ(mkdir((mnt_ + "/wide").c_str(), 0755), 0);
  SfsRun cli = Sfs({"setstripe", "--ec", "2+2", mnt_ + "/wide"});
  EXPECT_EQ(cli.exit, 2) << cli.out;
  EXPECT_NE(cli.out.find("EC 2+2 needs 4 OSSes (one chunk each), the file system has 3"),
            std::string::npos)
      << cli.out;
  EXPECT_EQ(std::count(cli.out.begin(), cli.out.end(), '\n'), 1) << cli.out;
  auto wide = client_->ResolvePath(kRoot, "/wide");
  ASSERT_TRUE(wide.ok());
  client::LayoutSpec ec22;
  ec22.ec_data = 2;
  ec22.ec_parity = 2;
  Status st = client_->SetLayout(kRoot, wide->ino, ec22, false);
  EXPECT_EQ(st.code(), EINVAL) << st.ToString();
  EXPECT_NE(st.message().find("needs 4 OSSes"), std::string::npos) << st.message();

  ASSERT_TRUE(cluster().KillOss(0).ok());  // two OSTs at once
  auto fresh = cluster().Mount({}, {"rpc_timeout_ms=3000"});
  ASSERT_TRUE(fresh.ok());
  for (const auto& [f, want] : written) {
    int err = 0;
    EXPECT_TRUE(SameBytes(ReadBack(*fresh + f, want.size(), &err), want))
        << f << " with one OSS down; errno " << err;
  }
}

// A file's scrub is many bounded MDS calls, each going on where the last
// stopped (here --scrub-call-ms 1: one 16 MiB read round per call), so none
// nears the RPC timeout however large the file; a disagreement in the last
// round is still found, and counted once.
class ScrubInCallsTest : public RebuildTest {
 protected:
  ClusterOptions Options() override {
    ClusterOptions o = RebuildTest::Options();
    o.name = "scrub-calls";
    o.mds_args = {"--scrub-call-ms", "1"};
    return o;
  }
};

TEST_F(ScrubInCallsTest, ALargeFileIsScrubbedInBoundedCallsToTheEnd) {
  MakeDir("/m", {"-N", "2", "-c", "1"});
  const std::string want = Data(40 << 20);  // three 16 MiB rounds
  ASSERT_TRUE(WriteFile(mnt_ + "/m/f", want));
  client::LayoutSpec l = LayoutOf("/m/f");
  ASSERT_EQ(l.objects.size(), 2u);
  auto attr = client_->ResolvePath(kRoot, "/m/f");
  ASSERT_TRUE(attr.ok());
  // The mount's release of the writing handle reaches the MDS after close(2)
  // returned (FUSE sends RELEASE asynchronously): until then the file is open
  // for write and scrub skips it as busy.
  Result<client::ScrubResult> clean = Status(EAGAIN, "not scrubbed yet");
  ASSERT_TRUE(PollUntil(
      [&] {
        clean = client_->Scrub(kRoot, attr->ino, /*repair=*/false);
        return !clean.ok() || !clean->busy;
      },
      std::chrono::seconds(10)))
      << "still open for write after 10 s";
  ASSERT_TRUE(clean.ok()) << clean.status().ToString();
  EXPECT_EQ(clean->bad_objects, 0u);
  // The longest the object can be: the file rounded up to a stripe unit.
  const uint64_t span = (want.size() / l.stripe_size + 1) * l.stripe_size;
  EXPECT_EQ(clean->bytes_checked, 2 * span) << "every round of both copies read";
  EXPECT_GE(clean->calls, 3u);
  ASSERT_NO_FATAL_FAILURE(FlipKeepingCrc(l.objects[1].ost, l.objects[1].oid, (38 << 20) + 7));
  auto found = client_->Scrub(kRoot, attr->ino, /*repair=*/false);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(found->bad_objects, 1u);
  EXPECT_EQ(found->mismatched_rows, 1u);
  EXPECT_GE(found->calls, 3u);
  ASSERT_EQ(found->problems.size(), 1u);
  EXPECT_NE(found->problems[0].find("copy 1 differs from copy 0 in [33554432, " +
                                    std::to_string(span) + ")"),
            std::string::npos)
      << found->problems[0];
  EXPECT_EQ(NotOk(LayoutOf("/m/f")), 0u) << "--no-repair marked an object";
}

// The rebuild is resumable: with the rate bounded (--rebuild-mibps 8) the MDS
// is SIGKILLed half-way through rebuilding a lost OST's 24 MiB chunk object;
// the restarted MDS finds the file still on its list and finishes, and the
// rebuilt chunk holds the right bytes.
class RebuildRestartTest : public RebuildTest {
 protected:
  ClusterOptions Options() override {
    ClusterOptions o = RebuildTest::Options();
    o.name = "rebuild-restart";
    o.mds_args = {"--rebuild-mibps", "8"};
    return o;
  }
};

TEST_F(RebuildRestartTest, AnMdsRestartMidRebuildResumesIt) {
  MakeDir("/e", {"--ec", "4+2", "-S", "1M"});
  const std::string want = Data(96 << 20);  // 24 rows: 24 MiB per chunk object
  ASSERT_TRUE(WriteFile(mnt_ + "/e/f", want));
  client::LayoutSpec l = LayoutOf("/e/f");
  ASSERT_EQ(l.objects.size(), 6u);
  const uint32_t lost = l.objects[0].ost;
  ASSERT_TRUE(cluster().KillOss(cluster().OssOfOst(*client_, lost)).ok());
  SfsRun declare = Sfs({"ost", "lost", std::to_string(lost), "-m", mnt_});
  ASSERT_EQ(declare.exit, 0) << declare.out;
  // The first 16 MiB batch is written, then the rate knob holds it for 2 s.
  ASSERT_TRUE(PollUntil(
      [&] {
        auto s = client_->GetRebuildStatus();
        return s.ok() && s->bytes_done > 0;
      },
      seconds(30)));
  auto mid = client_->GetRebuildStatus();
  ASSERT_TRUE(mid.ok());
  EXPECT_EQ(mid->objects_pending, 1u) << "finished before the MDS could be stopped mid-way";
  ASSERT_TRUE(cluster().KillMds().ok());
  ASSERT_TRUE(cluster().RestartMds().ok());
  auto c = cluster().Connect();
  ASSERT_TRUE(c.ok());
  client_ = std::move(*c);
  auto after = client_->GetRebuildStatus();
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(after->lost_osts, std::vector<uint32_t>{lost}) << "the lost mark did not survive";
  ASSERT_TRUE(RebuildDone()) << Sfs({"rebuild", "status", "-m", mnt_}).out;
  client::LayoutSpec whole = LayoutOf("/e/f");
  EXPECT_EQ(NotOk(whole), 0u);
  EXPECT_NE(whole.objects[0].ost, lost);
  ASSERT_TRUE(cluster().KillOss(cluster().OssOfOst(*client_, l.objects[1].ost)).ok());
  ASSERT_TRUE(cluster().KillOss(cluster().OssOfOst(*client_, l.objects[2].ost)).ok());
  auto fresh = cluster().Mount({}, {"rpc_timeout_ms=3000"});
  ASSERT_TRUE(fresh.ok());
  EXPECT_TRUE(SameBytes(ReadBack(*fresh + "/e/f", want.size()), want))
      << "the chunk object rebuilt across the restart holds wrong bytes";
}

}  // namespace
}  // namespace sfs::testing
