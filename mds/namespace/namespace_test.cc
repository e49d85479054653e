// Namespace ops against a real LevelDB: success and error cases of every op
// family, permission rules for non-root callers, and a restart.
#include "mds/namespace/namespace.h"

#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "mds/namespace/test_util.h"

namespace sfs::mds {
namespace {

using NsTest = NamespaceTest;

TEST_F(NsTest, RootIsADirectoryOwnedByRoot) {
  auto root = ns_->GetAttr(kRootIno);
  ASSERT_TRUE(root.ok());
  EXPECT_EQ(root->mode(), S_IFDIR | 0755u);
  EXPECT_EQ(root->nlink(), 2u);
  EXPECT_EQ(root->uid(), 0u);
}

TEST_F(NsTest, MkdirCountsLinksOnChildAndParent) {
  auto a = Mkdir(kRootIno, "a");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->nlink(), 2u);
  EXPECT_EQ(ns_->GetAttr(kRootIno)->nlink(), 3u);
  ASSERT_TRUE(Mkdir(a->ino(), "b").ok());
  EXPECT_EQ(ns_->GetAttr(a->ino())->nlink(), 3u);
  EXPECT_RESULT_ERRNO(Mkdir(kRootIno, "a"), EEXIST);
  ASSERT_TRUE(Rmdir(a->ino(), "b").ok());
  EXPECT_EQ(ns_->GetAttr(a->ino())->nlink(), 2u);
}

TEST_F(NsTest, CreateIsCreateOrOpen) {
  auto first = Create(kRootIno, "f");
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(first->created());
  EXPECT_EQ(first->layout().objects_size(), 1);
  auto again = Create(kRootIno, "f");
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->created());
  EXPECT_EQ(again->attr().ino(), first->attr().ino());
  EXPECT_NE(again->open_id(), first->open_id());
  EXPECT_RESULT_ERRNO(Create(kRootIno, "f", /*excl=*/true), EEXIST);
  ASSERT_TRUE(Mkdir(kRootIno, "d").ok());
  EXPECT_RESULT_ERRNO(Create(kRootIno, "d"), EISDIR);
}

TEST_F(NsTest, NamesAreValidated) {
  for (const char* bad : {"", ".", "..", "a/b"}) {
    EXPECT_RESULT_ERRNO(Mkdir(kRootIno, bad), EINVAL) << bad;
  }
  EXPECT_RESULT_ERRNO(Mkdir(kRootIno, std::string("a\0b", 3)), EINVAL);
  EXPECT_RESULT_ERRNO(Mkdir(kRootIno, std::string(256, 'x')), ENAMETOOLONG);
  EXPECT_TRUE(Mkdir(kRootIno, std::string(255, 'x')).ok());
  EXPECT_RESULT_ERRNO(Lookup(kRootIno, std::string(256, 'x')), ENAMETOOLONG);
}

TEST_F(NsTest, LookupResolvesDotAndDotDot) {
  auto a = Mkdir(kRootIno, "a");
  auto b = Mkdir(a->ino(), "b");
  EXPECT_EQ(Lookup(b->ino(), ".")->ino(), b->ino());
  EXPECT_EQ(Lookup(b->ino(), "..")->ino(), a->ino());
  EXPECT_EQ(Lookup(kRootIno, "..")->ino(), kRootIno);
  EXPECT_EQ(Lookup(kRootIno, "a")->ino(), a->ino());
}

TEST_F(NsTest, MissingNamesAreEnoentAndGoneInodesEstale) {
  EXPECT_RESULT_ERRNO(Lookup(kRootIno, "nope"), ENOENT);
  EXPECT_RESULT_ERRNO(ns_->GetAttr(999), ESTALE);
  EXPECT_RESULT_ERRNO(Mkdir(999, "x"), ESTALE);  // a gone parent too: the kernel re-looks-up
  EXPECT_ERRNO(Unlink(kRootIno, "nope"), ENOENT);
  EXPECT_ERRNO(Rmdir(kRootIno, "nope"), ENOENT);
}

