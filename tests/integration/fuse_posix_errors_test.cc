// POSIX error cases through a real sfs-mount: the errno a local file system
// (ext4) gives for each misuse, first as root, then as an unprivileged user.
//
// The unprivileged checks run each call in a forked child that has dropped to
// uid/gid 1000 with no supplementary groups (RunAsUser) and report the errno
// back; the mount uses allow_other, so the kernel lets that user in and the
// permission decisions are StripeFS's (kernel default_permissions or the MDS).
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "tests/harness/fixture.h"

namespace sfs::testing {
namespace {

constexpr uid_t kUid = 1000;
constexpr gid_t kGid = 1000;

class FuseErrorsTest : public MountedTest<FuseErrorsTest> {
 public:
  static ClusterOptions Options() {
    ClusterOptions o;
    o.name = "posix-errors";
    return o;
  }

 protected:
  void Put(const std::string& name, const std::string& data, mode_t mode = 0644) {
    ASSERT_TRUE(WriteFile(P(name), data)) << name;
    ASSERT_EQ(chmod(P(name).c_str(), mode), 0);
  }
  void Mkdir(const std::string& name, mode_t mode) {
    ASSERT_EQ(mkdir(P(name).c_str(), mode), 0) << name << ": " << strerror(errno);
    ASSERT_EQ(chmod(P(name).c_str(), mode), 0);  // past the umask
  }
  // errno of open(path, flags), closing it on success.
  static int OpenErr(const std::string& path, int flags, mode_t mode = 0644) {
    int fd = open(path.c_str(), flags, mode);
    if (fd < 0) return errno;
    close(fd);
    return 0;
  }
  // Runs fn as uid/gid 1000 and returns its errno (0 = success).
  static int AsUser(const std::function<int()>& fn) { return RunAsUser(kUid, kGid, fn); }
};

// ---- as root -----------------------------------------------------------------------

TEST_F(FuseErrorsTest, OpeningAMissingFileFailsWithEnoent) {
  EXPECT_EQ(OpenErr(P("missing"), O_RDONLY), ENOENT);
  EXPECT_EQ(OpenErr(P("missing/dir/f"), O_CREAT | O_WRONLY), ENOENT);
  EXPECT_EQ(ErrnoOf(unlink(P("missing").c_str())), ENOENT);
  EXPECT_EQ(ErrnoOf(rmdir(P("missing").c_str())), ENOENT);
  EXPECT_EQ(ErrnoOf(rename(P("missing").c_str(), P("x").c_str())), ENOENT);
  EXPECT_EQ(ErrnoOf(link(P("missing").c_str(), P("x").c_str())), ENOENT);
  char buf[16];
  EXPECT_EQ(ErrnoOf(getxattr(dir_.c_str(), "user.missing", buf, sizeof buf)), ENODATA);
}

TEST_F(FuseErrorsTest, CreatingAnExistingNameFailsWithEexist) {
  Put("f", "x");
  Mkdir("d", 0755);
  EXPECT_EQ(OpenErr(P("f"), O_CREAT | O_EXCL | O_WRONLY), EEXIST);
  EXPECT_EQ(ErrnoOf(mkdir(P("f").c_str(), 0755)), EEXIST);
  EXPECT_EQ(ErrnoOf(mkdir(P("d").c_str(), 0755)), EEXIST);
  EXPECT_EQ(ErrnoOf(symlink("t", P("d").c_str())), EEXIST);
  EXPECT_EQ(ErrnoOf(link(P("f").c_str(), P("d").c_str())), EEXIST);
  EXPECT_EQ(ErrnoOf(mkfifo(P("f").c_str(), 0644)), EEXIST);
}

TEST_F(FuseErrorsTest, UsingAFileAsADirectoryFailsWithEnotdir) {
  Put("f", "x");
  EXPECT_EQ(OpenErr(P("f/x"), O_CREAT | O_WRONLY), ENOTDIR);
  EXPECT_EQ(ErrnoOf(mkdir(P("f/x").c_str(), 0755)), ENOTDIR);
  EXPECT_EQ(ErrnoOf(rmdir(P("f").c_str())), ENOTDIR);
  EXPECT_EQ(OpenErr(P("f"), O_RDONLY | O_DIRECTORY), ENOTDIR);
  Mkdir("d", 0755);
  EXPECT_EQ(ErrnoOf(rename(P("d").c_str(), P("f").c_str())), ENOTDIR);
}

TEST_F(FuseErrorsTest, WritingOrUnlinkingADirectoryFailsWithEisdir) {
  Mkdir("d", 0755);
  Put("f", "x");
  EXPECT_EQ(OpenErr(P("d"), O_WRONLY), EISDIR);
  EXPECT_EQ(OpenErr(P("d"), O_RDWR), EISDIR);
  EXPECT_EQ(ErrnoOf(unlink(P("d").c_str())), EISDIR);
  EXPECT_EQ(ErrnoOf(rename(P("f").c_str(), P("d").c_str())), EISDIR);
}

TEST_F(FuseErrorsTest, RemovingOrReplacingANonEmptyDirectoryFailsWithEnotempty) {
  Mkdir("full", 0755);
  Put("full/f", "x");
  Mkdir("d", 0755);
  EXPECT_EQ(ErrnoOf(rmdir(P("full").c_str())), ENOTEMPTY);
  EXPECT_EQ(ErrnoOf(rename(P("d").c_str(), P("full").c_str())), ENOTEMPTY);
}

TEST_F(FuseErrorsTest, MovingADirectoryUnderItselfFailsWithEinval) {
  Mkdir("a", 0755);
  Mkdir("a/b", 0755);
  EXPECT_EQ(ErrnoOf(rename(P("a").c_str(), P("a/b/c").c_str())), EINVAL);
  EXPECT_EQ(ErrnoOf(rmdir(P("a/.").c_str())), EINVAL);
  Put("f", "x");
  char buf[16];
  EXPECT_EQ(ErrnoOf(readlink(P("f").c_str(), buf, sizeof buf)), EINVAL);
}

TEST_F(FuseErrorsTest, HardLinkingADirectoryFailsWithEperm) {
  Mkdir("d", 0755);
  EXPECT_EQ(ErrnoOf(link(P("d").c_str(), P("d2").c_str())), EPERM);
}

TEST_F(FuseErrorsTest, NamesLongerThan255BytesFailWithEnametoolong) {
  std::string ok(255, 'n'), too_long(256, 'n');
  EXPECT_EQ(OpenErr(P(ok), O_CREAT | O_WRONLY), 0);
  EXPECT_EQ(OpenErr(P(too_long), O_CREAT | O_WRONLY), ENAMETOOLONG);
  EXPECT_EQ(ErrnoOf(mkdir(P(too_long).c_str(), 0755)), ENAMETOOLONG);
  EXPECT_EQ(ErrnoOf(symlink("t", P(too_long).c_str())), ENAMETOOLONG);
  EXPECT_EQ(ErrnoOf(link(P(ok).c_str(), P(too_long).c_str())), ENAMETOOLONG);
  EXPECT_EQ(ErrnoOf(rename(P(ok).c_str(), P(too_long).c_str())), ENAMETOOLONG);
  EXPECT_EQ(ErrnoOf(mkfifo(P(too_long).c_str(), 0644)), ENAMETOOLONG);
}

TEST_F(FuseErrorsTest, ASymlinkLoopFailsWithEloop) {
  ASSERT_EQ(symlink("b", P("a").c_str()), 0);
  ASSERT_EQ(symlink("a", P("b").c_str()), 0);
  EXPECT_EQ(OpenErr(P("a"), O_RDONLY), ELOOP);
}

TEST_F(FuseErrorsTest, Renameat2FlagsFailAsOnALocalFileSystem) {
  Put("a", "A");
  Put("b", "B");
  auto renameat2 = [&](const char* from, const char* to, unsigned flags) {
    return ErrnoOf(syscall(SYS_renameat2, AT_FDCWD, P(from).c_str(), AT_FDCWD, P(to).c_str(),
                           flags));
  };
  EXPECT_EQ(renameat2("a", "b", RENAME_NOREPLACE), EEXIST);
  EXPECT_EQ(renameat2("a", "missing", RENAME_EXCHANGE), ENOENT);
  EXPECT_EQ(renameat2("a", "b", RENAME_NOREPLACE | RENAME_EXCHANGE), EINVAL);
}

// ---- as uid 1000 ---------------------------------------------------------------------

TEST_F(FuseErrorsTest, AUserCannotCreateOrRemoveInARootOwned0755Directory) {
  Put("f", "x");
  Mkdir("d", 0755);
  std::string f = P("f"), d = P("d"), n = P("new");
  EXPECT_EQ(AsUser([&] { return OpenErr(n, O_CREAT | O_WRONLY); }), EACCES);
  EXPECT_EQ(AsUser([&] { return ErrnoOf(mkdir(n.c_str(), 0755)); }), EACCES);
  EXPECT_EQ(AsUser([&] { return ErrnoOf(symlink("t", n.c_str())); }), EACCES);
  EXPECT_EQ(AsUser([&] { return ErrnoOf(mkfifo(n.c_str(), 0644)); }), EACCES);
  EXPECT_EQ(AsUser([&] { return ErrnoOf(unlink(f.c_str())); }), EACCES);
  EXPECT_EQ(AsUser([&] { return ErrnoOf(rmdir(d.c_str())); }), EACCES);
  EXPECT_EQ(AsUser([&] { return ErrnoOf(rename(f.c_str(), n.c_str())); }), EACCES);
  EXPECT_EQ(AsUser([&] { return OpenErr(f, O_RDONLY); }), 0) << "0644 is readable";
}

TEST_F(FuseErrorsTest, AUserCannotOpenOrTruncateARootFileBeyondItsModeBits) {
  Put("readable", "x", 0644);
  Put("secret", "x", 0600);
  std::string r = P("readable"), s = P("secret");
  EXPECT_EQ(AsUser([&] { return OpenErr(r, O_WRONLY); }), EACCES);
  EXPECT_EQ(AsUser([&] { return OpenErr(r, O_RDONLY | O_TRUNC); }), EACCES);
  EXPECT_EQ(AsUser([&] { return OpenErr(s, O_RDONLY); }), EACCES);
  EXPECT_EQ(AsUser([&] { return ErrnoOf(truncate(r.c_str(), 0)); }), EACCES);
  EXPECT_EQ(AsUser([&] { return ErrnoOf(access(r.c_str(), W_OK)); }), EACCES);
  EXPECT_EQ(AsUser([&] { return ErrnoOf(access(r.c_str(), R_OK)); }), 0);
}

TEST_F(FuseErrorsTest, AnFdOpenedForWritingMayFtruncateAFileWhoseModeForbidsWriting) {
  Mkdir("d", 0777);
  std::string f = P("d/ro");
  EXPECT_EQ(AsUser([&] {
              int fd = open(f.c_str(), O_CREAT | O_EXCL | O_RDWR, 0444);
              if (fd < 0) return errno;
              int rc = ftruncate(fd, 100) == 0 && write(fd, "x", 1) == 1 ? 0 : errno;
              close(fd);
              return rc;
            }),
            0);
  struct stat st {};
  ASSERT_EQ(stat(f.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 100);
  EXPECT_EQ(AsUser([&] { return ErrnoOf(truncate(f.c_str(), 0)); }), EACCES) << "by path: mode bits";
}

// Write-only handles use direct I/O, which skips the kernel's
// file_remove_privs; sfs-mount drops the bits itself, as ext4 would.
TEST_F(FuseErrorsTest, AWriteWithoutCapFsetidDropsSetuidAndGroupExecSetgidAsOnExt4) {
  Mkdir("d", 0777);
  const std::string prog = P("d/prog"), lock = P("d/lock");
  auto make = [&](const std::string& f, mode_t mode) {
    int fd = open(f.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0600);
    if (fd < 0) return errno;
    close(fd);
    return ErrnoOf(chmod(f.c_str(), mode));
  };
  auto write_one = [](const std::string& f) {
    int fd = open(f.c_str(), O_WRONLY);
    if (fd < 0) return errno;
    int rc = write(fd, "x", 1) == 1 ? 0 : errno;
    close(fd);
    return rc;
  };
  auto mode_of = [](const std::string& f) {
    struct stat st {};
    return stat(f.c_str(), &st) == 0 ? st.st_mode & 07777 : 0u;
  };
  ASSERT_EQ(AsUser([&] { return make(prog, 06775); }), 0);
  ASSERT_EQ(AsUser([&] { return make(lock, 02745); }), 0);
  ASSERT_EQ(write_one(prog), 0);
  EXPECT_EQ(mode_of(prog), 06775u) << "root has CAP_FSETID: bits kept";
  ASSERT_EQ(AsUser([&] { return write_one(prog); }), 0);
  EXPECT_EQ(mode_of(prog), 0775u);
  ASSERT_EQ(AsUser([&] { return write_one(lock); }), 0);
  EXPECT_EQ(mode_of(lock), 02745u) << "setgid without group execute is not a privilege";
}

TEST_F(FuseErrorsTest, AUserCannotChmodOrChownWhatItDoesNotOwn) {
  Put("roots", "x", 0666);
  Mkdir("open", 0777);
  std::string roots = P("roots"), mine = P("open/mine");
  EXPECT_EQ(AsUser([&] { return ErrnoOf(chmod(roots.c_str(), 0777)); }), EPERM);
  EXPECT_EQ(AsUser([&] { return ErrnoOf(chown(roots.c_str(), kUid, kGid)); }), EPERM);
  EXPECT_EQ(AsUser([&] {
              int e = OpenErr(mine, O_CREAT | O_WRONLY);
              if (e != 0) return e;
              if (chmod(mine.c_str(), 0600) != 0) return errno;  // own file: allowed
              if (chown(mine.c_str(), 0, -1) == 0) return -2;    // give away: EPERM
              return errno;
            }),
            EPERM);
  EXPECT_EQ(AsUser([&] { return ErrnoOf(chown(mine.c_str(), -1, 0)); }), EPERM)
      << "chgrp to a group the user is not in";
}

TEST_F(FuseErrorsTest, AUserMaySetTimesToNowOnlyWithWriteAccessAndExplicitTimesOnlyAsOwner) {
  Put("writable", "x", 0666);
  Put("readonly", "x", 0644);
  std::string w = P("writable"), r = P("readonly");
  timespec explicit_times[2] = {{1000, 0}, {1000, 0}};
  EXPECT_EQ(AsUser([&] { return ErrnoOf(utimensat(AT_FDCWD, w.c_str(), nullptr, 0)); }), 0);
  EXPECT_EQ(AsUser([&] { return ErrnoOf(utimensat(AT_FDCWD, r.c_str(), nullptr, 0)); }), EACCES);
  EXPECT_EQ(AsUser([&] { return ErrnoOf(utimensat(AT_FDCWD, w.c_str(), explicit_times, 0)); }),
            EPERM);
}

TEST_F(FuseErrorsTest, AUserCannotSetOrReadUserXattrsWithoutFileAccess) {
  Put("readonly", "x", 0644);
  Put("secret", "x", 0600);
  ASSERT_EQ(setxattr(P("secret").c_str(), "user.k", "v", 1, 0), 0);
  std::string r = P("readonly"), s = P("secret");
  EXPECT_EQ(AsUser([&] { return ErrnoOf(setxattr(r.c_str(), "user.k", "v", 1, 0)); }), EACCES);
  EXPECT_EQ(AsUser([&] {
              char buf[8];
              return ErrnoOf(getxattr(s.c_str(), "user.k", buf, sizeof buf));
            }),
            EACCES);
}

TEST_F(FuseErrorsTest, AStickyDirectoryStopsAUserRemovingOthersFiles) {
  Mkdir("tmp", 01777);
  Put("tmp/roots", "x", 0666);
  std::string roots = P("tmp/roots"), mine = P("tmp/mine");
  EXPECT_EQ(AsUser([&] { return ErrnoOf(unlink(roots.c_str())); }), EPERM);
  EXPECT_EQ(AsUser([&] { return ErrnoOf(rename(roots.c_str(), mine.c_str())); }), EPERM);
  EXPECT_EQ(AsUser([&] {
              int e = OpenErr(mine, O_CREAT | O_WRONLY);
              return e != 0 ? e : ErrnoOf(unlink(mine.c_str()));
            }),
            0);
}

TEST_F(FuseErrorsTest, AUserCannotSearchOrListADirectoryWithoutPermission) {
  Mkdir("closed", 0700);
  Put("closed/f", "x");
  Mkdir("nolist", 0711);
  Put("nolist/f", "x");
  std::string closed_f = P("closed/f"), nolist = P("nolist"), nolist_f = P("nolist/f");
  EXPECT_EQ(AsUser([&] {
              struct stat st;
              return ErrnoOf(stat(closed_f.c_str(), &st));
            }),
            EACCES);
  EXPECT_EQ(AsUser([&] { return OpenErr(nolist, O_RDONLY | O_DIRECTORY); }), EACCES);
  EXPECT_EQ(AsUser([&] { return OpenErr(nolist_f, O_RDONLY); }), 0) << "0711 allows search";
}

TEST_F(FuseErrorsTest, AUserWorksNormallyInADirectoryItMayWrite) {
  Mkdir("open", 0777);
  std::string a = P("open/a"), b = P("open/b"), d = P("open/d");
  EXPECT_EQ(AsUser([&] {
              int fd = open(a.c_str(), O_CREAT | O_RDWR, 0600);
              if (fd < 0 || write(fd, "data", 4) != 4 || fsync(fd) != 0) return errno;
              struct stat st;
              if (fstat(fd, &st) != 0 || st.st_uid != kUid || st.st_gid != kGid) return -2;
              close(fd);
              if (rename(a.c_str(), b.c_str()) != 0 || mkdir(d.c_str(), 0700) != 0) return errno;
              if (chmod(b.c_str(), 0644) != 0 || setxattr(b.c_str(), "user.x", "1", 1, 0) != 0) {
                return errno;
              }
              return ErrnoOf(unlink(b.c_str()) | rmdir(d.c_str()));
            }),
            0);
}

}  // namespace
}  // namespace sfs::testing
