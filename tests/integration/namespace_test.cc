// Every namespace operation of libsfs against a real sfs-mds (and 4 sfs-oss):
// its success case and the errno a local file system gives for each misuse,
// as root and as an unprivileged user (uid/gid 1000). Each test works in a
// directory of its own, named after the test.
//
// Last, the paged readdir contract: a 10,000-entry directory listed page by
// page while another thread creates and removes other names shows every
// entry that existed throughout exactly once, in name order.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <atomic>
#include <map>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "tests/harness/fixture.h"

namespace sfs::testing {
namespace {

using client::Attr;
using client::Cred;
using client::kRootIno;
using client::LayoutSpec;

constexpr uint32_t kNoReplace = 1, kExchange = 2;  // renameat2 flags
constexpr int kXattrCreate = 1, kXattrReplace = 2;

int Err(const Status& s) { return s.code(); }
template <typename T>
int Err(const Result<T>& r) { return r.status().code(); }
// A removed inode may be reported as ENOENT or ESTALE (BRIEFING conventions).
template <typename T>
bool Gone(const Result<T>& r) { return Err(r) == ENOENT || Err(r) == ESTALE; }

class NamespaceTest : public SharedClusterTest<NamespaceTest> {
 public:
  static ClusterOptions Options() {
    ClusterOptions o;
    o.name = "ns";
    return o;
  }

 protected:
  void SetUp() override {
    SharedClusterTest::SetUp();
    auto d = client().Mkdir(kRoot, kRootIno, TestName(), 0755);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    dir_ = d->ino;
  }

  // Creates a regular file (closed) in parent and returns its attributes.
  Attr File(uint64_t parent, const std::string& name, uint32_t mode = 0644,
            const Cred& cred = kRoot) {
    Attr a;
    auto f = client().Create(cred, parent, name, mode, O_RDWR | O_CREAT | O_EXCL, &a);
    EXPECT_TRUE(f.ok()) << "create " << name << ": " << f.status().ToString();
    if (f.ok()) {
      EXPECT_TRUE(client().Close(*f).ok());
    }
    return a;
  }
  Attr Dir(uint64_t parent, const std::string& name, uint32_t mode = 0755,
           const Cred& cred = kRoot) {
    auto d = client().Mkdir(cred, parent, name, mode);
    EXPECT_TRUE(d.ok()) << "mkdir " << name << ": " << d.status().ToString();
    return d.ok() ? *d : Attr{};
  }
  int CreateErr(uint64_t parent, const std::string& name, int flags = O_CREAT | O_EXCL,
                const Cred& cred = kRoot) {
    Attr a;
    auto f = client().Create(cred, parent, name, 0644, O_RDWR | flags, &a);
    if (f.ok()) {
      EXPECT_TRUE(client().Close(*f).ok());
    }
    return Err(f);
  }
  uint64_t Ino(uint64_t parent, const std::string& name) {
    auto a = client().Lookup(kRoot, parent, name);
    return a.ok() ? a->ino : 0;
  }
  Attr Get(uint64_t ino) {
    auto a = client().GetAttr(kRoot, ino);
    EXPECT_TRUE(a.ok()) << a.status().ToString();
    return a.ok() ? *a : Attr{};
  }

