// Open files, orphans and the destroy queue; replayed requests.
#include <map>

#include <gtest/gtest.h>

#include "mds/namespace/destroy_queue.h"
#include "mds/namespace/test_util.h"

namespace sfs::mds {
namespace {

// Records destroys; answers with a fixed status per oid (OK by default).
class FakeDestroyer : public ObjectDestroyer {
 public:
  std::vector<Status> Destroy(const std::vector<Item>& items) override {
    std::vector<Status> out;
    for (const Item& i : items) {
      calls.push_back(i);
      auto it = answers.find(i.oid);
      out.push_back(it == answers.end() ? Status::Ok() : Status::Errno(it->second));
    }
    return out;
  }
  std::vector<Item> calls;
  std::map<uint64_t, int> answers;
};

using LifecycleTest = NamespaceTest;

TEST_F(LifecycleTest, AnUnlinkedOpenFileLivesUntilItsLastClose) {
  auto o1 = Create(kRootIno, "f");
  auto o2 = Create(kRootIno, "f");
  uint64_t ino = o1->attr().ino();
  ASSERT_TRUE(Unlink(kRootIno, "f").ok());
  EXPECT_EQ(ns_->GetAttr(ino)->nlink(), 0u);
  EXPECT_EQ(CountKeys(keys::kOrphan), 1u);
  EXPECT_EQ(CountKeys(keys::kQueue), 0u);
  ASSERT_TRUE(CloseFile(ino, o1->open_id()).ok());
  EXPECT_TRUE(ns_->GetAttr(ino).ok());
  ASSERT_TRUE(CloseFile(ino, o2->open_id()).ok());
  EXPECT_RESULT_ERRNO(ns_->GetAttr(ino), ESTALE);
  EXPECT_EQ(CountKeys(keys::kOrphan), 0u);
  EXPECT_EQ(CountKeys(keys::kQueue), 1u);
}

TEST_F(LifecycleTest, ASilentClientLosesItsOpensAndItsOrphansGo) {
  OpCtx client = RootCtx();
  client.client_id = 77;
  auto o = Create(kRootIno, "f", false, client);
  uint64_t ino = o->attr().ino();
  ASSERT_TRUE(Unlink(kRootIno, "f").ok());
  ns_->Housekeep(NowMs() + 1000);
  EXPECT_TRUE(ns_->GetAttr(ino).ok());
  ns_->Housekeep(NowMs() + opts_.client_timeout_ms + 1000);
  EXPECT_RESULT_ERRNO(ns_->GetAttr(ino), ESTALE);
  EXPECT_EQ(CountKeys(keys::kQueue), 1u);
}

TEST_F(LifecycleTest, OrphansFromBeforeARestartGoAfterTheClientTimeout) {
  auto o = Create(kRootIno, "f");
  uint64_t ino = o->attr().ino();
  ASSERT_TRUE(Unlink(kRootIno, "f").ok());
  Reopen();
  EXPECT_TRUE(ns_->GetAttr(ino).ok());
  ns_->Housekeep(NowMs());
  EXPECT_TRUE(ns_->GetAttr(ino).ok()) << "clients still have time to reopen";
  ns_->Housekeep(NowMs() + opts_.client_timeout_ms + 1);
  EXPECT_RESULT_ERRNO(ns_->GetAttr(ino), ESTALE);
  EXPECT_EQ(CountKeys(keys::kOrphan), 0u);
}

TEST_F(LifecycleTest, DestroyedObjectsLeaveTheQueueOnOkOrEnoent) {
  auto d = Mkdir(kRootIno, "d");
  proto::SetLayoutReq set;
  set.set_ino(d->ino());
  set.mutable_layout()->set_stripe_count(3);
  set.mutable_layout()->set_start_ost(-1);
  ASSERT_TRUE(ns_->SetLayout(RootCtx(), set).ok());
  auto o = Create(d->ino(), "f");
  ASSERT_TRUE(CloseFile(o->attr().ino(), o->open_id()).ok());
  ASSERT_TRUE(Unlink(d->ino(), "f").ok());
  ASSERT_EQ(CountKeys(keys::kQueue), 3u);
  const auto& objs = o->layout().objects();
  FakeDestroyer fake;
  fake.answers[objs[0].oid()] = EIO;
  fake.answers[objs[1].oid()] = ENOENT;
  DestroyQueue queue(store_.get(), osts_.get(), &fake);
  EXPECT_EQ(queue.RunOnce(), 1u);
  EXPECT_EQ(fake.calls.size(), 3u);
  EXPECT_EQ(fake.calls[0].address, OssAddress(fake.calls[0].ost));
  EXPECT_EQ(CountKeys(keys::kQueue), 1u);
  fake.answers.clear();
  EXPECT_EQ(queue.RunOnce(), 0u);
  EXPECT_EQ(CountKeys(keys::kQueue), 0u);
}

TEST_F(LifecycleTest, AReplayedRequestReturnsTheSavedReplyAndAppliesOnce) {
  OpCtx ctx = RootCtx();
  ctx.client_id = 5;
  ctx.xid = 1;
  auto first = Mkdir(kRootIno, "d", 0755, ctx);
  ASSERT_TRUE(first.ok());
  auto again = Mkdir(kRootIno, "d", 0755, ctx);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->ino(), first->ino());
  EXPECT_EQ(ns_->GetAttr(kRootIno)->nlink(), 3u);
  ctx.xid = 2;
  ASSERT_TRUE(Rmdir(kRootIno, "d", ctx).ok());
  EXPECT_TRUE(Rmdir(kRootIno, "d", ctx).ok()) << "a resent rmdir is not ENOENT";
  EXPECT_ERRNO(Rmdir(kRootIno, "d", RootCtx()), ENOENT);
  ctx.xid = 3;
  auto c1 = Create(kRootIno, "f", true, ctx);
  Reopen();
  auto c2 = Create(kRootIno, "f", true, ctx);
  ASSERT_TRUE(c2.ok()) << "saved replies survive a restart";
  // The saved open id belongs to the previous boot: the open is registered anew.
  EXPECT_NE(c2->open_id(), c1->open_id());
  EXPECT_EQ(ns_->OpenCount(c1->attr().ino()), 1);
  EXPECT_EQ(c2->attr().ino(), c1->attr().ino());
}

TEST_F(LifecycleTest, TheReplyCacheIsBoundedAndTrimsItsRecords) {
  Close();
  opts_.reply_cache_entries = 4;
  Open();
  OpCtx ctx = RootCtx();
  ctx.client_id = 9;
  for (uint64_t x = 1; x <= 10; ++x) {
    ctx.xid = x;
    ASSERT_TRUE(Mkdir(kRootIno, "d" + std::to_string(x), 0755, ctx).ok());
  }
  EXPECT_EQ(CountKeys(keys::kReply), 4u);
}

TEST_F(LifecycleTest, OpenTableExpiresOnlySilentClients) {
  OpenTable t;
  uint64_t a = t.Add(1, 100, 0);
  t.Add(2, 100, 0);
  t.Add(0, 200, 0);
  t.Touch(2, 900);
  auto gone = t.ExpireClients(1000, 500);
  EXPECT_EQ(gone, std::vector<uint64_t>{100});
  EXPECT_EQ(t.OpenCount(100), 1);
  EXPECT_EQ(t.OpenCount(200), 1);
  EXPECT_FALSE(t.Remove(a).has_value());
}

}  // namespace
}  // namespace sfs::mds
