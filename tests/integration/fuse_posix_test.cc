// POSIX behaviour through a real sfs-mount, success cases: plain system calls
// on a mounted StripeFS (1 MDS, 4 OSS), each checked against what a local
// file system (ext4) returns. Every test works in its own directory whose
// files are striped 4 wide with 64 KiB stripes, so even small files cross
// stripe boundaries. The error cases, and the same calls made by an
// unprivileged user, are in fuse_posix_errors_test.cc.
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <ctime>
#include <map>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "tests/harness/fixture.h"

namespace sfs::testing {
namespace {

constexpr size_t kStripe = 64 * 1024;

class FusePosixTest : public MountedTest<FusePosixTest> {
 public:
  static ClusterOptions Options() {
    ClusterOptions o;
    o.name = "posix";
    return o;
  }

 protected:
  void Put(const std::string& name, const std::string& data) {
    ASSERT_TRUE(WriteFile(P(name), data)) << name;
  }
  std::string Get(const std::string& name) {
    std::string s;
    EXPECT_TRUE(ReadFile(P(name), &s)) << name << ": " << strerror(errno);
    return s;
  }
  struct stat Stat(const std::string& name) {
    struct stat st {};
    EXPECT_EQ(stat(P(name).c_str(), &st), 0) << name << ": " << strerror(errno);
    return st;
  }
  std::string PreadAll(int fd, size_t n, off_t off = 0) {
    std::string s(n, '\0');
    ssize_t r = pread(fd, s.data(), n, off);
    s.resize(r < 0 ? 0 : static_cast<size_t>(r));
    return s;
  }

};

// ---- open flags, read/write -----------------------------------------------

TEST_F(FusePosixTest, OpenWithOCreatMakesAnEmptyFileWithTheRequestedMode) {
  int fd = Open("f", O_CREAT | O_WRONLY, 0640);
  ASSERT_GE(fd, 0);
  struct stat st = Stat("f");
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  EXPECT_EQ(st.st_size, 0);
  EXPECT_EQ(st.st_uid, 0u);
}

TEST_F(FusePosixTest, OpenWithOExclFailsOnAnExistingFileAndWorksOnANewOne) {
  Put("f", "x");
  EXPECT_EQ(open(P("f").c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644), -1);
  EXPECT_EQ(errno, EEXIST);
  EXPECT_GE(Open("g", O_CREAT | O_EXCL | O_WRONLY), 0);
}

TEST_F(FusePosixTest, OpenWithOTruncEmptiesTheFile) {
  Put("f", std::string(3 * kStripe + 5, 'a'));
  int fd = Open("f", O_WRONLY | O_TRUNC);
  ASSERT_GE(fd, 0);
  struct stat st {};
  ASSERT_EQ(fstat(fd, &st), 0);
  EXPECT_EQ(st.st_size, 0);
  ASSERT_EQ(write(fd, "new", 3), 3);
  EXPECT_TRUE(SameBytes(Get("f"), "new"));
}

TEST_F(FusePosixTest, OAppendWritesAlwaysLandAtTheEnd) {
  Put("f", "abc");
  int a = Open("f", O_WRONLY | O_APPEND), b = Open("f", O_WRONLY | O_APPEND);
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  ASSERT_EQ(write(a, "def", 3), 3);
  ASSERT_EQ(write(b, "ghi", 3), 3);
  ASSERT_EQ(lseek(a, 0, SEEK_SET), 0);
  ASSERT_EQ(write(a, "jkl", 3), 3);
  EXPECT_TRUE(SameBytes(Get("f"), "abcdefghijkl"));
}

// Write-only handles bypass the page cache (direct I/O); pages a reader of
// this mount cached before must not hide the new bytes, during or after.
TEST_F(FusePosixTest, WritesThroughAWriteOnlyFdAreSeenByReadersOfTheSameMount) {
  const size_t old_size = 3 * kStripe + 100;
  Put("f", std::string(old_size, 'a'));
  int reader = Open("f", O_RDONLY);
  ASSERT_GE(reader, 0);
  ASSERT_TRUE(SameBytes(PreadAll(reader, old_size), std::string(old_size, 'a')));  // cached
  int writer = Open("f", O_WRONLY);
  ASSERT_GE(writer, 0);
  // Unaligned, across a stripe boundary, and past the old end of file.
  const std::string mid(47008, 'b'), tail(kStripe, 'c');
  const off_t mid_at = 8192 + 123, tail_at = old_size - 50;
  ASSERT_EQ(pwrite(writer, mid.data(), mid.size(), mid_at), static_cast<ssize_t>(mid.size()));
  ASSERT_EQ(pwrite(writer, tail.data(), tail.size(), tail_at), static_cast<ssize_t>(tail.size()));
  std::string want(old_size, 'a');
  want.replace(mid_at, mid.size(), mid);
  want.replace(tail_at, std::string::npos, tail);
  EXPECT_TRUE(SameBytes(PreadAll(reader, want.size() + 10), want)) << "while both are open";
  ASSERT_EQ(close(writer), 0);
  ASSERT_EQ(close(reader), 0);
  fds_.clear();
  int again = Open("f", O_RDONLY);
  ASSERT_GE(again, 0);
  EXPECT_TRUE(SameBytes(PreadAll(again, want.size() + 10), want)) << "reopened";
  EXPECT_EQ(Stat("f").st_size, static_cast<off_t>(want.size()));
}

TEST_F(FusePosixTest, AWriteOnlyFdExtendsTheFileSizeSeenByFstatAndStat) {
  int fd = Open("f", O_CREAT | O_WRONLY | O_TRUNC);
  ASSERT_GE(fd, 0);
  std::string data(5 * 47008, 'z');
  for (size_t off = 0; off < data.size(); off += 47008) {
    ASSERT_EQ(write(fd, data.data() + off, 47008), 47008);
  }
  struct stat st {};
  ASSERT_EQ(fstat(fd, &st), 0);
  EXPECT_EQ(st.st_size, static_cast<off_t>(data.size()));
  EXPECT_EQ(lseek(fd, 0, SEEK_END), static_cast<off_t>(data.size()));
  ASSERT_EQ(fsync(fd), 0);  // reports the blocks used to the MDS
  ASSERT_EQ(fstat(fd, &st), 0);
  EXPECT_GE(st.st_blocks * 512, static_cast<blkcnt_t>(data.size()));
  ASSERT_EQ(close(fd), 0);
  fds_.pop_back();
  EXPECT_EQ(Stat("f").st_size, static_cast<off_t>(data.size()));
  EXPECT_TRUE(SameBytes(Get("f"), data));
}

TEST_F(FusePosixTest, PwriteAndPreadAcrossStripeBoundariesRoundTrip) {
  std::mt19937_64 rng(PerTestSeed());
  auto bytes = RandomBytes(rng, 5 * kStripe + 123);
  std::string data(bytes.begin(), bytes.end());
  int fd = Open("f", O_CREAT | O_RDWR);
  ASSERT_GE(fd, 0);
  const off_t off = kStripe - 17;
  ASSERT_EQ(pwrite(fd, data.data(), data.size(), off), static_cast<ssize_t>(data.size()));
  EXPECT_TRUE(SameBytes(PreadAll(fd, data.size(), off), data));
  EXPECT_TRUE(SameBytes(PreadAll(fd, 17), std::string(17, '\0'))) << "the hole before the data";
  EXPECT_TRUE(SameBytes(PreadAll(fd, 100, off + static_cast<off_t>(data.size()) - 10), data.substr(data.size() - 10)));
  int other = Open("f", O_RDONLY);
  EXPECT_TRUE(SameBytes(PreadAll(other, data.size(), off), data)) << "through another descriptor";
}

TEST_F(FusePosixTest, FtruncateShrinksAndGrowsWithZeros) {
  int fd = Open("f", O_CREAT | O_RDWR);
  ASSERT_GE(fd, 0);
  std::string data(2 * kStripe + 100, 'z');
  ASSERT_EQ(pwrite(fd, data.data(), data.size(), 0), static_cast<ssize_t>(data.size()));
  ASSERT_EQ(ftruncate(fd, kStripe + 1), 0);
  EXPECT_TRUE(SameBytes(PreadAll(fd, data.size()), data.substr(0, kStripe + 1)));
  ASSERT_EQ(ftruncate(fd, 3 * kStripe), 0);
  std::string grown = PreadAll(fd, 4 * kStripe);
  ASSERT_EQ(grown.size(), 3 * kStripe);
  EXPECT_TRUE(SameBytes(grown.substr(kStripe + 1), std::string(2 * kStripe - 1, '\0')));
  EXPECT_EQ(Stat("f").st_size, static_cast<off_t>(3 * kStripe));
}

TEST_F(FusePosixTest, FsyncAndFdatasyncSucceedAndKeepTheData) {
  int fd = Open("f", O_CREAT | O_RDWR);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "durable", 7), 7);
  EXPECT_EQ(fsync(fd), 0) << strerror(errno);
  EXPECT_EQ(fdatasync(fd), 0) << strerror(errno);
  EXPECT_TRUE(SameBytes(Get("f"), "durable"));
}

