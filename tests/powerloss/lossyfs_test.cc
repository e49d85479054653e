// The model of sfs-lossyfs (lossyfs.cc), tested through a real mount: what a
// power cut keeps is exactly what an fsync made durable, namespace changes
// in order (ext4's ordered journal), file data per file.
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "tests/harness/lossy_fs.h"
#include "tests/harness/test_util.h"

namespace sfs::testing {
namespace {

class LossyFsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) != 0) {
      GTEST_SKIP() << "needs root and /dev/fuse";
    }
    const char* tmp = getenv("TMPDIR");
    std::string dir = std::string(tmp != nullptr ? tmp : "/tmp") + "/sfs-lossyfs-XXXXXX";
    ASSERT_NE(mkdtemp(dir.data()), nullptr) << strerror(errno);
    lossy_ = std::make_unique<LossyFs>(dir);
    Status st = lossy_->Start(dir + "/mnt");
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
  void TearDown() override {
    if (lossy_ != nullptr && HasFailure()) lossy_->Keep();
    lossy_.reset();
  }
  std::string P(const std::string& name) const { return lossy_->mountpoint() + "/" + name; }
  void CutAndReboot() {
    Status st = lossy_->PowerCut();
    ASSERT_TRUE(st.ok()) << st.ToString();
    st = lossy_->Reboot();
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
  // Writes data to name (created), fsyncing it iff sync.
  void Write(const std::string& name, const std::string& data, bool sync, int flags = 0) {
    int fd = open(P(name).c_str(), O_CREAT | O_WRONLY | flags, 0644);
    ASSERT_GE(fd, 0) << name << ": " << strerror(errno);
    ASSERT_EQ(write(fd, data.data(), data.size()), static_cast<ssize_t>(data.size()));
    if (sync) {
      EXPECT_EQ(fsync(fd), 0) << strerror(errno);
    }
    ASSERT_EQ(close(fd), 0);
  }
  void SyncDir(const std::string& name) {
    int fd = open(P(name).c_str(), O_RDONLY | O_DIRECTORY);
    ASSERT_GE(fd, 0) << strerror(errno);
    EXPECT_EQ(fsync(fd), 0) << strerror(errno);
    close(fd);
  }
  bool Exists(const std::string& name) {
    struct stat st {};
    return lstat(P(name).c_str(), &st) == 0;
  }
  std::string Contents(const std::string& name) {
    std::string s;
    EXPECT_TRUE(ReadFile(P(name), &s)) << name;
    return s;
  }

  std::unique_ptr<LossyFs> lossy_;
};

TEST_F(LossyFsTest, AWriteWithoutFsyncIsGoneAfterACut) {
  ASSERT_NO_FATAL_FAILURE(Write("kept", "", true));  // the name is durable, no data
  ASSERT_NO_FATAL_FAILURE(Write("kept", "lost bytes", false));
  ASSERT_NO_FATAL_FAILURE(Write("new", "never synced", false));
  EXPECT_EQ(Contents("kept"), "lost bytes");  // while the machine runs
  ASSERT_NO_FATAL_FAILURE(CutAndReboot());
  EXPECT_EQ(Contents("kept"), "");
  EXPECT_FALSE(Exists("new"));
}

