// Rotating capability signing keys (issue 17; docs/security.md "Rotating
// signing keys"), with real daemons, a real mount and the sfs CLI. A forced
// rotation (`sfs key rotate`) and an MDS restart, each under a writer on the
// mount, cost the application nothing, and after the rotation a token of a
// retired key is refused EACCES by every OSS. The keys cross the wire only
// sealed: a registration's answer, read as raw bytes by a test that proves
// the key as an OSS, opens to the keys that sign the MDS's tokens, and
// contains none of them in clear. The cluster key signs no capability. A
// client whose new token names a key an OSS has not learnt yet retries.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <iterator>
#include <thread>

#include "client/lib/client.h"
#include "common/auth/capability.h"
#include "common/auth/cluster_auth.h"
#include "common/auth/key_wrap.h"
#include "common/auth/signing_keys.h"
#include "common/auth/tenant_auth.h"
#include "common/rpc/rpc.h"
#include "mds.pb.h"
#include "oss.pb.h"
#include "tests/harness/fixture.h"

namespace sfs::testing {
namespace {

using std::chrono::seconds;

constexpr size_t kLen = 128 * 1024;

// Writes, fsyncs and reads back one file on a mount, round after round, on
// its own thread, through one descriptor (so across its capability's
// renewals), until stopped or the first error.
class MountWriter {
 public:
  explicit MountWriter(std::string path) : path_(std::move(path)) {
    thread_ = std::thread([this] { Run(); });
  }
  ~MountWriter() { Stop(); }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  int rounds() const { return rounds_.load(); }
  bool failed() const { return failed_.load(); }
  // The first error ("" = none). REQUIRES: stopped, or failed().
  const std::string& error() const { return error_; }
  // True once `more` rounds past now are done (or the writer failed).
  bool Advance(int more, seconds timeout = seconds(60)) {
    const int target = rounds() + more;
    return PollUntil([&] { return failed() || rounds() >= target; }, timeout) && !failed();
  }

 private:
  void Fail(const std::string& what) {
    error_ = what + " (round " + std::to_string(rounds_.load()) + "): " + strerror(errno);
    failed_ = true;
  }
  void Run() {
    int fd = ::open(path_.c_str(), O_RDWR | O_CREAT, 0644);
    if (fd < 0) return Fail("open");
    std::vector<char> data(kLen), back(kLen);
    for (uint8_t v = 1; !stop_; ++v) {
      std::fill(data.begin(), data.end(), static_cast<char>(v));
      if (::pwrite(fd, data.data(), kLen, 0) != static_cast<ssize_t>(kLen)) {
        Fail("pwrite");
        break;
      }
      if (::fsync(fd) != 0) {
        Fail("fsync");
        break;
      }
      if (::pread(fd, back.data(), kLen, 0) != static_cast<ssize_t>(kLen) || back != data) {
        Fail("pread");
        break;
      }
      ++rounds_;
    }
    ::close(fd);
  }

  const std::string path_;
  std::atomic<bool> stop_{false}, failed_{false};
  std::atomic<int> rounds_{0};
  std::string error_;
  std::thread thread_;
};

// A number after `"field":` in a line of JSON, or -1.
long long JsonNumber(const std::string& json, const std::string& field) {
  size_t at = json.find("\"" + field + "\":");
  return at == std::string::npos ? -1 : std::stoll(json.substr(at + field.size() + 3));
}

class KeyRotationTest : public ClusterPerTest {
 protected:
  ClusterOptions Options() override {
    ClusterOptions o;
    o.name = "keyrot";
    o.num_oss = 2;
    o.cluster_key = true;
    return o;
  }
  void SetUp() override {
    ClusterPerTest::SetUp();
    if (HasFatalFailure()) return;
    io_ = rpc::IoContext::Create(1);
    auto c = cluster().Connect();
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    client_ = std::move(*c);
    client::LayoutSpec l;
    l.stripe_count = 2;  // one object on each OSS
    l.stripe_size = 64 * 1024;
    client::Attr attr;
    auto f = client_->Create(kRoot, client::kRootIno, "f", 0644, O_RDWR | O_CREAT, &attr, &l);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    file_ = *f;
    ASSERT_TRUE(client_->Write(*file_, 0, std::vector<uint8_t>(kLen, 'w')).ok());
    ASSERT_EQ(file_->layout().objects.size(), 2u);
  }
  void TearDown() override {
    file_.reset();
    client_.reset();
    ClusterPerTest::TearDown();
  }

