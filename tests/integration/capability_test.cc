// Capabilities (issue 17), end to end: with a cluster key the MDS signs a
// capability onto every layout and every sfs-oss checks it. A mount and a
// libsfs client work as before; raw OSS requests with no capability, a
// tampered one, a guessed object id or a read-only one for a write get
// EACCES. The control: without a key the same bare request is served, so
// the test tells a check from a broken OSS.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <thread>

#include "client/lib/client.h"
#include "common/rpc/rpc.h"
#include "oss.pb.h"
#include "tests/harness/fixture.h"

namespace sfs::testing {
namespace {

using client::Client;
using client::File;

constexpr size_t kLen = 256 * 1024;

// Every OSS's log, one after the other.
std::string AllOssLogs(TestCluster& cluster) {
  std::string text;
  for (int i = 0; i < cluster.num_oss(); ++i) {
    std::ifstream log(cluster.root() + "/logs/oss" + std::to_string(i) + ".log");
    text.append(std::istreambuf_iterator<char>(log), std::istreambuf_iterator<char>());
  }
  return text;
}

class CapabilityTest : public ClusterPerTest {
 protected:
  virtual bool Keyed() const { return true; }
  virtual int LifetimeS() const { return 0; }  // 0: the MDS's default

  ClusterOptions Options() override {
    ClusterOptions o;
    o.name = "cap";
    o.num_oss = 2;
    o.cluster_key = Keyed();
    if (LifetimeS() > 0) o.mds_args = {"--capability-lifetime-s", std::to_string(LifetimeS())};
    return o;
  }

  void SetUp() override {
    ClusterPerTest::SetUp();
    if (HasFatalFailure()) return;
    auto c = cluster().Connect();
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    client_ = std::move(*c);
    client::LayoutSpec l;
    l.stripe_count = 2;
    l.stripe_size = 64 * 1024;
    client::Attr attr;
    auto f = client_->Create(kRoot, client::kRootIno, "f", 0644, O_RDWR | O_CREAT, &attr, &l);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    file_ = *f;
    ino_ = attr.ino;
    ASSERT_TRUE(client_->Write(*file_, 0, std::vector<uint8_t>(kLen, 'w')).ok());
    io_ = rpc::IoContext::Create(1);
  }

  void TearDown() override {
    file_.reset();
    client_.reset();
    ClusterPerTest::TearDown();
  }

  // One raw request to the OSS serving object i of file_'s layout.
  proto::OssResponse Raw(size_t i, proto::OssRequest req, std::vector<uint8_t> bulk = {}) {
    return RawOn(file_->layout().objects[i], std::move(req), std::move(bulk));
  }
  // One raw request to the OSS serving object o.
  proto::OssResponse RawOn(const client::StripeObject& o, proto::OssRequest req,
                           std::vector<uint8_t> bulk = {}) {
    int oss = cluster().OssOfOst(*client_, o.ost);
    EXPECT_GE(oss, 0);
    auto ch = io_->MakeTcpChannel(cluster().oss_address(oss < 0 ? 0 : oss));
    req.set_ost(o.ost);
    if (req.oid() == 0) req.set_oid(o.oid);
    std::vector<uint8_t> in(req.has_read() ? req.read().length() : 0);
    rpc::Response resp;
    Status st = ch->Call(rpc::kServiceOss, req.SerializeAsString(), bulk, in, &resp);
    EXPECT_TRUE(st.ok()) << st.ToString();
    proto::OssResponse out;
    EXPECT_TRUE(out.ParseFromString(resp.payload));
    return out;
  }

  static proto::OssRequest ReadReq(const std::string& cap) {
    proto::OssRequest r;
    r.mutable_read()->set_offset(0);
    r.mutable_read()->set_length(4096);
    if (!cap.empty()) r.add_capabilities(cap);
    return r;
  }
  static proto::OssRequest WriteReq(const std::string& cap) {
    proto::OssRequest r;
    r.mutable_write()->set_offset(0);
    if (!cap.empty()) r.add_capabilities(cap);
    return r;
  }

  void Unlinks();