TEST_F(FusePosixTest, MmapSharedWritesReachTheFileAfterMsync) {
  int fd = Open("f", O_CREAT | O_RDWR);
  ASSERT_GE(fd, 0);
  const size_t len = 3 * kStripe;
  ASSERT_EQ(ftruncate(fd, len), 0);
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ASSERT_NE(p, MAP_FAILED) << strerror(errno);
  auto* bytes = static_cast<char*>(p);
  for (size_t i = 0; i < len; i += 4096) bytes[i] = static_cast<char>('A' + i / 4096 % 26);
  memcpy(bytes + kStripe - 3, "boundary", 8);
  ASSERT_EQ(msync(p, len, MS_SYNC), 0) << strerror(errno);
  ASSERT_EQ(munmap(p, len), 0);
  int other = Open("f", O_RDONLY);
  std::string back = PreadAll(other, len);
  ASSERT_EQ(back.size(), len);
  EXPECT_TRUE(SameBytes(back.substr(kStripe - 3, 8), "boundary"));
  EXPECT_EQ(back[2 * 4096], 'C');
}

TEST_F(FusePosixTest, MmapReadSeesTheFileContents) {
  std::string data(2 * kStripe + 10, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7);
  Put("f", data);
  int fd = Open("f", O_RDONLY);
  ASSERT_GE(fd, 0);
  void* p = mmap(nullptr, data.size(), PROT_READ, MAP_SHARED, fd, 0);
  ASSERT_NE(p, MAP_FAILED) << strerror(errno);
  EXPECT_EQ(memcmp(p, data.data(), data.size()), 0);
  munmap(p, data.size());
}

