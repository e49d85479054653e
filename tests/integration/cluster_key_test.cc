// OSS <-> MDS authentication with the cluster key (issue 17; docs/security.md
// "OSS <-> MDS"), with real daemons. With the key the OSSes register, beat
// and serve I/O, also after an MDS restart (their challenges are lost with
// it); an sfs-oss without the key, with a wrong one, or keyed against a
// keyless MDS exits 1 with its reason, which the MDS logs too; a raw client
// on the MDS port cannot register or beat as an OSS without the key, nor
// replay an authenticated registration; a raw client on an OSS port cannot
// destroy or overwrite objects by sending the MDS's requests (EACCES), and
// the file reads back whole.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "common/auth/capability.h"
#include "common/auth/cluster_auth.h"
#include "common/auth/tenant_auth.h"
#include "common/rpc/rpc.h"
#include "mds.pb.h"
#include "oss.pb.h"
#include "tests/harness/fixture.h"
#include "tests/harness/subprocess.h"

namespace sfs::testing {
namespace {

using std::chrono::milliseconds;

constexpr size_t kLen = 192 * 1024;

class ClusterKeyTest : public ClusterPerTest {
 protected:
  virtual bool Keyed() const { return true; }
  ClusterOptions Options() override {
    ClusterOptions o;
    o.name = "ckey";
    o.num_oss = 2;
    o.cluster_key = Keyed();
    return o;
  }
  void SetUp() override {
    ClusterPerTest::SetUp();
    if (HasFatalFailure()) return;
    io_ = rpc::IoContext::Create(1);
  }

  // Runs one more sfs-oss against the MDS (a fresh OST dir); returns its
  // wait status once it exits (ETIMEDOUT if it keeps running), its log in *log.
  Result<int> RunExtraOss(const std::string& name, const std::string& keyfile, std::string* log) {
    std::string dir = cluster().root() + "/" + name;
    std::filesystem::create_directories(dir);
    std::vector<std::string> argv = {OssBinary(), "--mds", cluster().mds_address(), "--ost", dir,
                                     "--listen", "127.0.0.1:0", "--heartbeat-ms", "200"};
    if (!keyfile.empty()) argv.insert(argv.end(), {"--cluster-key", keyfile});
    std::string log_path = cluster().root() + "/logs/" + name + ".log";
    SFS_ASSIGN_OR_RETURN(auto proc, Subprocess::Spawn(argv, log_path, SIGKILL, false));
    Result<int> st = proc->Wait(milliseconds(20000));
    ReadFile(log_path, log);
    return st;
  }
  std::string MdsLog() {
    std::string s;
    ReadFile(cluster().root() + "/logs/mds.log", &s);
    return s;
  }
  // A key file of 32 other bytes, mode 0600.
  std::string WrongKeyFile() {
    std::string path = cluster().root() + "/wrong.key";
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    EXPECT_GE(fd, 0);
    std::string hex(64, 'a');
    EXPECT_EQ(::write(fd, hex.data(), hex.size()), 64);
    ::close(fd);
    return path;
  }
  std::string Key() {
    auto k = auth::LoadKey(cluster().cluster_key_path());
    EXPECT_TRUE(k.ok()) << k.status().ToString();
    return k.ok() ? k->bytes : std::string();
  }

