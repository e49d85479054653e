// TenantGate through MdsService::HandlePayload: the handshake (a wrong key, a
// replayed answer, an answer for another client are refused), tenant records
// (create/list/rotate/remove, root only, keys never listed), and a session's
// view (the fileset as /, nothing outside reachable, squash, removal).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "common/auth/capability.h"
#include "common/auth/tenant_auth.h"
#include "mds/namespace/test_util.h"
#include "mds/service/mds_service.h"

namespace sfs::mds {
namespace {

class TenantGateTest : public NamespaceTest {
 protected:
  void SetUp() override {
    NamespaceTest::SetUp();
    service_ = std::make_unique<MdsService>(ns_.get(), osts_.get());
    a_dir_ = MkdirAt(kRootIno, "a");
    b_dir_ = MkdirAt(kRootIno, "b");
    b_file_ = MkdirAt(b_dir_, "secret");
    proto::MdsRequest req = Admin(proto::TENANT_CREATE, "ta");
    req.mutable_tenant_admin()->mutable_rec()->set_fileset("/a");
    req.mutable_tenant_admin()->mutable_rec()->set_squash_root(true);
    ASSERT_EQ(Call(req).status().code(), 0);
  }
  proto::MdsResponse Call(proto::MdsRequest req) {
    req.set_xid(++xid_);
    proto::MdsResponse resp;
    EXPECT_TRUE(resp.ParseFromString(service_->HandlePayload(req.SerializeAsString())));
    return resp;
  }
  uint64_t MkdirAt(uint64_t parent, const std::string& name) {
    proto::MdsRequest req;
    req.set_client_id(1);
    req.mutable_mkdir()->set_parent(parent);
    req.mutable_mkdir()->set_name(name);
    req.mutable_mkdir()->set_mode(0777);
    proto::MdsResponse r = Call(req);
    EXPECT_EQ(r.status().code(), 0) << r.status().message();
    return r.attr().attr().ino();
  }
  proto::MdsRequest Admin(proto::TenantOp op, const std::string& name) {
    proto::MdsRequest req;
    req.set_client_id(1);
    req.mutable_tenant_admin()->set_op(op);
    req.mutable_tenant_admin()->set_name(name);
    req.mutable_tenant_admin()->mutable_rec()->set_key(key_);
    return req;
  }
  std::string Nonce(uint64_t client, const std::string& tenant = "ta") {
    proto::MdsRequest hello;
    hello.set_client_id(client);
    hello.mutable_tenant_hello()->set_tenant(tenant);
    proto::MdsResponse r = Call(hello);
    EXPECT_EQ(r.status().code(), 0) << r.status().message();
    return r.tenant_hello().nonce();
  }
  proto::MdsRequest Answer(uint64_t client, const std::string& nonce, const std::string& key) {
    proto::MdsRequest a;
    a.set_client_id(client);
    a.mutable_tenant_auth()->set_tenant("ta");
    a.mutable_tenant_auth()->set_nonce(nonce);
    a.mutable_tenant_auth()->set_mac(auth::TenantMac(key, nonce, client, "ta"));
    return a;
  }
  proto::MdsRequest AsTenant(uint64_t client) {
    proto::MdsRequest r;
    r.set_client_id(client);
    r.set_tenant("ta");
    return r;
  }

