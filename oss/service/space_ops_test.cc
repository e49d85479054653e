// OssService's fallocate, seek and copy ops with real stores on a temp dir:
// what each does to the object, and that bad input gets an errno, never a
// crash. (Copies pulled from another OSS run in tests/integration.)
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/falloc.h>

#include <limits>
#include <string>
#include <vector>

#include "oss.pb.h"
#include "oss/service/oss_service.h"
#include "oss/testing/service_call.h"
#include "oss/testing/temp_dir.h"

namespace sfs::oss {
namespace {

using proto::OssRequest;
using proto::OssResponse;

constexpr uint64_t kBig = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

class SpaceOpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 2; ++i) {
      auto s = OpenFileObjectStore(dir_.path() + "/ost" + std::to_string(i));
      ASSERT_TRUE(s.ok()) << s.status().ToString();
      stores_.push_back(std::move(s).value());
    }
    service_.SetTargets({{0, stores_[0].get()}, {1, stores_[1].get()}});
  }
  OssResponse Call(const OssRequest& req, std::vector<uint8_t> bulk = {},
                   std::vector<uint8_t>* out = nullptr) {
    return CallService(service_, req, std::move(bulk), out);
  }
  static OssRequest Req(uint32_t ost, uint64_t oid) {
    OssRequest req;
    req.set_ost(ost);
    req.set_oid(oid);
    return req;
  }
  int Write(uint32_t ost, uint64_t oid, uint64_t off, std::vector<uint8_t> data) {
    OssRequest req = Req(ost, oid);
    req.mutable_write()->set_offset(off);
    return Call(req, std::move(data)).status().code();
  }
  std::vector<uint8_t> Read(uint32_t ost, uint64_t oid, uint64_t off, uint64_t len) {
    OssRequest req = Req(ost, oid);
    req.mutable_read()->set_offset(off);
    req.mutable_read()->set_length(len);
    std::vector<uint8_t> out;
    EXPECT_EQ(Call(req, {}, &out).status().code(), 0);
    return out;
  }
  int Fallocate(uint32_t ost, uint64_t oid, uint32_t mode, uint64_t off, uint64_t len) {
    OssRequest req = Req(ost, oid);
    req.mutable_fallocate()->set_mode(mode);
    req.mutable_fallocate()->set_offset(off);
    req.mutable_fallocate()->set_length(len);
    return Call(req).status().code();
  }
  OssResponse Seek(uint64_t oid, uint64_t off, bool hole) {
    OssRequest req = Req(0, oid);
    req.mutable_seek()->set_offset(off);
    req.mutable_seek()->set_hole(hole);
    return Call(req);
  }
  int Copy(uint32_t src_ost, uint64_t src_oid, uint64_t src_off, uint32_t ost, uint64_t oid,
           uint64_t off, uint64_t len) {
    OssRequest req = Req(ost, oid);
    proto::ObjCopyReq* c = req.mutable_copy();
    c->set_src_ost(src_ost);
    c->set_src_oid(src_oid);
    c->set_src_offset(src_off);
    c->set_offset(off);
    c->set_length(len);
    return Call(req).status().code();
  }
  uint64_t Size(uint32_t ost, uint64_t oid) { return stores_[ost]->Stat(oid)->size; }

  TempDir dir_;
  std::vector<std::unique_ptr<ObjectStore>> stores_;
  OssService service_;
};

TEST_F(SpaceOpsTest, FallocateModesChangeSizeAndBytesAsLinuxDoes) {
  ASSERT_EQ(Write(0, 1, 0, std::vector<uint8_t>(8192, 7)), 0);
  EXPECT_EQ(Fallocate(0, 1, FALLOC_FL_KEEP_SIZE, 0, 1 << 20), 0);
  EXPECT_EQ(Size(0, 1), 8192u);
  EXPECT_EQ(Fallocate(0, 1, 0, 0, 20000), 0);
  EXPECT_EQ(Size(0, 1), 20000u);
  EXPECT_EQ(Fallocate(0, 1, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 100, 4000), 0);
  std::vector<uint8_t> want(20000, 0);
  std::fill(want.begin(), want.begin() + 100, 7);
  std::fill(want.begin() + 4100, want.begin() + 8192, 7);
  EXPECT_EQ(Read(0, 1, 0, 20000), want);  // the checksums agree with the punch
  EXPECT_EQ(Fallocate(0, 1, FALLOC_FL_ZERO_RANGE, 5000, 30000), 0);
  EXPECT_EQ(Size(0, 1), 35000u);
  std::fill(want.begin() + 5000, want.end(), 0);
  want.resize(35000, 0);
  EXPECT_EQ(Read(0, 1, 0, 35000), want);
  EXPECT_EQ(Fallocate(0, 2, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, 0, 10), 0);
  EXPECT_FALSE(stores_[0]->Stat(2)->exists) << "zeroing nothing creates nothing";
}

