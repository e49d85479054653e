// The RPC handler: payload parsing, dispatch, status packing, registry ops.
#include "mds/service/mds_service.h"

#include <fcntl.h>

#include <gtest/gtest.h>

#include "mds/namespace/test_util.h"

namespace sfs::mds {
namespace {

class MdsServiceTest : public NamespaceTest {
 protected:
  proto::MdsResponse Call(const proto::MdsRequest& req) {
    MdsService service(ns_.get(), osts_.get());
    proto::MdsResponse resp;
    EXPECT_TRUE(resp.ParseFromString(service.HandlePayload(req.SerializeAsString())));
    return resp;
  }
};

TEST_F(MdsServiceTest, AMalformedPayloadIsEproto) {
  MdsService service(ns_.get(), osts_.get());
  proto::MdsResponse resp;
  ASSERT_TRUE(resp.ParseFromString(service.HandlePayload("\xff\xff\xff garbage")));
  EXPECT_EQ(resp.status().code(), EPROTO);
  EXPECT_EQ(Call(proto::MdsRequest()).status().code(), EPROTO) << "no op set";
}

TEST_F(MdsServiceTest, MkdirAndLookupRoundTrip) {
  proto::MdsRequest req;
  req.set_client_id(3);
  req.set_xid(1);
  req.mutable_mkdir()->set_parent(kRootIno);
  req.mutable_mkdir()->set_name("d");
  req.mutable_mkdir()->set_mode(0750);
  proto::MdsResponse made = Call(req);
  ASSERT_EQ(made.status().code(), 0) << made.status().message();
  EXPECT_EQ(made.attr().attr().mode(), S_IFDIR | 0750u);
  EXPECT_EQ(Call(req).attr().attr().ino(), made.attr().attr().ino()) << "replayed";
  proto::MdsRequest lookup;
  lookup.mutable_lookup()->set_parent(kRootIno);
  lookup.mutable_lookup()->set_name("d");
  EXPECT_EQ(Call(lookup).attr().attr().ino(), made.attr().attr().ino());
  lookup.mutable_lookup()->set_name("e");
  proto::MdsResponse missing = Call(lookup);
  EXPECT_EQ(missing.status().code(), ENOENT);
  EXPECT_FALSE(missing.has_attr());
}

TEST_F(MdsServiceTest, ASyncRequestCommitsTheOpsBeforeIt) {
  proto::MdsRequest mkdir;
  mkdir.mutable_mkdir()->set_parent(kRootIno);
  mkdir.mutable_mkdir()->set_name("d");
  mkdir.mutable_mkdir()->set_mode(0755);
  ASSERT_EQ(Call(mkdir).status().code(), 0);
  proto::MdsRequest sync;
  sync.mutable_sync();
  proto::MdsResponse resp = Call(sync);
  EXPECT_EQ(resp.status().code(), 0) << resp.status().message();
  EXPECT_GE(ns_->committer().commits(), 1u) << "by the Sync, or the commit thread before it";
}

TEST_F(MdsServiceTest, RegistryOpsReportOsts) {
  proto::MdsRequest reg;
  reg.mutable_register_oss()->set_address("10.0.0.1:7701");
  reg.mutable_register_oss()->add_osts()->set_uuid("new-one");
  proto::MdsResponse resp = Call(reg);
  ASSERT_EQ(resp.register_oss().indices_size(), 1);
  EXPECT_EQ(resp.register_oss().indices(0), static_cast<uint32_t>(kOsts));
  proto::MdsRequest map;
  map.mutable_get_ost_map();
  proto::MdsResponse got = Call(map);
  ASSERT_EQ(got.get_ost_map().osts_size(), kOsts + 1);
  EXPECT_EQ(got.get_ost_map().osts(kOsts).address(), "10.0.0.1:7701");
  EXPECT_TRUE(got.get_ost_map().osts(kOsts).up());
  proto::MdsRequest ping;
  ping.mutable_ping();
  EXPECT_EQ(Call(ping).status().code(), 0);
}

// Deferred closes (mds.proto): a client's release carried by its unlink is
// applied first, so the unlink frees the file instead of orphaning it.
TEST_F(MdsServiceTest, ClosesCarriedByARequestAreAppliedBeforeItsOp) {
  proto::MdsRequest create;
  create.set_client_id(7);
  create.set_xid(1);
  create.mutable_create()->set_parent(kRootIno);
  create.mutable_create()->set_name("f");
  create.mutable_create()->set_mode(0644);
  create.mutable_create()->set_open_flags(O_CREAT | O_WRONLY);
  proto::MdsResponse made = Call(create);
  ASSERT_EQ(made.status().code(), 0) << made.status().message();
  EXPECT_NE(made.features() & proto::MDS_FEATURE_CLOSES, 0u) << "every reply says so";
  const uint64_t ino = made.open().attr().ino();
  ASSERT_EQ(ns_->OpenCount(ino), 1);
  proto::MdsRequest unlink;
  unlink.set_client_id(7);
  unlink.set_xid(2);
  unlink.mutable_unlink()->set_parent(kRootIno);
  unlink.mutable_unlink()->set_name("f");
  proto::CloseReq* c = unlink.add_closes();
  c->set_ino(ino);
  c->set_open_id(made.open().open_id());
  c->set_has_size(true);  // a report in a carried close is ignored
  c->set_size_hint(1 << 20);
  proto::MdsResponse gone = Call(unlink);
  ASSERT_EQ(gone.status().code(), 0) << gone.status().message();
  EXPECT_EQ(gone.closes_applied(), 1u);
  EXPECT_EQ(ns_->OpenCount(ino), 0);
  EXPECT_FALSE(ns_->GetAttr(ino).ok()) << "freed at the unlink, not left an orphan";
}

TEST_F(MdsServiceTest, CarriedClosesAreAppliedEvenWhenTheOpFailsAndTwiceIsHarmless) {
  proto::MdsRequest create;
  create.set_client_id(7);
  create.set_xid(1);
  create.mutable_create()->set_parent(kRootIno);
  create.mutable_create()->set_name("g");
  create.mutable_create()->set_mode(0644);
  proto::MdsResponse made = Call(create);
  ASSERT_EQ(made.status().code(), 0) << made.status().message();
  const uint64_t ino = made.open().attr().ino();
  proto::MdsRequest lookup;
  lookup.set_client_id(7);
  lookup.mutable_lookup()->set_parent(kRootIno);
  lookup.mutable_lookup()->set_name("missing");
  proto::CloseReq* c = lookup.add_closes();
  c->set_ino(ino);
  c->set_open_id(made.open().open_id());
  proto::MdsResponse resp = Call(lookup);
  EXPECT_EQ(resp.status().code(), ENOENT);
  EXPECT_EQ(resp.closes_applied(), 1u);
  EXPECT_EQ(ns_->OpenCount(ino), 0);
  resp = Call(lookup);  // as a re-sent request would
  EXPECT_EQ(resp.closes_applied(), 1u);
  EXPECT_TRUE(ns_->GetAttr(ino).ok()) << "still linked: nothing to free";
}

}  // namespace
}  // namespace sfs::mds
