// Mirrored layouts at the MDS: placement of the copies on distinct OSTs,
// inheritance, the limits (N > OSTs, N on a file with data) and the durable
// copy states (MirrorState).
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "mds/namespace/test_util.h"

namespace sfs::mds {
namespace {

using MirrorTest = NamespaceTest;

proto::SetLayoutReq Mirrored(uint64_t ino, uint32_t mirrors, int32_t count = 0) {
  proto::SetLayoutReq req;
  req.set_ino(ino);
  req.mutable_layout()->set_mirror_count(mirrors);
  req.mutable_layout()->set_stripe_count(count);
  req.mutable_layout()->set_start_ost(-1);
  return req;
}

// Every stripe's copies on distinct OSTs, copy-major order, mirror indices right.
void ExpectDistinctCopies(const proto::Layout& l, uint32_t mirrors) {
  ASSERT_EQ(l.mirror_count(), mirrors);
  const int stripes = l.stripe_count();
  ASSERT_EQ(l.objects_size(), stripes * static_cast<int>(mirrors));
  std::set<uint64_t> oids;
  for (int s = 0; s < stripes; ++s) {
    std::set<uint32_t> osts;
    for (uint32_t m = 0; m < mirrors; ++m) {
      const proto::StripeObject& o = l.objects(static_cast<int>(m) * stripes + s);
      EXPECT_EQ(o.mirror(), m);
      EXPECT_EQ(o.state(), proto::OBJECT_OK);
      osts.insert(o.ost());
      oids.insert(o.oid());
    }
    EXPECT_EQ(osts.size(), mirrors) << "stripe " << s;
  }
  EXPECT_EQ(oids.size(), static_cast<size_t>(l.objects_size()));
}

TEST(PlaceMirrorsTest, CopiesOfAStripeLandOnDistinctOsts) {
  for (uint32_t mirrors : {2u, 3u}) {
    for (size_t n = mirrors; n <= 6; ++n) {
      std::vector<uint32_t> ring;
      for (uint32_t i = 0; i < n; ++i) ring.push_back(10 + i);
      for (size_t count = 1; count <= n; ++count) {
        std::vector<uint32_t> picks(ring.rbegin(), ring.rbegin() + static_cast<long>(count));
        auto got = PlaceMirrors(picks, ring, mirrors);
        ASSERT_TRUE(got.ok());
        ASSERT_EQ(got->size(), count * mirrors);
        for (size_t s = 0; s < count; ++s) {
          std::set<uint32_t> osts;
          for (uint32_t m = 0; m < mirrors; ++m) osts.insert((*got)[m * count + s]);
          EXPECT_EQ(osts.size(), mirrors) << n << " OSTs, " << count << " stripes";
          EXPECT_EQ((*got)[s], picks[s]);
        }
      }
    }
  }
}

// Six OSTs, two on each of three OSSes: the copies of a stripe never share
// an OSS, whichever OSTs the stripes start on.
TEST(PlaceMirrorsTest, CopiesOfAStripeLandOnDistinctOsses) {
  const std::vector<uint32_t> ring{10, 11, 12, 13, 14, 15};
  const std::vector<std::string> oss{"a", "a", "b", "b", "c", "c"};
  for (uint32_t mirrors : {2u, 3u}) {
    for (size_t count = 1; count <= ring.size(); ++count) {
      std::vector<uint32_t> picks(ring.begin(), ring.begin() + static_cast<long>(count));
      auto got = PlaceMirrors(picks, ring, mirrors, oss);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      for (size_t s = 0; s < count; ++s) {
        std::set<std::string> servers;
        for (uint32_t m = 0; m < mirrors; ++m) servers.insert(oss[(*got)[m * count + s] - 10]);
        EXPECT_EQ(servers.size(), mirrors) << count << " stripes, stripe " << s;
      }
    }
  }
  auto one = PlaceMirrors({10}, {10, 11, 12}, 2, {"a", "a", "a"});
  ASSERT_FALSE(one.ok());
  EXPECT_EQ(one.status().code(), EINVAL);
  EXPECT_NE(one.status().message().find("exceeds the 1 OSSes available"), std::string::npos)
      << one.status().message();
}

TEST(PlaceMirrorsTest, MoreCopiesThanOstsIsEinval) {
  auto got = PlaceMirrors({1}, {1, 2}, 3);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), EINVAL);
  EXPECT_EQ(PlaceMirrors({1}, {1}, 1)->size(), 1u);  // one copy needs no ring
}

