// Write fencing (issue 15), end to end: a write held in the network past its
// deadline, a newer write to the same bytes, then the held bytes delivered,
// so that the OSS sees the old request last. The newer bytes must stay.
//
// One sfs-mds and one sfs-oss, real processes; the OSS advertises a
// HoldProxy (hold_proxy.h) in front of it, so every client connection to it
// goes through the proxy. The negative control runs the same steps against
// an OSS started with --fencing=off, where the old bytes win: the test can
// tell a fence from luck.
#include <fcntl.h>

#include <thread>

#include <gtest/gtest.h>

#include "client/lib/io.h"
#include "client/lib/mds_client.h"
#include "client/lib/oss_pool.h"
#include "oss.pb.h"
#include "tests/harness/fixture.h"
#include "tests/integration/hold_proxy.h"

namespace sfs::testing {
namespace {

using client::Client;
using client::File;
using std::chrono::milliseconds;

constexpr size_t kLen = 8192;
// The held write's deadline: short, since the test waits it out once.
constexpr milliseconds kRpcTimeout{1000};

class FenceTest : public ClusterPerTest {
 protected:
  virtual bool Fencing() const { return true; }

  ClusterOptions Options() override {
    EXPECT_TRUE(proxy_.Start().ok());
    ClusterOptions o;
    o.name = "fence";
    o.num_oss = 1;
    o.oss_args = {"--advertise", "127.0.0.1:" + std::to_string(proxy_.port())};
    if (!Fencing()) o.oss_args.push_back("--fencing=off");
    return o;
  }

  void SetUp() override {
    ClusterPerTest::SetUp();
    if (HasFatalFailure()) return;
    proxy_.SetUpstream(cluster().oss_address(0));
    auto c = cluster().Connect(kRpcTimeout);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    client_ = std::move(*c);
    client::LayoutSpec l;
    l.stripe_count = 1;
    client::Attr attr;
    auto f = client_->Create(kRoot, client::kRootIno, "f", 0644, O_RDWR | O_CREAT, &attr, &l);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    file_ = *f;
    ASSERT_TRUE(client_->Write(*file_, 0, std::vector<uint8_t>(2 * kLen, 'i')).ok());
  }

  void TearDown() override {
    file_.reset();
    client_.reset();
    ClusterPerTest::TearDown();
  }

  // Writes `old` with its request held past the deadline (EIO), then `fresh`
  // (OK), then delivers the held request; returns the OSS's replies to what
  // was held and leaves the file's bytes for the caller to read.
  std::vector<HoldProxy::Exchange> WriteLateThenNew(uint8_t old, uint8_t fresh) {
    proxy_.Hold();
    auto late = client_->Write(*file_, 0, std::vector<uint8_t>(kLen, old));
    EXPECT_FALSE(late.ok()) << "the held write should time out";
    if (!late.ok()) {
      EXPECT_EQ(late.status().code(), EIO) << late.status().ToString();
    }
    proxy_.CutHeld();
    auto now = client_->Write(*file_, 0, std::vector<uint8_t>(kLen, fresh));
    EXPECT_TRUE(now.ok()) << now.status().ToString();
    auto released = proxy_.Release(milliseconds(10000));
    EXPECT_TRUE(released.ok()) << released.status().ToString();
    return released.ok() ? *released : std::vector<HoldProxy::Exchange>{};
  }

  // The held write among the released requests, and the OSS's answer to it.
  static bool FindHeldWrite(const std::vector<HoldProxy::Exchange>& ex, uint64_t* epoch,
                            proto::OssResponse* reply) {
    for (const HoldProxy::Exchange& e : ex) {
      proto::OssRequest req;
      if (!req.ParseFromString(e.request) || !req.has_write()) continue;
      *epoch = req.fence_epoch();
      return reply->ParseFromString(e.reply);
    }
    return false;
  }

  std::vector<uint8_t> ReadAll(uint64_t off = 0) {
    std::vector<uint8_t> got(kLen);
    auto n = client_->Read(*file_, off, got);
    EXPECT_TRUE(n.ok()) << n.status().ToString();
    return got;
  }