TEST_F(NsTest, WrongTypesAreEnotdirAndEisdir) {
  auto f = Touch(kRootIno, "f");
  ASSERT_TRUE(Mkdir(kRootIno, "d").ok());
  EXPECT_RESULT_ERRNO(Mkdir(f->ino(), "x"), ENOTDIR);
  EXPECT_RESULT_ERRNO(Lookup(f->ino(), "x"), ENOTDIR);
  EXPECT_ERRNO(Unlink(kRootIno, "d"), EISDIR);
  EXPECT_ERRNO(Rmdir(kRootIno, "f"), ENOTDIR);
  proto::ReaddirResp out;
  proto::ReaddirReq req;
  req.set_ino(f->ino());
  EXPECT_ERRNO(ns_->Readdir(Cred(), req, &out), ENOTDIR);
}

TEST_F(NsTest, RmdirOfNonEmptyDirectoryIsEnotempty) {
  auto d = Mkdir(kRootIno, "d");
  ASSERT_TRUE(Touch(d->ino(), "f").ok());
  EXPECT_ERRNO(Rmdir(kRootIno, "d"), ENOTEMPTY);
  ASSERT_TRUE(Unlink(d->ino(), "f").ok());
  EXPECT_TRUE(Rmdir(kRootIno, "d").ok());
  EXPECT_EQ(ns_->GetAttr(kRootIno)->nlink(), 2u);
}

TEST_F(NsTest, NonRootNeedsWriteAndSearchOnTheParent) {
  OpCtx user = UserCtx(1000);
  EXPECT_RESULT_ERRNO(Mkdir(kRootIno, "x", 0755, user), EACCES);
  EXPECT_RESULT_ERRNO(Create(kRootIno, "x", false, user), EACCES);
  auto priv = Mkdir(kRootIno, "priv", 0700);
  ASSERT_TRUE(Touch(priv->ino(), "f").ok());
  EXPECT_RESULT_ERRNO(Lookup(priv->ino(), "f", user), EACCES);
  auto open = Mkdir(kRootIno, "open", 0777);
  EXPECT_TRUE(Mkdir(open->ino(), "mine", 0755, user).ok());
  EXPECT_ERRNO(Rmdir(kRootIno, "open", user), EACCES);
}

TEST_F(NsTest, OpenChecksAccessByFlags) {
  auto f = Touch(kRootIno, "f", RootCtx(), 0644);
  auto d = Mkdir(kRootIno, "d");
  OpCtx user = UserCtx(1000);
  proto::OpenReq req;
  proto::OpenResp out;
  req.set_ino(f->ino());
  req.set_open_flags(O_RDONLY);
  EXPECT_TRUE(ns_->Open(user, req, &out).ok());
  req.set_open_flags(O_WRONLY);
  EXPECT_ERRNO(ns_->Open(user, req, &out), EACCES);
  req.set_open_flags(O_RDWR);
  EXPECT_ERRNO(ns_->Open(user, req, &out), EACCES);
  req.set_open_flags(O_RDWR);
  EXPECT_TRUE(ns_->Open(RootCtx(), req, &out).ok());
  req.set_ino(d->ino());
  req.set_open_flags(O_WRONLY);
  EXPECT_ERRNO(ns_->Open(RootCtx(), req, &out), EISDIR);
  req.set_ino(12345);
  EXPECT_ERRNO(ns_->Open(RootCtx(), req, &out), ESTALE);
}

TEST_F(NsTest, StickyDirectoryLetsOnlyOwnersRemove) {
  auto tmp = Mkdir(kRootIno, "tmp", 01777);
  OpCtx alice = UserCtx(1001), bob = UserCtx(1002);
  ASSERT_TRUE(Touch(tmp->ino(), "a", alice).ok());
  EXPECT_ERRNO(Unlink(tmp->ino(), "a", bob), EPERM);
  EXPECT_ERRNO(Rename(tmp->ino(), "a", tmp->ino(), "b", 0, bob), EPERM);
  EXPECT_TRUE(Rename(tmp->ino(), "a", tmp->ino(), "b", 0, alice).ok());
  EXPECT_TRUE(Unlink(tmp->ino(), "b", alice).ok());
}

