// OST pools: create/add/remove/list/destroy rules, durability, and the
// allocator placing a pool's files only on its members.
#include <set>

#include <gtest/gtest.h>

#include "mds/namespace/test_util.h"

namespace sfs::mds {
namespace {

class PoolTest : public NamespaceTest {
 protected:
  Status Op(proto::PoolOp op, const std::string& name, std::vector<uint32_t> osts = {},
            const OpCtx& ctx = RootCtx()) {
    proto::PoolReq req;
    req.set_op(op);
    req.set_name(name);
    for (uint32_t o : osts) req.add_osts(o);
    proto::PoolResp out;
    return ns_->Pool(ctx, req, &out);
  }
  std::vector<uint32_t> Members(const std::string& name) {
    proto::PoolReq req;
    req.set_name(name);
    proto::PoolResp out;
    EXPECT_TRUE(ns_->Pool(RootCtx(), req, &out).ok());
    if (out.pools_size() != 1) return {};
    return {out.pools(0).osts().begin(), out.pools(0).osts().end()};
  }
  Result<proto::OpenResp> CreateIn(uint64_t parent, const std::string& name, const std::string& pool,
                                   int32_t count) {
    proto::CreateReq req;
    req.set_parent(parent);
    req.set_name(name);
    req.set_mode(0644);
    req.set_open_flags(O_RDWR | O_CREAT);
    req.mutable_layout()->set_pool(pool);
    req.mutable_layout()->set_stripe_count(count);
    req.mutable_layout()->set_start_ost(-1);
    proto::OpenResp out;
    SFS_RETURN_IF_ERROR(ns_->Create(RootCtx(), req, &out));
    return out;
  }
  Status SetDirPool(uint64_t dir, const std::string& pool, int32_t count) {
    proto::SetLayoutReq req;
    req.set_ino(dir);
    req.mutable_layout()->set_pool(pool);
    req.mutable_layout()->set_stripe_count(count);
    req.mutable_layout()->set_start_ost(-1);
    return ns_->SetLayout(RootCtx(), req);
  }
};

TEST_F(PoolTest, PoolsFollowLustresRulesAndSurviveARestart) {
  ASSERT_TRUE(Op(proto::POOL_CREATE, "fast").ok());
  EXPECT_ERRNO(Op(proto::POOL_CREATE, "fast"), EEXIST);
  EXPECT_ERRNO(Op(proto::POOL_CREATE, "bad name"), EINVAL);
  EXPECT_ERRNO(Op(proto::POOL_CREATE, "x", {}, UserCtx(1000)), EPERM);
  ASSERT_TRUE(Op(proto::POOL_ADD, "fast", {3, 1}).ok());
  EXPECT_ERRNO(Op(proto::POOL_ADD, "fast", {1}), EEXIST);
  EXPECT_ERRNO(Op(proto::POOL_ADD, "fast", {kOsts}), EINVAL);
  EXPECT_ERRNO(Op(proto::POOL_ADD, "nope", {0}), ENOENT);
  EXPECT_ERRNO(Op(proto::POOL_REMOVE, "fast", {0}), ENOENT);
  EXPECT_ERRNO(Op(proto::POOL_DESTROY, "fast"), ENOTEMPTY);
  Reopen();
  EXPECT_EQ(Members("fast"), (std::vector<uint32_t>{1, 3}));
  ASSERT_TRUE(Op(proto::POOL_REMOVE, "fast", {1, 3}).ok());
  ASSERT_TRUE(Op(proto::POOL_DESTROY, "fast").ok());
  EXPECT_EQ(CountKeys(keys::kPool), 0u);
}

TEST_F(PoolTest, FilesInAPoolUseOnlyItsOsts) {
  ASSERT_TRUE(Op(proto::POOL_CREATE, "p").ok());
  ASSERT_TRUE(Op(proto::POOL_ADD, "p", {0, 2}).ok());
  auto d = Mkdir(kRootIno, "d");
  ASSERT_TRUE(SetDirPool(d->ino(), "p", 2).ok());
  for (int i = 0; i < 6; ++i) {
    auto f = Create(d->ino(), "f" + std::to_string(i));
    ASSERT_TRUE(f.ok());
    EXPECT_EQ(f->layout().pool(), "p");
    std::set<uint32_t> osts;
    for (const auto& o : f->layout().objects()) osts.insert(o.ost());
    EXPECT_EQ(osts, (std::set<uint32_t>{0, 2}));
  }
  auto wide = CreateIn(kRootIno, "wide", "p", -1);
  ASSERT_TRUE(wide.ok());
  EXPECT_EQ(wide->layout().objects_size(), 2);
}

TEST_F(PoolTest, AnUnknownPoolOrACountAboveItsOstsIsRefused) {
  auto d = Mkdir(kRootIno, "d");
  EXPECT_ERRNO(SetDirPool(d->ino(), "nope", 1), EINVAL);
  EXPECT_RESULT_ERRNO(CreateIn(kRootIno, "f", "nope", 1), EINVAL);
  ASSERT_TRUE(Op(proto::POOL_CREATE, "two").ok());
  EXPECT_RESULT_ERRNO(CreateIn(kRootIno, "g", "two", 1), EINVAL) << "an empty pool";
  ASSERT_TRUE(Op(proto::POOL_ADD, "two", {1, 2}).ok());
  EXPECT_ERRNO(SetDirPool(d->ino(), "two", 3), EINVAL);
  ASSERT_TRUE(SetDirPool(d->ino(), "two", 2).ok());
  auto f = CreateIn(kRootIno, "h", "two", 3);
  ASSERT_TRUE(f.ok()) << "an explicit create clamps";
  EXPECT_EQ(f->layout().objects_size(), 2);
}

TEST_F(PoolTest, AnInheritedPoolThatWasDestroyedFallsBackToAllOsts) {
  ASSERT_TRUE(Op(proto::POOL_CREATE, "gone").ok());
  ASSERT_TRUE(Op(proto::POOL_ADD, "gone", {1}).ok());
  auto d = Mkdir(kRootIno, "d");
  ASSERT_TRUE(SetDirPool(d->ino(), "gone", 1).ok());
  ASSERT_TRUE(Op(proto::POOL_REMOVE, "gone", {1}).ok());
  ASSERT_TRUE(Op(proto::POOL_DESTROY, "gone").ok());
  auto f = Create(d->ino(), "f");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->layout().pool(), "");
  EXPECT_EQ(f->layout().objects_size(), 1);
}

}  // namespace
}  // namespace sfs::mds
