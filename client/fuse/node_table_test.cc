// NodeTable: lookup counting, the close-to-open keep_cache rule and the
// "no security.capability" note.
#include "client/fuse/node_table.h"

#include <sys/stat.h>

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

TEST(NodeTableTest, NoOpenKeepsPagesWhileADirectWriterIsOpenNorRightAfterIt) {
  NodeTable t;
  t.Ref(5);
  (void)t.KeepCache(5, 100, 4096);
  t.OpenedForWrite(5, /*direct=*/true);
  EXPECT_FALSE(t.KeepCache(5, 100, 4096));
  t.ClosedForWrite(5, /*direct=*/true);
  EXPECT_FALSE(t.KeepCache(5, 100, 4096));
  EXPECT_TRUE(t.KeepCache(5, 100, 4096));
}

TEST(NodeTableTest, AWriteDropsSetuidAlwaysAndSetgidOnlyWithGroupExecute) {
  NodeTable t;
  t.Ref(5);
  t.NoteMode(5, S_IFREG | 06755);
  EXPECT_EQ(t.SetIdBitsToDrop(5), static_cast<uint32_t>(S_ISUID | S_ISGID));
  t.NoteMode(5, S_IFREG | 02745);  // setgid without group execute: kept
  EXPECT_EQ(t.SetIdBitsToDrop(5), 0u);
  t.NoteMode(5, S_IFREG | 0755);
  EXPECT_EQ(t.SetIdBitsToDrop(5), 0u);
  EXPECT_EQ(t.SetIdBitsToDrop(9), 0u);
}

TEST(NodeTableTest, AbsentCapsAreRememberedUntilTheNextOpen) {
  NodeTable t;
  t.Ref(5);
  t.OpenedForWrite(5, /*direct=*/false);
  EXPECT_FALSE(t.NoCaps(5));
  t.NoteNoCaps(5, t.XattrGeneration(5));
  EXPECT_TRUE(t.NoCaps(5));
  (void)t.KeepCache(5, 100, 1);
  EXPECT_FALSE(t.NoCaps(5));
}

TEST(NodeTableTest, AbsentCapsAreForgottenAtTheLastWritableClose) {
  NodeTable t;
  t.Ref(5);
  t.OpenedForWrite(5, /*direct=*/false);
  t.OpenedForWrite(5, /*direct=*/false);
  t.NoteNoCaps(5, t.XattrGeneration(5));
  t.ClosedForWrite(5, /*direct=*/false);
  EXPECT_TRUE(t.NoCaps(5));
  t.ClosedForWrite(5, /*direct=*/false);
  EXPECT_FALSE(t.NoCaps(5));
}

TEST(NodeTableTest, AbsentCapsAreNotRecordedWithoutAWriter) {
  NodeTable t;
  t.Ref(5);
  t.NoteNoCaps(5, t.XattrGeneration(5));
  EXPECT_FALSE(t.NoCaps(5));
}

TEST(NodeTableTest, AnXattrChangeForgetsAbsentCaps) {
  NodeTable t;
  t.Ref(5);
  t.OpenedForWrite(5, /*direct=*/false);
  t.NoteNoCaps(5, t.XattrGeneration(5));
  t.XattrChanged(5);
  EXPECT_FALSE(t.NoCaps(5));
}

TEST(NodeTableTest, AnAnswerThatRacedWithAnXattrChangeIsNotRemembered) {
  NodeTable t;
  t.Ref(5);
  t.OpenedForWrite(5, /*direct=*/false);
  uint64_t gen = t.XattrGeneration(5);
  t.XattrChanged(5);  // a setxattr while the getxattr was at the MDS
  t.NoteNoCaps(5, gen);
  EXPECT_FALSE(t.NoCaps(5));
}

TEST(NodeTableTest, AbsentCapsOfAnInodeTheKernelDoesNotHoldAreNotRecorded) {
  NodeTable t;
  t.NoteNoCaps(9, t.XattrGeneration(9));
  EXPECT_FALSE(t.NoCaps(9));
  EXPECT_EQ(t.size(), 0u);
}

}  // namespace
}  // namespace sfs::fuse