TEST_F(NsTest, SetattrFollowsOwnershipRules) {
  OpCtx owner = UserCtx(1000, 100);
  owner.cred.groups = {200};
  auto open = Mkdir(kRootIno, "o", 0777);
  auto f = Touch(open->ino(), "f", owner, 0644);
  proto::SetAttrReq req;
  proto::Attr out;
  req.set_ino(f->ino());
  req.set_valid(proto::SETATTR_MODE);
  req.set_mode(06755);
  EXPECT_ERRNO(ns_->SetAttr(UserCtx(2000), req, &out), EPERM);
  ASSERT_TRUE(ns_->SetAttr(owner, req, &out).ok());
  EXPECT_EQ(out.mode(), S_IFREG | 06755u);
  req.set_valid(proto::SETATTR_UID);
  req.set_uid(2000);
  EXPECT_ERRNO(ns_->SetAttr(owner, req, &out), EPERM);
  req.set_valid(proto::SETATTR_GID);
  req.set_gid(300);
  EXPECT_ERRNO(ns_->SetAttr(owner, req, &out), EPERM);
  req.set_gid(200);
  ASSERT_TRUE(ns_->SetAttr(owner, req, &out).ok());
  EXPECT_EQ(out.gid(), 200u);
  EXPECT_EQ(out.mode() & 07777, 0755u) << "chown clears setuid and setgid";
  req.set_valid(proto::SETATTR_UID);
  req.set_uid(2000);
  EXPECT_TRUE(ns_->SetAttr(RootCtx(), req, &out).ok());
  EXPECT_EQ(out.uid(), 2000u);
}

TEST_F(NsTest, KillSuidDropsSetIdBitsForAnyWriter) {
  OpCtx owner = UserCtx(1000, 100);
  auto open = Mkdir(kRootIno, "k", 0777);
  auto f = Touch(open->ino(), "f", owner, 0644);
  proto::SetAttrReq req;
  proto::Attr out;
  req.set_ino(f->ino());
  req.set_valid(proto::SETATTR_MODE);
  req.set_mode(06774);  // others may not write
  ASSERT_TRUE(ns_->SetAttr(owner, req, &out).ok());
  req.set_valid(proto::SETATTR_KILL_SUID);
  EXPECT_ERRNO(ns_->SetAttr(UserCtx(2000, 300), req, &out), EPERM);
  req.set_valid(proto::SETATTR_MODE);
  req.set_mode(06777);
  ASSERT_TRUE(ns_->SetAttr(owner, req, &out).ok());
  req.set_valid(proto::SETATTR_KILL_SUID);
  ASSERT_TRUE(ns_->SetAttr(UserCtx(2000, 300), req, &out).ok());
  EXPECT_EQ(out.mode(), S_IFREG | 0777u);
  req.set_valid(proto::SETATTR_MODE);
  req.set_mode(06767);  // no group-exec: S_ISGID is mandatory locking, kept
  ASSERT_TRUE(ns_->SetAttr(owner, req, &out).ok());
  req.set_valid(proto::SETATTR_KILL_SUID);
  ASSERT_TRUE(ns_->SetAttr(UserCtx(2000, 300), req, &out).ok());
  EXPECT_EQ(out.mode(), S_IFREG | 02767u);
}

TEST_F(NsTest, SetattrSetsSizeExactlyAndTimes) {
  auto f = Touch(kRootIno, "f");
  proto::SetAttrReq req;
  proto::Attr out;
  req.set_ino(f->ino());
  req.set_valid(proto::SETATTR_SIZE);
  req.set_size(12345);
  ASSERT_TRUE(ns_->SetAttr(RootCtx(), req, &out).ok());
  EXPECT_EQ(out.size(), 12345u);
  req.set_size(10);
  ASSERT_TRUE(ns_->SetAttr(RootCtx(), req, &out).ok());
  EXPECT_EQ(out.size(), 10u);
  req.set_valid(proto::SETATTR_ATIME | proto::SETATTR_MTIME);
  req.set_atime_ns(111);
  req.set_mtime_ns(222);
  ASSERT_TRUE(ns_->SetAttr(RootCtx(), req, &out).ok());
  EXPECT_EQ(out.atime_ns(), 111);
  EXPECT_EQ(out.mtime_ns(), 222);
  EXPECT_GT(out.ctime_ns(), 222);
  EXPECT_ERRNO(ns_->SetAttr(UserCtx(5), req, &out), EPERM);
  req.set_valid(proto::SETATTR_MTIME | proto::SETATTR_MTIME_NOW);
  EXPECT_ERRNO(ns_->SetAttr(UserCtx(5), req, &out), EACCES);
  ASSERT_TRUE(ns_->SetAttr(RootCtx(), req, &out).ok());
  EXPECT_GT(out.mtime_ns(), 222);
  auto d = Mkdir(kRootIno, "d");
  req.set_ino(d->ino());
  req.set_valid(proto::SETATTR_SIZE);
  EXPECT_ERRNO(ns_->SetAttr(RootCtx(), req, &out), EISDIR);
}