TEST_F(MirrorTest, DirectoryDefaultIsInheritedWithStripeCount) {
  auto d = Mkdir(kRootIno, "d");
  ASSERT_TRUE(ns_->SetLayout(RootCtx(), Mirrored(d->ino(), 2, 2)).ok());
  auto sub = Mkdir(d->ino(), "sub");
  proto::GetLayoutResp got;
  ASSERT_TRUE(ns_->GetLayout(sub->ino(), &got).ok());
  EXPECT_EQ(got.layout().mirror_count(), 2u);
  auto f = Create(sub->ino(), "f");
  ASSERT_TRUE(f.ok());
  ExpectDistinctCopies(f->layout(), 2);
  EXPECT_EQ(f->layout().stripe_count(), 2);
  // Three copies of every stripe over all four OSTs.
  ASSERT_TRUE(ns_->SetLayout(RootCtx(), Mirrored(d->ino(), 3, -1)).ok());
  auto wide = Create(d->ino(), "wide");
  ExpectDistinctCopies(wide->layout(), 3);
  EXPECT_EQ(wide->layout().stripe_count(), kOsts);
  // -N 1 below a mirrored default: plain files again.
  auto plain = Mkdir(d->ino(), "plain");
  ASSERT_TRUE(ns_->SetLayout(RootCtx(), Mirrored(plain->ino(), 1)).ok());
  auto p = Create(plain->ino(), "p");
  EXPECT_EQ(p->layout().mirror_count(), 0u);
  EXPECT_EQ(p->layout().objects_size(), p->layout().stripe_count());
}

TEST_F(MirrorTest, MoreCopiesThanOstsIsEinvalWithAClearMessage) {
  auto d = Mkdir(kRootIno, "d");
  Status st = ns_->SetLayout(RootCtx(), Mirrored(d->ino(), kOsts + 1));
  EXPECT_EQ(st.code(), EINVAL);
  st = ns_->SetLayout(RootCtx(), Mirrored(d->ino(), 3));
  ASSERT_TRUE(st.ok());
  EXPECT_ERRNO(ns_->SetLayout(RootCtx(), Mirrored(d->ino(), 4)), EINVAL);  // 1..3 only
  // A pool of two OSTs cannot hold three copies.
  proto::PoolReq pool;
  proto::PoolResp pool_out;
  pool.set_op(proto::POOL_CREATE);
  pool.set_name("two");
  ASSERT_TRUE(ns_->Pool(RootCtx(), pool, &pool_out).ok());
  pool.set_op(proto::POOL_ADD);
  pool.add_osts(0);
  pool.add_osts(1);
  ASSERT_TRUE(ns_->Pool(RootCtx(), pool, &pool_out).ok());
  proto::SetLayoutReq in_pool = Mirrored(d->ino(), 3);
  in_pool.mutable_layout()->set_pool("two");
  st = ns_->SetLayout(RootCtx(), in_pool);
  EXPECT_EQ(st.code(), EINVAL);
  EXPECT_NE(st.message().find("pool 'two'"), std::string::npos) << st.message();
}

TEST_F(MirrorTest, MirrorCountOnAFileWithDataIsEinval) {
  auto f = Touch(kRootIno, "f");
  ASSERT_TRUE(ns_->SetLayout(RootCtx(), Mirrored(f->ino(), 2)).ok());  // empty: fine
  proto::SetAttrReq req;
  proto::Attr out;
  req.set_ino(f->ino());
  req.set_valid(proto::SETATTR_SIZE);
  req.set_size(100);
  ASSERT_TRUE(ns_->SetAttr(RootCtx(), req, &out).ok());
  EXPECT_ERRNO(ns_->SetLayout(RootCtx(), Mirrored(f->ino(), 3)), EINVAL);
  EXPECT_ERRNO(ns_->SetLayout(RootCtx(), Mirrored(f->ino(), 1)), EINVAL);
}