  std::unique_ptr<Client> client_;
  std::shared_ptr<File> file_;
  uint64_t ino_ = 0;
  std::unique_ptr<rpc::IoContext> io_;
};

TEST_F(CapabilityTest, ClientReadsWritesTruncatesAndStats) {
  ASSERT_FALSE(file_->layout().capability.empty()) << "a keyed MDS sends a capability";
  std::vector<uint8_t> got(kLen);
  auto n = client_->Read(*file_, 0, got);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(got, std::vector<uint8_t>(kLen, 'w'));
  client::SetAttrArgs cut;
  cut.valid = client::kSetSize;
  cut.size = 1000;
  auto t = client_->SetAttr(kRoot, ino_, cut);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_TRUE(client_->Fsync(*file_, false).ok());
  client::Attr attr;
  auto ro = client_->Open(kRoot, ino_, O_RDONLY, &attr);
  ASSERT_TRUE(ro.ok()) << ro.status().ToString();
  std::vector<uint8_t> small(1000);
  ASSERT_TRUE(client_->Read(**ro, 0, small).ok());
  EXPECT_EQ(small, std::vector<uint8_t>(1000, 'w'));
}

TEST_F(CapabilityTest, MountWorks) {
  auto mnt = cluster().Mount();
  ASSERT_TRUE(mnt.ok()) << mnt.status().ToString();
  const std::string path = *mnt + "/m";
  std::string data(300000, 'x');
  for (size_t i = 0; i < data.size(); i += 4096) data[i] = static_cast<char>('a' + i % 26);
  {
    std::ofstream out(path, std::ios::binary);
    out << data;
    ASSERT_TRUE(out.good());
  }
  std::ifstream in(path, std::ios::binary);
  std::string back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(back, data);
  ASSERT_EQ(::truncate(path.c_str(), 5), 0);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 5);
  EXPECT_EQ(::unlink(path.c_str()), 0);
}

TEST_F(CapabilityTest, ForgedRequestsGetEacces) {
  const std::string cap = file_->layout().capability;
  // The control: the client's own token reads.
  EXPECT_EQ(Raw(0, ReadReq(cap)).status().code(), 0);
  // None at all, for each kind of request.
  EXPECT_EQ(Raw(0, ReadReq("")).status().code(), EACCES);
  EXPECT_EQ(Raw(0, WriteReq(""), std::vector<uint8_t>(10, 'f')).status().code(), EACCES);
  proto::OssRequest r;
  r.mutable_truncate()->set_size(0);
  EXPECT_EQ(Raw(1, r).status().code(), EACCES);
  r.Clear();
  r.mutable_punch()->set_offset(0);
  r.mutable_punch()->set_length(4096);
  EXPECT_EQ(Raw(1, r).status().code(), EACCES);
  r.Clear();
  r.mutable_stat();
  EXPECT_EQ(Raw(1, r).status().code(), EACCES);
  r.Clear();
  r.mutable_destroy();
  EXPECT_EQ(Raw(1, r).status().code(), EACCES);
  // Tampered: every byte, one at a time, flipped somewhere (MAC and fields).
  for (size_t i = 0; i < cap.size(); i += 7) {
    std::string bad = cap;
    bad[i] = static_cast<char>(bad[i] ^ 0x01);
    EXPECT_EQ(Raw(0, ReadReq(bad)).status().code(), EACCES) << "byte " << i;
  }
  // A valid token for another object: a guessed id.
  proto::OssRequest guess = ReadReq(cap);
  guess.set_oid(file_->layout().objects[0].oid + 1000);
  EXPECT_EQ(Raw(0, guess).status().code(), EACCES);
  // A client's read-write token does not destroy (only the servers' own).
  r.Clear();
  r.mutable_destroy();
  r.add_capabilities(cap);
  EXPECT_EQ(Raw(1, r).status().code(), EACCES);
  // statfs names no object and needs none.
  r.Clear();
  r.mutable_statfs();
  EXPECT_EQ(Raw(0, r).status().code(), 0);
  // Nothing forged landed.
  std::vector<uint8_t> got(kLen);
  ASSERT_TRUE(client_->Read(*file_, 0, got).ok());
  EXPECT_EQ(got, std::vector<uint8_t>(kLen, 'w'));
}

TEST_F(CapabilityTest, ReadOnlyCapabilityCannotWrite) {
  client::Attr attr;
  auto ro = client_->Open(kRoot, ino_, O_RDONLY, &attr);
  ASSERT_TRUE(ro.ok()) << ro.status().ToString();
  const std::string cap = (*ro)->layout().capability;
  ASSERT_FALSE(cap.empty());
  EXPECT_NE(cap, file_->layout().capability);
  EXPECT_EQ(Raw(0, ReadReq(cap)).status().code(), 0);
  EXPECT_EQ(Raw(0, WriteReq(cap), std::vector<uint8_t>(10, 'f')).status().code(), EACCES);
  proto::OssRequest r;
  r.mutable_truncate()->set_size(0);
  r.add_capabilities(cap);
  EXPECT_EQ(Raw(0, r).status().code(), EACCES);
  // The read-write one writes (same request, the control).
  EXPECT_EQ(
      Raw(0, WriteReq(file_->layout().capability), std::vector<uint8_t>(10, 'f')).status().code(),
      0);
}

// An open by path (OpenPathReq) is signed as an open is: a read-only one
// reads and cannot write, a read-write one writes.
TEST_F(CapabilityTest, AnOpenByPathCarriesTheCapabilityOfItsMode) {
  client::Attr attr;
  auto ro = client_->OpenPath(kRoot, "/f", O_RDONLY, &attr);
  ASSERT_TRUE(ro.ok()) << ro.status().ToString();
  const std::string cap = (*ro)->layout().capability;
  ASSERT_FALSE(cap.empty()) << "a keyed MDS signs an open by path's layout";
  std::vector<uint8_t> got(kLen);
  ASSERT_TRUE(client_->Read(**ro, 0, got).ok());
  EXPECT_EQ(got, std::vector<uint8_t>(kLen, 'w'));
  EXPECT_EQ(Raw(0, WriteReq(cap), std::vector<uint8_t>(10, 'f')).status().code(), EACCES);
  auto rw = client_->OpenPath(kRoot, "/f", O_RDWR, &attr);
  ASSERT_TRUE(rw.ok()) << rw.status().ToString();
  EXPECT_EQ(Raw(0, WriteReq((*rw)->layout().capability), std::vector<uint8_t>(10, 'f'))
                .status()
                .code(),
            0);
}

// Server-side copies with a key: the client's copy carries both files'
// capabilities, and the destination's OSS pulls the source from its peer
// with its own token. Nothing is refused on the way.
TEST_F(CapabilityTest, CopyRangeAndSeekWork) {
  client::LayoutSpec l;
  l.stripe_count = 2;
  l.stripe_size = 64 * 1024;
  l.start_ost = static_cast<int32_t>(file_->layout().objects[1].ost);  // stripes cross OSSes
  client::Attr attr;
  auto g = client_->Create(kRoot, client::kRootIno, "g", 0644, O_RDWR | O_CREAT, &attr, &l);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  ASSERT_NE((*g)->layout().objects[0].ost, file_->layout().objects[0].ost);
  auto n = client_->CopyRange(*file_, 0, **g, 0, kLen);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, kLen);
  std::vector<uint8_t> got(kLen);
  ASSERT_TRUE(client_->Read(**g, 0, got).ok());
  EXPECT_EQ(got, std::vector<uint8_t>(kLen, 'w'));
  auto data = client_->Seek(**g, 0, SEEK_DATA);
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_EQ(*data, 0u);
  EXPECT_EQ(AllOssLogs(cluster()).find("EACCES"), std::string::npos) << "an OSS refused a request";
}