TEST_F(NsTest, SetSizeKeepsTheMaximumAndBlocks) {
  auto f = Touch(kRootIno, "f");
  proto::SetSizeReq req;
  proto::Attr out;
  req.set_ino(f->ino());
  req.set_size(100);
  req.set_blocks(8);
  req.set_has_blocks(true);
  ASSERT_TRUE(ns_->SetSize(RootCtx(), req, &out).ok());
  req.set_size(50);
  ASSERT_TRUE(ns_->SetSize(RootCtx(), req, &out).ok());
  EXPECT_EQ(out.size(), 100u);
  EXPECT_EQ(out.blocks(), 8u);
}

TEST_F(NsTest, LinkSymlinkAndReadlink) {
  auto f = Touch(kRootIno, "f");
  auto d = Mkdir(kRootIno, "d");
  proto::LinkReq link;
  proto::Attr out;
  link.set_ino(f->ino());
  link.set_new_parent(kRootIno);
  link.set_new_name("g");
  ASSERT_TRUE(ns_->Link(RootCtx(), link, &out).ok());
  EXPECT_EQ(out.nlink(), 2u);
  EXPECT_ERRNO(ns_->Link(RootCtx(), link, &out), EEXIST);
  link.set_ino(d->ino());
  link.set_new_name("h");
  EXPECT_ERRNO(ns_->Link(RootCtx(), link, &out), EPERM);
  ASSERT_TRUE(Unlink(kRootIno, "f").ok());
  EXPECT_EQ(Lookup(kRootIno, "g")->nlink(), 1u);

  proto::SymlinkReq sym;
  sym.set_parent(kRootIno);
  sym.set_name("s");
  sym.set_target("../some/where");
  ASSERT_TRUE(ns_->Symlink(RootCtx(), sym, &out).ok());
  EXPECT_TRUE(S_ISLNK(out.mode()));
  EXPECT_EQ(out.size(), 13u);
  EXPECT_EQ(*ns_->Readlink(out.ino()), "../some/where");
  EXPECT_RESULT_ERRNO(ns_->Readlink(d->ino()), EINVAL);
}

TEST_F(NsTest, MknodMakesSpecialFiles) {
  proto::MknodReq req;
  proto::Attr out;
  req.set_parent(kRootIno);
  req.set_name("fifo");
  req.set_mode(S_IFIFO | 0600);
  ASSERT_TRUE(ns_->Mknod(RootCtx(), req, &out).ok());
  EXPECT_TRUE(S_ISFIFO(out.mode()));
  req.set_name("chr");
  req.set_mode(S_IFCHR | 0600);
  req.set_rdev(0x0103);
  EXPECT_ERRNO(ns_->Mknod(UserCtx(7), req, &out), EPERM);
  ASSERT_TRUE(ns_->Mknod(RootCtx(), req, &out).ok());
  EXPECT_EQ(out.rdev(), 0x0103u);
  req.set_name("dir");
  req.set_mode(S_IFDIR | 0700);
  EXPECT_ERRNO(ns_->Mknod(RootCtx(), req, &out), EPERM);
}

TEST_F(NsTest, XattrsHonourFlagsAndLimits) {
  auto f = Touch(kRootIno, "f");
  proto::SetXattrReq set;
  set.set_ino(f->ino());
  set.set_name("user.a");
  set.set_value("1");
  set.set_flags(2);
  EXPECT_ERRNO(ns_->SetXattr(RootCtx(), set), ENODATA);
  set.set_flags(1);
  ASSERT_TRUE(ns_->SetXattr(RootCtx(), set).ok());
  EXPECT_ERRNO(ns_->SetXattr(RootCtx(), set), EEXIST);
  set.set_flags(2);
  set.set_value("2");
  ASSERT_TRUE(ns_->SetXattr(RootCtx(), set).ok());
  EXPECT_EQ(*ns_->GetXattr(Cred(), f->ino(), "user.a"), "2");
  EXPECT_RESULT_ERRNO(ns_->GetXattr(Cred(), f->ino(), "user.b"), ENODATA);
  set.set_flags(0);
  set.set_value(std::string(kMaxXattrValue + 1, 'v'));
  EXPECT_ERRNO(ns_->SetXattr(RootCtx(), set), E2BIG);
  set.set_name(std::string(256, 'n'));
  set.set_value("x");
  EXPECT_ERRNO(ns_->SetXattr(RootCtx(), set), ERANGE);
  EXPECT_EQ(*ns_->ListXattr(Cred(), f->ino()), std::vector<std::string>{"user.a"});
  proto::RemoveXattrReq rm;
  rm.set_ino(f->ino());
  rm.set_name("user.a");
  ASSERT_TRUE(ns_->RemoveXattr(RootCtx(), rm).ok());
  EXPECT_ERRNO(ns_->RemoveXattr(RootCtx(), rm), ENODATA);
}

