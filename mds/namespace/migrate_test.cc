// Migrate: begin allocates new objects without touching the file; commit
// swaps layouts atomically, refuses (EBUSY) a file written or opened for
// write meanwhile, and frees the old objects at once or at the last close.
#include <gtest/gtest.h>

#include "mds/namespace/test_util.h"

namespace sfs::mds {
namespace {

class MigrateTest : public NamespaceTest {
 protected:
  // A closed file with 1 stripe and `size` bytes.
  uint64_t FileWithData(const std::string& name, uint64_t size = 100) {
    auto a = Touch(kRootIno, name);
    EXPECT_TRUE(a.ok());
    proto::SetSizeReq req;
    req.set_ino(a->ino());
    req.set_size(size);
    proto::Attr out;
    EXPECT_TRUE(ns_->SetSize(RootCtx(), req, &out).ok());
    return a->ino();
  }
  Result<proto::MigrateBeginResp> Begin(uint64_t ino, int32_t count) {
    proto::MigrateBeginReq req;
    req.set_ino(ino);
    req.mutable_layout()->set_stripe_count(count);
    req.mutable_layout()->set_start_ost(-1);
    proto::MigrateBeginResp out;
    SFS_RETURN_IF_ERROR(ns_->MigrateBegin(RootCtx(), req, &out));
    return out;
  }
  Status Commit(uint64_t ino, const proto::Layout& fresh, bool abort = false) {
    proto::MigrateCommitReq req;
    req.set_ino(ino);
    *req.mutable_new_layout() = fresh;
    req.set_abort(abort);
    return ns_->MigrateCommit(RootCtx(), req);
  }
  proto::Layout LayoutOf(uint64_t ino) {
    proto::GetLayoutResp got;
    EXPECT_TRUE(ns_->GetLayout(ino, &got).ok());
    return got.layout();
  }
  Result<proto::OpenResp> OpenFile(uint64_t ino, uint32_t flags) {
    proto::OpenReq req;
    req.set_ino(ino);
    req.set_open_flags(flags);
    proto::OpenResp out;
    SFS_RETURN_IF_ERROR(ns_->Open(RootCtx(), req, &out));
    return out;
  }
};

TEST_F(MigrateTest, CommitSwapsTheLayoutAndQueuesTheOldObjects) {
  uint64_t ino = FileWithData("f");
  size_t queued = CountKeys(keys::kQueue);
  auto b = Begin(ino, 3);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->old_layout().objects_size(), 1);
  EXPECT_EQ(b->new_layout().objects_size(), 3);
  EXPECT_EQ(LayoutOf(ino).objects_size(), 1) << "begin does not change the file";
  EXPECT_EQ(CountKeys(keys::kMigrate), 1u);
  ASSERT_TRUE(Commit(ino, b->new_layout()).ok());
  EXPECT_EQ(LayoutOf(ino).objects_size(), 3);
  EXPECT_EQ(ns_->GetAttr(ino)->size(), 100u);
  EXPECT_EQ(CountKeys(keys::kMigrate), 0u);
  EXPECT_EQ(CountKeys(keys::kQueue), queued + 1);
  EXPECT_ERRNO(Commit(ino, b->new_layout()), EINVAL) << "a migration commits once";
}

TEST_F(MigrateTest, AFileOpenForWriteCannotBeMigrated) {
  uint64_t ino = FileWithData("f");
  auto w = OpenFile(ino, O_WRONLY);
  ASSERT_TRUE(w.ok());
  EXPECT_RESULT_ERRNO(Begin(ino, 2), EBUSY);
  ASSERT_TRUE(CloseFile(ino, w->open_id()).ok());
  EXPECT_TRUE(Begin(ino, 2).ok());
}

TEST_F(MigrateTest, AWriteDuringTheCopyMakesCommitFailAndFreesTheNewObjects) {
  uint64_t ino = FileWithData("f");
  auto b = Begin(ino, 2);
  ASSERT_TRUE(b.ok());
  size_t queued = CountKeys(keys::kQueue);
  auto w = OpenFile(ino, O_RDWR);
  ASSERT_TRUE(w.ok());
  EXPECT_ERRNO(Commit(ino, b->new_layout()), EBUSY) << "open for write";
  EXPECT_EQ(CountKeys(keys::kQueue), queued + 2);
  EXPECT_EQ(LayoutOf(ino).objects(0).oid(), b->old_layout().objects(0).oid());
  ASSERT_TRUE(CloseFile(ino, w->open_id()).ok());

  auto b2 = Begin(ino, 2);
  ASSERT_TRUE(b2.ok());
  proto::SetSizeReq grow;
  grow.set_ino(ino);
  grow.set_size(5000);
  proto::Attr out;
  ASSERT_TRUE(ns_->SetSize(RootCtx(), grow, &out).ok());
  EXPECT_ERRNO(Commit(ino, b2->new_layout()), EBUSY) << "written and closed meanwhile";
  EXPECT_EQ(CountKeys(keys::kMigrate), 0u);
}

TEST_F(MigrateTest, OldObjectsWaitForTheLastReaderThatOpenedBeforeTheSwap) {
  uint64_t ino = FileWithData("f");
  auto r = OpenFile(ino, O_RDONLY);
  ASSERT_TRUE(r.ok());
  auto b = Begin(ino, 2);
  ASSERT_TRUE(b.ok()) << "readers do not block a migration";
  size_t queued = CountKeys(keys::kQueue);
  ASSERT_TRUE(Commit(ino, b->new_layout()).ok());
  EXPECT_EQ(CountKeys(keys::kQueue), queued);
  EXPECT_EQ(CountKeys(keys::kStaleLayout), 1u);
  Reopen();  // the record is durable
  EXPECT_EQ(CountKeys(keys::kStaleLayout), 1u);
  ASSERT_TRUE(CloseFile(ino, r->open_id()).ok());
  EXPECT_EQ(CountKeys(keys::kStaleLayout), 0u);
  EXPECT_EQ(CountKeys(keys::kQueue), queued + 1);
}

TEST_F(MigrateTest, AbortAndUnlinkFreeTheNewObjects) {
  uint64_t ino = FileWithData("f");
  auto b = Begin(ino, 3);
  ASSERT_TRUE(b.ok());
  size_t queued = CountKeys(keys::kQueue);
  ASSERT_TRUE(Commit(ino, b->new_layout(), /*abort=*/true).ok());
  EXPECT_EQ(CountKeys(keys::kQueue), queued + 3);
  EXPECT_EQ(LayoutOf(ino).objects_size(), 1);
  auto b2 = Begin(ino, 2);
  ASSERT_TRUE(b2.ok());
  ASSERT_TRUE(Unlink(kRootIno, "f").ok());
  EXPECT_EQ(CountKeys(keys::kMigrate), 0u);
  EXPECT_EQ(CountKeys(keys::kQueue), queued + 3 + 2 + 1);
}

TEST_F(MigrateTest, MigrateChecksItsArguments) {
  uint64_t ino = FileWithData("f");
  EXPECT_RESULT_ERRNO(Begin(ino, kOsts + 1), EINVAL);
  proto::MigrateBeginReq req;
  req.set_ino(ino);
  req.mutable_layout()->set_stripe_count(1);
  req.mutable_layout()->set_pool("nope");
  proto::MigrateBeginResp out;
  EXPECT_ERRNO(ns_->MigrateBegin(RootCtx(), req, &out), EINVAL);
  req.mutable_layout()->clear_pool();
  EXPECT_ERRNO(ns_->MigrateBegin(UserCtx(1000), req, &out), EPERM);
  auto d = Mkdir(kRootIno, "d");
  req.set_ino(d->ino());
  EXPECT_ERRNO(ns_->MigrateBegin(RootCtx(), req, &out), EINVAL);
}

}  // namespace
}  // namespace sfs::mds