// The online fsck stats objects on the OSSes with the capabilities of the
// layouts it reads: clean on a keyed cluster.
TEST_F(CapabilityTest, OnlineFsckIsClean) {
  ASSERT_TRUE(client_->Fsync(*file_, false).ok());
  std::string cmd = SfsBinary() + " fsck --mds " + cluster().mds_address();
  std::string out;
  EXPECT_EQ(RunShell(cmd, &out), 0) << cmd << "\n" << out;
}

// Unlink with a key: the MDS's destroys carry its own token, so the objects go.
TEST_F(CapabilityTest, UnlinkDestroysObjects) { Unlinks(); }

void CapabilityTest::Unlinks() {
  const std::string path = cluster().ObjectPath(*client_, file_->layout().objects[0].ost,
                                                file_->layout().objects[0].oid);
  ASSERT_FALSE(path.empty());
  ASSERT_EQ(::access(path.c_str(), F_OK), 0) << path;
  ASSERT_TRUE(client_->Close(file_).ok());
  file_.reset();
  ASSERT_TRUE(client_->Unlink(kRoot, client::kRootIno, "f").ok());
  bool gone =
      PollUntil([&] { return ::access(path.c_str(), F_OK) != 0; }, std::chrono::seconds(30));
  EXPECT_TRUE(gone) << path << " still there: the MDS's destroy was refused?";
}

