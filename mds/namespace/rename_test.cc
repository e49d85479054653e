// rename and renameat2 semantics: replacing, NOREPLACE, EXCHANGE, type
// rules, directories moving under themselves, '..' and link counts.
#include <gtest/gtest.h>

#include "mds/namespace/test_util.h"

namespace sfs::mds {
namespace {

constexpr uint32_t kNoReplace = 1;
constexpr uint32_t kExchange = 2;

using RenameTest = NamespaceTest;

TEST_F(RenameTest, RenameMovesAFileAndReplacesTheTarget) {
  auto a = Touch(kRootIno, "a");
  auto b = Touch(kRootIno, "b");
  ASSERT_TRUE(Rename(kRootIno, "a", kRootIno, "b").ok());
  EXPECT_RESULT_ERRNO(Lookup(kRootIno, "a"), ENOENT);
  EXPECT_EQ(Lookup(kRootIno, "b")->ino(), a->ino());
  EXPECT_RESULT_ERRNO(ns_->GetAttr(b->ino()), ESTALE);
  EXPECT_EQ(CountKeys(keys::kQueue), 1u) << "the replaced file's object is queued for destroy";
}

TEST_F(RenameTest, NoReplaceRefusesAnExistingTarget) {
  ASSERT_TRUE(Touch(kRootIno, "a").ok());
  ASSERT_TRUE(Touch(kRootIno, "b").ok());
  EXPECT_ERRNO(Rename(kRootIno, "a", kRootIno, "b", kNoReplace), EEXIST);
  EXPECT_TRUE(Rename(kRootIno, "a", kRootIno, "c", kNoReplace).ok());
  EXPECT_ERRNO(Rename(kRootIno, "c", kRootIno, "d", kNoReplace | kExchange), EINVAL);
}

TEST_F(RenameTest, ExchangeSwapsDirectoriesAcrossParents) {
  auto p = Mkdir(kRootIno, "p");
  auto q = Mkdir(kRootIno, "q");
  auto d = Mkdir(p->ino(), "d");
  auto f = Touch(q->ino(), "f");
  ASSERT_TRUE(Rename(p->ino(), "d", q->ino(), "f", kExchange).ok());
  EXPECT_EQ(Lookup(p->ino(), "d")->ino(), f->ino());
  EXPECT_EQ(Lookup(q->ino(), "f")->ino(), d->ino());
  EXPECT_EQ(Lookup(d->ino(), "..")->ino(), q->ino());
  EXPECT_EQ(ns_->GetAttr(p->ino())->nlink(), 2u);
  EXPECT_EQ(ns_->GetAttr(q->ino())->nlink(), 3u);
  EXPECT_ERRNO(Rename(p->ino(), "d", q->ino(), "missing", kExchange), ENOENT);
}

TEST_F(RenameTest, TypeRulesForReplacing) {
  auto d1 = Mkdir(kRootIno, "d1");
  auto d2 = Mkdir(kRootIno, "d2");
  ASSERT_TRUE(Touch(kRootIno, "f").ok());
  ASSERT_TRUE(Touch(d2->ino(), "inner").ok());
  EXPECT_ERRNO(Rename(kRootIno, "d1", kRootIno, "f"), ENOTDIR);
  EXPECT_ERRNO(Rename(kRootIno, "f", kRootIno, "d1"), EISDIR);
  EXPECT_ERRNO(Rename(kRootIno, "d1", kRootIno, "d2"), ENOTEMPTY);
  ASSERT_TRUE(Unlink(d2->ino(), "inner").ok());
  ASSERT_TRUE(Rename(kRootIno, "d1", kRootIno, "d2").ok());
  EXPECT_EQ(Lookup(kRootIno, "d2")->ino(), d1->ino());
  EXPECT_EQ(ns_->GetAttr(kRootIno)->nlink(), 3u);
  EXPECT_RESULT_ERRNO(ns_->GetAttr(d2->ino()), ESTALE);
}

TEST_F(RenameTest, ADirectoryCannotMoveUnderItself) {
  auto a = Mkdir(kRootIno, "a");
  auto b = Mkdir(a->ino(), "b");
  auto c = Mkdir(b->ino(), "c");
  EXPECT_ERRNO(Rename(kRootIno, "a", c->ino(), "x"), EINVAL);
  EXPECT_ERRNO(Rename(kRootIno, "a", a->ino(), "x"), EINVAL);
  EXPECT_TRUE(Rename(b->ino(), "c", kRootIno, "c").ok());
}

TEST_F(RenameTest, RenamingOntoTheSameInodeIsANoOp) {
  auto f = Touch(kRootIno, "f");
  proto::LinkReq link;
  proto::Attr out;
  link.set_ino(f->ino());
  link.set_new_parent(kRootIno);
  link.set_new_name("g");
  ASSERT_TRUE(ns_->Link(RootCtx(), link, &out).ok());
  ASSERT_TRUE(Rename(kRootIno, "f", kRootIno, "g").ok());
  EXPECT_TRUE(Lookup(kRootIno, "f").ok());
  EXPECT_TRUE(Lookup(kRootIno, "g").ok());
  EXPECT_EQ(ns_->GetAttr(f->ino())->nlink(), 2u);
  EXPECT_TRUE(Rename(kRootIno, "f", kRootIno, "f").ok());
}

TEST_F(RenameTest, MovingADirectoryUpdatesDotDotAndParentLinks) {
  auto p = Mkdir(kRootIno, "p");
  auto q = Mkdir(kRootIno, "q");
  auto d = Mkdir(p->ino(), "d");
  ASSERT_TRUE(Rename(p->ino(), "d", q->ino(), "e").ok());
  EXPECT_EQ(Lookup(d->ino(), "..")->ino(), q->ino());
  EXPECT_EQ(ns_->GetAttr(p->ino())->nlink(), 2u);
  EXPECT_EQ(ns_->GetAttr(q->ino())->nlink(), 3u);
  EXPECT_ERRNO(Rmdir(kRootIno, "q"), ENOTEMPTY);
}

TEST_F(RenameTest, MissingSourceIsEnoentAndBadNamesEinval) {
  EXPECT_ERRNO(Rename(kRootIno, "nope", kRootIno, "x"), ENOENT);
  ASSERT_TRUE(Touch(kRootIno, "f").ok());
  EXPECT_ERRNO(Rename(kRootIno, "f", kRootIno, ".."), EINVAL);
  EXPECT_ERRNO(Rename(kRootIno, "f", kRootIno, std::string(256, 'x')), ENAMETOOLONG);
}

TEST_F(RenameTest, NonRootMovingADirectoryNeedsWriteOnIt) {
  auto open = Mkdir(kRootIno, "open", 0777);
  auto other = Mkdir(kRootIno, "other", 0777);
  ASSERT_TRUE(Mkdir(open->ino(), "rootdir", 0755).ok());
  EXPECT_ERRNO(Rename(open->ino(), "rootdir", other->ino(), "x", 0, UserCtx(1000)), EACCES);
}

}  // namespace
}  // namespace sfs::mds