  std::unique_ptr<MdsService> service_;
  std::string key_ = std::string(32, 'K');
  uint64_t xid_ = 0;
  uint64_t a_dir_ = 0, b_dir_ = 0, b_file_ = 0;
};

TEST_F(TenantGateTest, TheRightKeyOpensASessionAndAReplayedAnswerIsRefused) {
  std::string nonce = Nonce(7);
  ASSERT_EQ(nonce.size(), auth::kTenantNonceBytes);
  proto::MdsRequest answer = Answer(7, nonce, key_);
  proto::MdsResponse ok = Call(answer);
  ASSERT_EQ(ok.status().code(), 0) << ok.status().message();
  EXPECT_EQ(ok.tenant_auth().fileset_ino(), a_dir_);
  // The very same answer again (a capture replayed): its nonce is spent.
  proto::MdsResponse replay = Call(answer);
  EXPECT_EQ(replay.status().code(), EACCES);
  EXPECT_NE(replay.status().message().find("replayed"), std::string::npos)
      << replay.status().message();
  // Replayed from another client id after a fresh hello of its own: the MAC
  // binds the client id and the nonce.
  Nonce(8);
  proto::MdsRequest moved = answer;
  moved.set_client_id(8);
  EXPECT_EQ(Call(moved).status().code(), EACCES);
  // A fresh nonce does not revive the old MAC either.
  std::string fresh = Nonce(9);
  proto::MdsRequest stale = Answer(9, fresh, key_);
  stale.mutable_tenant_auth()->set_mac(answer.tenant_auth().mac());
  EXPECT_EQ(Call(stale).status().code(), EACCES);
}

TEST_F(TenantGateTest, AWrongKeyOrAnUnknownTenantIsRefusedWithAReason) {
  proto::MdsResponse wrong = Call(Answer(7, Nonce(7), std::string(32, 'x')));
  EXPECT_EQ(wrong.status().code(), EACCES);
  EXPECT_NE(wrong.status().message().find("wrong key"), std::string::npos);
  proto::MdsRequest hello;
  hello.set_client_id(7);
  hello.mutable_tenant_hello()->set_tenant("nobody");
  EXPECT_EQ(Call(hello).status().code(), ENOENT);
  // No session: a request naming the tenant is refused, not served as default.
  proto::MdsRequest r = AsTenant(7);
  r.mutable_getattr()->set_ino(kRootIno);
  proto::MdsResponse refused = Call(r);
  EXPECT_EQ(refused.status().code(), EACCES);
  EXPECT_NE(refused.status().message().find("not authenticated"), std::string::npos);
}

TEST_F(TenantGateTest, ASessionSeesItsFilesetAsRootAndNothingOutside) {
  ASSERT_EQ(Call(Answer(7, Nonce(7), key_)).status().code(), 0);
  proto::MdsRequest r = AsTenant(7);
  r.mutable_getattr()->set_ino(kRootIno);
  proto::MdsResponse root = Call(r);
  ASSERT_EQ(root.status().code(), 0) << root.status().message();
  EXPECT_EQ(root.attr().attr().ino(), kRootIno) << "the fileset shows as inode 1";
  // ".." of / is / itself.
  r = AsTenant(7);
  r.mutable_lookup()->set_parent(kRootIno);
  r.mutable_lookup()->set_name("..");
  EXPECT_EQ(Call(r).attr().attr().ino(), kRootIno);
  // B's directory by inode number: ENOENT, as an inode that does not exist.
  for (uint64_t ino : {b_dir_, b_file_, uint64_t{999999}}) {
    r = AsTenant(7);
    r.mutable_getattr()->set_ino(ino);
    EXPECT_EQ(Call(r).status().code(), ENOENT) << ino;
    r = AsTenant(7);
    r.mutable_readdir()->set_ino(ino);
    EXPECT_EQ(Call(r).status().code(), ENOENT) << ino;
  }
  // A rename into B: the target directory is checked too.
  r = AsTenant(7);
  r.mutable_mkdir()->set_parent(kRootIno);
  r.mutable_mkdir()->set_name("mine");
  r.mutable_mkdir()->set_mode(0755);
  proto::MdsResponse made = Call(r);
  ASSERT_EQ(made.status().code(), 0) << made.status().message();
  EXPECT_EQ(made.attr().attr().uid(), 65534u) << "root is squashed";
  r = AsTenant(7);
  r.mutable_rename()->set_parent(kRootIno);
  r.mutable_rename()->set_name("mine");
  r.mutable_rename()->set_new_parent(b_dir_);
  r.mutable_rename()->set_new_name("stolen");
  EXPECT_EQ(Call(r).status().code(), ENOENT);
  // Admin ops are not a tenant's.
  r = AsTenant(7);
  r.mutable_tenant_admin()->set_op(proto::TENANT_LIST);
  EXPECT_EQ(Call(r).status().code(), EPERM);
}

TEST_F(TenantGateTest, RecordsAreRootOnlyKeysAreNeverListedAndRemovalEndsSessions) {
  proto::MdsRequest list = Admin(proto::TENANT_LIST, "");
  proto::MdsResponse listed = Call(list);
  ASSERT_EQ(listed.status().code(), 0);
  ASSERT_EQ(listed.tenant_admin().tenants_size(), 1);
  EXPECT_EQ(listed.tenant_admin().tenants(0).name(), "ta");
  EXPECT_EQ(listed.tenant_admin().tenants(0).fileset_ino(), a_dir_);
  EXPECT_TRUE(listed.tenant_admin().tenants(0).key().empty());
  proto::MdsRequest user = Admin(proto::TENANT_LIST, "");
  user.mutable_cred()->set_uid(1000);
  EXPECT_EQ(Call(user).status().code(), EPERM);
  proto::MdsRequest dup = Admin(proto::TENANT_CREATE, "ta");
  dup.mutable_tenant_admin()->mutable_rec()->set_fileset("/a");
  EXPECT_EQ(Call(dup).status().code(), EEXIST);
  proto::MdsRequest nodir = Admin(proto::TENANT_CREATE, "tc");
  nodir.mutable_tenant_admin()->mutable_rec()->set_fileset("/nope");
  EXPECT_EQ(Call(nodir).status().code(), ENOENT);
  proto::MdsRequest badname = Admin(proto::TENANT_CREATE, "default");
  badname.mutable_tenant_admin()->mutable_rec()->set_fileset("/a");
  EXPECT_EQ(Call(badname).status().code(), EINVAL);

  ASSERT_EQ(Call(Answer(7, Nonce(7), key_)).status().code(), 0);
  ASSERT_EQ(Call(Admin(proto::TENANT_REMOVE, "ta")).status().code(), 0);
  proto::MdsRequest r = AsTenant(7);
  r.mutable_getattr()->set_ino(kRootIno);
  proto::MdsResponse gone = Call(r);
  EXPECT_EQ(gone.status().code(), EACCES);
  EXPECT_NE(gone.status().message().find("removed"), std::string::npos);
}

TEST_F(TenantGateTest, RotationRefusesTheOldKeyAndEndsItsSessions) {
  ASSERT_EQ(Call(Answer(7, Nonce(7), key_)).status().code(), 0);
  std::string old_key = key_;
  key_ = std::string(32, 'N');
  ASSERT_EQ(Call(Admin(proto::TENANT_ROTATE, "ta")).status().code(), 0);
  proto::MdsRequest r = AsTenant(7);
  r.mutable_getattr()->set_ino(kRootIno);
  EXPECT_EQ(Call(r).status().code(), EACCES);
  EXPECT_EQ(Call(Answer(8, Nonce(8), old_key)).status().code(), EACCES);
  EXPECT_EQ(Call(Answer(9, Nonce(9), key_)).status().code(), 0);
}

// The capabilities a session gets name its tenant (the OSSes' only source
// for it), and a tenant's KV number is never given twice.
TEST_F(TenantGateTest, CapabilitiesCarryTheSessionsTenantAndKvNumbersAreNeverReused) {
  auth::ClusterKey cluster_key;
  cluster_key.bytes.assign(32, 'C');
  auth::KeyRotator signing(60'000, 600'000, 3'000);
  service_->set_cluster_key(cluster_key, &signing);
  auth::KeyRing key;  // what an OSS holds: the published signing keys
  key.Install(signing.Published(auth::NowUnixMs()));
  ASSERT_EQ(Call(Answer(7, Nonce(7), key_)).status().code(), 0);

  proto::MdsRequest create = AsTenant(7);
  create.mutable_create()->set_parent(kRootIno);
  create.mutable_create()->set_name("f");
  create.mutable_create()->set_mode(0644);
  create.mutable_create()->set_open_flags(O_RDWR | O_CREAT);
  proto::MdsResponse created = Call(create);
  ASSERT_EQ(created.status().code(), 0) << created.status().message();
  ASSERT_GT(created.open().layout().objects_size(), 0);
  auto cap = auth::Verify(created.open().layout().capability(), key, auth::NowUnix());
  ASSERT_TRUE(cap.ok()) << cap.status().ToString();
  EXPECT_EQ(cap->tenant, "ta");
  // Signed with the current rotating key, not the cluster key.
  EXPECT_EQ(cap->key_id, signing.Current(auth::NowUnixMs()).id);
  EXPECT_FALSE(
      auth::Verify(created.open().layout().capability(), cluster_key, auth::NowUnix()).ok());
  // The default tenant's (no session) name none.
  proto::MdsRequest plain;
  plain.set_client_id(1);
  plain.mutable_create()->set_parent(kRootIno);
  plain.mutable_create()->set_name("g");
  plain.mutable_create()->set_mode(0644);
  plain.mutable_create()->set_open_flags(O_RDWR | O_CREAT);
  proto::MdsResponse plain_created = Call(plain);
  ASSERT_EQ(plain_created.status().code(), 0) << plain_created.status().message();
  auto plain_cap = auth::Verify(plain_created.open().layout().capability(), key, auth::NowUnix());
  ASSERT_TRUE(plain_cap.ok()) << plain_cap.status().ToString();
  EXPECT_EQ(plain_cap->tenant, "");

  // ta was the first tenant: KV number 1. tb gets 2; made again after its
  // removal, 3 (the old number's blocks stay out of its reach).
  proto::MdsRequest grant = AsTenant(7);
  grant.mutable_kv_grant();
  proto::MdsResponse granted = Call(grant);
  ASSERT_EQ(granted.status().code(), 0) << granted.status().message();
  auto kv = auth::Verify(granted.kv_grant().capability(), key, auth::NowUnix());
  ASSERT_TRUE(kv.ok()) << kv.status().ToString();
  EXPECT_EQ(kv->tenant, "ta");
  EXPECT_EQ(kv->kv_tenant, 1u);
  EXPECT_EQ(kv->rights, static_cast<uint32_t>(auth::kKv));
  EXPECT_TRUE(kv->objects.empty());
  EXPECT_FALSE(kv->all_objects);
  auto make_tb = [&] {
    proto::MdsRequest req = Admin(proto::TENANT_CREATE, "tb");
    req.mutable_tenant_admin()->mutable_rec()->set_fileset("/b");
    proto::MdsResponse r = Call(req);
    EXPECT_EQ(r.status().code(), 0) << r.status().message();
    return r.tenant_admin().tenants_size() == 1 ? r.tenant_admin().tenants(0).kv_id() : 0u;
  };
  EXPECT_EQ(make_tb(), 2u);
  ASSERT_EQ(Call(Admin(proto::TENANT_REMOVE, "tb")).status().code(), 0);
  EXPECT_EQ(make_tb(), 3u);
}

}  // namespace
}  // namespace sfs::mds