  // A raw read of object o under token, from the OSS that serves it.
  proto::OssResponse ReadWith(const client::StripeObject& o, const std::string& token) {
    int oss = cluster().OssOfOst(*client_, o.ost);
    EXPECT_GE(oss, 0);
    auto ch = io_->MakeTcpChannel(cluster().oss_address(oss < 0 ? 0 : oss));
    proto::OssRequest req;
    req.set_ost(o.ost);
    req.set_oid(o.oid);
    req.mutable_read()->set_length(4096);
    req.add_capabilities(token);
    std::vector<uint8_t> in(4096);
    rpc::Response resp;
    Status st = ch->Call(rpc::kServiceOss, req.SerializeAsString(), {}, in, &resp);
    EXPECT_TRUE(st.ok()) << st.ToString();
    proto::OssResponse out;
    EXPECT_TRUE(out.ParseFromString(resp.payload));
    return out;
  }
  // True iff every OSS of file_ refuses token as a token of a key it lacks.
  bool RefusedEverywhere(const std::string& token) {
    for (const client::StripeObject& o : file_->layout().objects) {
      proto::OssResponse r = ReadWith(o, token);
      if (r.status().code() != EACCES || !r.unknown_key()) return false;
    }
    return true;
  }
  std::string Sfs(const std::string& args) {
    std::string out;
    int rc = RunShell(SfsBinary() + " " + args + " --mds " + cluster().mds_address() + " 2>&1",
                      &out);
    EXPECT_EQ(rc, 0) << args << ": " << out;
    return out;
  }
  std::string OssLogs() {
    std::string text;
    for (int i = 0; i < cluster().num_oss(); ++i) {
      std::ifstream log(cluster().root() + "/logs/oss" + std::to_string(i) + ".log");
      text.append(std::istreambuf_iterator<char>(log), std::istreambuf_iterator<char>());
    }
    return text;
  }
  std::string ClusterKey() {
    auto k = auth::LoadKey(cluster().cluster_key_path());
    EXPECT_TRUE(k.ok()) << k.status().ToString();
    return k.ok() ? k->bytes : std::string();
  }

