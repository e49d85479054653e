// Unit tests of the Registrar against a fake MDS channel (no network).
#include "oss/registrar/registrar.h"

#include <gtest/gtest.h>

#include <functional>
#include <mutex>
#include <thread>

#include "mds.pb.h"
#include "oss/testing/temp_dir.h"

namespace sfs::oss {
namespace {

using namespace std::chrono_literals;

// Answers MdsRequests in-process. Start() only records the payload; Wait()
// answers it (the registrar has one call in flight at a time).
class FakeMds : public rpc::Channel {
 public:
  std::shared_ptr<rpc::PendingCall> Start(uint16_t service, std::string payload,
                                          std::span<const uint8_t>, std::span<uint8_t>,
                                          const rpc::CallOptions&) override {
    std::lock_guard<std::mutex> lock(mu_);
    pending_ = std::move(payload);
    return nullptr;
  }

  Status Wait(const std::shared_ptr<rpc::PendingCall>&, rpc::Response* out) override {
    std::lock_guard<std::mutex> lock(mu_);
    proto::MdsRequest req;
    EXPECT_TRUE(req.ParseFromString(pending_));
    xids_.push_back(req.xid());
    if (unreachable_calls_ > 0) {
      --unreachable_calls_;
      return Status::Errno(ECONNREFUSED, "fake MDS down");
    }
    proto::MdsResponse resp;
    if (req.has_register_oss()) {
      ++registrations_;
      last_register_ = req.register_oss();
      for (int i = 0; i < req.register_oss().osts_size(); ++i) {
        resp.mutable_register_oss()->add_indices(static_cast<uint32_t>(10 + i));
      }
    } else if (req.has_heartbeat()) {
      ++heartbeats_;
      last_heartbeat_ = req.heartbeat();
      if (forget_next_heartbeat_) {
        forget_next_heartbeat_ = false;
        resp.mutable_status()->set_code(ESTALE);
      }
    }
    resp.SerializeToString(&out->payload);
    return Status::Ok();
  }

  const std::string& address() const override { return address_; }

  // Runs f under the fake's lock.
  void With(const std::function<void(FakeMds&)>& f) {
    std::lock_guard<std::mutex> lock(mu_);
    f(*this);
  }

  int unreachable_calls_ = 0;
  bool forget_next_heartbeat_ = false;
  int registrations_ = 0;
  int heartbeats_ = 0;
  std::vector<uint64_t> xids_;
  proto::RegisterOssReq last_register_;
  proto::HeartbeatReq last_heartbeat_;

 private:
  std::mutex mu_;
  std::string pending_;
  std::string address_ = "fake-mds:1";
};

class RegistrarTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 2; ++i) {
      auto s = OpenFileObjectStore(dir_.path() + "/ost" + std::to_string(i));
      ASSERT_TRUE(s.ok());
      stores_.push_back(std::move(s).value());
    }
  }

  std::unique_ptr<Registrar> Make(std::unique_ptr<FakeMds> fake) {
    fake_ = fake.get();
    RegistrarOptions opts;
    opts.self_address = "127.0.0.1:7777";
    opts.heartbeat_interval = 5ms;
    opts.min_backoff = 1ms;
    opts.max_backoff = 4ms;
    std::vector<ObjectStore*> raw = {stores_[0].get(), stores_[1].get()};
    return std::make_unique<Registrar>(opts, raw, std::move(fake),
                                       [this](const std::vector<uint32_t>& idx) {
                                         std::lock_guard<std::mutex> lock(mu_);
                                         indices_ = idx;
                                         ++callbacks_;
                                       });
  }

  // Polls pred for up to 10 s.
  bool Eventually(const std::function<bool()>& pred) {
    auto end = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < end) {
      if (pred()) return true;
      std::this_thread::sleep_for(1ms);
    }
    return false;
  }

  int Heartbeats() {
    int n = 0;
    fake_->With([&](FakeMds& f) { n = f.heartbeats_; });
    return n;
  }

  TempDir dir_;
  std::vector<std::unique_ptr<ObjectStore>> stores_;
  FakeMds* fake_ = nullptr;
  std::mutex mu_;
  std::vector<uint32_t> indices_;
  int callbacks_ = 0;
};

TEST_F(RegistrarTest, RetriesUntilTheMdsAnswersThenReportsIndicesAndHeartbeats) {
  auto fake = std::make_unique<FakeMds>();
  fake->unreachable_calls_ = 3;
  auto reg = Make(std::move(fake));
  reg->Start();
  ASSERT_TRUE(Eventually([&] { return Heartbeats() >= 2; }));
  reg->Stop();
  {
    std::lock_guard<std::mutex> lock(mu_);
    EXPECT_EQ(indices_, (std::vector<uint32_t>{10, 11}));
    EXPECT_EQ(callbacks_, 1);
  }
  fake_->With([&](FakeMds& f) {
    EXPECT_EQ(f.registrations_, 1);
    ASSERT_EQ(f.last_register_.osts_size(), 2);
    EXPECT_EQ(f.last_register_.address(), "127.0.0.1:7777");
    EXPECT_EQ(f.last_register_.osts(0).uuid(), stores_[0]->uuid());
    EXPECT_GT(f.last_register_.osts(1).total_bytes(), 0u);
    ASSERT_EQ(f.last_heartbeat_.osts_size(), 2);
    EXPECT_EQ(f.last_heartbeat_.osts(1).index(), 11u);
    EXPECT_EQ(f.last_heartbeat_.osts(1).uuid(), stores_[1]->uuid());
    for (size_t i = 1; i < f.xids_.size(); ++i) EXPECT_GT(f.xids_[i], f.xids_[i - 1]);
  });
}

TEST_F(RegistrarTest, HeartbeatAnsweredEstaleLeadsToReregistration) {
  auto reg = Make(std::make_unique<FakeMds>());
  reg->Start();
  ASSERT_TRUE(Eventually([&] { return Heartbeats() >= 1; }));
  fake_->With([](FakeMds& f) { f.forget_next_heartbeat_ = true; });
  ASSERT_TRUE(Eventually([&] { return reg->registrations() >= 2; }));
  reg->Stop();
}

TEST_F(RegistrarTest, UnreachableMdsDuringHeartbeatsLeadsToReregistration) {
  auto reg = Make(std::make_unique<FakeMds>());
  reg->Start();
  ASSERT_TRUE(Eventually([&] { return Heartbeats() >= 1; }));
  fake_->With([](FakeMds& f) { f.unreachable_calls_ = 5; });
  ASSERT_TRUE(Eventually([&] { return reg->registrations() >= 2; }));
  reg->Stop();
}

TEST_F(RegistrarTest, StopReturnsWhileTheMdsIsStillUnreachable) {
  auto fake = std::make_unique<FakeMds>();
  fake->unreachable_calls_ = 1 << 30;
  auto reg = Make(std::move(fake));
  reg->Start();
  std::this_thread::sleep_for(20ms);
  reg->Stop();
  std::lock_guard<std::mutex> lock(mu_);
  EXPECT_EQ(callbacks_, 0);
}

}  // namespace
}  // namespace sfs::oss