TEST_F(MirrorTest, CopyStatesAreDurableAndTheLastGoodCopyStays) {
  auto d = Mkdir(kRootIno, "d");
  ASSERT_TRUE(ns_->SetLayout(RootCtx(), Mirrored(d->ino(), 2, 1)).ok());
  auto f = Create(d->ino(), "f");
  ASSERT_TRUE(f.ok());
  const uint64_t ino = f->attr().ino();
  const proto::StripeObject copy0 = f->layout().objects(0), copy1 = f->layout().objects(1);
  proto::MirrorStateReq req;
  req.set_ino(ino);
  *req.add_objects() = copy1;
  req.set_state(proto::OBJECT_STALE);
  proto::GetLayoutResp out;
  ASSERT_TRUE(ns_->MirrorState(UserCtx(1000), req, &out).ok());  // any writer may report
  EXPECT_EQ(out.layout().objects(1).state(), proto::OBJECT_STALE);
  // The other copy is now the stripe's only good one: it cannot go stale.
  proto::MirrorStateReq last = req;
  *last.mutable_objects(0) = copy0;
  EXPECT_ERRNO(ns_->MirrorState(RootCtx(), last, &out), EIO);
  Reopen();
  proto::GetLayoutResp got;
  ASSERT_TRUE(ns_->GetLayout(ino, &got).ok());
  EXPECT_EQ(got.layout().objects(1).state(), proto::OBJECT_STALE);
  EXPECT_EQ(got.layout().objects(0).state(), proto::OBJECT_OK);
  // The resync's to-do list survives the restart with the mark.
  EXPECT_EQ(ns_->ResyncWanted(), std::vector<uint64_t>{ino});
  // Marking ok (after a resync) is the owner's or root's.
  req.set_state(proto::OBJECT_OK);
  EXPECT_ERRNO(ns_->MirrorState(UserCtx(1000), req, &out), EPERM);
  ASSERT_TRUE(ns_->MirrorState(RootCtx(), req, &out).ok());
  EXPECT_EQ(out.layout().objects(1).state(), proto::OBJECT_OK);
  // Nothing stale is left: off the list on disk too (the resyncer's
  // ResyncDone takes it out of memory).
  Reopen();
  EXPECT_TRUE(ns_->ResyncWanted().empty());
  // And a file removed while on the list leaves it at ResyncDone.
  req.set_state(proto::OBJECT_STALE);
  ASSERT_TRUE(ns_->MirrorState(RootCtx(), req, &out).ok());
  ns_->ResyncDone(ino);
  Reopen();
  EXPECT_TRUE(ns_->ResyncWanted().empty());
  req.set_state(proto::OBJECT_OK);
  // Objects not in the layout, and files that are not mirrored.
  proto::MirrorStateReq bogus = req;
  bogus.mutable_objects(0)->set_oid(987654321);
  EXPECT_ERRNO(ns_->MirrorState(RootCtx(), bogus, &out), ESTALE);
  auto plain = Touch(kRootIno, "plain");
  proto::MirrorStateReq not_mirrored = req;
  not_mirrored.set_ino(plain->ino());
  EXPECT_ERRNO(ns_->MirrorState(RootCtx(), not_mirrored, &out), EINVAL);
}

TEST_F(MirrorTest, AResyncIsMarkedOkOnlyIfNothingWroteTheFileMeanwhile) {
  auto d = Mkdir(kRootIno, "d");
  ASSERT_TRUE(ns_->SetLayout(RootCtx(), Mirrored(d->ino(), 2, 1)).ok());
  auto f = Create(d->ino(), "f");  // open O_RDWR
  ASSERT_TRUE(f.ok());
  const uint64_t ino = f->attr().ino();
  proto::MirrorStateReq req;
  req.set_ino(ino);
  *req.add_objects() = f->layout().objects(1);
  req.set_state(proto::OBJECT_STALE);
  proto::GetLayoutResp out;
  ASSERT_TRUE(ns_->MirrorState(RootCtx(), req, &out).ok());
  auto before = ns_->GetAttr(ino);
  ASSERT_TRUE(before.ok());
  req.set_state(proto::OBJECT_OK);
  req.set_if_idle(true);
  req.set_size(before->size());
  req.set_mtime_ns(before->mtime_ns());
  EXPECT_ERRNO(ns_->MirrorState(RootCtx(), req, &out), EBUSY);  // still open for write
  ASSERT_TRUE(CloseFile(ino, f->open_id()).ok());
  proto::SetAttrReq grow;
  proto::Attr attr;
  grow.set_ino(ino);
  grow.set_valid(proto::SETATTR_SIZE);
  grow.set_size(4096);
  ASSERT_TRUE(ns_->SetAttr(RootCtx(), grow, &attr).ok());
  EXPECT_ERRNO(ns_->MirrorState(RootCtx(), req, &out), EBUSY);  // written since
  req.set_size(attr.size());
  req.set_mtime_ns(attr.mtime_ns());
  ASSERT_TRUE(ns_->MirrorState(RootCtx(), req, &out).ok());
  EXPECT_EQ(out.layout().objects(1).state(), proto::OBJECT_OK);
}

}  // namespace
}  // namespace sfs::mds