  std::unique_ptr<rpc::IoContext> io_;
  std::unique_ptr<client::Client> client_;
  std::shared_ptr<client::File> file_;
};

TEST_F(KeyRotationTest, AForcedRotationUnderAWriterIsInvisibleAndRetiresTheOldKeyAtEveryOss) {
  auto mnt = cluster().Mount();
  ASSERT_TRUE(mnt.ok()) << mnt.status().ToString();
  MountWriter writer(*mnt + "/w");
  ASSERT_TRUE(writer.Advance(3)) << writer.error();
  const std::string old_token = file_->layout().capability;
  const uint32_t old_id = auth::TokenKeyId(old_token);
  for (const client::StripeObject& o : file_->layout().objects)
    ASSERT_EQ(ReadWith(o, old_token).status().code(), 0) << "the control";
  ASSERT_EQ(JsonNumber(Sfs("key status --json"), "current_id"), static_cast<long long>(old_id));

  const std::string rotated = Sfs("key rotate --json");
  const long long new_id = JsonNumber(rotated, "new_id");
  ASSERT_GT(new_id, 0) << rotated;
  EXPECT_NE(new_id, static_cast<long long>(old_id));
  EXPECT_NE(rotated.find("\"retiring_ids\":[" + std::to_string(old_id)), std::string::npos)
      << rotated;
  ASSERT_TRUE(PollUntil([&] { return RefusedEverywhere(old_token); }, seconds(30)))
      << "an OSS still accepts a token of the retired key " << old_id;
  EXPECT_NE(OssLogs().find("unknown or retired key (" + std::to_string(old_id) + ")"),
            std::string::npos) << "the OSS logs why it refused";

  // The writer goes on past the retirement (its token renewed), as does a
  // libsfs handle opened before it; new tokens name the new key.
  EXPECT_TRUE(writer.Advance(5)) << writer.error();
  std::vector<uint8_t> got(kLen);
  auto n = client_->Read(*file_, 0, got);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(got, std::vector<uint8_t>(kLen, 'w'));
  client::Attr attr;
  auto fresh = client_->Open(kRoot, file_->ino(), O_RDONLY, &attr);
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  EXPECT_EQ(static_cast<long long>(auth::TokenKeyId((*fresh)->layout().capability)), new_id);
  EXPECT_EQ(JsonNumber(Sfs("key status --json"), "current_id"), new_id);
  writer.Stop();
  EXPECT_EQ(writer.error(), "");
}

TEST_F(KeyRotationTest, AnMdsRestartMakesNewKeysAndAWriterOnTheMountSeesNoError) {
  auto mnt = cluster().Mount();
  ASSERT_TRUE(mnt.ok()) << mnt.status().ToString();
  MountWriter writer(*mnt + "/w");
  ASSERT_TRUE(writer.Advance(3)) << writer.error();
  const uint32_t old_id = auth::TokenKeyId(file_->layout().capability);
  ASSERT_TRUE(cluster().KillMds().ok());
  ASSERT_TRUE(cluster().RestartMds().ok());
  EXPECT_TRUE(writer.Advance(5)) << writer.error();
  ASSERT_TRUE(PollUntil([&] { return RefusedEverywhere(file_->layout().capability); }, seconds(30)))
      << "the old MDS's keys are still accepted";
  const std::string status = Sfs("key status --json");
  EXPECT_NE(JsonNumber(status, "current_id"), static_cast<long long>(old_id));
  EXPECT_EQ(status.find(std::to_string(old_id)), std::string::npos) << status;
  writer.Stop();
  EXPECT_EQ(writer.error(), "");
}

// OSSes that beat every 4 s, an MDS with a short recovery window: after an
// MDS restart a client gets tokens of the new keys before an OSS has learnt
// them. Its reads are refused (unknown key) and retried until the OSS's next
// heartbeat brings the key, with no error. The restart is repeated until an
// OSS log shows such a refusal (its heartbeat may happen to come first).
class SlowHeartbeatTest : public KeyRotationTest {
 protected:
  ClusterOptions Options() override {
    ClusterOptions o = KeyRotationTest::Options();
    o.heartbeat_ms = 4000;
    o.ost_timeout_ms = 20000;
    o.mds_args = {"--recovery-window-ms", "200"};
    return o;
  }
};

TEST_F(SlowHeartbeatTest, ATokenOfAKeyAnOssHasNotLearntYetIsRetriedNotFailed) {
  bool refused_seen = false;
  for (int attempt = 0; attempt < 4 && !refused_seen; ++attempt) {
    ASSERT_TRUE(cluster().KillMds().ok());
    ASSERT_TRUE(cluster().RestartMds().ok());
    client::Attr attr;
    auto f = client_->Open(kRoot, file_->ino(), O_RDONLY, &attr);  // a token of the new keys
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    std::vector<uint8_t> got(kLen);
    auto n = client_->Read(**f, 0, got);
    ASSERT_TRUE(n.ok()) << "attempt " << attempt << ": " << n.status().ToString();
    EXPECT_EQ(got, std::vector<uint8_t>(kLen, 'w'));
    refused_seen = OssLogs().find("unknown or retired key") != std::string::npos;
  }
  EXPECT_TRUE(refused_seen) << "no OSS ever met a key it had not learnt: nothing was tested";
}

// As an OSS would (the test holds the cluster key): register again the OSS
// that serves OST 0, under its own uuid and address (idempotent), and read
// the MDS's answer as raw bytes.
TEST_F(KeyRotationTest, SigningKeysCrossTheWireOnlySealedAndTheClusterKeySignsNothing) {
  const std::string key = ClusterKey();
  auto osts = client_->ListOsts();
  ASSERT_TRUE(osts.ok() && !osts->empty());
  const uint64_t client_id = 0x5ea1ed;
  auto oss_nonce = auth::RandomBytes(auth::kClusterNonceBytes);
  ASSERT_TRUE(oss_nonce.ok());
  auto mds = io_->MakeTcpChannel(cluster().mds_address());
  auto call = [&](const proto::MdsRequest& req, std::string* raw) {
    rpc::Response resp;
    EXPECT_TRUE(mds->Call(rpc::kServiceMds, req.SerializeAsString(), {}, {}, &resp).ok());
    *raw = resp.payload;
    proto::MdsResponse out;
    EXPECT_TRUE(out.ParseFromString(*raw));
    return out;
  };
  proto::MdsRequest hello;
  hello.set_client_id(client_id);
  hello.mutable_oss_hello()->set_oss_nonce(*oss_nonce);
  std::string raw;
  const std::string nonce = call(hello, &raw).oss_hello().nonce();
  proto::MdsRequest reg;
  reg.set_client_id(client_id);
  reg.set_xid(1);
  reg.mutable_register_oss()->set_address((*osts)[0].address);
  proto::OstInfo* o = reg.mutable_register_oss()->add_osts();
  o->set_uuid((*osts)[0].uuid);
  o->set_address((*osts)[0].address);
  o->set_up(true);
  reg.mutable_oss_auth()->set_nonce(nonce);
  reg.mutable_oss_auth()->set_mac(
      auth::OssRequestMac(key, nonce, client_id, reg.register_oss().SerializeAsString()));
  proto::MdsResponse resp = call(reg, &raw);
  ASSERT_EQ(resp.status().code(), 0) << resp.status().message();
  ASSERT_FALSE(resp.register_oss().cap_keys().empty());

  auto keys = auth::OpenKeys(auth::KeyWrapKey(key, *oss_nonce, nonce, client_id),
                             resp.register_oss().cap_keys());
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  ASSERT_GE(keys->size(), 2u);  // the current and the next
  auth::KeyRing ring;
  ring.Install(*keys);
  for (const auth::PublishedKey& k : *keys) {
    EXPECT_EQ(raw.find(k.key.bytes), std::string::npos) << "key " << k.key.id << " in clear";
  }
  std::string wrong = key;
  wrong[0] ^= 1;
  EXPECT_EQ(auth::OpenKeys(auth::KeyWrapKey(wrong, *oss_nonce, nonce, client_id),
                           resp.register_oss().cap_keys()).status().code(), EACCES);
  // What was sealed is what signs: the MDS's token verifies under it.
  EXPECT_TRUE(auth::Verify(file_->layout().capability, ring, auth::NowUnix()).ok());
  // The cluster key itself signs no capability the OSSes accept.
  const std::string by_cluster_key = auth::ServerToken(auth::ClusterKey{key, 1});
  for (const client::StripeObject& obj : file_->layout().objects)
    EXPECT_EQ(ReadWith(obj, by_cluster_key).status().code(), EACCES);
}

TEST_F(KeyRotationTest, OnlyRootMayRotate) {
  proto::CapKeyReq req;
  req.set_rotate(true);
  std::string out;
  Status st = client_->CapKeyAdmin(client::Cred{1000, 1000, {}}, req.SerializeAsString(), &out);
  EXPECT_EQ(st.code(), EPERM) << st.ToString();
  const uint32_t id = auth::TokenKeyId(file_->layout().capability);
  EXPECT_EQ(JsonNumber(Sfs("key status --json"), "current_id"), static_cast<long long>(id))
      << "nothing rotated";
}

}  // namespace
}  // namespace sfs::testing