TEST_F(NsTest, ReaddirPagesResumeByNameWhileTheDirectoryChanges) {
  auto d = Mkdir(kRootIno, "d");
  for (int i = 0; i < 100; i += 2) ASSERT_TRUE(Touch(d->ino(), "n" + std::to_string(1000 + i)).ok());
  std::vector<std::string> seen;
  proto::ReaddirReq req;
  req.set_ino(d->ino());
  req.set_max_entries(7);
  req.set_with_attrs(true);
  for (int page = 0;; ++page) {
    proto::ReaddirResp out;
    ASSERT_TRUE(ns_->Readdir(Cred(), req, &out).ok());
    for (const auto& e : out.entries()) {
      seen.push_back(e.name());
      EXPECT_EQ(e.attr().ino(), e.ino());
      EXPECT_EQ(e.type(), DirentType(S_IFREG));
    }
    if (out.eof()) break;
    req.set_after(out.entries(out.entries_size() - 1).name());
    // Between pages: add odd names, remove some even ones not yet seen.
    ASSERT_TRUE(Touch(d->ino(), "n" + std::to_string(1001 + page * 2)).ok());
    ASSERT_TRUE(Unlink(d->ino(), "n" + std::to_string(1098 - page * 2)).ok());
  }
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()).size(), seen.size());
  for (int i = 0; i < 40; i += 2) {  // untouched entries are all there
    EXPECT_NE(std::find(seen.begin(), seen.end(), "n" + std::to_string(1000 + i)), seen.end());
  }
}

TEST_F(NsTest, ReopeningTheStoreKeepsEverything) {
  auto a = Mkdir(kRootIno, "a");
  auto f = Touch(a->ino(), "f");
  proto::SetXattrReq set;
  set.set_ino(f->ino());
  set.set_name("user.k");
  set.set_value("v");
  ASSERT_TRUE(ns_->SetXattr(RootCtx(), set).ok());
  Reopen();
  EXPECT_EQ(Lookup(kRootIno, "a")->ino(), a->ino());
  EXPECT_EQ(Lookup(a->ino(), "f")->ino(), f->ino());
  EXPECT_EQ(*ns_->GetXattr(Cred(), f->ino(), "user.k"), "v");
  EXPECT_EQ(ns_->inode_count(), 3u);
  auto g = Touch(a->ino(), "g");
  EXPECT_GT(g->ino(), f->ino()) << "inode numbers are never reused";
  EXPECT_EQ(osts_->KnownCount(), 4u);
}

TEST_F(NsTest, StatfsSumsOstsAndCountsInodes) {
  ASSERT_TRUE(Touch(kRootIno, "f").ok());
  proto::StatfsResp s = ns_->Statfs();
  EXPECT_EQ(s.total_bytes(), kOsts * (uint64_t{100} << 30));
  EXPECT_EQ(s.avail_bytes(), kOsts * (uint64_t{50} << 30));
  EXPECT_EQ(s.total_inodes() - s.free_inodes(), 2u);
}

TEST_F(NsTest, ConcurrentCreateOrOpenOfOneNameNeverFails) {
  auto d = Mkdir(kRootIno, "d");
  std::vector<std::thread> threads;
  std::atomic<int> failures{0}, created{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 40; ++i) {
        auto shared = Create(d->ino(), "shared" + std::to_string(i % 5));
        auto own = Create(d->ino(), "t" + std::to_string(t) + "-" + std::to_string(i), true);
        if (!shared.ok() || !own.ok()) ++failures;
        if (shared.ok() && shared->created()) ++created;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(created.load(), 5);
  proto::ReaddirReq req;
  proto::ReaddirResp out;
  req.set_ino(d->ino());
  ASSERT_TRUE(ns_->Readdir(Cred(), req, &out).ok());
  EXPECT_EQ(out.entries_size(), 5 + 4 * 40);
}

}  // namespace
}  // namespace sfs::mds