  uint64_t dir_ = 0;
};

// ---- EEXIST / ENOENT / ENOTDIR / EISDIR / ENOTEMPTY -----------------------

TEST_F(NamespaceTest, CreateWithExclOfAnExistingNameFailsWithEexist) {
  File(dir_, "f");
  EXPECT_EQ(CreateErr(dir_, "f"), EEXIST);
  Dir(dir_, "d");
  EXPECT_EQ(CreateErr(dir_, "d"), EEXIST);
}

TEST_F(NamespaceTest, CreateWithoutExclOpensTheExistingFile) {
  Attr first = File(dir_, "f");
  Attr again;
  auto f = client().Create(kRoot, dir_, "f", 0600, O_RDWR | O_CREAT, &again);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(again.ino, first.ino);
  EXPECT_EQ(again.mode & 0777, 0644u) << "an open must not change the mode";
  EXPECT_TRUE(client().Close(*f).ok());
}

TEST_F(NamespaceTest, MakingAnyKindOfNodeOnAnExistingNameFailsWithEexist) {
  Attr f = File(dir_, "f");
  Dir(dir_, "d");
  for (const char* name : {"f", "d"}) {
    EXPECT_EQ(Err(client().Mkdir(kRoot, dir_, name, 0755)), EEXIST) << name;
    EXPECT_EQ(Err(client().Mknod(kRoot, dir_, name, S_IFIFO | 0644, 0)), EEXIST) << name;
    EXPECT_EQ(Err(client().Symlink(kRoot, dir_, name, "target")), EEXIST) << name;
    EXPECT_EQ(Err(client().Link(kRoot, f.ino, dir_, name)), EEXIST) << name;
  }
}

TEST_F(NamespaceTest, OperationsOnAMissingNameFailWithEnoent) {
  EXPECT_EQ(Err(client().Lookup(kRoot, dir_, "nope")), ENOENT);
  EXPECT_EQ(Err(client().Unlink(kRoot, dir_, "nope")), ENOENT);
  EXPECT_EQ(Err(client().Rmdir(kRoot, dir_, "nope")), ENOENT);
  EXPECT_EQ(Err(client().Rename(kRoot, dir_, "nope", dir_, "other", 0)), ENOENT);
  EXPECT_EQ(Err(client().RemoveXattr(kRoot, dir_, "user.nope")), ENODATA);
  EXPECT_EQ(Err(client().ResolvePath(kRoot, "/" + TestName() + "/nope/x")), ENOENT);
}

TEST_F(NamespaceTest, UsingAFileAsADirectoryFailsWithEnotdir) {
  Attr f = File(dir_, "f");
  EXPECT_EQ(Err(client().Lookup(kRoot, f.ino, "x")), ENOTDIR);
  EXPECT_EQ(Err(client().Mkdir(kRoot, f.ino, "x", 0755)), ENOTDIR);
  EXPECT_EQ(CreateErr(f.ino, "x"), ENOTDIR);
  EXPECT_EQ(Err(client().Readdir(kRoot, f.ino, "", 100, false)), ENOTDIR);
  EXPECT_EQ(Err(client().Rmdir(kRoot, dir_, "f")), ENOTDIR);
  EXPECT_EQ(Err(client().ResolvePath(kRoot, "/" + TestName() + "/f/x")), ENOTDIR);
}

TEST_F(NamespaceTest, UnlinkOfADirectoryFailsWithEisdir) {
  Dir(dir_, "d");
  EXPECT_EQ(Err(client().Unlink(kRoot, dir_, "d")), EISDIR);
  EXPECT_NE(Ino(dir_, "d"), 0u);
}

TEST_F(NamespaceTest, RmdirOfANonEmptyDirectoryFailsWithEnotempty) {
  Attr d = Dir(dir_, "d");
  File(d.ino, "f");
  EXPECT_EQ(Err(client().Rmdir(kRoot, dir_, "d")), ENOTEMPTY);
  EXPECT_TRUE(client().Unlink(kRoot, d.ino, "f").ok());
  EXPECT_TRUE(client().Rmdir(kRoot, dir_, "d").ok());
  EXPECT_TRUE(Gone(client().GetAttr(kRoot, d.ino)));
}

// ---- Names ------------------------------------------------------------------

TEST_F(NamespaceTest, EmptyDotDotDotSlashAndNulNamesFailWithEinval) {
  Attr f = File(dir_, "f");
  for (std::string bad : {std::string(""), std::string("."), std::string(".."),
                          std::string("a/b"), std::string("a\0b", 3)}) {
    SCOPED_TRACE("name '" + bad + "'");
    EXPECT_EQ(CreateErr(dir_, bad), EINVAL);
    EXPECT_EQ(Err(client().Mkdir(kRoot, dir_, bad, 0755)), EINVAL);
    EXPECT_EQ(Err(client().Mknod(kRoot, dir_, bad, S_IFIFO | 0644, 0)), EINVAL);
    EXPECT_EQ(Err(client().Symlink(kRoot, dir_, bad, "t")), EINVAL);
    EXPECT_EQ(Err(client().Link(kRoot, f.ino, dir_, bad)), EINVAL);
    EXPECT_EQ(Err(client().Rename(kRoot, dir_, "f", dir_, bad, 0)), EINVAL);
  }
  EXPECT_EQ(Err(client().Unlink(kRoot, dir_, "a/b")), EINVAL);
  EXPECT_EQ(Err(client().Rmdir(kRoot, dir_, "a/b")), EINVAL);
  EXPECT_NE(Ino(dir_, "f"), 0u);
}

TEST_F(NamespaceTest, NamesOf256BytesFailWithEnametoolongAnd255BytesWork) {
  std::string longest(255, 'n'), too_long(256, 'n');
  Attr f = File(dir_, longest);
  EXPECT_EQ(Ino(dir_, longest), f.ino);
  EXPECT_EQ(CreateErr(dir_, too_long), ENAMETOOLONG);
  EXPECT_EQ(Err(client().Lookup(kRoot, dir_, too_long)), ENAMETOOLONG);
  EXPECT_EQ(Err(client().Mkdir(kRoot, dir_, too_long, 0755)), ENAMETOOLONG);
  EXPECT_EQ(Err(client().Mknod(kRoot, dir_, too_long, S_IFIFO | 0644, 0)), ENAMETOOLONG);
  EXPECT_EQ(Err(client().Symlink(kRoot, dir_, too_long, "t")), ENAMETOOLONG);
  EXPECT_EQ(Err(client().Link(kRoot, f.ino, dir_, too_long)), ENAMETOOLONG);
  EXPECT_EQ(Err(client().Rename(kRoot, dir_, longest, dir_, too_long, 0)), ENAMETOOLONG);
}

TEST_F(NamespaceTest, LookupOfDotAndDotDotGivesTheDirectoryAndItsParent) {
  Attr d = Dir(dir_, "d");
  EXPECT_EQ(Ino(d.ino, "."), d.ino);
  EXPECT_EQ(Ino(d.ino, ".."), dir_);
  EXPECT_EQ(Ino(kRootIno, ".."), kRootIno);
}

// ---- Permissions (uid 1000) ---------------------------------------------------

TEST_F(NamespaceTest, AUserCannotChangeARootOwned0755Directory) {
  Attr f = File(dir_, "f");
  Dir(dir_, "d");
  EXPECT_EQ(CreateErr(dir_, "u", O_CREAT | O_EXCL, kUser), EACCES);
  EXPECT_EQ(Err(client().Mkdir(kUser, dir_, "u", 0755)), EACCES);
  EXPECT_EQ(Err(client().Mknod(kUser, dir_, "u", S_IFIFO | 0644, 0)), EACCES);
  EXPECT_EQ(Err(client().Symlink(kUser, dir_, "u", "t")), EACCES);
  EXPECT_EQ(Err(client().Link(kUser, f.ino, dir_, "u")), EACCES);
  EXPECT_EQ(Err(client().Unlink(kUser, dir_, "f")), EACCES);
  EXPECT_EQ(Err(client().Rmdir(kUser, dir_, "d")), EACCES);
  EXPECT_EQ(Err(client().Rename(kUser, dir_, "f", dir_, "g", 0)), EACCES);
  EXPECT_TRUE(client().Lookup(kUser, dir_, "f").ok()) << "0755 still allows lookup";
}

TEST_F(NamespaceTest, AUserWorksFreelyInA0777Directory) {
  Attr open = Dir(dir_, "open", 0777);
  Attr f = File(open.ino, "mine", 0600, kUser);
  EXPECT_EQ(f.uid, 1000u);
  EXPECT_EQ(f.gid, 1000u);
  EXPECT_TRUE(client().Mkdir(kUser, open.ino, "sub", 0755).ok());
  EXPECT_TRUE(client().Rename(kUser, open.ino, "mine", open.ino, "renamed", 0).ok());
  EXPECT_TRUE(client().Unlink(kUser, open.ino, "renamed").ok());
  EXPECT_TRUE(client().Rmdir(kUser, open.ino, "sub").ok());
}

TEST_F(NamespaceTest, AUserCannotOpenARootFileBeyondItsModeBits) {
  Attr readable = File(dir_, "r", 0644);
  Attr secret = File(dir_, "s", 0600);
  Attr a;
  EXPECT_EQ(Err(client().Open(kUser, readable.ino, O_WRONLY, &a)), EACCES);
  EXPECT_EQ(Err(client().Open(kUser, secret.ino, O_RDONLY, &a)), EACCES);
  auto ok = client().Open(kUser, readable.ino, O_RDONLY, &a);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_TRUE(client().Close(*ok).ok());
}

TEST_F(NamespaceTest, AUserCannotChmodOrChownFilesItDoesNotOwn) {
  Attr f = File(dir_, "f", 0666);
  client::SetAttrArgs chmod{.valid = client::kSetMode, .mode = 0777};
  client::SetAttrArgs chown{.valid = client::kSetUid | client::kSetGid, .uid = 1000, .gid = 1000};
  EXPECT_EQ(Err(client().SetAttr(kUser, f.ino, chmod)), EPERM);
  EXPECT_EQ(Err(client().SetAttr(kUser, f.ino, chown)), EPERM);
  Attr open = Dir(dir_, "open", 0777);
  Attr mine = File(open.ino, "mine", 0644, kUser);
  EXPECT_TRUE(client().SetAttr(kUser, mine.ino, chmod).ok());
  client::SetAttrArgs give_away{.valid = client::kSetUid, .uid = 0};
  EXPECT_EQ(Err(client().SetAttr(kUser, mine.ino, give_away)), EPERM);
}

TEST_F(NamespaceTest, AStickyDirectoryStopsUsersRemovingOthersFiles) {
  Attr sticky = Dir(dir_, "sticky", 01777);
  File(sticky.ino, "roots", 0666);
  EXPECT_EQ(Err(client().Unlink(kUser, sticky.ino, "roots")), EPERM);
  EXPECT_EQ(Err(client().Rename(kUser, sticky.ino, "roots", sticky.ino, "x", 0)), EPERM);
  File(sticky.ino, "users", 0644, kUser);
  EXPECT_TRUE(client().Unlink(kUser, sticky.ino, "users").ok());
}

TEST_F(NamespaceTest, LookupInADirectoryWithoutSearchPermissionFailsWithEacces) {
  Attr closed = Dir(dir_, "closed", 0700);
  File(closed.ino, "f");
  EXPECT_EQ(Err(client().Lookup(kUser, closed.ino, "f")), EACCES);
  EXPECT_EQ(Err(client().Readdir(kUser, closed.ino, "", 10, false)), EACCES);
  EXPECT_EQ(Err(client().ResolvePath(kUser, "/" + TestName() + "/closed/f")), EACCES);
}

// ---- Rename -------------------------------------------------------------------

TEST_F(NamespaceTest, RenameMovesAFileBetweenDirectories) {
  Attr a = Dir(dir_, "a"), b = Dir(dir_, "b");
  Attr f = File(a.ino, "f");
  ASSERT_TRUE(client().Rename(kRoot, a.ino, "f", b.ino, "g", 0).ok());
  EXPECT_EQ(Ino(a.ino, "f"), 0u);
  EXPECT_EQ(Ino(b.ino, "g"), f.ino);
}

TEST_F(NamespaceTest, RenameOverAnExistingFileReplacesIt) {
  Attr f = File(dir_, "f");
  Attr g = File(dir_, "g");
  ASSERT_TRUE(client().Rename(kRoot, dir_, "f", dir_, "g", 0).ok());
  EXPECT_EQ(Ino(dir_, "g"), f.ino);
  EXPECT_EQ(Ino(dir_, "f"), 0u);
  EXPECT_TRUE(Gone(client().GetAttr(kRoot, g.ino))) << "the replaced inode lives on";
}

TEST_F(NamespaceTest, RenameNoreplaceOntoAnExistingNameFailsWithEexist) {
  Attr f = File(dir_, "f");
  Attr g = File(dir_, "g");
  EXPECT_EQ(Err(client().Rename(kRoot, dir_, "f", dir_, "g", kNoReplace)), EEXIST);
  EXPECT_EQ(Ino(dir_, "f"), f.ino);
  EXPECT_EQ(Ino(dir_, "g"), g.ino);
  EXPECT_TRUE(client().Rename(kRoot, dir_, "f", dir_, "h", kNoReplace).ok());
}

TEST_F(NamespaceTest, RenameExchangeSwapsAFileAndADirectory) {
  Attr f = File(dir_, "f");
  Attr d = Dir(dir_, "d");
  Attr other = Dir(dir_, "other");
  ASSERT_TRUE(client().Rename(kRoot, dir_, "f", other.ino, "d2", 0).ok());
  ASSERT_TRUE(client().Rename(kRoot, other.ino, "d2", dir_, "d", kExchange).ok());
  EXPECT_EQ(Ino(dir_, "d"), f.ino);
  EXPECT_EQ(Ino(other.ino, "d2"), d.ino);
  EXPECT_EQ(Ino(d.ino, ".."), other.ino) << "the exchanged directory's parent";
  EXPECT_EQ(Err(client().Rename(kRoot, dir_, "d", dir_, "missing", kExchange)), ENOENT);
  EXPECT_EQ(Err(client().Rename(kRoot, dir_, "d", dir_, "x", kExchange | kNoReplace)), EINVAL);
}

TEST_F(NamespaceTest, RenameOfADirectoryUnderItselfFailsWithEinval) {
  Attr a = Dir(dir_, "a");
  Attr b = Dir(a.ino, "b");
  Attr c = Dir(b.ino, "c");
  EXPECT_EQ(Err(client().Rename(kRoot, dir_, "a", a.ino, "x", 0)), EINVAL);
  EXPECT_EQ(Err(client().Rename(kRoot, dir_, "a", c.ino, "x", 0)), EINVAL);
  EXPECT_EQ(Ino(dir_, "a"), a.ino);
}

TEST_F(NamespaceTest, RenameFollowsPosixDirectoryAndFileReplacementRules) {
  Dir(dir_, "d");
  Attr full = Dir(dir_, "full");
  File(full.ino, "x");
  Attr empty = Dir(dir_, "empty");
  File(dir_, "f");
  EXPECT_EQ(Err(client().Rename(kRoot, dir_, "d", dir_, "full", 0)), ENOTEMPTY);
  EXPECT_EQ(Err(client().Rename(kRoot, dir_, "d", dir_, "f", 0)), ENOTDIR);
  EXPECT_EQ(Err(client().Rename(kRoot, dir_, "f", dir_, "d", 0)), EISDIR);
  ASSERT_TRUE(client().Rename(kRoot, dir_, "d", dir_, "empty", 0).ok());
  EXPECT_TRUE(Gone(client().GetAttr(kRoot, empty.ino)));
  EXPECT_EQ(Ino(dir_, "d"), 0u);
}

TEST_F(NamespaceTest, RenameOfAHardLinkOntoItsOtherNameChangesNothing) {
  Attr f = File(dir_, "f");
  ASSERT_TRUE(client().Link(kRoot, f.ino, dir_, "g").ok());
  EXPECT_TRUE(client().Rename(kRoot, dir_, "f", dir_, "g", 0).ok());
  EXPECT_EQ(Ino(dir_, "f"), f.ino);
  EXPECT_EQ(Ino(dir_, "g"), f.ino);
  EXPECT_EQ(Get(f.ino).nlink, 2u);
}

TEST_F(NamespaceTest, MovingADirectoryUpdatesDotDotAndBothParentsLinkCounts) {
  Attr a = Dir(dir_, "a"), b = Dir(dir_, "b");
  Attr d = Dir(a.ino, "d");
  EXPECT_EQ(Get(a.ino).nlink, 3u);
  ASSERT_TRUE(client().Rename(kRoot, a.ino, "d", b.ino, "d", 0).ok());
  EXPECT_EQ(Ino(d.ino, ".."), b.ino);
  EXPECT_EQ(Get(a.ino).nlink, 2u);
  EXPECT_EQ(Get(b.ino).nlink, 3u);
}

// ---- Links, symlinks, nodes, attributes ----------------------------------------

TEST_F(NamespaceTest, DirectoriesCountTheirSubdirectoriesInNlink) {
  Attr d = Dir(dir_, "d");
  EXPECT_EQ(d.nlink, 2u);
  Dir(d.ino, "s1");
  Dir(d.ino, "s2");
  File(d.ino, "f");
  EXPECT_EQ(Get(d.ino).nlink, 4u);
  ASSERT_TRUE(client().Rmdir(kRoot, d.ino, "s1").ok());
  EXPECT_EQ(Get(d.ino).nlink, 3u);
}

TEST_F(NamespaceTest, HardLinksShareAnInodeAndDirectoriesCannotBeLinked) {
  Attr f = File(dir_, "f");
  auto l = client().Link(kRoot, f.ino, dir_, "g");
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  EXPECT_EQ(l->ino, f.ino);
  EXPECT_EQ(l->nlink, 2u);
  ASSERT_TRUE(client().Unlink(kRoot, dir_, "f").ok());
  EXPECT_EQ(Get(f.ino).nlink, 1u);
  Attr d = Dir(dir_, "d");
  EXPECT_EQ(Err(client().Link(kRoot, d.ino, dir_, "dl")), EPERM);
}

TEST_F(NamespaceTest, SymlinksKeepTheirTargetAndReadlinkOfAFileFailsWithEinval) {
  std::string target = "../some/where/" + std::string(1000, 't');
  auto s = client().Symlink(kRoot, dir_, "s", target);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE(S_ISLNK(s->mode));
  EXPECT_EQ(s->size, target.size());
  auto r = client().Readlink(kRoot, s->ino);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, target);
  Attr f = File(dir_, "f");
  EXPECT_EQ(Err(client().Readlink(kRoot, f.ino)), EINVAL);
}

TEST_F(NamespaceTest, MknodMakesFifosSocketsAndDeviceNodes) {
  auto fifo = client().Mknod(kRoot, dir_, "fifo", S_IFIFO | 0640, 0);
  auto sock = client().Mknod(kRoot, dir_, "sock", S_IFSOCK | 0640, 0);
  auto chr = client().Mknod(kRoot, dir_, "chr", S_IFCHR | 0600, makedev(1, 3));
  ASSERT_TRUE(fifo.ok() && sock.ok() && chr.ok()) << fifo.status().ToString();
  EXPECT_TRUE(S_ISFIFO(fifo->mode));
  EXPECT_TRUE(S_ISSOCK(sock->mode));
  EXPECT_TRUE(S_ISCHR(chr->mode));
  EXPECT_EQ(chr->rdev, makedev(1, 3));
  EXPECT_EQ(fifo->mode & 07777, 0640u);
}

TEST_F(NamespaceTest, SetAttrChangesModeOwnerAndTimes) {
  Attr f = File(dir_, "f");
  client::SetAttrArgs a{.valid = client::kSetMode | client::kSetUid | client::kSetGid |
                                 client::kSetAtime | client::kSetMtime,
                        .mode = 0604, .uid = 123, .gid = 456,
                        .atime_ns = 1'000'000'007, .mtime_ns = 2'000'000'009};
  auto r = client().SetAttr(kRoot, f.ino, a);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Attr g = Get(f.ino);
  EXPECT_EQ(g.mode & 07777, 0604u);
  EXPECT_TRUE(S_ISREG(g.mode));
  EXPECT_EQ(g.uid, 123u);
  EXPECT_EQ(g.gid, 456u);
  EXPECT_EQ(g.atime_ns, 1'000'000'007);
  EXPECT_EQ(g.mtime_ns, 2'000'000'009);
  EXPECT_GE(g.ctime_ns, f.ctime_ns);
}

TEST_F(NamespaceTest, XattrsAreCreatedReplacedListedAndRemoved) {
  Attr f = File(dir_, "f");
  ASSERT_TRUE(client().SetXattr(kRoot, f.ino, "user.a", "1", kXattrCreate).ok());
  EXPECT_EQ(Err(client().SetXattr(kRoot, f.ino, "user.a", "2", kXattrCreate)), EEXIST);
  EXPECT_EQ(Err(client().SetXattr(kRoot, f.ino, "user.b", "2", kXattrReplace)), ENODATA);
  ASSERT_TRUE(client().SetXattr(kRoot, f.ino, "user.a", "22", kXattrReplace).ok());
  ASSERT_TRUE(client().SetXattr(kRoot, f.ino, "user.b", std::string("\0bin", 4), 0).ok());
  EXPECT_EQ(client().GetXattr(kRoot, f.ino, "user.a").value(), "22");
  EXPECT_EQ(client().GetXattr(kRoot, f.ino, "user.b").value(), std::string("\0bin", 4));
  EXPECT_EQ(Err(client().GetXattr(kRoot, f.ino, "user.c")), ENODATA);
  auto names = client().ListXattr(kRoot, f.ino);
  ASSERT_TRUE(names.ok());
  std::set<std::string> got(names->begin(), names->end());
  EXPECT_TRUE(got.count("user.a") && got.count("user.b"));
  ASSERT_TRUE(client().RemoveXattr(kRoot, f.ino, "user.a").ok());
  EXPECT_EQ(Err(client().GetXattr(kRoot, f.ino, "user.a")), ENODATA);
  EXPECT_EQ(Err(client().RemoveXattr(kRoot, f.ino, "user.a")), ENODATA);
}

TEST_F(NamespaceTest, DirectoryLayoutsAreValidatedAndInheritedByNewFiles) {
  Attr d = Dir(dir_, "d");
  LayoutSpec bad_size{.stripe_size = 100000, .stripe_count = 2};
  LayoutSpec too_many{.stripe_size = 65536, .stripe_count = 5};
  LayoutSpec all{.stripe_size = 65536, .stripe_count = -1};
  EXPECT_EQ(Err(client().SetLayout(kRoot, d.ino, bad_size, false)), EINVAL);
  EXPECT_EQ(Err(client().SetLayout(kRoot, d.ino, too_many, false)), EINVAL);
  ASSERT_TRUE(client().SetLayout(kRoot, d.ino, all, false).ok());
  Attr a;
  auto f = client().Create(kRoot, d.ino, "f", 0644, O_RDWR | O_CREAT, &a);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ((*f)->layout().stripe_size, 65536u);
  ASSERT_EQ((*f)->layout().objects.size(), 4u);
  std::set<uint32_t> osts;
  for (const auto& o : (*f)->layout().objects) osts.insert(o.ost);
  EXPECT_EQ(osts.size(), 4u) << "four stripes on four distinct OSTs";
  EXPECT_TRUE(client().Close(*f).ok());
}

TEST_F(NamespaceTest, StatfsSumsTheOstsAndListOstsShowsThemUp) {
  auto st = client().StatFs();
  ASSERT_TRUE(st.ok());
  EXPECT_GT(st->total_bytes, 0u);
  EXPECT_LE(st->free_bytes, st->total_bytes);
  auto osts = client().ListOsts();
  ASSERT_TRUE(osts.ok());
  ASSERT_EQ(osts->size(), 4u);
  for (const auto& o : *osts) EXPECT_TRUE(o.up) << o.index;
}

// ---- Readdir ------------------------------------------------------------------

// Lists the directory page by page; returns every name in the order seen.
std::vector<std::string> ListAll(client::Client& c, uint64_t dir, uint32_t page) {
  std::vector<std::string> names;
  std::string after;
  for (int guard = 0; guard < 1000000; ++guard) {
    auto p = c.Readdir(kRoot, dir, after, page, false);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    if (!p.ok()) break;
    for (const auto& e : p->entries) names.push_back(e.name);
    if (p->eof || p->entries.empty()) break;
    after = p->entries.back().name;
  }
  return names;
}

TEST_F(NamespaceTest, ReaddirPagesListEveryEntryOnceInNameOrderWithTypes) {
  for (char c = '0'; c <= '9'; ++c) File(dir_, std::string("f") + c);
  Dir(dir_, "sub");
  ASSERT_TRUE(client().Symlink(kRoot, dir_, "ln", "x").ok());
  EXPECT_EQ(ListAll(client(), dir_, 3).size(), 12u);
  auto p = client().Readdir(kRoot, dir_, "", 100, true);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->eof);
  std::map<std::string, uint32_t> types;
  for (const auto& e : p->entries) {
    types[e.name] = e.type;
    ASSERT_TRUE(e.attr.has_value()) << e.name << " without attrs";
    EXPECT_EQ(e.attr->ino, e.ino);
  }
  EXPECT_EQ(types["sub"], static_cast<uint32_t>(DT_DIR));
  EXPECT_EQ(types["ln"], static_cast<uint32_t>(DT_LNK));
  EXPECT_EQ(types["f3"], static_cast<uint32_t>(DT_REG));
  EXPECT_EQ(types.count("."), 0u);
}

std::string Stable(int i) {
  char b[32];
  snprintf(b, sizeof b, "stable-%05d", i);
  return b;
}

TEST_F(NamespaceTest, TenThousandEntriesListedDuringChurnAppearExactlyOnce) {
  constexpr int kEntries = 10000, kThreads = 4;
  std::vector<std::thread> makers;
  for (int t = 0; t < kThreads; ++t) {
    makers.emplace_back([&, t] {
      for (int i = t; i < kEntries; i += kThreads) {
        auto r = client().Mknod(kRoot, dir_, Stable(i), S_IFREG | 0644, 0);
        if (!r.ok()) ADD_FAILURE() << Stable(i) << ": " << r.status().ToString();
      }
    });
  }
  for (auto& m : makers) m.join();
  std::atomic<bool> done{false};
  std::atomic<int> churned{0};
  std::thread churn([&] {
    for (int i = 0; !done; ++i) {
      // Names sort both before and between and after the stable ones.
      std::string name = (i % 3 == 0 ? "a-" : i % 3 == 1 ? "stable-" : "z-") + std::to_string(i);
      if (client().Mknod(kRoot, dir_, name, S_IFREG | 0644, 0).ok()) ++churned;
      if (i % 2 == 0) (void)client().Unlink(kRoot, dir_, name);
    }
  });
  auto names = ListAll(client(), dir_, 97);
  done = true;
  churn.join();
  std::map<std::string, int> seen;
  for (const auto& n : names) ++seen[n];
  for (const auto& [n, count] : seen) EXPECT_EQ(count, 1) << n << " listed " << count << " times";
  for (int i = 0; i < kEntries; ++i) EXPECT_EQ(seen.count(Stable(i)), 1u) << Stable(i) << " missed";
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_GT(churned.load(), 0) << "the churn thread never ran during the listing";
}

}  // namespace
}  // namespace sfs::testing
