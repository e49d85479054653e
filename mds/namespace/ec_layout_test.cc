// Erasure-coded layouts at the MDS: K+M objects on distinct OSTs, inherited
// directory defaults that -N/-c turn off, the limits (bad K+M, K+M > OSTs,
// EC with mirrors, EC on a file with data) and the chunk states (never more
// than M stale, kept across a restart, off the mirror resync list).
#include <gtest/gtest.h>

#include <set>

#include "mds/namespace/test_util.h"

namespace sfs::mds {
namespace {

using EcLayoutTest = NamespaceTest;

proto::SetLayoutReq Ec(uint64_t ino, uint32_t k, uint32_t m) {
  proto::SetLayoutReq req;
  req.set_ino(ino);
  req.mutable_layout()->set_ec_data(k);
  req.mutable_layout()->set_ec_parity(m);
  req.mutable_layout()->set_start_ost(-1);
  return req;
}

void ExpectEc(const proto::Layout& l, uint32_t k, uint32_t m) {
  EXPECT_EQ(l.ec_data(), k);
  EXPECT_EQ(l.ec_parity(), m);
  EXPECT_EQ(l.mirror_count(), 0u);
  EXPECT_EQ(l.stripe_count(), static_cast<int32_t>(k + m));
  ASSERT_EQ(l.objects_size(), static_cast<int>(k + m));
  std::set<uint32_t> osts;
  for (const auto& o : l.objects()) osts.insert(o.ost());
  EXPECT_EQ(osts.size(), k + m) << "two chunks of a row on one OST";
}

TEST_F(EcLayoutTest, DirectoryDefaultMakesKPlusMObjectsOnDistinctOsts) {
  auto d = Mkdir(kRootIno, "d");
  ASSERT_TRUE(ns_->SetLayout(RootCtx(), Ec(d->ino(), 2, 1)).ok());
  auto sub = Mkdir(d->ino(), "sub");
  auto f = Create(sub->ino(), "f");
  ASSERT_TRUE(f.ok());
  ExpectEc(f->layout(), 2, 1);
  ASSERT_TRUE(ns_->SetLayout(RootCtx(), Ec(d->ino(), 3, 1)).ok());  // all four OSTs
  ExpectEc(Create(d->ino(), "wide")->layout(), 3, 1);
  // -N 2 or -c 2 below an EC default: mirrored or plain files again.
  auto mirrored = Mkdir(d->ino(), "m");
  proto::SetLayoutReq n2;
  n2.set_ino(mirrored->ino());
  n2.mutable_layout()->set_mirror_count(2);
  n2.mutable_layout()->set_start_ost(-1);
  ASSERT_TRUE(ns_->SetLayout(RootCtx(), n2).ok());
  auto mf = Create(mirrored->ino(), "f");
  EXPECT_EQ(mf->layout().ec_data(), 0u);
  EXPECT_EQ(mf->layout().mirror_count(), 2u);
  auto plain = Mkdir(d->ino(), "p");
  proto::SetLayoutReq c2;
  c2.set_ino(plain->ino());
  c2.mutable_layout()->set_stripe_count(2);
  c2.mutable_layout()->set_start_ost(-1);
  ASSERT_TRUE(ns_->SetLayout(RootCtx(), c2).ok());
  auto pf = Create(plain->ino(), "f");
  EXPECT_EQ(pf->layout().ec_data(), 0u);
  EXPECT_EQ(pf->layout().objects_size(), 2);
}

TEST_F(EcLayoutTest, BadGeometryAndTooFewOstsAreEinval) {
  auto d = Mkdir(kRootIno, "d");
  EXPECT_ERRNO(ns_->SetLayout(RootCtx(), Ec(d->ino(), 0, 1)), EINVAL);
  EXPECT_ERRNO(ns_->SetLayout(RootCtx(), Ec(d->ino(), 2, 0)), EINVAL);
  EXPECT_ERRNO(ns_->SetLayout(RootCtx(), Ec(d->ino(), 30, 3)), EINVAL);
  Status st = ns_->SetLayout(RootCtx(), Ec(d->ino(), 3, 2));  // 5 > 4 OSTs
  EXPECT_EQ(st.code(), EINVAL);
  EXPECT_NE(st.message().find("needs 5 OSTs"), std::string::npos) << st.message();
  proto::SetLayoutReq both = Ec(d->ino(), 2, 1);
  both.mutable_layout()->set_mirror_count(2);
  EXPECT_ERRNO(ns_->SetLayout(RootCtx(), both), EINVAL);
  proto::SetLayoutReq count = Ec(d->ino(), 2, 1);
  count.mutable_layout()->set_stripe_count(2);
  EXPECT_ERRNO(ns_->SetLayout(RootCtx(), count), EINVAL);
  // EC on a file with data: EINVAL (migrate does that); empty: fine.
  auto f = Touch(kRootIno, "f");
  ASSERT_TRUE(ns_->SetLayout(RootCtx(), Ec(f->ino(), 2, 1)).ok());
  proto::SetAttrReq size;
  proto::Attr out;
  size.set_ino(f->ino());
  size.set_valid(proto::SETATTR_SIZE);
  size.set_size(100);
  ASSERT_TRUE(ns_->SetAttr(RootCtx(), size, &out).ok());
  EXPECT_ERRNO(ns_->SetLayout(RootCtx(), Ec(f->ino(), 3, 1)), EINVAL);
}

TEST_F(EcLayoutTest, NoMoreThanMChunkObjectsGoStaleAndTheMarksAreDurable) {
  auto d = Mkdir(kRootIno, "d");
  ASSERT_TRUE(ns_->SetLayout(RootCtx(), Ec(d->ino(), 2, 1)).ok());
  auto f = Create(d->ino(), "f");
  ASSERT_TRUE(f.ok());
  const uint64_t ino = f->attr().ino();
  proto::MirrorStateReq req;
  req.set_ino(ino);
  *req.add_objects() = f->layout().objects(1);
  req.set_state(proto::OBJECT_STALE);
  proto::GetLayoutResp out;
  ASSERT_TRUE(ns_->MirrorState(UserCtx(1000), req, &out).ok());
  EXPECT_EQ(out.layout().objects(1).state(), proto::OBJECT_STALE);
  ASSERT_TRUE(ns_->MirrorState(UserCtx(1000), req, &out).ok()) << "marking it again is fine";
  // M = 1: a second stale object would leave rows with fewer than K chunks.
  proto::MirrorStateReq second = req;
  *second.mutable_objects(0) = f->layout().objects(2);
  EXPECT_ERRNO(ns_->MirrorState(RootCtx(), second, &out), EIO);
  Reopen();
  proto::GetLayoutResp got;
  ASSERT_TRUE(ns_->GetLayout(ino, &got).ok());
  EXPECT_EQ(got.layout().objects(1).state(), proto::OBJECT_STALE);
  EXPECT_EQ(got.layout().objects(2).state(), proto::OBJECT_OK);
  // On the resync list: the MDS's resyncer rebuilds it from K other chunks.
  EXPECT_EQ(ns_->ResyncWanted(), std::vector<uint64_t>{ino});
}

// `sfs ost lost`: every object on the OST is marked lost, durably, its files
// go on the resync list, the OST is never allocated again; ReplaceObject
// swaps a rebuilt object in (refused if the file changed meanwhile).
TEST_F(EcLayoutTest, OstLostMarksObjectsAndReplaceObjectSwapsInTheRebuiltOne) {
  auto d = Mkdir(kRootIno, "d");
  ASSERT_TRUE(ns_->SetLayout(RootCtx(), Ec(d->ino(), 2, 1)).ok());
  auto f = Create(d->ino(), "f");
  ASSERT_TRUE(f.ok());
  const uint64_t ino = f->attr().ino();
  const proto::StripeObject victim = f->layout().objects(0);
  uint64_t files = 0;
  EXPECT_ERRNO(ns_->OstLost(UserCtx(1000), victim.ost(), &files), EPERM);
  EXPECT_ERRNO(ns_->OstLost(RootCtx(), 99, &files), ENOENT);
  ASSERT_TRUE(ns_->OstLost(RootCtx(), victim.ost(), &files).ok());
  EXPECT_EQ(files, 1u);
  Reopen();
  proto::GetLayoutResp got;
  ASSERT_TRUE(ns_->GetLayout(ino, &got).ok());
  EXPECT_EQ(got.layout().objects(0).state(), proto::OBJECT_LOST);
  EXPECT_EQ(ns_->ResyncWanted(), std::vector<uint64_t>{ino});
  ASSERT_EQ(osts_->LostOsts(), std::vector<uint32_t>{victim.ost()}) << "not durable";
  // Never allocated again: new 2+1 files use the other three OSTs only.
  for (int i = 0; i < 4; ++i) {
    auto g = Create(d->ino(), "g" + std::to_string(i));
    ASSERT_TRUE(g.ok());
    for (const auto& o : g->layout().objects()) EXPECT_NE(o.ost(), victim.ost());
  }
  // A lost object is not marked ok by a client's resync.
  proto::MirrorStateReq ok;
  ok.set_ino(ino);
  *ok.add_objects() = victim;
  ok.set_state(proto::OBJECT_OK);
  proto::GetLayoutResp out;
  EXPECT_ERRNO(ns_->MirrorState(RootCtx(), ok, &out), EINVAL);
  auto attr = ns_->GetAttr(ino);
  ASSERT_TRUE(attr.ok());
  auto oid = ns_->NewObjectId();
  ASSERT_TRUE(oid.ok());
  const uint32_t home = victim.ost() == 3 ? 2 : 3;
  EXPECT_ERRNO(ns_->ReplaceObject(ino, victim.ost(), victim.oid(), home, *oid, attr->size() + 1,
                                  attr->mtime_ns()),
               EBUSY);
  ASSERT_TRUE(
      ns_->ReplaceObject(ino, victim.ost(), victim.oid(), home, *oid, attr->size(), attr->mtime_ns())
          .ok());
  Reopen();
  ASSERT_TRUE(ns_->GetLayout(ino, &got).ok());
  EXPECT_EQ(got.layout().objects(0).ost(), home);
  EXPECT_EQ(got.layout().objects(0).oid(), *oid);
  EXPECT_EQ(got.layout().objects(0).state(), proto::OBJECT_OK);
  EXPECT_TRUE(ns_->ResyncWanted().empty()) << "whole again: off the list";
}

}  // namespace
}  // namespace sfs::mds