  HoldProxy proxy_;
  std::unique_ptr<Client> client_;
  std::shared_ptr<File> file_;
};

TEST_F(FenceTest, AWriteHeldPastItsDeadlineNeverOverwritesANewerOne) {
  std::vector<HoldProxy::Exchange> held = WriteLateThenNew('o', 'n');
  uint64_t epoch = 0;
  proto::OssResponse reply;
  ASSERT_TRUE(FindHeldWrite(held, &epoch, &reply)) << "the old write was not among the held bytes";
  EXPECT_EQ(epoch, 1u);
  EXPECT_EQ(reply.status().code(), ESTALE) << reply.status().message();
  EXPECT_TRUE(reply.fenced());
  EXPECT_EQ(ReadAll(), std::vector<uint8_t>(kLen, 'n'));
}

TEST_F(FenceTest, WritesAfterTheFenceKeepWorking) {
  WriteLateThenNew('o', 'n');
  // The raised epoch is the client's from now on: more writes and a truncate land.
  ASSERT_TRUE(client_->Write(*file_, 0, std::vector<uint8_t>(kLen, 'm')).ok());
  EXPECT_EQ(ReadAll(), std::vector<uint8_t>(kLen, 'm'));
  client::SetAttrArgs trunc;
  trunc.valid = client::kSetSize;
  trunc.size = 100;
  auto attr = client_->SetAttr(kRoot, file_->ino(), trunc);
  ASSERT_TRUE(attr.ok()) << attr.status().ToString();
  std::vector<uint8_t> want(kLen, 0);
  std::fill(want.begin(), want.begin() + 100, 'm');
  EXPECT_EQ(ReadAll(), want);
}

// One libsfs client's OSS side built by hand (as client.cc wires it), with
// two Stripers of different deadlines over the same pool and client id, so
// that one call can time out while another, older, is still alive.
struct TwoDeadlines {
  explicit TwoDeadlines(const std::string& mds_address)
      : io(rpc::IoContext::Create(1)),
        mds(io->MakeTcpChannel(mds_address), 0x5eed, milliseconds(10000)),
        pool(io.get(), &mds),
        hasty(&pool, mds.client_id(), [this] { return mds.NextXid(); }, milliseconds(500)),
        patient(&pool, mds.client_id(), [this] { return mds.NextXid(); }, milliseconds(10000)) {}
  std::unique_ptr<rpc::IoContext> io;
  client::MdsClient mds;
  client::OssPool pool;
  client::Striper hasty;
  client::Striper patient;
};

bool CarriesEpoch(const std::string& payload, uint64_t epoch) {
  proto::OssRequest req;
  return req.ParseFromString(payload) && req.fence_epoch() == epoch;
}

// A live call that was in flight while another call's timeout raised the
// epoch reaches the OSS after the raise: it is refused (nothing applied),
// and libsfs sends it again with the new epoch without the caller noticing.
TEST_F(FenceTest, ALiveWriteRefusedByTheFenceIsSentAgainAndLands) {
  TwoDeadlines w(cluster().mds_address());
  ASSERT_TRUE(w.pool.Refresh().ok());
  const client::LayoutSpec& l = file_->layout();
  const std::vector<uint8_t> live(kLen, 'b'), old(kLen, 'o'), fresh(kLen, 'n');
  proxy_.Hold();
  Status live_st, fresh_st;
  std::thread live_writer([&] { live_st = w.patient.Write(l, kLen, live); });
  ASSERT_TRUE(proxy_.WaitKept(1, milliseconds(10000)).ok());  // the live write is held
  Status old_st = w.hasty.Write(l, 0, old);  // held past its 500 ms: the epoch goes to 2
  EXPECT_EQ(old_st.code(), EIO) << old_st.ToString();
  std::thread fresh_writer([&] { fresh_st = w.hasty.Write(l, 0, fresh); });
  ASSERT_TRUE(proxy_.WaitKept(3, milliseconds(10000)).ok());
  // The newer write (epoch 2) first, then the live one (epoch 1).
  auto first = proxy_.Release(milliseconds(10000),
                              [](const std::string& p) { return CarriesEpoch(p, 2); });
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  fresh_writer.join();
  EXPECT_TRUE(fresh_st.ok()) << fresh_st.ToString();
  auto rest = proxy_.Release(milliseconds(10000));
  ASSERT_TRUE(rest.ok()) << rest.status().ToString();
  live_writer.join();
  EXPECT_TRUE(live_st.ok()) << "not sent again after the fence: " << live_st.ToString();
  bool refused = false;
  for (const HoldProxy::Exchange& e : *rest) {
    proto::OssResponse r;
    refused |= CarriesEpoch(e.request, 1) && r.ParseFromString(e.reply) && r.fenced();
  }
  EXPECT_TRUE(refused) << "the live write's first copy should have met the fence";
  EXPECT_EQ(ReadAll(0), fresh);
  EXPECT_EQ(ReadAll(kLen), live);
}

class FencingOffTest : public FenceTest {
 protected:
  bool Fencing() const override { return false; }
};

// The negative control: without the fence the late write is applied last.
TEST_F(FencingOffTest, WithoutTheFenceTheLateWriteWins) {
  std::vector<HoldProxy::Exchange> held = WriteLateThenNew('o', 'n');
  uint64_t epoch = 0;
  proto::OssResponse reply;
  ASSERT_TRUE(FindHeldWrite(held, &epoch, &reply));
  EXPECT_EQ(reply.status().code(), 0);
  EXPECT_EQ(ReadAll(), std::vector<uint8_t>(kLen, 'o'));
}

}  // namespace
}  // namespace sfs::testing
