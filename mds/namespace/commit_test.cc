// When metadata becomes durable (committer.h): ops reply without an fsync,
// Namespace::Sync (the SyncReq) waits for a commit that covers every earlier
// op, the commit thread commits written ops after the interval and stays
// quiet when idle, commit interval 0 restores one sync per op, a failed
// commit is sticky, and the destroy queue commits before destroying. The
// real LevelDB store is wrapped to count (and hold or fail) its syncs.
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "mds/namespace/destroy_queue.h"
#include "mds/namespace/test_util.h"

namespace sfs::mds {
namespace {

using std::chrono::milliseconds;

// Passes everything to a real store and counts. Sync() can be held at a gate
// or made to fail; writes_at_sync is the number of writes that had returned
// when the last Sync began.
class CountingKvStore : public KvStore {
 public:
  explicit CountingKvStore(std::unique_ptr<KvStore> base) : base_(std::move(base)) {}
  Result<std::string> Get(std::string_view key) override { return base_->Get(key); }
  Status Write(const KvBatch& batch, bool sync) override {
    Status st = base_->Write(batch, sync);
    std::lock_guard<std::mutex> l(mu_);
    ++writes;
    if (sync) ++sync_writes;
    return st;
  }
  Status Sync() override {
    std::unique_lock<std::mutex> l(mu_);
    writes_at_sync = writes;
    ++entered;
    cv_.notify_all();
    cv_.wait(l, [&] { return !hold; });
    if (fail != 0) return Status::Errno(fail, "injected fdatasync failure");
    l.unlock();
    Status st = base_->Sync();
    l.lock();
    ++syncs;
    cv_.notify_all();
    return st;
  }
  Status Scan(std::string_view start, std::string_view end, const ScanFn& fn) override {
    return base_->Scan(start, end, fn);
  }

  // Waits (bounded) until pred() holds under the lock; its final value.
  template <typename Pred>
  bool WaitFor(Pred pred, milliseconds limit = milliseconds(10000)) {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_for(l, limit, pred);
  }
  void Release() {
    std::lock_guard<std::mutex> l(mu_);
    hold = false;
    cv_.notify_all();
  }
  uint64_t Syncs() {
    std::lock_guard<std::mutex> l(mu_);
    return syncs;
  }
  uint64_t Writes() {
    std::lock_guard<std::mutex> l(mu_);
    return writes;
  }

  // GUARDED_BY(mu_), all of them.
  uint64_t writes = 0, sync_writes = 0, syncs = 0, entered = 0, writes_at_sync = 0;
  bool hold = false;
  int fail = 0;