// ---- stat family ---------------------------------------------------------------

TEST_F(FusePosixTest, StatFstatAndLstatDescribeFilesAndSymlinks) {
  Put("f", "12345");
  ASSERT_EQ(symlink("f", P("l").c_str()), 0);
  struct stat st = Stat("f"), fst {}, lst {}, via_link = Stat("l");
  int fd = Open("f", O_RDONLY);
  ASSERT_EQ(fstat(fd, &fst), 0);
  ASSERT_EQ(lstat(P("l").c_str(), &lst), 0);
  EXPECT_EQ(st.st_size, 5);
  EXPECT_EQ(fst.st_ino, st.st_ino);
  EXPECT_EQ(via_link.st_ino, st.st_ino) << "stat follows the link";
  EXPECT_TRUE(S_ISLNK(lst.st_mode));
  EXPECT_EQ(lst.st_size, 1) << "a symlink's size is its target's length";
  EXPECT_NE(lst.st_ino, st.st_ino);
}

// A file written front to back by one handle reports its blocks at close
// without asking the OSSes (Client::BlocksOf): they must be what the OSTs'
// file systems hold, 4 KiB blocks per object, as a stat round trip gives.
TEST_F(FusePosixTest, StBlocksOfAFileWrittenFrontToBackMatchTheData) {
  for (size_t len : {size_t{3901}, size_t{4096}, size_t{(1 << 20) + 1}}) {
    std::string name = "dense" + std::to_string(len);
    int fd = Open(name, O_CREAT | O_WRONLY | O_TRUNC);
    ASSERT_GE(fd, 0);
    std::string data(len, 'd');
    for (size_t off = 0; off < len; off += 65536) {
      size_t n = std::min<size_t>(65536, len - off);
      ASSERT_EQ(pwrite(fd, data.data() + off, n, static_cast<off_t>(off)), static_cast<ssize_t>(n));
    }
    ASSERT_EQ(close(fd), 0);
    fds_.pop_back();
    const blkcnt_t want = static_cast<blkcnt_t>((len + 4095) / 4096 * 8);
    EXPECT_EQ(Stat(name).st_blocks, want) << len << " bytes";
    // Rewritten with a hole in front: not dense, so the OSSes are asked.
    fd = Open(name, O_WRONLY | O_TRUNC);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(pwrite(fd, data.data(), 100, 8 << 20), 100);
    ASSERT_EQ(close(fd), 0);
    fds_.pop_back();
    EXPECT_EQ(Stat(name).st_blocks, 8) << "only the written block after the hole";
  }
}

