// CopyFence (copy_fence.h): what an OSS refuses of client reads of mirror copies.
#include "oss/service/copy_fence.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace sfs::oss {
namespace {

using namespace std::chrono_literals;

TEST(CopyFenceTest, UnarmedItRefusesNothing) {
  CopyFence f;
  EXPECT_TRUE(f.CheckRead(1, 2).ok()) << "an OSS with no MDS to hear from";
}

TEST(CopyFenceTest, ArmedItRefusesEveryCopyUntilTheFirstSync) {
  CopyFence f;
  f.Arm();
  Status st = f.CheckRead(1, 2);
  EXPECT_EQ(st.code(), ESTALE);
  EXPECT_NE(st.message().find("not heard from the MDS"), std::string::npos) << st.ToString();
  f.Synced(7, 3, nullptr);
  EXPECT_TRUE(f.CheckRead(1, 2).ok());
  EXPECT_EQ(f.epoch(), 7u);
  EXPECT_EQ(f.version(), 3u);
}

TEST(CopyFenceTest, ASyncedSetRefusesItsObjectsAloneAndALaterOneReplacesIt) {
  CopyFence f;
  f.Arm();
  std::vector<CopyFence::Object> set{{1, 10}, {2, 20}};
  f.Synced(1, 5, &set);
  EXPECT_EQ(f.CheckRead(1, 10).code(), ESTALE);
  EXPECT_NE(f.CheckRead(1, 10).message().find("marked stale"), std::string::npos);
  EXPECT_EQ(f.CheckRead(2, 20).code(), ESTALE);
  EXPECT_TRUE(f.CheckRead(1, 20).ok()) << "same oid, another OST";
  EXPECT_TRUE(f.CheckRead(2, 10).ok());
  f.Synced(1, 6, nullptr);  // unchanged: the same set is kept
  EXPECT_EQ(f.CheckRead(1, 10).code(), ESTALE);
  std::vector<CopyFence::Object> healed{{2, 20}};
  f.Synced(1, 7, &healed);
  EXPECT_TRUE(f.CheckRead(1, 10).ok()) << "resynced: served again";
  EXPECT_EQ(f.CheckRead(2, 20).code(), ESTALE);
  EXPECT_EQ(f.size(), 1u);
}

TEST(CopyFenceTest, ARegistrarPastItsDeadlineMeansAwayUntilTheNextSync) {
  CopyFence f;
  f.Arm();
  f.Synced(1, 1, nullptr);
  f.Expect(60s);
  EXPECT_TRUE(f.CheckRead(1, 1).ok()) << "waiting, on time";
  f.Back();
  EXPECT_TRUE(f.CheckRead(1, 1).ok()) << "back on time";
  f.Expect(-1ms);  // a deadline already past: as if the process had been stopped
  EXPECT_EQ(f.CheckRead(1, 1).code(), ESTALE) << "a read while the registrar is overdue";
  f.Back();
  EXPECT_EQ(f.CheckRead(1, 1).code(), ESTALE) << "back late: away until a sync";
  f.Expect(60s);
  EXPECT_EQ(f.CheckRead(1, 1).code(), ESTALE) << "a new wait does not end the absence";
  f.Synced(1, 1, nullptr);
  EXPECT_TRUE(f.CheckRead(1, 1).ok());
}

}  // namespace
}  // namespace sfs::oss
