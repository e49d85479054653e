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

#include <gtest/gtest.h>

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
    ASSERT_TRUE(client_->Write(*file_, 0, std::vector<uint8_t>(kLen, 'i')).ok());
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

  std::vector<uint8_t> ReadAll() {
    std::vector<uint8_t> got(kLen);
    auto n = client_->Read(*file_, 0, got);
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