TEST_F(FusePosixTest, StBlocksOfASparseFileCountOnlyWrittenData) {
  int fd = Open("f", O_CREAT | O_RDWR);
  ASSERT_GE(fd, 0);
  std::string data(8192, 'x');
  const off_t far = 64 << 20;
  ASSERT_EQ(pwrite(fd, data.data(), data.size(), far), 8192);
  ASSERT_EQ(fsync(fd), 0);
  struct stat st {};
  ASSERT_EQ(fstat(fd, &st), 0);
  EXPECT_EQ(st.st_size, far + 8192);
  EXPECT_GE(st.st_blocks * 512, 8192) << "written bytes must be counted";
  EXPECT_LT(st.st_blocks * 512, 1 << 20) << "holes must not be counted";
  ASSERT_EQ(close(fd), 0);
  fds_.pop_back();
  EXPECT_EQ(Stat("f").st_blocks, st.st_blocks) << "after close";
}

// ---- attributes ------------------------------------------------------------------

TEST_F(FusePosixTest, ChmodAndChownChangeModeAndOwner) {
  Put("f", "x");
  ASSERT_EQ(chmod(P("f").c_str(), 04751), 0);
  EXPECT_EQ(Stat("f").st_mode & 07777, 04751u);
  ASSERT_EQ(chown(P("f").c_str(), 1000, 1000), 0);
  struct stat st = Stat("f");
  EXPECT_EQ(st.st_uid, 1000u);
  EXPECT_EQ(st.st_gid, 1000u);
  int fd = Open("f", O_RDONLY);
  ASSERT_EQ(fchmod(fd, 0600), 0);
  EXPECT_EQ(Stat("f").st_mode & 07777, 0600u);
}

