// The LevelDB KvStore's Sync (our own group commit over the log file, see
// kv_store_leveldb.cc): many threads writing and syncing at once all return
// OK and every write is there after a reopen, also across LevelDB's switch to
// a new log file.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "mds/namespace/kv_store.h"
#include "mds/namespace/test_util.h"

namespace sfs::mds {
namespace {

std::string Key(int t, int i) { return "k" + std::to_string(t) + "." + std::to_string(i); }

TEST(KvStoreTest, ConcurrentWritesEachFollowedBySyncAreAllThereAfterReopen) {
  std::string dir = MakeTempDir();
  constexpr int kThreads = 8, kPerThread = 200;
  {
    auto store = OpenLevelDbStore(dir);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    std::vector<std::thread> threads;
    std::vector<int> failures(kThreads, 0);
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kPerThread; ++i) {
          KvBatch b;
          b.Put(Key(t, i), "v" + std::to_string(i));
          if (!(*store)->Write(b, /*sync=*/false).ok() || !(*store)->Sync().ok()) ++failures[t];
        }
      });
    }
    for (auto& th : threads) th.join();
    for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
  }
  auto store = OpenLevelDbStore(dir);
  ASSERT_TRUE(store.ok());
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kPerThread; ++i) {
      auto v = (*store)->Get(Key(t, i));
      ASSERT_TRUE(v.ok()) << Key(t, i);
      EXPECT_EQ(*v, "v" + std::to_string(i));
    }
  }
}

TEST(KvStoreTest, SyncAfterLevelDbMovesToANewLogKeepsEveryWrite) {
  std::string dir = MakeTempDir();
  const std::string big(1 << 20, 'x');
  constexpr int kWrites = 40;  // 40 MiB: more than the 16 MiB write buffer, so new logs
  {
    auto store = OpenLevelDbStore(dir);
    ASSERT_TRUE(store.ok());
    for (int i = 0; i < kWrites; ++i) {
      KvBatch b;
      b.Put(Key(0, i), big + std::to_string(i));
      ASSERT_TRUE((*store)->Write(b, /*sync=*/false).ok());
      ASSERT_TRUE((*store)->Sync().ok());
    }
  }
  auto store = OpenLevelDbStore(dir);
  ASSERT_TRUE(store.ok());
  for (int i = 0; i < kWrites; ++i) {
    auto v = (*store)->Get(Key(0, i));
    ASSERT_TRUE(v.ok()) << i;
    EXPECT_EQ(*v, big + std::to_string(i));
  }
}

}  // namespace
}  // namespace sfs::mds