  proto::MdsResponse CallMds(const proto::MdsRequest& req) {
    auto ch = io_->MakeTcpChannel(cluster().mds_address());
    rpc::Response resp;
    Status st = ch->Call(rpc::kServiceMds, req.SerializeAsString(), {}, {}, &resp);
    EXPECT_TRUE(st.ok()) << st.ToString();
    proto::MdsResponse out;
    EXPECT_TRUE(out.ParseFromString(resp.payload));
    return out;
  }
  static proto::MdsRequest Registration(uint64_t client_id, const std::string& uuid) {
    proto::MdsRequest r;
    r.set_client_id(client_id);
    r.set_xid(1);
    r.mutable_register_oss()->set_address("127.0.0.1:9");
    proto::OstInfo* o = r.mutable_register_oss()->add_osts();
    o->set_uuid(uuid);
    o->set_address("127.0.0.1:9");
    o->set_up(true);
    o->set_total_bytes(1ull << 40);
    o->set_avail_bytes(1ull << 40);
    o->set_free_bytes(1ull << 40);
    return r;
  }
  // The MDS's challenge for client_id (after our nonce oss_nonce).
  std::string Challenge(uint64_t client_id, const std::string& oss_nonce) {
    proto::MdsRequest hello;
    hello.set_client_id(client_id);
    hello.mutable_oss_hello()->set_oss_nonce(oss_nonce);
    proto::MdsResponse r = CallMds(hello);
    EXPECT_EQ(r.status().code(), 0) << r.status().message();
    return r.oss_hello().nonce();
  }
  bool Registered(const std::string& uuid) {
    auto c = cluster().Connect();
    EXPECT_TRUE(c.ok());
    if (!c.ok()) return false;
    auto osts = (*c)->ListOsts();
    EXPECT_TRUE(osts.ok());
    if (!osts.ok()) return false;
    for (const client::OstStatus& o : *osts) {
      if (o.uuid == uuid) return true;
    }
    return false;
  }