// Every OSS refuses token for all objects of l, within a few heartbeats
// (1 s each): the revocation has reached them all.
#define EXPECT_REVOKED_EVERYWHERE(l, token)                                               \
  do {                                                                                   \
    auto all_refused = [&] {                                                             \
      for (const client::StripeObject& o : (l).objects)                                  \
        if (RawOn(o, ReadReq(token)).status().code() != EACCES) return false;            \
      return true;                                                                       \
    };                                                                                   \
    EXPECT_TRUE(PollUntil(all_refused, std::chrono::seconds(30)))                        \
        << "an OSS still honours a revoked capability 30 s later";                       \
  } while (0)

// chmod 0600 by the owner: another user's read capability, handed out
// while the mode let it read, is refused by every OSS within a few
// heartbeats, its open handle's reads fail (its renewal asks as that user
// and gets no right), and a raw request with the old token is refused. The
// owner's handle carries on: its token is void too, but it renews.
TEST_F(CapabilityTest, ChmodRevokesAnotherUsersCapabilityAtEveryOss) {
  const client::Cred owner{1000, 1000, {}};
  const client::Cred other{2000, 2000, {}};
  client::SetAttrArgs own;
  own.valid = client::kSetUid | client::kSetGid | client::kSetMode;
  own.uid = owner.uid;
  own.gid = owner.gid;
  own.mode = 0644;
  ASSERT_TRUE(client_->SetAttr(kRoot, ino_, own).ok());
  client::Attr attr;
  auto mine = client_->Open(owner, ino_, O_RDWR, &attr);
  ASSERT_TRUE(mine.ok()) << mine.status().ToString();
  auto theirs = client_->Open(other, ino_, O_RDONLY, &attr);
  ASSERT_TRUE(theirs.ok()) << theirs.status().ToString();
  const client::LayoutSpec& l = (*theirs)->layout();
  const std::string their_cap = l.capability;
  const std::string my_cap = (*mine)->layout().capability;
  ASSERT_FALSE(their_cap.empty());
  std::vector<uint8_t> got(kLen);
  ASSERT_TRUE(client_->Read(**theirs, 0, got).ok()) << "the control: 0644 lets it read";
  for (const client::StripeObject& o : l.objects)
    ASSERT_EQ(RawOn(o, ReadReq(their_cap)).status().code(), 0);

  client::SetAttrArgs lock;
  lock.valid = client::kSetMode;
  lock.mode = 0600;
  ASSERT_TRUE(client_->SetAttr(owner, ino_, lock).ok());
  EXPECT_REVOKED_EVERYWHERE(l, their_cap);
  EXPECT_REVOKED_EVERYWHERE(l, my_cap);
  EXPECT_NE(AllOssLogs(cluster()).find("revoked"), std::string::npos)
      << "the OSS names why it refused";

  auto r = client_->Read(**theirs, 0, got);
  ASSERT_FALSE(r.ok()) << "a reader the new mode shuts out still reads";
  EXPECT_EQ(r.status().code(), EACCES) << r.status().ToString();
  EXPECT_FALSE(client_->Open(other, ino_, O_RDONLY, &attr).ok());
  // The owner renews and goes on reading and writing.
  std::vector<uint8_t> data(kLen, 'o');
  auto w = client_->Write(**mine, 0, data);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  auto back = client_->Read(**mine, 0, got);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(got, data);
}