TEST_F(LossyFsTest, FsyncedDataSurvivesACutAndLaterWritesDoNot) {
  std::string first(100000, 'a');
  ASSERT_NO_FATAL_FAILURE(Write("f", first, true));
  int fd = open(P("f").c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(pwrite(fd, "XYZ", 3, 5000), 3);     // not synced: lost
  ASSERT_EQ(pwrite(fd, "tail", 4, 200000), 4);  // extends, not synced: lost
  close(fd);
  ASSERT_NO_FATAL_FAILURE(CutAndReboot());
  EXPECT_TRUE(SameBytes(Contents("f"), first));
}

// fsync(2) covers the file, not the descriptor: sfs-mds fdatasyncs its
// LevelDB log through a read-only descriptor of its own.
TEST_F(LossyFsTest, AnFsyncThroughAnotherDescriptorCoversTheWritesOfTheFile) {
  ASSERT_NO_FATAL_FAILURE(Write("log", "", true));
  int writer = open(P("log").c_str(), O_WRONLY | O_APPEND);
  int reader = open(P("log").c_str(), O_RDONLY);
  ASSERT_GE(writer, 0);
  ASSERT_GE(reader, 0);
  ASSERT_EQ(write(writer, "record1", 7), 7);
  ASSERT_EQ(write(writer, "record2", 7), 7);
  EXPECT_EQ(fdatasync(reader), 0) << strerror(errno);
  ASSERT_EQ(write(writer, "record3", 7), 7);  // lost
  close(writer);
  close(reader);
  ASSERT_NO_FATAL_FAILURE(CutAndReboot());
  EXPECT_EQ(Contents("log"), "record1record2");
}

TEST_F(LossyFsTest, ARenameBecomesDurableWithALaterFsyncOfAnotherFile) {
  ASSERT_NO_FATAL_FAILURE(Write("a", "payload", true));
  ASSERT_EQ(rename(P("a").c_str(), P("b").c_str()), 0);
  ASSERT_EQ(mkdir(P("d").c_str(), 0700), 0);
  ASSERT_NO_FATAL_FAILURE(Write("other", "x", true));    // replays the rename and the mkdir
  ASSERT_EQ(rename(P("b").c_str(), P("c").c_str()), 0);  // after the last fsync: undone
  ASSERT_NO_FATAL_FAILURE(CutAndReboot());
  EXPECT_FALSE(Exists("a"));
  EXPECT_EQ(Contents("b"), "payload");
  EXPECT_FALSE(Exists("c"));
  struct stat st {};
  ASSERT_EQ(stat(P("d").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
}

TEST_F(LossyFsTest, ADirectoryFsyncMakesItsEntriesDurableButNotTheirData) {
  ASSERT_EQ(mkdir(P("d").c_str(), 0755), 0);
  ASSERT_NO_FATAL_FAILURE(Write("d/f", "data", false));
  ASSERT_EQ(symlink("f", P("d/link").c_str()), 0);
  ASSERT_EQ(link(P("d/f").c_str(), P("d/hard").c_str()), 0);
  ASSERT_NO_FATAL_FAILURE(SyncDir("d"));
  ASSERT_NO_FATAL_FAILURE(Write("d/g", "", false));
  ASSERT_NO_FATAL_FAILURE(CutAndReboot());
  EXPECT_EQ(Contents("d/f"), "");
  EXPECT_FALSE(Exists("d/g"));
  char target[16] = {};
  EXPECT_EQ(readlink(P("d/link").c_str(), target, sizeof target - 1), 1);
  EXPECT_STREQ(target, "f");
  struct stat f {};
  struct stat hard {};
  ASSERT_EQ(stat(P("d/f").c_str(), &f), 0);
  ASSERT_EQ(stat(P("d/hard").c_str(), &hard), 0);
  EXPECT_EQ(f.st_ino, hard.st_ino) << "the hard link survives the reboot's copy as one";
  EXPECT_EQ(f.st_nlink, 2u);
}

TEST_F(LossyFsTest, ATruncateAndAChmodAreKeptInOrderWithTheNamespace) {
  ASSERT_NO_FATAL_FAILURE(Write("f", std::string(10000, 'z'), true));
  ASSERT_EQ(truncate(P("f").c_str(), 300), 0);
  ASSERT_EQ(chmod(P("f").c_str(), 0600), 0);
  ASSERT_NO_FATAL_FAILURE(SyncDir(""));
  ASSERT_EQ(truncate(P("f").c_str(), 5), 0);  // after the last sync: undone
  ASSERT_EQ(unlink(P("f").c_str()), 0);       // likewise
  ASSERT_NO_FATAL_FAILURE(CutAndReboot());
  struct stat st {};
  ASSERT_EQ(stat(P("f").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 300);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_TRUE(SameBytes(Contents("f"), std::string(300, 'z')));
}

TEST_F(LossyFsTest, AnODirectOpenWorksAndItsFsyncedWritesSurvive) {
  void* buf = nullptr;
  ASSERT_EQ(posix_memalign(&buf, 4096, 8192), 0);
  memset(buf, 0x5c, 8192);
  int fd = open(P("direct").c_str(), O_CREAT | O_RDWR | O_DIRECT, 0644);
  ASSERT_GE(fd, 0) << strerror(errno);
  EXPECT_EQ(pwrite(fd, buf, 8192, 4096), 8192) << strerror(errno);
  EXPECT_EQ(fdatasync(fd), 0) << strerror(errno);
  EXPECT_EQ(pwrite(fd, buf, 4096, 16384), 4096) << strerror(errno);  // lost
  close(fd);
  free(buf);
  ASSERT_NO_FATAL_FAILURE(CutAndReboot());
  std::string want = std::string(4096, '\0') + std::string(8192, '\x5c');
  EXPECT_TRUE(SameBytes(Contents("direct"), want));
}

// libfuse renames a file unlinked while open to .fuse_hidden*: its fsync
// replays that rename, and the last close's unlink reaches the log too.
TEST_F(LossyFsTest, AnOpenUnlinkedFileLeavesNoNameBehind) {
  ASSERT_NO_FATAL_FAILURE(Write("f", "old", true));
  int fd = open(P("f").c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(unlink(P("f").c_str()), 0);
  ASSERT_EQ(pwrite(fd, "new", 3, 0), 3);
  EXPECT_EQ(fsync(fd), 0) << strerror(errno);
  ASSERT_EQ(close(fd), 0);
  ASSERT_NO_FATAL_FAILURE(Write("other", "", true));
  ASSERT_NO_FATAL_FAILURE(CutAndReboot());
  EXPECT_FALSE(Exists("f"));
  std::string listing;
  EXPECT_EQ(RunShell("ls -a " + lossy_->mountpoint(), &listing), 0);
  EXPECT_EQ(listing.find(".fuse_hidden"), std::string::npos) << listing;
}

}  // namespace
}  // namespace sfs::testing
