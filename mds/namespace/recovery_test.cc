// MDS restarts at the namespace level: the boot epoch, open ids across
// restarts, orphans re-opened (or not) after a restart.

#include <gtest/gtest.h>

#include "mds/namespace/test_util.h"

namespace sfs::mds {
namespace {

using RecoveryTest = NamespaceTest;

TEST_F(RecoveryTest, TheBootEpochGrowsAtEveryStartAndOpenIdsCarryIt) {
  uint64_t first = ns_->boot_epoch();
  EXPECT_GE(first, 1u);
  auto a = Create(kRootIno, "a");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(OpenTable::EpochOf(a->open_id()), first);
  Reopen();
  EXPECT_EQ(ns_->boot_epoch(), first + 1);
  auto b = Create(kRootIno, "b");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(OpenTable::EpochOf(b->open_id()), first + 1);
  EXPECT_NE(a->open_id(), b->open_id());
}

TEST_F(RecoveryTest, AnOrphanReopenedAfterARestartSurvivesUntilItsLastClose) {
  auto o = Create(kRootIno, "f");
  uint64_t ino = o->attr().ino();
  ASSERT_TRUE(Unlink(kRootIno, "f").ok());
  Reopen();
  proto::OpenReq req;
  req.set_ino(ino);
  req.set_open_flags(O_RDWR);
  proto::OpenResp again;
  ASSERT_TRUE(ns_->Open(RootCtx(), req, &again).ok()) << "an orphan can be re-opened";
  // A close of the pre-restart open id must not free what was re-opened.
  ASSERT_TRUE(CloseFile(ino, o->open_id()).ok());
  ns_->Housekeep(NowMs() + opts_.client_timeout_ms + 1);
  EXPECT_TRUE(ns_->GetAttr(ino).ok()) << "the startup reap keeps a re-opened orphan";
  ASSERT_TRUE(CloseFile(ino, again.open_id()).ok());
  EXPECT_RESULT_ERRNO(ns_->GetAttr(ino), ESTALE);
  EXPECT_EQ(CountKeys(keys::kOrphan), 0u);
  EXPECT_EQ(CountKeys(keys::kQueue), 1u);
}

TEST_F(RecoveryTest, AStaleCloseLeavesAnOrphanToTheStartupReap) {
  auto o = Create(kRootIno, "f");
  uint64_t ino = o->attr().ino();
  ASSERT_TRUE(Unlink(kRootIno, "f").ok());
  Reopen();
  ASSERT_TRUE(CloseFile(ino, o->open_id()).ok());
  EXPECT_TRUE(ns_->GetAttr(ino).ok()) << "other clients may still re-open it";
  ns_->Housekeep(NowMs() + opts_.client_timeout_ms + 1);
  EXPECT_RESULT_ERRNO(ns_->GetAttr(ino), ESTALE);
}

}  // namespace
}  // namespace sfs::mds