// sfs tenant remove: every capability of the tenant's is refused by every
// OSS within a few heartbeats; the default tenant's are not touched.
TEST_F(CapabilityTest, TenantRemovalRevokesItsCapabilitiesAtEveryOss) {
  ASSERT_TRUE(client_->Mkdir(kRoot, client::kRootIno, "tq", 0777).ok());
  const std::string key = cluster().root() + "/tq.key";
  const std::string sfs = SfsBinary() + " tenant ";
  const std::string mds = " --mds " + cluster().mds_address() + " 2>&1";
  std::string out;
  ASSERT_EQ(RunShell(sfs + "create tq --fileset /tq --key-out " + key + mds, &out), 0) << out;
  client::Options o;
  o.mds_address = cluster().mds_address();
  o.tenant = "tq";
  o.keyfile = key;
  auto t = Client::Connect(o);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  client::LayoutSpec spec;
  spec.stripe_count = 2;
  spec.stripe_size = 64 * 1024;
  client::Attr attr;
  auto f = (*t)->Create(kRoot, client::kRootIno, "x", 0644, O_RDWR | O_CREAT, &attr, &spec);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_TRUE((*t)->Write(**f, 0, std::vector<uint8_t>(kLen, 't')).ok());
  const client::LayoutSpec l = (*f)->layout();
  ASSERT_EQ(l.objects.size(), 2u);
  for (const client::StripeObject& obj : l.objects)
    ASSERT_EQ(RawOn(obj, ReadReq(l.capability)).status().code(), 0) << "the control";

  ASSERT_EQ(RunShell(sfs + "remove tq" + mds, &out), 0) << out;
  EXPECT_REVOKED_EVERYWHERE(l, l.capability);
  // The default tenant's token was minted before too, and still reads.
  EXPECT_EQ(Raw(0, ReadReq(file_->layout().capability)).status().code(), 0);
  EXPECT_EQ(Raw(1, ReadReq(file_->layout().capability)).status().code(), 0);
}

// An MDS restart voids everything it minted before (its revocation list is
// memory only); clients renew and carry on.
TEST_F(CapabilityTest, AnMdsRestartVoidsOldCapabilitiesAndClientsRenew) {
  const client::LayoutSpec l = file_->layout();
  ASSERT_EQ(Raw(0, ReadReq(l.capability)).status().code(), 0);
  ASSERT_TRUE(cluster().KillMds().ok());
  ASSERT_TRUE(cluster().RestartMds().ok());
  EXPECT_REVOKED_EVERYWHERE(l, l.capability);
  std::vector<uint8_t> got(kLen);
  bool read = PollUntil([&] { return client_->Read(*file_, 0, got).ok(); },
                        std::chrono::seconds(30));
  ASSERT_TRUE(read) << "the client did not renew after the MDS restart";
  EXPECT_EQ(got, std::vector<uint8_t>(kLen, 'w'));
}

// Capabilities of 2 s: a writer and a reader keep going across several
// expiries with no error (the client renews on EACCES and sends again).
class RenewalTest : public CapabilityTest {
 protected:
  int LifetimeS() const override { return 2; }
};

TEST_F(RenewalTest, ExpiredCapabilitiesAreRenewedUnderARunningWriter) {
  const std::string first = file_->layout().capability;
  // Until the first token has expired at the OSS (proves expiry is
  // enforced), and then as long again, write and read back all the time.
  auto expired = [&] { return Raw(0, ReadReq(first)).status().code() == EACCES; };
  int rounds = 0;
  bool seen_expired = false;
  std::chrono::steady_clock::time_point until{};
  for (uint8_t v = 1;; ++v) {
    std::vector<uint8_t> data(kLen, v);
    Status w = client_->Write(*file_, 0, data).status();
    ASSERT_TRUE(w.ok()) << "round " << rounds << ": " << w.ToString();
    std::vector<uint8_t> got(kLen);
    auto r = client_->Read(*file_, 0, got);
    ASSERT_TRUE(r.ok()) << "round " << rounds << ": " << r.status().ToString();
    ASSERT_EQ(got, data) << "round " << rounds;
    ++rounds;
    if (!seen_expired && expired()) {
      seen_expired = true;
      until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    }
    if (seen_expired && std::chrono::steady_clock::now() > until) break;
    ASSERT_LT(rounds, 100000) << "the first capability never expired";
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // pacing, not synchronisation
  }
  EXPECT_TRUE(seen_expired);
  EXPECT_GT(rounds, 10);
}

class NoKeyTest : public CapabilityTest {
 protected:
  bool Keyed() const override { return false; }
};

TEST_F(NoKeyTest, UnlinkDestroysObjects) { Unlinks(); }

TEST_F(NoKeyTest, BareRequestsServedAsBefore) {
  EXPECT_TRUE(file_->layout().capability.empty());
  EXPECT_EQ(Raw(0, ReadReq("")).status().code(), 0);
  EXPECT_EQ(Raw(0, WriteReq(""), std::vector<uint8_t>(10, 'f')).status().code(), 0);
}

}  // namespace
}  // namespace sfs::testing
