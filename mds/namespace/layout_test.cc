// Layouts: the root default, directory defaults and their inheritance, and
// re-striping an empty file.
#include <set>

#include <gtest/gtest.h>

#include "mds/namespace/test_util.h"

namespace sfs::mds {
namespace {

using LayoutTest = NamespaceTest;

proto::SetLayoutReq Stripe(uint64_t ino, int32_t count, uint64_t size = 0) {
  proto::SetLayoutReq req;
  req.set_ino(ino);
  req.mutable_layout()->set_stripe_count(count);
  req.mutable_layout()->set_stripe_size(size);
  req.mutable_layout()->set_start_ost(-1);
  return req;
}

TEST_F(LayoutTest, NewFilesGetTheRootDefaultOfOneMebibyteStripe) {
  proto::GetLayoutResp root;
  ASSERT_TRUE(ns_->GetLayout(kRootIno, &root).ok());
  EXPECT_EQ(root.layout().stripe_size(), 1u << 20);
  EXPECT_EQ(root.layout().stripe_count(), 1);
  auto f = Create(kRootIno, "f");
  EXPECT_EQ(f->layout().stripe_size(), 1u << 20);
  EXPECT_EQ(f->layout().objects_size(), 1);
}

TEST_F(LayoutTest, DirectoryDefaultsAreInheritedBySubdirectories) {
  auto d = Mkdir(kRootIno, "d");
  ASSERT_TRUE(ns_->SetLayout(RootCtx(), Stripe(d->ino(), 2, 4 << 20)).ok());
  auto sub = Mkdir(d->ino(), "sub");
  proto::GetLayoutResp got;
  ASSERT_TRUE(ns_->GetLayout(sub->ino(), &got).ok());
  EXPECT_TRUE(got.inherited());
  EXPECT_EQ(got.layout().stripe_count(), 2);
  auto f = Create(sub->ino(), "f");
  EXPECT_EQ(f->layout().stripe_size(), 4u << 20);
  ASSERT_EQ(f->layout().objects_size(), 2);
  EXPECT_NE(f->layout().objects(0).ost(), f->layout().objects(1).ost());
  EXPECT_NE(f->layout().objects(0).oid(), f->layout().objects(1).oid());
  auto all = Create(kRootIno, "all");
  ASSERT_TRUE(ns_->SetLayout(RootCtx(), Stripe(d->ino(), -1)).ok());
  EXPECT_EQ(Create(d->ino(), "wide")->layout().objects_size(), kOsts);
}

TEST_F(LayoutTest, SetstripeValidatesItsArguments) {
  auto d = Mkdir(kRootIno, "d");
  EXPECT_ERRNO(ns_->SetLayout(RootCtx(), Stripe(d->ino(), kOsts + 1)), EINVAL);
  EXPECT_ERRNO(ns_->SetLayout(RootCtx(), Stripe(d->ino(), 1, 1000)), EINVAL);
  EXPECT_ERRNO(ns_->SetLayout(RootCtx(), Stripe(d->ino(), -2)), EINVAL);
  EXPECT_ERRNO(ns_->SetLayout(UserCtx(1000), Stripe(d->ino(), 1)), EPERM);
  proto::SetLayoutReq clear;
  clear.set_ino(d->ino());
  clear.set_clear(true);
  ASSERT_TRUE(ns_->SetLayout(RootCtx(), Stripe(d->ino(), 2)).ok());
  ASSERT_TRUE(ns_->SetLayout(RootCtx(), clear).ok());
  proto::GetLayoutResp got;
  ASSERT_TRUE(ns_->GetLayout(d->ino(), &got).ok());
  EXPECT_TRUE(got.inherited());
  EXPECT_EQ(got.layout().stripe_count(), 1);
}

TEST_F(LayoutTest, AnEmptyFileCanBeRestripedButNotOneWithData) {
  auto o = Create(kRootIno, "f");
  uint64_t ino = o->attr().ino();
  ASSERT_TRUE(ns_->SetLayout(RootCtx(), Stripe(ino, 3)).ok());
  proto::GetLayoutResp got;
  ASSERT_TRUE(ns_->GetLayout(ino, &got).ok());
  EXPECT_EQ(got.layout().objects_size(), 3);
  EXPECT_EQ(CountKeys(keys::kQueue), 1u) << "the old object is queued for destroy";
  proto::SetSizeReq size;
  proto::Attr out;
  size.set_ino(ino);
  size.set_size(1);
  ASSERT_TRUE(ns_->SetSize(RootCtx(), size, &out).ok());
  EXPECT_ERRNO(ns_->SetLayout(RootCtx(), Stripe(ino, 2)), EBUSY);
}

TEST_F(LayoutTest, AnExplicitCreateLayoutIsClampedToTheOsts) {
  proto::CreateReq req;
  req.set_parent(kRootIno);
  req.set_name("f");
  req.set_mode(0644);
  req.mutable_layout()->set_stripe_count(100);
  req.mutable_layout()->set_start_ost(-1);
  proto::OpenResp out;
  ASSERT_TRUE(ns_->Create(RootCtx(), req, &out).ok());
  EXPECT_EQ(out.layout().objects_size(), kOsts);
  std::set<uint32_t> osts;
  for (const auto& o : out.layout().objects()) osts.insert(o.ost());
  EXPECT_EQ(osts.size(), static_cast<size_t>(kOsts));
}

}  // namespace
}  // namespace sfs::mds
