// The RPC handler: payload parsing, dispatch, status packing, registry ops.
#include "mds/service/mds_service.h"

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

}  // namespace
}  // namespace sfs::mds
