// A full MDS disk: a KvStore whose writes fail. The op fails with the store's
// errno (ENOSPC), and neither the store nor the in-memory state (id counters,
// inode count, open table, reply cache) moves; once there is room again the
// same requests apply, once.
#include <atomic>
#include <map>

#include <gtest/gtest.h>

#include "mds/namespace/test_util.h"

namespace sfs::mds {
namespace {

// Passes everything to a real store; Write fails with `fail_errno` while armed.
class FaultKvStore : public KvStore {
 public:
  explicit FaultKvStore(std::unique_ptr<KvStore> base) : base_(std::move(base)) {}
  Result<std::string> Get(std::string_view key) override { return base_->Get(key); }
  Status Write(const KvBatch& batch, bool sync) override {
    if (fail_errno != 0) {
      ++failed;
      return Status::Errno(fail_errno, "injected write failure");
    }
    return base_->Write(batch, sync);
  }
  Status Sync() override { return base_->Sync(); }
  Status Scan(std::string_view start, std::string_view end, const ScanFn& fn) override {
    return base_->Scan(start, end, fn);
  }
  std::atomic<int> fail_errno{0};
  std::atomic<int> failed{0};

 private:
  std::unique_ptr<KvStore> base_;
};

class DiskFullTest : public NamespaceTest {
 protected:
  void SetUp() override {
    NamespaceTest::SetUp();
    // Swap in the faulty store under a fresh Namespace on the same data.
    ns_.reset();
    osts_.reset();
    auto fault = std::make_unique<FaultKvStore>(std::move(store_));
    fault_ = fault.get();
    store_ = std::move(fault);
    osts_ = std::make_unique<OstRegistry>(store_.get());
    ASSERT_TRUE(osts_->Load(NowMs()).ok());
    ns_ = std::make_unique<Namespace>(store_.get(), osts_.get(), opts_);
    ASSERT_TRUE(ns_->Start(NowMs()).ok());
  }
  std::map<std::string, std::string> Dump() {
    std::map<std::string, std::string> all;
    EXPECT_TRUE(store_->Scan("", "", [&](std::string_view k, std::string_view v) {
      all.emplace(std::string(k), std::string(v));
      return true;
    }).ok());
    return all;
  }
  FaultKvStore* fault_ = nullptr;
};

TEST_F(DiskFullTest, AFailedWriteFailsTheOpCleanlyAndChangesNothing) {
  auto d = Mkdir(kRootIno, "d");
  ASSERT_TRUE(Mkdir(kRootIno, "empty").ok());
  auto kept = Create(d->ino(), "kept");
  ASSERT_TRUE(kept.ok());
  ASSERT_TRUE(CloseFile(kept->attr().ino(), kept->open_id()).ok());
  auto before = Dump();
  uint64_t inodes = ns_->inode_count();
  fault_->fail_errno = ENOSPC;
  OpCtx ctx = RootCtx();
  ctx.client_id = 3;
  ctx.xid = 1;
  EXPECT_RESULT_ERRNO(Mkdir(kRootIno, "e", 0755, ctx), ENOSPC);
  ctx.xid = 2;
  auto created = Create(d->ino(), "new", true, ctx);
  EXPECT_RESULT_ERRNO(created, ENOSPC);
  EXPECT_ERRNO(Unlink(d->ino(), "kept"), ENOSPC);
  EXPECT_ERRNO(Rename(d->ino(), "kept", kRootIno, "moved"), ENOSPC);
  EXPECT_ERRNO(Rmdir(kRootIno, "empty"), ENOSPC);
  EXPECT_GT(fault_->failed.load(), 0);
  EXPECT_EQ(Dump(), before) << "nothing torn";
  EXPECT_EQ(ns_->inode_count(), inodes);
  EXPECT_EQ(ns_->OpenCount(ns_->inode_count() + 100), 0);

  // The disk has room again: the same requests (same xids) now apply, once.
  fault_->fail_errno = 0;
  ctx.xid = 1;
  auto e = Mkdir(kRootIno, "e", 0755, ctx);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  ctx.xid = 2;
  auto c = Create(d->ino(), "new", true, ctx);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(ns_->OpenCount(c->attr().ino()), 1) << "the failed create left no open behind";
  EXPECT_NE(c->attr().ino(), e->ino());
  EXPECT_GT(c->attr().ino(), kept->attr().ino());
  EXPECT_EQ(ns_->inode_count(), inodes + 2);
  ASSERT_TRUE(Rename(d->ino(), "kept", kRootIno, "moved").ok());
  EXPECT_TRUE(Lookup(kRootIno, "moved").ok());
}

TEST_F(DiskFullTest, IdsReservedWhileTheDiskWasFullAreNotReusedAfterARestart) {
  // Push the allocator to the edge of its reserved batch, failing the write
  // that would reserve more: the next start must not hand out unreserved ids.
  std::vector<uint64_t> inos;
  for (int i = 0; i < 3; ++i) inos.push_back(Mkdir(kRootIno, "d" + std::to_string(i))->ino());
  fault_->fail_errno = ENOSPC;
  for (int i = 0; i < 5; ++i) EXPECT_RESULT_ERRNO(Mkdir(kRootIno, "x" + std::to_string(i)), ENOSPC);
  fault_->fail_errno = 0;
  auto after = Mkdir(kRootIno, "after");
  ASSERT_TRUE(after.ok());
  EXPECT_GT(after->ino(), inos.back());
  Reopen();
  auto restarted = Mkdir(kRootIno, "restarted");
  ASSERT_TRUE(restarted.ok());
  EXPECT_GT(restarted->ino(), after->ino()) << "ids are never reused across a restart";
}

}  // namespace
}  // namespace sfs::mds