 private:
  std::unique_ptr<KvStore> base_;
  std::mutex mu_;
  std::condition_variable cv_;
};

class CommitTest : public NamespaceTest {
 protected:
  // A fresh Namespace on the same data over a counting store.
  void Restart(int64_t commit_interval_ms) {
    ns_.reset();
    osts_.reset();
    if (counting_ == nullptr) {
      auto counting = std::make_unique<CountingKvStore>(std::move(store_));
      counting_ = counting.get();
      store_ = std::move(counting);
    }
    osts_ = std::make_unique<OstRegistry>(store_.get());
    ASSERT_TRUE(osts_->Load(NowMs()).ok());
    opts_.commit_interval_ms = commit_interval_ms;
    ns_ = std::make_unique<Namespace>(store_.get(), osts_.get(), opts_);
    ASSERT_TRUE(ns_->Start(NowMs()).ok());
  }
  void TearDown() override {
    if (counting_ != nullptr) counting_->Release();
    NamespaceTest::TearDown();
  }
  CountingKvStore* counting_ = nullptr;
};

constexpr int64_t kHour = 3600 * 1000;

TEST_F(CommitTest, MutatingOpsReplyWithoutAnFsync) {
  Restart(kHour);
  const uint64_t syncs = counting_->Syncs(), sync_writes = counting_->sync_writes;
  auto d = Mkdir(kRootIno, "d");
  ASSERT_TRUE(d.ok());
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(Touch(d->ino(), "f" + std::to_string(i)).ok());
  ASSERT_TRUE(Rename(d->ino(), "f0", kRootIno, "g").ok());
  ASSERT_TRUE(Unlink(kRootIno, "g").ok());
  EXPECT_EQ(counting_->Syncs(), syncs) << "no op waited for an fsync";
  EXPECT_LE(counting_->sync_writes - sync_writes, 2u) << "only the id-limit reservations are synced";
  EXPECT_TRUE(Lookup(d->ino(), "f49").ok());
}

TEST_F(CommitTest, SyncWaitsForACommitCoveringEveryEarlierOp) {
  Restart(kHour);
  ASSERT_TRUE(Mkdir(kRootIno, "a").ok());
  ASSERT_TRUE(Touch(kRootIno, "b").ok());
  const uint64_t written = counting_->Writes();
  counting_->hold = true;
  auto sync = std::async(std::launch::async, [&] { return ns_->Sync(); });
  ASSERT_TRUE(counting_->WaitFor([&] { return counting_->entered > 0; }));
  EXPECT_EQ(sync.wait_for(milliseconds(0)), std::future_status::timeout)
      << "Sync returned before the fsync finished";
  EXPECT_GE(counting_->writes_at_sync, written) << "the commit started after the ops";
  counting_->Release();
  ASSERT_TRUE(sync.get().ok());
  EXPECT_EQ(counting_->Syncs(), 1u);
}

TEST_F(CommitTest, ASyncWithNothingWrittenSinceTheLastCommitDoesNotFsync) {
  Restart(kHour);
  ASSERT_TRUE(Mkdir(kRootIno, "a").ok());
  ASSERT_TRUE(ns_->Sync().ok());
  ASSERT_TRUE(ns_->Sync().ok());
  ASSERT_TRUE(ns_->Sync().ok());
  EXPECT_EQ(counting_->Syncs(), 1u);
  ASSERT_TRUE(Mkdir(kRootIno, "b").ok());
  ASSERT_TRUE(ns_->Sync().ok());
  EXPECT_EQ(counting_->Syncs(), 2u);
}

TEST_F(CommitTest, TheCommitThreadCommitsWrittenOpsAfterTheInterval) {
  Restart(20);
  EXPECT_EQ(counting_->Syncs(), 0u);
  ASSERT_TRUE(Mkdir(kRootIno, "a").ok());
  const uint64_t written = counting_->Writes();
  ASSERT_TRUE(counting_->WaitFor([&] { return counting_->syncs > 0; }))
      << "no commit within 10 s of a 20 ms interval";
  EXPECT_GE(counting_->writes_at_sync, written);
}

TEST_F(CommitTest, AnIdleCommitThreadDoesNotFsync) {
  Restart(5);
  ASSERT_TRUE(Mkdir(kRootIno, "a").ok());
  ASSERT_TRUE(counting_->WaitFor([&] { return counting_->syncs > 0; }));
  const uint64_t after_first = counting_->Syncs();
  const uint64_t ticks = ns_->committer().ticks();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (ns_->committer().ticks() < ticks + 5 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  ASSERT_GE(ns_->committer().ticks(), ticks + 5);
  EXPECT_EQ(counting_->Syncs(), after_first) << "5 idle passes, no fsync";
}

TEST_F(CommitTest, CommitIntervalZeroSyncsBeforeEveryReply) {
  Restart(0);
  const uint64_t syncs = counting_->Syncs();
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(Mkdir(kRootIno, "d" + std::to_string(i)).ok());
  EXPECT_EQ(counting_->Syncs(), syncs + 10);
  EXPECT_EQ(ns_->committer().ticks(), 0u) << "no commit thread";
}

TEST_F(CommitTest, AFailedCommitFailsEveryLaterSync) {
  Restart(kHour);
  ASSERT_TRUE(Mkdir(kRootIno, "a").ok());
  counting_->fail = EIO;
  EXPECT_ERRNO(ns_->Sync(), EIO);
  counting_->fail = 0;
  ASSERT_TRUE(Mkdir(kRootIno, "b").ok());
  EXPECT_ERRNO(ns_->Sync(), EIO) << "pages the failed fsync dropped cannot be vouched for";
}

TEST_F(CommitTest, StoppingCommitsWhatIsLeftAndAckedOpsSurviveARestart) {
  Restart(kHour);
  ASSERT_TRUE(Mkdir(kRootIno, "a").ok());
  const uint64_t syncs = counting_->Syncs();
  ASSERT_TRUE(ns_->StopCommits().ok());
  EXPECT_EQ(counting_->Syncs(), syncs + 1);
  ASSERT_TRUE(ns_->StopCommits().ok());
  EXPECT_EQ(counting_->Syncs(), syncs + 1) << "nothing new to commit";
  ASSERT_TRUE(Mkdir(kRootIno, "b").ok()) << "housekeeping may still write after a Stop";
  ASSERT_TRUE(ns_->StopCommits().ok());
  EXPECT_EQ(counting_->Syncs(), syncs + 2);
  Restart(kHour);
  EXPECT_TRUE(Lookup(kRootIno, "a").ok());
}

// Records how many syncs the store had done when each destroy went out.
class SyncCheckingDestroyer : public ObjectDestroyer {
 public:
  explicit SyncCheckingDestroyer(CountingKvStore* store) : store_(store) {}
  std::vector<Status> Destroy(const std::vector<Item>& items) override {
    syncs_at_destroy.push_back(store_->Syncs());
    return std::vector<Status>(items.size(), Status::Ok());
  }
  std::vector<uint64_t> syncs_at_destroy;

 private:
  CountingKvStore* store_;
};

TEST_F(CommitTest, ObjectsAreDestroyedOnlyAfterTheirUnlinkIsCommitted) {
  Restart(kHour);
  ASSERT_TRUE(Touch(kRootIno, "f").ok());
  ASSERT_TRUE(Unlink(kRootIno, "f").ok());
  const uint64_t syncs = counting_->Syncs();
  SyncCheckingDestroyer destroyer(counting_);
  DestroyQueue queue(store_.get(), osts_.get(), &destroyer);
  EXPECT_EQ(queue.RunOnce(), 0u);
  ASSERT_EQ(destroyer.syncs_at_destroy.size(), 1u);
  EXPECT_GT(destroyer.syncs_at_destroy[0], syncs);
  EXPECT_EQ(CountKeys(keys::kQueue), 0u);
}

}  // namespace
}  // namespace sfs::mds