TEST_F(SpaceOpsTest, FallocateRejectsBadModesLengthsAndOffsets) {
  EXPECT_EQ(Fallocate(0, 1, FALLOC_FL_PUNCH_HOLE, 0, 10), EOPNOTSUPP);  // without KEEP_SIZE
  EXPECT_EQ(Fallocate(0, 1, FALLOC_FL_COLLAPSE_RANGE, 0, 4096), EOPNOTSUPP);
  EXPECT_EQ(Fallocate(0, 1, 0xffffffff, 0, 10), EOPNOTSUPP);
  EXPECT_EQ(Fallocate(0, 1, 0, 0, 0), EINVAL);
  EXPECT_EQ(Fallocate(0, 1, 0, kBig, 1), EFBIG);
  EXPECT_EQ(Fallocate(0, 1, 0, UINT64_MAX, UINT64_MAX), EFBIG);
  EXPECT_EQ(Fallocate(5, 1, 0, 0, 10), ESTALE);
}

TEST_F(SpaceOpsTest, SeekFindsDataAndHolesOfTheObject) {
  ASSERT_EQ(Write(0, 1, 1 << 20, std::vector<uint8_t>(4096, 1)), 0);
  OssResponse r = Seek(1, 0, false);
  ASSERT_EQ(r.status().code(), 0);
  EXPECT_TRUE(r.seek().found());
  EXPECT_EQ(r.seek().offset(), 1u << 20);
  r = Seek(1, 0, true);
  EXPECT_EQ(r.seek().offset(), 0u);
  r = Seek(1, 1 << 20, true);
  EXPECT_EQ(r.seek().offset(), (1u << 20) + 4096);
  r = Seek(1, (1 << 20) + 4096, false);
  EXPECT_EQ(r.status().code(), 0);
  EXPECT_FALSE(r.seek().found());
  r = Seek(9, 123, true);  // a missing object is all hole
  EXPECT_TRUE(r.seek().found());
  EXPECT_EQ(r.seek().offset(), 123u);
  EXPECT_FALSE(Seek(9, 0, false).seek().found());
  EXPECT_EQ(Seek(1, UINT64_MAX, false).status().code(), EINVAL);
}

TEST_F(SpaceOpsTest, CopyWithinOneOssCopiesBytesAndKeepsHoles) {
  std::vector<uint8_t> data(200000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7);
  ASSERT_EQ(Write(0, 1, 0, data), 0);
  ASSERT_EQ(Write(1, 2, 0, std::vector<uint8_t>(300000, 9)), 0);
  // From 150000: 50000 bytes of data, then 50000 past the source's end.
  EXPECT_EQ(Copy(0, 1, 150000, 1, 2, 1000, 100000), 0);
  std::vector<uint8_t> want(300000, 9);
  std::copy(data.begin() + 150000, data.end(), want.begin() + 1000);
  std::fill(want.begin() + 51000, want.begin() + 101000, 0);
  EXPECT_EQ(Read(1, 2, 0, 300000), want);
  EXPECT_EQ(Copy(0, 1, 0, 0, 3, 0, 200000), 0);  // same OST, another object
  EXPECT_EQ(Read(0, 3, 0, 200000), data);
}

TEST_F(SpaceOpsTest, CopyRejectsBadRangesAndUnknownSources) {
  ASSERT_EQ(Write(0, 1, 0, std::vector<uint8_t>(100, 1)), 0);
  EXPECT_EQ(Copy(0, 1, 0, 0, 1, 50, 100), EINVAL);  // overlapping in one object
  EXPECT_EQ(Copy(0, 1, 0, 0, 1, 100, 100), 0);      // adjacent is fine
  EXPECT_EQ(Copy(0, 1, 0, 1, 2, 0, (64ull << 20) + 1), EINVAL);
  EXPECT_EQ(Copy(0, 1, kBig, 1, 2, 0, 10), EINVAL);
  EXPECT_EQ(Copy(0, 1, 0, 1, 2, kBig, 10), EFBIG);
  EXPECT_EQ(Copy(4, 1, 0, 1, 2, 0, 10), EXDEV) << "no peer address";
  EXPECT_EQ(Copy(0, 1, 0, 1, 2, 0, 0), 0);
}

}  // namespace
}  // namespace sfs::oss
