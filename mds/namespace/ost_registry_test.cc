// OST registry and allocator: stable indices, spreading, skipping down and
// full OSTs, -1 = all, start_ost, clamping, weighting by free space.
#include "mds/namespace/ost_registry.h"

#include <filesystem>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "mds/namespace/test_util.h"

namespace sfs::mds {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

class OstRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir();
    store_ = OpenLevelDbStore(dir_).value();
    reg_ = std::make_unique<OstRegistry>(store_.get());
  }
  void TearDown() override {
    reg_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  std::vector<uint32_t> Add(const std::string& address, std::vector<uint64_t> avail_gib,
                            int first = 0) {
    std::vector<OstReport> reports;
    for (size_t i = 0; i < avail_gib.size(); ++i) {
      OstReport r;
      r.uuid = "u" + std::to_string(first + i);
      r.stats.total_bytes = 1000 * kGiB;
      r.stats.avail_bytes = avail_gib[i] * kGiB;
      reports.push_back(r);
    }
    return *reg_->Register(address, reports, 1000);
  }

  std::string dir_;
  std::unique_ptr<KvStore> store_;
  std::unique_ptr<OstRegistry> reg_;
};

TEST_F(OstRegistryTest, IndicesAreStableAcrossReRegistrationAndRestart) {
  EXPECT_EQ(Add("h:1", {100, 100}), (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(Add("h:2", {100}, 2), (std::vector<uint32_t>{2}));
  EXPECT_EQ(Add("h:9", {100, 100}), (std::vector<uint32_t>{0, 1}));
  reg_ = std::make_unique<OstRegistry>(store_.get());
  ASSERT_TRUE(reg_->Load(5000).ok());
  EXPECT_EQ(reg_->KnownCount(), 3u);
  EXPECT_EQ(*reg_->UpAddress(0), "h:9");
  EXPECT_EQ(*reg_->UpAddress(2), "h:2");
}

TEST_F(OstRegistryTest, SingleStripesSpreadEvenlyOverEqualOsts) {
  Add("h:1", {100, 100, 100, 100});
  std::map<uint32_t, int> hits;
  for (int i = 0; i < 400; ++i) {
    auto pick = reg_->Pick(1, -1);
    ASSERT_EQ(pick.size(), 1u);
    ++hits[pick[0]];
  }
  for (uint32_t i = 0; i < 4; ++i) EXPECT_EQ(hits[i], 100) << i;
}

TEST_F(OstRegistryTest, StripesOfOneFileAreDistinct) {
  Add("h:1", {100, 100, 100, 100, 100});
  for (int i = 0; i < 20; ++i) {
    auto pick = reg_->Pick(3, -1);
    EXPECT_EQ(std::set<uint32_t>(pick.begin(), pick.end()).size(), 3u);
  }
}

TEST_F(OstRegistryTest, DownAndFullOstsAreSkipped) {
  Add("h:1", {100, 100}, 0);
  Add("h:2", {100}, 2);
  Add("h:3", {0}, 3);  // full
  OstReport fresh;
  fresh.uuid = "u0";
  fresh.stats.total_bytes = 1000 * kGiB;
  fresh.stats.avail_bytes = 100 * kGiB;
  ASSERT_TRUE(reg_->Heartbeat("h:1", {fresh}, 9000).ok());
  reg_->CheckTimeouts(9000, 5000);  // u1 and u2 missed their heartbeats
  EXPECT_EQ(reg_->UpCount(), 1u);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(reg_->Pick(1, -1), std::vector<uint32_t>{0});
  EXPECT_EQ(reg_->Pick(4, -1), std::vector<uint32_t>{0}) << "clamped to the OSTs available";
  EXPECT_FALSE(reg_->UpAddress(1).has_value());
}

TEST_F(OstRegistryTest, MinusOneMeansEveryOstUp) {
  Add("h:1", {100, 100, 100, 100});
  auto pick = reg_->Pick(-1, -1);
  EXPECT_EQ(std::set<uint32_t>(pick.begin(), pick.end()), (std::set<uint32_t>{0, 1, 2, 3}));
}

TEST_F(OstRegistryTest, StartOstPlacesStripeZero) {
  Add("h:1", {100, 100, 100, 100});
  EXPECT_EQ(reg_->Pick(2, 3), (std::vector<uint32_t>{3, 0}));
  EXPECT_EQ(reg_->Pick(1, 2), (std::vector<uint32_t>{2}));
}

TEST_F(OstRegistryTest, EmptierOstsGetMoreStripes) {
  Add("h:1", {300, 100});
  std::map<uint32_t, int> hits;
  for (int i = 0; i < 400; ++i) ++hits[reg_->Pick(1, -1)[0]];
  EXPECT_EQ(hits[0], 300);
  EXPECT_EQ(hits[1], 100);
}

TEST_F(OstRegistryTest, HeartbeatFromAnUnknownOstAsksToRegister) {
  OstReport r;
  r.uuid = "never-seen";
  EXPECT_EQ(reg_->Heartbeat("h:1", {r}, 1).code(), ENOENT);
  EXPECT_TRUE(reg_->Pick(1, -1).empty());
}

// Two OSSes serving two OSTs each and one serving one: distinct_oss picks
// one OST per OSS (mirror copies, EC chunks), clamped to the three OSSes;
// plain striping may still use both OSTs of an OSS.
TEST_F(OstRegistryTest, DistinctOssPicksOneOstPerOss) {
  Add("h:1", {100, 100}, 0);
  Add("h:2", {100, 300}, 2);
  Add("h:3", {100}, 4);
  EXPECT_EQ(reg_->UpOssCount(), 3u);
  const std::vector<uint32_t> first_two{0, 1, 2, 3};
  EXPECT_EQ(reg_->UpOssCount(&first_two), 2u);
  for (int round = 0; round < 8; ++round) {
    for (int32_t count : {2, 3, -1}) {
      std::vector<uint32_t> got = reg_->Pick(count, -1, nullptr, /*distinct_oss=*/true);
      ASSERT_EQ(got.size(), count < 0 ? 3u : static_cast<size_t>(count));
      std::set<std::string> oss;
      for (uint32_t o : got) oss.insert(reg_->OssOf(o));
      EXPECT_EQ(oss.size(), got.size()) << "round " << round << ", count " << count;
    }
  }
  EXPECT_EQ(reg_->Pick(5, -1, nullptr, true).size(), 3u) << "clamped to the OSSes";
  EXPECT_EQ(reg_->Pick(5, -1).size(), 5u) << "plain striping may share an OSS";
  EXPECT_EQ(reg_->OssOf(3), "h:2");
}

}  // namespace
}  // namespace sfs::mds
