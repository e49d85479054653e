// Unit tests of MdsClient's deferred closes (mds_client_closes.cc) against a
// scripted MDS in the test process: which requests carry queued closes, and
// that none is lost when the MDS does not apply them (an MDS from before the
// feature, or a lost connection). No servers; the end-to-end behaviour is in
// tests/integration/fuse_close_test.cc.
#include <mutex>
#include <vector>

#include <gtest/gtest.h>

#include "client/lib/mds_client.h"
#include "mds.pb.h"

namespace sfs::client {
namespace {

using std::chrono::milliseconds;

// An MDS channel answering every call at once: as a current MDS (features,
// closes counted), as one from before deferred closes (neither), or not at
// all (ECONNREFUSED). Records what it was sent.
class ScriptedMds : public rpc::Channel {
 public:
  enum class Mode { kCurrent, kOld, kDown };
  void set_mode(Mode m) {
    std::lock_guard<std::mutex> l(mu_);
    mode_ = m;
  }
  std::vector<proto::MdsRequest> requests() {
    std::lock_guard<std::mutex> l(mu_);
    return requests_;
  }

  std::shared_ptr<rpc::PendingCall> Start(uint16_t, std::string payload, std::span<const uint8_t>,
                                          std::span<uint8_t>, const rpc::CallOptions&) override {
    // The call's state is its payload; the opaque handle only carries it.
    auto state = std::make_shared<std::string>(std::move(payload));
    return std::shared_ptr<rpc::PendingCall>(state, reinterpret_cast<rpc::PendingCall*>(state.get()));
  }
  Status Wait(const std::shared_ptr<rpc::PendingCall>& call, rpc::Response* out) override {
    proto::MdsRequest req;
    EXPECT_TRUE(req.ParseFromString(*reinterpret_cast<const std::string*>(call.get())));
    std::lock_guard<std::mutex> l(mu_);
    if (mode_ == Mode::kDown) return Status(ECONNREFUSED, "scripted: down");
    requests_.push_back(req);
    proto::MdsResponse resp;
    resp.set_boot_epoch(1);
    resp.mutable_status()->set_code(req.has_getattr() ? ENOENT : 0);
    if (mode_ == Mode::kCurrent) {
      resp.set_features(proto::MDS_FEATURE_CLOSES);
      resp.set_closes_applied(static_cast<uint32_t>(req.closes_size()));
    }
    out->payload = resp.SerializeAsString();
    return Status::Ok();
  }
  const std::string& address() const override { return address_; }

 private:
  std::mutex mu_;
  Mode mode_ = Mode::kCurrent;
  std::vector<proto::MdsRequest> requests_;
  const std::string address_ = "scripted:0";
};

class MdsClientClosesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ch = std::make_unique<ScriptedMds>();
    mds_ = ch.get();
    client_ = std::make_unique<MdsClient>(std::move(ch), 42, milliseconds(1000), milliseconds(1));
    client_->EnableDeferredCloses(std::chrono::hours(1), 1000);
    ASSERT_TRUE(client_->Ping(milliseconds(1000)).ok());  // learns the MDS's features
  }
  // The (ino, open id) pairs of every close the scripted MDS was sent, carried or as a call.
  std::vector<std::pair<uint64_t, uint64_t>> ClosesSent() {
    std::vector<std::pair<uint64_t, uint64_t>> out;
    for (const proto::MdsRequest& r : mds_->requests()) {
      for (const proto::CloseReq& c : r.closes()) out.emplace_back(c.ino(), c.open_id());
      if (r.has_close()) out.emplace_back(r.close().ino(), r.close().open_id());
    }
    return out;
  }
  ScriptedMds* mds_ = nullptr;
  std::unique_ptr<MdsClient> client_;
};

TEST_F(MdsClientClosesTest, TheNextRequestCarriesTheQueuedClosesInOrder) {
  ASSERT_TRUE(client_->DeferClose(5, 50));
  ASSERT_TRUE(client_->DeferClose(6, 60));
  EXPECT_EQ(client_->GetAttr(Cred{}, 7).status().code(), ENOENT);  // the op's outcome does not matter
  EXPECT_EQ(ClosesSent(), (std::vector<std::pair<uint64_t, uint64_t>>{{5, 50}, {6, 60}}));
  EXPECT_EQ(client_->queued_closes(), 0u);
}

TEST_F(MdsClientClosesTest, ClosesAnOldMdsIgnoredAreSentAgainAsCloseCalls) {
  ASSERT_TRUE(client_->DeferClose(5, 50));
  mds_->set_mode(ScriptedMds::Mode::kOld);  // e.g. restarted as an older version
  (void)client_->GetAttr(Cred{}, 7);
  EXPECT_EQ(client_->queued_closes(), 1u) << "not counted by the reply: queued again";
  EXPECT_FALSE(client_->DeferClose(6, 60)) << "no deferring to an MDS without the feature";
  ASSERT_TRUE(client_->FlushCloses().ok());
  EXPECT_EQ(client_->queued_closes(), 0u);
  std::vector<proto::MdsRequest> sent = mds_->requests();
  ASSERT_FALSE(sent.empty());
  ASSERT_TRUE(sent.back().has_close()) << "a close call of its own";
  EXPECT_EQ(sent.back().close().ino(), 5u);
  EXPECT_EQ(sent.back().close().open_id(), 50u);
}

TEST_F(MdsClientClosesTest, ClosesOfARequestThatGotNoReplyStayQueued) {
  ASSERT_TRUE(client_->DeferClose(5, 50));
  mds_->set_mode(ScriptedMds::Mode::kDown);
  EXPECT_FALSE(client_->GetAttr(Cred{}, 7).ok());
  EXPECT_FALSE(client_->FlushCloses().ok());
  EXPECT_EQ(client_->queued_closes(), 1u);
  mds_->set_mode(ScriptedMds::Mode::kCurrent);
  ASSERT_TRUE(client_->FlushCloses().ok());
  EXPECT_EQ(client_->queued_closes(), 0u);
  EXPECT_EQ(ClosesSent(), (std::vector<std::pair<uint64_t, uint64_t>>{{5, 50}}));
  EXPECT_TRUE(mds_->requests().back().has_ping()) << "flushed by a ping carrying it";
}

TEST_F(MdsClientClosesTest, ALeaseWatchCarriesNoCloses) {
  ASSERT_TRUE(client_->DeferClose(5, 50));
  (void)client_->Watch(0, milliseconds(1));
  EXPECT_TRUE(ClosesSent().empty()) << "a held poll would hold them too";
  EXPECT_EQ(client_->queued_closes(), 1u);
}

}  // namespace
}  // namespace sfs::client
