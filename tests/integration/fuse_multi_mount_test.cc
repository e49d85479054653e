// Several sfs-mounts of one file system on one machine, standing for several
// client nodes (DESIGN.md "Consistency"): close-to-open visibility, atomic
// create-or-open races, no stale dentries or sizes after another mount
// changes things, and many processes on many mounts writing disjoint,
// unaligned byte ranges of one shared file (IOR's N-to-1 strided pattern)
// without ever overwriting each other's bytes, checked from every mount with
// its page cache warm. A file capability (security.capability, which a
// write strips) set on one mount is stripped by the next write through an
// open made after it on another, and by a write through the setting mount
// even on a handle opened before.
//
// One cluster with four mounts serves the suite; the two-mount checks use
// mounts 0 and 1, the strided writers run with 2 and with 4 mounts.
#include <fcntl.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <atomic>
#include <barrier>
#include <thread>

#include <gtest/gtest.h>

#include "tests/harness/fixture.h"

namespace sfs::testing {
namespace {

class MultiMountTest : public MountedTest<MultiMountTest> {
 public:
  static constexpr int kMounts = 4;
  static ClusterOptions Options() {
    ClusterOptions o;
    o.name = "multi";
    return o;
  }

 protected:
  static std::string Read(const std::string& path) {
    std::string s;
    return ReadFile(path, &s) ? s : "<unreadable: " + std::string(strerror(errno)) + ">";
  }
  static int StatErr(const std::string& path) {
    struct stat st;
    return ErrnoOf(stat(path.c_str(), &st));
  }
  static int OpenErr(const std::string& path) {
    int fd = open(path.c_str(), O_RDONLY);
    if (fd < 0) return errno;
    close(fd);
    return 0;
  }
};

TEST_F(MultiMountTest, DataClosedOnOneMountIsReadExactlyOnAnother) {
  ASSERT_TRUE(WriteFile(On(0, "f"), "first version"));
  EXPECT_TRUE(SameBytes(Read(On(1, "f")), "first version"));
  // Same size, new bytes: a size check alone cannot notice this change.
  ASSERT_TRUE(WriteFile(On(0, "f"), "other version"));
  EXPECT_TRUE(SameBytes(Read(On(1, "f")), "other version"));
  ASSERT_TRUE(WriteFile(On(1, "f"), std::string(300000, 'b')));
  EXPECT_TRUE(SameBytes(Read(On(0, "f")), std::string(300000, 'b')));
}

TEST_F(MultiMountTest, EachOfFourMountsSeesWhatTheOthersClosed) {
  for (int writer = 0; writer < 4; ++writer) {
    std::string data = "written through mount " + std::to_string(writer);
    ASSERT_TRUE(WriteFile(On(writer, "f"), data));
    for (int reader = 0; reader < 4; ++reader) {
      EXPECT_TRUE(SameBytes(Read(On(reader, "f")), data)) << "reader " << reader << " writer " << writer;
    }
  }
}

// A file capability (CAP_NET_RAW permitted) as setcap(8) writes it.
bool SetCap(const std::string& path) {
  vfs_cap_data cap{};
  cap.magic_etc = VFS_CAP_REVISION_2;
  cap.data[0].permitted = 1u << CAP_NET_RAW;
  return setxattr(path.c_str(), "security.capability", &cap, XATTR_CAPS_SZ_2, 0) == 0;
}

bool HasCap(const std::string& path) {
  return getxattr(path.c_str(), "security.capability", nullptr, 0) > 0;
}

bool WriteOneByte(int fd) { return write(fd, "x", 1) == 1; }

TEST_F(MultiMountTest, AWriteStripsACapabilitySetOnAnotherMountOnceTheFileIsReopened) {
  ASSERT_TRUE(WriteFile(On(0, "capfile"), "data"));
  int fd = open(On(1, "capfile").c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(WriteOneByte(fd));  // mount 1 learns: no capability
  ASSERT_EQ(close(fd), 0);
  ASSERT_TRUE(SetCap(On(0, "capfile"))) << strerror(errno);
  ASSERT_TRUE(HasCap(On(1, "capfile")));
  fd = open(On(1, "capfile").c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(WriteOneByte(fd));
  ASSERT_EQ(close(fd), 0);
  EXPECT_FALSE(HasCap(On(0, "capfile")));
  EXPECT_FALSE(HasCap(On(1, "capfile")));
}

TEST_F(MultiMountTest, AWriteStripsACapabilitySetThroughTheSameMountWhileTheFileIsOpen) {
  ASSERT_TRUE(WriteFile(On(1, "capopen"), "data"));
  int fd = open(On(1, "capopen").c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(WriteOneByte(fd));  // no capability, remembered
  ASSERT_TRUE(SetCap(On(1, "capopen"))) << strerror(errno);
  ASSERT_TRUE(WriteOneByte(fd));
  EXPECT_FALSE(HasCap(On(1, "capopen")));
  EXPECT_FALSE(HasCap(On(0, "capopen")));
  close(fd);
}

// A file the open created is known to have no capability (its first write
// does not ask the MDS); one set through the same mount while it is open is
// still stripped by the next write.
TEST_F(MultiMountTest, AWriteStripsACapabilitySetOnAFileThisOpenCreated) {
  int fd = open(On(1, "capnew").c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(WriteOneByte(fd));
  ASSERT_TRUE(SetCap(On(1, "capnew"))) << strerror(errno);
  ASSERT_TRUE(HasCap(On(0, "capnew")));
  ASSERT_TRUE(WriteOneByte(fd));
  EXPECT_FALSE(HasCap(On(1, "capnew")));
  EXPECT_FALSE(HasCap(On(0, "capnew")));
  close(fd);
}

TEST_F(MultiMountTest, TwoMountsCreatingTheSameNameWithoutOExclBothSucceed) {
  for (int round = 0; round < 50; ++round) {
    std::string name = "race-" + std::to_string(round);
    std::barrier sync(2);
    int err[2] = {0, 0};
    ino_t ino[2] = {0, 0};
    auto opener = [&](int m) {
      sync.arrive_and_wait();
      int fd = open(On(m, name).c_str(), O_CREAT | O_RDWR, 0644);
      err[m] = fd < 0 ? errno : 0;
      struct stat st {};
      if (fd >= 0 && fstat(fd, &st) == 0) ino[m] = st.st_ino;
      if (fd >= 0) close(fd);
    };
    std::thread a(opener, 0), b(opener, 1);
    a.join();
    b.join();
    ASSERT_EQ(err[0], 0) << name << " via mount 0: " << strerror(err[0]);
    ASSERT_EQ(err[1], 0) << name << " via mount 1: " << strerror(err[1]);
    EXPECT_EQ(ino[0], ino[1]) << name << ": two different files for one name";
  }
}

TEST_F(MultiMountTest, ADirectoryRemovedAndRecreatedOnOneMountIsUsableOnTheOtherAtOnce) {
  for (int round = 0; round < 10; ++round) {
    ASSERT_EQ(mkdir(On(0, "d").c_str(), 0755), 0) << strerror(errno);
    ASSERT_TRUE(WriteFile(On(1, "d/f"), "x"))  // mount 1 now caches d
        << "round " << round << ": " << strerror(errno);
    ASSERT_EQ(unlink(On(0, "d/f").c_str()), 0);
    ASSERT_EQ(rmdir(On(0, "d").c_str()), 0);
    ASSERT_EQ(mkdir(On(0, "d").c_str(), 0755), 0);
    EXPECT_TRUE(WriteFile(On(1, "d/g"), "y")) << "round " << round << ": " << strerror(errno);
    EXPECT_EQ(StatErr(On(1, "d/g")), 0);
    ASSERT_EQ(unlink(On(0, "d/g").c_str()), 0) << strerror(errno);
    ASSERT_EQ(rmdir(On(0, "d").c_str()), 0) << strerror(errno);
  }
}

TEST_F(MultiMountTest, AFileExtendedOnOneMountReadsToItsNewEndOnTheOther) {
  ASSERT_TRUE(WriteFile(On(0, "f"), std::string(1000, 'a')));
  EXPECT_EQ(Read(On(1, "f")).size(), 1000u);  // mount 1 now caches size 1000
  int fd = open(On(0, "f").c_str(), O_WRONLY | O_APPEND);
  ASSERT_GE(fd, 0);
  std::string more(200000, 'b');
  ASSERT_EQ(write(fd, more.data(), more.size()), static_cast<ssize_t>(more.size()));
  ASSERT_EQ(close(fd), 0);
  EXPECT_TRUE(SameBytes(Read(On(1, "f")), std::string(1000, 'a') + more));
}

TEST_F(MultiMountTest, RenameAndUnlinkOnOneMountAreSeenByTheOther) {
  ASSERT_TRUE(WriteFile(On(0, "a"), "content"));
  ASSERT_TRUE(SameBytes(Read(On(1, "a")), "content"));  // mount 1 caches the name
  ASSERT_EQ(rename(On(0, "a").c_str(), On(0, "b").c_str()), 0);
  EXPECT_EQ(OpenErr(On(1, "a")), ENOENT) << "the old name still opens on mount 1";
  EXPECT_TRUE(SameBytes(Read(On(1, "b")), "content"));
  ASSERT_EQ(unlink(On(0, "b").c_str()), 0);
  EXPECT_EQ(OpenErr(On(1, "b")), ENOENT) << "the unlinked name still opens on mount 1";
  EXPECT_TRUE(PollUntil([&] { return StatErr(On(1, "b")) == ENOENT; }, std::chrono::seconds(5)))
      << "stat on mount 1 finds the unlinked name even after the entry timeout";
}

// ---- IOR N-to-1 strided writers ------------------------------------------------

constexpr size_t kBlock = 47008;  // not a multiple of the page or the stripe size
constexpr int kSegments = 12;

uint8_t PatternByte(int writer, int segment, size_t i) {
  return static_cast<uint8_t>(writer * 61 + segment * 7 + i * 13 + (i >> 8) + 1);
}

// Writer w's blocks: segment s at ((s * writers) + w) * kBlock.
int StridedWriter(const std::string& path, int w, int writers) {
  int fd = open(path.c_str(), O_WRONLY);
  if (fd < 0) return errno;
  std::vector<uint8_t> block(kBlock);
  for (int s = 0; s < kSegments; ++s) {
    for (size_t i = 0; i < kBlock; ++i) block[i] = PatternByte(w, s, i);
    off_t off = static_cast<off_t>((static_cast<size_t>(s) * writers + w) * kBlock);
    if (pwrite(fd, block.data(), kBlock, off) != static_cast<ssize_t>(kBlock)) return errno;
  }
  if (fsync(fd) != 0) return errno;
  return close(fd) == 0 ? 0 : errno;
}

class StridedWritersTest : public MultiMountTest, public ::testing::WithParamInterface<int> {};

TEST_P(StridedWritersTest, ConcurrentUnalignedDisjointWritersNeverOverwriteEachOther) {
  const int writers = GetParam();
  const size_t total = kBlock * kSegments * writers;
  // Pre-size the file and read it on every mount, so every page cache holds
  // zeros the writers' partial pages must not be merged with.
  ASSERT_TRUE(WriteFile(On(0, "shared"), ""));
  ASSERT_EQ(truncate(On(0, "shared").c_str(), static_cast<off_t>(total)), 0);
  std::vector<int> warm;
  for (int m = 0; m < writers; ++m) {
    ASSERT_TRUE(SameBytes(Read(On(m, "shared")), std::string(total, '\0'))) << "mount " << m;
    warm.push_back(open(On(m, "shared").c_str(), O_RDONLY));  // keeps its cache alive
  }
  std::vector<pid_t> kids;
  for (int w = 0; w < writers; ++w) {
    std::string path = On(w, "shared");
    pid_t pid = fork();
    if (pid == 0) _exit(StridedWriter(path, w, writers));
    kids.push_back(pid);
  }
  for (pid_t pid : kids) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "writer failed: " << strerror(WEXITSTATUS(status));
  }
  std::string want(total, '\0');
  for (int s = 0; s < kSegments; ++s) {
    for (int w = 0; w < writers; ++w) {
      size_t base = (static_cast<size_t>(s) * writers + w) * kBlock;
      for (size_t i = 0; i < kBlock; ++i) want[base + i] = static_cast<char>(PatternByte(w, s, i));
    }
  }
  for (int m = 0; m < writers; ++m) {
    std::string got = Read(On(m, "shared"));
    ASSERT_EQ(got.size(), total) << "mount " << m;
    auto mismatch = std::mismatch(got.begin(), got.end(), want.begin());
    size_t at = static_cast<size_t>(mismatch.first - got.begin());
    EXPECT_EQ(at, total) << "mount " << m << ": first wrong byte at " << at << " (block "
                         << at / kBlock << ", owned by writer " << at / kBlock % writers << ")";
  }
  for (int fd : warm) close(fd);
}

INSTANTIATE_TEST_SUITE_P(Mounts, StridedWritersTest, ::testing::Values(2, 4),
                         [](const auto& info) { return std::to_string(info.param) + "Mounts"; });

}  // namespace
}  // namespace sfs::testing
