// Unit tests of the write fence (issue 15): WriteFence alone, and through
// OssService::Handle with real stores on a temp dir, no network.
#include "oss/service/write_fence.h"

#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "oss.pb.h"
#include "oss/service/oss_service.h"
#include "oss/testing/service_call.h"
#include "oss/testing/temp_dir.h"

namespace sfs::oss {
namespace {

using proto::OssRequest;
using proto::OssResponse;

constexpr uint64_t kClient = 0x1234567887654321ull;
constexpr uint64_t kOther = 77;

TEST(WriteFenceTest, EpochZeroIsNeverFenced) {
  WriteFence fence;
  ASSERT_TRUE(fence.Admit(kClient, 5).ok());
  EXPECT_TRUE(fence.Admit(kClient, 0).ok());
  EXPECT_EQ(fence.Highest(kClient), 5u);
}

TEST(WriteFenceTest, AnOlderEpochIsRefusedOnceANewerOneCameIn) {
  WriteFence fence;
  EXPECT_TRUE(fence.Admit(kClient, 1).ok());
  EXPECT_TRUE(fence.Admit(kClient, 2).ok());
  Result<WriteFence::Admission> late = fence.Admit(kClient, 1);
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.status().code(), ESTALE);
  EXPECT_TRUE(fence.Admit(kClient, 2).ok());
  EXPECT_TRUE(fence.Admit(kOther, 1).ok()) << "another client's epochs are its own";
}

TEST(WriteFenceTest, DisabledFenceAdmitsEverything) {
  WriteFence fence(/*enabled=*/false);
  EXPECT_TRUE(fence.Admit(kClient, 3).ok());
  EXPECT_TRUE(fence.Admit(kClient, 1).ok());
}

// The raise waits for the admitted older request to finish applying: the
// old request's effect is always recorded before the new one's.
TEST(WriteFenceTest, ARaiseWaitsUntilAnAdmittedOlderRequestIsDone) {
  WriteFence fence;
  std::mutex mu;
  std::vector<std::string> order;
  auto note = [&](const char* what) {
    std::lock_guard<std::mutex> l(mu);
    order.push_back(what);
  };
  std::thread newer;
  {
    Result<WriteFence::Admission> old = fence.Admit(kClient, 1);
    ASSERT_TRUE(old.ok());
    newer = std::thread([&] {
      Result<WriteFence::Admission> a = fence.Admit(kClient, 2);
      EXPECT_TRUE(a.ok());
      note("new");
    });
    std::this_thread::yield();
    note("old");
  }  // the old request's admission ends here
  newer.join();
  EXPECT_EQ(order, (std::vector<std::string>{"old", "new"}));
  EXPECT_FALSE(fence.Admit(kClient, 1).ok());
}

class FencedServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = OpenFileObjectStore(dir_.path() + "/ost");
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(s).value();
    service_.SetTargets({{0, store_.get()}});
  }

  OssResponse Call(const OssRequest& req, std::vector<uint8_t> bulk = {},
                   std::vector<uint8_t>* reply_bulk = nullptr) {
    return CallService(service_, req, std::move(bulk), reply_bulk);
  }

  static OssRequest Req(uint64_t client, uint64_t epoch) {
    OssRequest req;
    req.set_ost(0);
    req.set_oid(9);
    req.set_client_id(client);
    req.set_fence_epoch(epoch);
    return req;
  }

  OssResponse Write(uint64_t client, uint64_t epoch, std::vector<uint8_t> data) {
    OssRequest req = Req(client, epoch);
    req.mutable_write()->set_offset(0);
    return Call(req, std::move(data));
  }

  std::vector<uint8_t> ReadBack(uint64_t len) {
    OssRequest req = Req(kClient, 1);  // reads are never fenced
    req.mutable_read()->set_length(len);
    std::vector<uint8_t> out;
    EXPECT_EQ(Call(req, {}, &out).status().code(), 0);
    return out;
  }

  TempDir dir_;
  std::unique_ptr<ObjectStore> store_;
  OssService service_;
};

TEST_F(FencedServiceTest, ALateWriteOfAnOlderEpochIsRefusedAndTheNewerBytesStay) {
  ASSERT_EQ(Write(kClient, 2, {'n', 'e', 'w'}).status().code(), 0);
  OssResponse late = Write(kClient, 1, {'o', 'l', 'd'});
  EXPECT_EQ(late.status().code(), ESTALE);
  EXPECT_TRUE(late.fenced());
  EXPECT_FALSE(late.object_destroyed());
  EXPECT_EQ(ReadBack(3), (std::vector<uint8_t>{'n', 'e', 'w'}));
  EXPECT_EQ(Write(kOther, 1, {'x'}).status().code(), 0) << "other clients are not fenced";
  EXPECT_EQ(Write(kClient, 0, {'z'}).status().code(), 0) << "epoch 0 is not fenced";
}

TEST_F(FencedServiceTest, StaleTruncatePunchAndWriteVAreRefusedWhole) {
  ASSERT_EQ(Write(kClient, 3, std::vector<uint8_t>(100, 'n')).status().code(), 0);
  OssRequest trunc = Req(kClient, 2);
  trunc.mutable_truncate()->set_size(0);
  EXPECT_TRUE(Call(trunc).fenced());
  OssRequest punch = Req(kClient, 2);
  punch.mutable_punch()->set_offset(0);
  punch.mutable_punch()->set_length(100);
  EXPECT_TRUE(Call(punch).fenced());
  OssRequest wv = Req(kClient, 1);
  proto::ObjExtent* e = wv.mutable_write_v()->add_extents();
  e->set_oid(9);
  e->set_length(4);
  OssResponse r = Call(wv, {'o', 'l', 'd', '!'});
  EXPECT_EQ(r.status().code(), ESTALE);
  EXPECT_TRUE(r.fenced());
  EXPECT_EQ(r.write_status_size(), 0);
  EXPECT_EQ(ReadBack(100), std::vector<uint8_t>(100, 'n'));
}

TEST_F(FencedServiceTest, NonMutatingOpsIgnoreTheEpoch) {
  ASSERT_EQ(Write(kClient, 4, {'a'}).status().code(), 0);
  OssRequest stat = Req(kClient, 1);
  stat.mutable_stat();
  EXPECT_EQ(Call(stat).status().code(), 0);
  OssRequest sync = Req(kClient, 1);
  sync.mutable_sync();
  EXPECT_EQ(Call(sync).status().code(), 0);
}

TEST(FencingOffTest, ServiceWithoutFencingAppliesALateWrite) {
  TempDir dir;
  auto store = OpenFileObjectStore(dir.path() + "/ost");
  ASSERT_TRUE(store.ok());
  OssService service(/*fencing=*/false);
  service.SetTargets({{0, store->get()}});
  for (uint64_t epoch : {2, 1}) {
    OssRequest req;
    req.set_client_id(kClient);
    req.set_fence_epoch(epoch);
    req.mutable_write()->set_offset(0);
    rpc::Request r;
    r.service = rpc::kServiceOss;
    req.SerializeToString(&r.payload);
    r.bulk = {static_cast<uint8_t>('0' + epoch)};
    rpc::Reply reply;
    service.Handle(r, &reply);
    OssResponse resp;
    ASSERT_TRUE(resp.ParseFromString(reply.payload));
    EXPECT_EQ(resp.status().code(), 0);
  }
  std::vector<uint8_t> out(1);
  ASSERT_TRUE((*store)->Read(0, 0, out, nullptr).ok());
  EXPECT_EQ(out[0], '1') << "the late (epoch 1) write landed last";
}

}  // namespace
}  // namespace sfs::oss