TEST_F(FusePosixTest, UtimensatSetsTimesAndHonoursUtimeNowAndUtimeOmit) {
  Put("f", "x");
  timespec set[2] = {{1000000, 111}, {2000000, 222}};
  ASSERT_EQ(utimensat(AT_FDCWD, P("f").c_str(), set, 0), 0);
  struct stat st = Stat("f");
  EXPECT_EQ(st.st_atim.tv_sec, 1000000);
  EXPECT_EQ(st.st_atim.tv_nsec, 111);
  EXPECT_EQ(st.st_mtim.tv_sec, 2000000);
  EXPECT_EQ(st.st_mtim.tv_nsec, 222);
  timespec omit_now[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
  time_t before = time(nullptr);
  ASSERT_EQ(utimensat(AT_FDCWD, P("f").c_str(), omit_now, 0), 0);
  st = Stat("f");
  EXPECT_EQ(st.st_atim.tv_sec, 1000000) << "UTIME_OMIT left atime alone";
  EXPECT_GE(st.st_mtim.tv_sec, before - 1);
  EXPECT_LE(st.st_mtim.tv_sec, time(nullptr) + 1);
}

TEST_F(FusePosixTest, WritingAFileUpdatesItsMtime) {
  Put("f", "x");
  timespec old[2] = {{1000000, 0}, {1000000, 0}};
  ASSERT_EQ(utimensat(AT_FDCWD, P("f").c_str(), old, 0), 0);
  time_t before = time(nullptr);
  Put("f", "changed");
  EXPECT_GE(Stat("f").st_mtim.tv_sec, before - 1);
}

// ---- namespace -----------------------------------------------------------------

TEST_F(FusePosixTest, MkdirAndRmdirMaintainDirectoryLinkCounts) {
  ASSERT_EQ(mkdir(P("d").c_str(), 0755), 0);
  EXPECT_EQ(Stat("d").st_nlink, 2u);
  nlink_t parent = Stat(".").st_nlink;
  ASSERT_EQ(mkdir(P("d/a").c_str(), 0755), 0);
  ASSERT_EQ(mkdir(P("d/b").c_str(), 0700), 0);
  Put("d/file", "x");
  EXPECT_EQ(Stat("d").st_nlink, 4u);
  EXPECT_EQ(Stat("d/b").st_mode & 0777, 0700u);
  ASSERT_EQ(rmdir(P("d/a").c_str()), 0);
  EXPECT_EQ(Stat("d").st_nlink, 3u);
  EXPECT_EQ(Stat(".").st_nlink, parent);
}

TEST_F(FusePosixTest, UnlinkRemovesANameButAnOpenFileStaysReadable) {
  Put("f", "still here");
  int fd = Open("f", O_RDONLY);
  ASSERT_EQ(unlink(P("f").c_str()), 0);
  struct stat st {};
  EXPECT_EQ(stat(P("f").c_str(), &st), -1);
  EXPECT_EQ(errno, ENOENT);
  EXPECT_TRUE(SameBytes(PreadAll(fd, 100), "still here"));
  ASSERT_EQ(fstat(fd, &st), 0);
  EXPECT_EQ(st.st_nlink, 0u);
}

TEST_F(FusePosixTest, RenameMovesReplacesAndHonoursRenameat2Flags) {
  Put("a", "A");
  Put("b", "B");
  ASSERT_EQ(mkdir(P("d").c_str(), 0755), 0);
  ASSERT_EQ(rename(P("a").c_str(), P("d/a2").c_str()), 0);
  EXPECT_TRUE(SameBytes(Get("d/a2"), "A"));
  ASSERT_EQ(rename(P("d/a2").c_str(), P("b").c_str()), 0);
  EXPECT_TRUE(SameBytes(Get("b"), "A"));
  Put("c", "C");
  EXPECT_EQ(syscall(SYS_renameat2, AT_FDCWD, P("c").c_str(), AT_FDCWD, P("b").c_str(),
                    RENAME_NOREPLACE), -1);
  EXPECT_EQ(errno, EEXIST);
  ASSERT_EQ(syscall(SYS_renameat2, AT_FDCWD, P("c").c_str(), AT_FDCWD, P("b").c_str(),
                    RENAME_EXCHANGE), 0) << strerror(errno);
  EXPECT_TRUE(SameBytes(Get("b"), "C"));
  EXPECT_TRUE(SameBytes(Get("c"), "A"));
}

TEST_F(FusePosixTest, HardLinksShareDataAndCountLinks) {
  Put("f", "shared");
  ASSERT_EQ(link(P("f").c_str(), P("g").c_str()), 0);
  EXPECT_EQ(Stat("f").st_nlink, 2u);
  EXPECT_EQ(Stat("g").st_ino, Stat("f").st_ino);
  Put("g", "changed via g");
  EXPECT_TRUE(SameBytes(Get("f"), "changed via g"));
  ASSERT_EQ(unlink(P("f").c_str()), 0);
  EXPECT_EQ(Stat("g").st_nlink, 1u);
}

TEST_F(FusePosixTest, SymlinksResolveAndReadlinkReturnsTheTarget) {
  ASSERT_EQ(mkdir(P("d").c_str(), 0755), 0);
  Put("d/f", "through a link");
  ASSERT_EQ(symlink("d/f", P("rel").c_str()), 0);
  ASSERT_EQ(symlink(P("d").c_str(), P("abs").c_str()), 0);
  ASSERT_EQ(symlink("nowhere", P("dangling").c_str()), 0);
  EXPECT_TRUE(SameBytes(Get("rel"), "through a link"));
  EXPECT_TRUE(SameBytes(Get("abs/f"), "through a link"));
  char buf[4096];
  ssize_t n = readlink(P("rel").c_str(), buf, sizeof buf);
  EXPECT_EQ(std::string(buf, n > 0 ? n : 0), "d/f");
  n = readlink(P("dangling").c_str(), buf, sizeof buf);
  EXPECT_EQ(std::string(buf, n > 0 ? n : 0), "nowhere");
}

TEST_F(FusePosixTest, MkfifoMakesAWorkingFifo) {
  ASSERT_EQ(mkfifo(P("fifo").c_str(), 0640), 0) << strerror(errno);
  struct stat st = Stat("fifo");
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  int fd = Open("fifo", O_RDWR | O_NONBLOCK);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "pipe", 4), 4);
  char buf[8] = {};
  EXPECT_EQ(read(fd, buf, sizeof buf), 4);
  EXPECT_STREQ(buf, "pipe");
}