  std::unique_ptr<rpc::IoContext> io_;
};

TEST_F(ClusterKeyTest, KeyedOssesRegisterServeIoAndRegisterAgainAfterAnMdsRestart) {
  auto c = cluster().Connect();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  client::LayoutSpec l;
  l.stripe_count = 2;
  l.stripe_size = 64 * 1024;
  client::Attr attr;
  auto f = (*c)->Create(kRoot, client::kRootIno, "f", 0644, O_RDWR | O_CREAT, &attr, &l);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  std::vector<uint8_t> data(kLen);
  for (size_t i = 0; i < kLen; ++i) data[i] = static_cast<uint8_t>(i * 7);
  ASSERT_TRUE((*c)->Write(**f, 0, data).ok());
  ASSERT_TRUE((*c)->Fsync(**f, false).ok());
  c->reset();
  ASSERT_TRUE(cluster().KillMds().ok());
  ASSERT_TRUE(cluster().RestartMds().ok());
  // The OSSes notice, get fresh challenges and register again.
  ASSERT_TRUE(cluster().WaitForOstsUp(2).ok());
  auto c2 = cluster().Connect();
  ASSERT_TRUE(c2.ok()) << c2.status().ToString();
  auto ro = (*c2)->Open(kRoot, attr.ino, O_RDONLY, &attr);
  ASSERT_TRUE(ro.ok()) << ro.status().ToString();
  std::vector<uint8_t> back(kLen);
  auto n = (*c2)->Read(**ro, 0, back);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(back, data);
  std::string mds_log = MdsLog();
  EXPECT_EQ(mds_log.find("wrong cluster key"), std::string::npos) << "no OSS of ours was refused";
  EXPECT_EQ(mds_log.find("proved none"), std::string::npos) << "no OSS of ours was refused";
}

TEST_F(ClusterKeyTest, AnOssWithoutTheKeyOrWithAWrongOneIsRefusedAndExitsWithTheReason) {
  std::string log;
  Result<int> st = RunExtraOss("nokey", "", &log);
  ASSERT_TRUE(st.ok()) << "an OSS without the key must exit: " << st.status().ToString();
  EXPECT_TRUE(WIFEXITED(*st) && WEXITSTATUS(*st) == 1) << DescribeWaitStatus(*st);
  EXPECT_NE(log.find("refused this OSS: registration: OSS refused: this MDS has a cluster key"),
            std::string::npos) << log;
  EXPECT_NE(MdsLog().find("proved none (start sfs-oss with --cluster-key)"), std::string::npos);

  st = RunExtraOss("wrongkey", WrongKeyFile(), &log);
  ASSERT_TRUE(st.ok()) << "an OSS with a wrong key must exit: " << st.status().ToString();
  EXPECT_TRUE(WIFEXITED(*st) && WEXITSTATUS(*st) == 1) << DescribeWaitStatus(*st);
  EXPECT_NE(log.find("refused this OSS: registration: OSS refused: wrong cluster key"),
            std::string::npos) << log;
  EXPECT_NE(MdsLog().find("OSS refused: wrong cluster key"), std::string::npos);
  // Neither got an index: the cluster still has its two OSTs, both up.
  auto c = cluster().Connect();
  ASSERT_TRUE(c.ok());
  auto osts = (*c)->ListOsts();
  ASSERT_TRUE(osts.ok());
  EXPECT_EQ(osts->size(), 2u);
}

TEST_F(ClusterKeyTest, ARawClientCannotRegisterOrBeatAsAnOssWithoutTheKey) {
  proto::MdsResponse r = CallMds(Registration(777, "intruder"));
  EXPECT_EQ(r.status().code(), EACCES) << r.status().message();
  proto::MdsRequest hb;
  hb.set_client_id(777);
  hb.mutable_heartbeat()->set_address(cluster().oss_address(0));
  r = CallMds(hb);
  EXPECT_EQ(r.status().code(), EACCES) << r.status().message();
  // With a challenge but no key: any MAC it makes up is refused.
  std::string nonce = Challenge(778, std::string(32, 'n'));
  proto::MdsRequest forged = Registration(778, "intruder");
  forged.mutable_oss_auth()->set_nonce(nonce);
  forged.mutable_oss_auth()->set_mac(auth::OssRequestMac(std::string(32, 'x'), nonce, 778,
                                                         forged.register_oss().SerializeAsString()));
  r = CallMds(forged);
  EXPECT_EQ(r.status().code(), EACCES);
  EXPECT_EQ(r.status().message(), "OSS refused: wrong cluster key");
  EXPECT_FALSE(Registered("intruder"));
}

TEST_F(ClusterKeyTest, AReplayedRegistrationIsRefusedAndAMovedOneToo) {
  const std::string key = Key();
  const std::string oss_nonce(32, 'o');
  std::string nonce = Challenge(900, oss_nonce);
  proto::MdsRequest reg = Registration(900, "probe");
  reg.mutable_oss_auth()->set_nonce(nonce);
  reg.mutable_oss_auth()->set_mac(
      auth::OssRequestMac(key, nonce, 900, reg.register_oss().SerializeAsString()));
  proto::MdsResponse first = CallMds(reg);
  ASSERT_EQ(first.status().code(), 0) << first.status().message();
  // The MDS seals its answer with the key: the OSS can tell it from an impostor's.
  EXPECT_TRUE(auth::MacEqual(first.oss_reply_mac(),
                             auth::MdsReplyMac(key, oss_nonce, nonce, 900,
                                               first.register_oss().SerializeAsString())));
  proto::MdsResponse again = CallMds(reg);  // the captured request, sent again
  EXPECT_EQ(again.status().code(), ESTALE);
  EXPECT_NE(again.status().message().find("replayed"), std::string::npos);
  EXPECT_TRUE(again.oss_reply_mac().empty());
  // Under another client id, with that id's own fresh challenge: the MAC binds the id.
  std::string other = Challenge(901, oss_nonce);
  reg.set_client_id(901);
  reg.mutable_oss_auth()->set_nonce(other);
  EXPECT_EQ(CallMds(reg).status().code(), EACCES);
  // An altered request (another address) under a fresh challenge of 900's.
  std::string third = Challenge(900, oss_nonce);
  proto::MdsRequest altered = Registration(900, "probe");
  altered.mutable_oss_auth()->set_nonce(third);
  altered.mutable_oss_auth()->set_mac(
      auth::OssRequestMac(key, third, 900, altered.register_oss().SerializeAsString()));
  altered.mutable_register_oss()->set_address("10.9.9.9:7701");
  EXPECT_EQ(CallMds(altered).status().code(), EACCES);
}

TEST_F(ClusterKeyTest, MdsOnlyRequestsFromARawClientGetEaccesAndDestroyNothing) {
  auto c = cluster().Connect();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  client::LayoutSpec l;
  l.stripe_count = 2;
  l.stripe_size = 64 * 1024;
  client::Attr attr;
  auto f = (*c)->Create(kRoot, client::kRootIno, "keep", 0644, O_RDWR | O_CREAT, &attr, &l);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  std::vector<uint8_t> data(kLen, 'k');
  ASSERT_TRUE((*c)->Write(**f, 0, data).ok());
  ASSERT_TRUE((*c)->Fsync(**f, false).ok());
  auth::ClusterKey wrong{std::string(32, 'w'), 1};
  for (const client::StripeObject& o : (*f)->layout().objects) {
    int oss = cluster().OssOfOst(**c, o.ost);
    ASSERT_GE(oss, 0);
    auto ch = io_->MakeTcpChannel(cluster().oss_address(oss));
    auto send = [&](proto::OssRequest req) {
      req.set_ost(o.ost);
      req.set_oid(o.oid);
      rpc::Response resp;
      EXPECT_TRUE(ch->Call(rpc::kServiceOss, req.SerializeAsString(), {}, {}, &resp).ok());
      proto::OssResponse out;
      EXPECT_TRUE(out.ParseFromString(resp.payload));
      return out.status().code();
    };
    proto::OssRequest destroy;
    destroy.mutable_destroy();
    EXPECT_EQ(send(destroy), EACCES) << "destroy without a capability";
    destroy.add_capabilities(auth::ServerToken(wrong));
    EXPECT_EQ(send(destroy), EACCES) << "destroy with a server token of another key";
    proto::OssRequest batch;
    batch.mutable_destroy_batch()->add_oids(o.oid);
    EXPECT_EQ(send(batch), EACCES) << "destroy_batch without a capability";
    proto::OssRequest copy;  // a resync copy over the object
    copy.mutable_copy()->set_src_ost(o.ost);
    copy.mutable_copy()->set_src_oid(o.oid + 1000);
    copy.mutable_copy()->set_length(4096);
    EXPECT_EQ(send(copy), EACCES) << "copy without a capability";
  }
  std::vector<uint8_t> back(kLen);
  auto n = (*c)->Read(**f, 0, back);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(back, data) << "nothing was destroyed or overwritten";
}

// The control: without a key the MDS answers OssHelloReq EOPNOTSUPP, so a
// keyed OSS refuses to join a keyless cluster (all keyed, or none).
class KeylessClusterTest : public ClusterKeyTest {
 protected:
  bool Keyed() const override { return false; }
};

TEST_F(KeylessClusterTest, AKeyedOssRefusesAKeylessMdsAndKeylessOssesWorkAsBefore) {
  std::string key = cluster().root() + "/c.key";
  ASSERT_TRUE(auth::GenerateKey(key).ok());
  std::string log;
  Result<int> st = RunExtraOss("keyed", key, &log);
  ASSERT_TRUE(st.ok()) << "a keyed OSS must not join a keyless MDS: " << st.status().ToString();
  EXPECT_TRUE(WIFEXITED(*st) && WEXITSTATUS(*st) == 1) << DescribeWaitStatus(*st);
  EXPECT_NE(log.find("this MDS has no cluster key"), std::string::npos) << log;
  // The raw registration a keyless OSS sends is served as ever.
  proto::MdsResponse r = CallMds(Registration(5, "plain"));
  EXPECT_EQ(r.status().code(), 0) << r.status().message();
  EXPECT_TRUE(r.oss_reply_mac().empty());
  EXPECT_TRUE(Registered("plain"));
}

}  // namespace
}  // namespace sfs::testing
