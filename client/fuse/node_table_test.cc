// NodeTable: lookup counting and the close-to-open keep_cache rule.
#include "client/fuse/node_table.h"

#include <gtest/gtest.h>

namespace sfs::fuse {
namespace {

TEST(NodeTableTest, ForgetOfTheWholeCountDropsTheNode) {
  NodeTable t;
  t.Ref(7);
  t.Ref(7);
  t.Forget(7, 1);
  EXPECT_EQ(t.lookups(7), 1u);
  t.Forget(7, 1);
  EXPECT_EQ(t.size(), 0u);
}

TEST(NodeTableTest, ForgetOfAnUnknownInodeIsHarmless) {
  NodeTable t;
  t.Forget(9, 3);
  t.Ref(9);
  t.Forget(9, 5);
  EXPECT_EQ(t.size(), 0u);
}

TEST(NodeTableTest, FirstOpenDropsPagesAndAnUnchangedReopenKeepsThem) {
  NodeTable t;
  t.Ref(5);
  EXPECT_FALSE(t.KeepCache(5, 100, 4096));
  EXPECT_TRUE(t.KeepCache(5, 100, 4096));
}

TEST(NodeTableTest, ChangedMtimeOrSizeDropsPages) {
  NodeTable t;
  t.Ref(5);
  (void)t.KeepCache(5, 100, 4096);
  EXPECT_FALSE(t.KeepCache(5, 101, 4096));
  EXPECT_FALSE(t.KeepCache(5, 101, 8192));
  EXPECT_TRUE(t.KeepCache(5, 101, 8192));
}

TEST(NodeTableTest, ForgottenInodeStartsOverWithoutCache) {
  NodeTable t;
  t.Ref(5);
  (void)t.KeepCache(5, 100, 1);
  t.Forget(5, 1);
  EXPECT_FALSE(t.KeepCache(5, 100, 1));  // not held: nothing recorded
  t.Ref(5);
  EXPECT_FALSE(t.KeepCache(5, 100, 1));
}

}  // namespace
}  // namespace sfs::fuse