// ---- xattrs, statvfs, readdir --------------------------------------------------

TEST_F(FusePosixTest, UserXattrsFollowCreateReplaceAndSizeRules) {
  Put("f", "x");
  std::string path = P("f");
  const char* f = path.c_str();
  ASSERT_EQ(setxattr(f, "user.a", "one", 3, XATTR_CREATE), 0) << strerror(errno);
  EXPECT_EQ(setxattr(f, "user.a", "two", 3, XATTR_CREATE), -1);
  EXPECT_EQ(errno, EEXIST);
  EXPECT_EQ(setxattr(f, "user.b", "two", 3, XATTR_REPLACE), -1);
  EXPECT_EQ(errno, ENODATA);
  ASSERT_EQ(setxattr(f, "user.a", "three", 5, XATTR_REPLACE), 0);
  EXPECT_EQ(getxattr(f, "user.a", nullptr, 0), 5) << "size query";
  char small[2], buf[64];
  EXPECT_EQ(getxattr(f, "user.a", small, sizeof small), -1);
  EXPECT_EQ(errno, ERANGE);
  ASSERT_EQ(getxattr(f, "user.a", buf, sizeof buf), 5);
  EXPECT_EQ(std::string(buf, 5), "three");
  EXPECT_EQ(getxattr(f, "user.none", buf, sizeof buf), -1);
  EXPECT_EQ(errno, ENODATA);
  ASSERT_EQ(setxattr(f, "user.b", "", 0, 0), 0) << "an empty value is allowed";
  ssize_t n = listxattr(f, buf, sizeof buf);
  ASSERT_GT(n, 0);
  std::set<std::string> names;
  for (const char* p = buf; p < buf + n; p += strlen(p) + 1) names.insert(p);
  EXPECT_TRUE(names.count("user.a") && names.count("user.b"));
  ASSERT_EQ(removexattr(f, "user.a"), 0);
  EXPECT_EQ(removexattr(f, "user.a"), -1);
  EXPECT_EQ(errno, ENODATA);
}

TEST_F(FusePosixTest, StatvfsReportsSpaceAndNameLimit) {
  struct statvfs sv {};
  ASSERT_EQ(statvfs(dir_.c_str(), &sv), 0);
  EXPECT_GT(sv.f_blocks, 0u);
  EXPECT_LE(sv.f_bfree, sv.f_blocks);
  EXPECT_LE(sv.f_bavail, sv.f_bfree);
  EXPECT_GT(sv.f_bsize, 0u);
  EXPECT_EQ(sv.f_namemax, 255u);
}

TEST_F(FusePosixTest, ReaddirListsDotDotDotAndEveryEntryWithItsType) {
  Put("file", "x");
  ASSERT_EQ(mkdir(P("dir").c_str(), 0755), 0);
  ASSERT_EQ(symlink("file", P("link").c_str()), 0);
  ASSERT_EQ(mkfifo(P("fifo").c_str(), 0644), 0);
  DIR* d = opendir(dir_.c_str());
  ASSERT_NE(d, nullptr);
  std::map<std::string, int> types;
  while (dirent* e = readdir(d)) types[e->d_name] = e->d_type;
  closedir(d);
  std::map<std::string, int> want = {{".", DT_DIR},  {"..", DT_DIR},  {"file", DT_REG},
                                     {"dir", DT_DIR}, {"link", DT_LNK}, {"fifo", DT_FIFO}};
  EXPECT_EQ(types, want);
}

TEST_F(FusePosixTest, AManyPageDirectoryIsListedCompletelyByReaddir) {
  std::set<std::string> made;
  for (int i = 0; i < 600; ++i) {
    std::string name = "entry-with-a-longish-name-" + std::to_string(i);
    ASSERT_EQ(mknod(P(name).c_str(), S_IFREG | 0644, 0), 0) << strerror(errno);
    made.insert(name);
  }
  DIR* d = opendir(dir_.c_str());
  ASSERT_NE(d, nullptr);
  std::multiset<std::string> seen;
  while (dirent* e = readdir(d)) {
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) seen.insert(e->d_name);
  }
  closedir(d);
  EXPECT_EQ(seen.size(), made.size());
  EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()), made);
}

// ---- locks ------------------------------------------------------------------------

TEST_F(FusePosixTest, FlockOnOneOpenFileBlocksAnotherUntilReleased) {
  Put("f", "x");
  int a = Open("f", O_RDWR), b = Open("f", O_RDWR);
  ASSERT_EQ(flock(a, LOCK_EX), 0) << strerror(errno);
  EXPECT_EQ(flock(b, LOCK_EX | LOCK_NB), -1);
  EXPECT_EQ(errno, EWOULDBLOCK);
  EXPECT_EQ(flock(b, LOCK_SH | LOCK_NB), -1);
  ASSERT_EQ(flock(a, LOCK_UN), 0);
  EXPECT_EQ(flock(b, LOCK_EX | LOCK_NB), 0);
}

TEST_F(FusePosixTest, FcntlRecordLocksConflictBetweenProcesses) {
  Put("f", std::string(1000, 'x'));
  int fd = Open("f", O_RDWR);
  struct flock lk {};
  lk.l_type = F_WRLCK;
  lk.l_whence = SEEK_SET;
  lk.l_start = 0;
  lk.l_len = 100;
  ASSERT_EQ(fcntl(fd, F_SETLK, &lk), 0) << strerror(errno);
  std::string path = P("f");
  pid_t me = getpid();
  int child = RunInChild([&] {
    int cfd = open(path.c_str(), O_RDWR);
    struct flock c {};
    c.l_type = F_WRLCK;
    c.l_whence = SEEK_SET;
    c.l_start = 50;
    c.l_len = 10;
    if (fcntl(cfd, F_SETLK, &c) == 0) return 1;              // must conflict
    if (errno != EAGAIN && errno != EACCES) return 2;
    if (fcntl(cfd, F_GETLK, &c) != 0 || c.l_type != F_WRLCK || c.l_pid != me) return 3;
    c.l_type = F_WRLCK;
    c.l_start = 100;
    c.l_len = 100;
    return fcntl(cfd, F_SETLK, &c) == 0 ? 0 : 4;            // a disjoint range is free
  });
  EXPECT_EQ(child, 0) << "1: overlapping lock granted, 2: wrong errno, 3: F_GETLK wrong, "
                         "4: disjoint lock refused";
}

}  // namespace
}  // namespace sfs::testing
