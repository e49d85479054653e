// Unit tests of tombstones (tombstones.h) through the file-backed ObjectStore:
// batches of destroys and their one fsync, a failing fsync, what a crash may
// leave, and the tombstones of an older OSS.
#include "oss/store/tombstones.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <vector>

#include "common/ondisk/ost_dir.h"
#include "oss/store/env.h"
#include "oss/store/object_store.h"
#include "oss/testing/temp_dir.h"

namespace sfs::oss {
namespace {

// Counts fsyncs (the store uses Fsync for directories only); can fail them.
class CountingEnv : public EnvWrapper {
 public:
  CountingEnv() : EnvWrapper(DefaultEnv()) {}
  int Fsync(int fd) override {
    fsyncs.fetch_add(1);
    if (fail) {
      errno = EIO;
      return -1;
    }
    return EnvWrapper::Fsync(fd);
  }
  std::atomic<int> fsyncs{0};
  bool fail = false;
};

class TombstonesTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(); }

  void Open() {
    store_.reset();
    FileStoreOptions opts;
    opts.env = &env_;
    auto s = OpenFileObjectStore(ost(), opts);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(s).value();
  }

  std::string ost() const { return dir_.path() + "/ost0"; }
  std::string Hex16(uint64_t oid) const {
    char buf[17];
    std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(oid));
    return buf;
  }
  std::string ObjectPath(uint64_t oid) const { return ondisk::ObjectPath(ost(), oid); }
  std::string TombPath(uint64_t oid) const { return ost() + "/tombstones/" + Hex16(oid) + ".gone"; }

  void Write(uint64_t oid) {
    std::vector<uint8_t> data(5000, static_cast<uint8_t>(oid));
    Status st = store_->Write(oid, 0, data, /*sync=*/false);
    ASSERT_TRUE(st.ok()) << st.ToString();
  }

  TempDir dir_;
  CountingEnv env_;
  std::unique_ptr<ObjectStore> store_;
};

TEST_F(TombstonesTest, ABatchOfDestroysAcrossManyDirectoriesCostsOneFsync) {
  std::vector<uint64_t> oids;
  for (uint64_t oid = 1000; oid < 1100; ++oid) {  // 100 objects/XX directories
    Write(oid);
    oids.push_back(oid);
  }
  std::vector<uint8_t> warm(10);
  ASSERT_TRUE(store_->Read(1000, 0, warm).ok());  // a cached descriptor too
  for (uint64_t oid = 5000; oid < 5100; ++oid) oids.push_back(oid);  // never written
  int before = env_.fsyncs.load();
  std::vector<Status> results = store_->DestroyMany(oids);
  EXPECT_EQ(env_.fsyncs.load() - before, 2)
      << "per batch: one fsync of the tombstone directory, one of the never-written objects' inode";
  ASSERT_EQ(results.size(), oids.size());
  for (size_t i = 0; i < oids.size(); ++i) {
    EXPECT_TRUE(results[i].ok()) << oids[i] << ": " << results[i].ToString();
    EXPECT_EQ(store_->Stat(oids[i]).status().code(), ESTALE) << oids[i];
    EXPECT_FALSE(std::filesystem::exists(ObjectPath(oids[i]))) << oids[i];
    EXPECT_FALSE(std::filesystem::exists(ObjectPath(oids[i]) + ".crc")) << oids[i];
    EXPECT_TRUE(std::filesystem::exists(TombPath(oids[i]))) << oids[i];
  }
  EXPECT_EQ(store_->Read(1000, 0, warm).status().code(), ESTALE) << "the cached fd was evicted";
  EXPECT_EQ(store_->Write(5000, 0, warm, false).code(), ESTALE);
  EXPECT_FALSE(std::filesystem::exists(ObjectPath(5000))) << "a write re-created the object";
}

TEST_F(TombstonesTest, TheNeverWrittenObjectsOfABatchShareOneInodeAndExpireTogether) {
  Write(601);
  std::vector<uint64_t> oids = {600, 601, 602, 603};
  for (const Status& st : store_->DestroyMany(oids)) ASSERT_TRUE(st.ok()) << st.ToString();
  struct stat a, b, c, written;
  ASSERT_EQ(::stat(TombPath(600).c_str(), &a), 0);
  ASSERT_EQ(::stat(TombPath(602).c_str(), &b), 0);
  ASSERT_EQ(::stat(TombPath(603).c_str(), &c), 0);
  ASSERT_EQ(::stat(TombPath(601).c_str(), &written), 0);
  EXPECT_EQ(a.st_ino, b.st_ino) << "no inode allocated per tombstone";
  EXPECT_EQ(a.st_ino, c.st_ino);
  EXPECT_EQ(a.st_nlink, 3u);
  EXPECT_NE(written.st_ino, a.st_ino) << "a written object's file is its own tombstone";
  EXPECT_EQ(written.st_size, 0) << "truncated";
  ASSERT_TRUE(store_->DestroyMany(oids)[0].ok()) << "again: success";
  auto kept = store_->ExpireTombstones(std::chrono::system_clock::now() - std::chrono::hours(1));
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(*kept, 0u);
  auto n = store_->ExpireTombstones(std::chrono::system_clock::now() + std::chrono::seconds(2));
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 4u);
  for (uint64_t oid : oids) EXPECT_TRUE(store_->Stat(oid).ok()) << oid << " expired";
}

TEST_F(TombstonesTest, AFailedFsyncFailsEveryDestroyOfTheBatch) {
  Write(7);
  env_.fail = true;
  std::vector<uint64_t> oids = {7, 8, 9};
  std::vector<Status> results = store_->DestroyMany(oids);
  ASSERT_EQ(results.size(), 3u);
  for (const Status& st : results) EXPECT_EQ(st.code(), EIO) << st.ToString();
  env_.fail = false;
  for (uint64_t oid : oids) EXPECT_TRUE(store_->Destroy(oid).ok()) << "a retry succeeds";
  EXPECT_EQ(store_->Stat(7).status().code(), ESTALE);
}

TEST_F(TombstonesTest, AnObjectACrashLeftBesideItsTombstoneIsRemovedWhenTheOstOpens) {
  Write(21);
  ASSERT_TRUE(store_->Destroy(21).ok());
  Write(22);
  // As if a crash had kept the object's name but not its removal: a copy
  // beside the tombstone (data and sidecar).
  std::filesystem::copy_file(TombPath(21), ObjectPath(21));
  std::ofstream(ObjectPath(21) + ".crc") << "x";
  Open();  // the restarted OSS
  EXPECT_FALSE(std::filesystem::exists(ObjectPath(21)));
  EXPECT_FALSE(std::filesystem::exists(ObjectPath(21) + ".crc"));
  EXPECT_EQ(store_->Stat(21).status().code(), ESTALE);
  EXPECT_TRUE(std::filesystem::exists(ObjectPath(22))) << "a live object is not touched";
}

TEST_F(TombstonesTest, AnOlderOssTombstoneBesideItsObjectStillCountsAndExpires) {
  std::ofstream(ObjectPath(300) + ".gone").close();
  EXPECT_EQ(store_->Stat(300).status().code(), ESTALE);
  EXPECT_EQ(store_->Write(300, 0, std::vector<uint8_t>(3, 1), false).code(), ESTALE);
  ASSERT_TRUE(store_->Destroy(301).ok());
  auto n = store_->ExpireTombstones(std::chrono::system_clock::now() + std::chrono::seconds(2));
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 2u);
  EXPECT_FALSE(std::filesystem::exists(ObjectPath(300) + ".gone"));
  EXPECT_FALSE(std::filesystem::exists(TombPath(301)));
  EXPECT_TRUE(store_->Stat(300).ok()) << "past its tombstone: reads as never written";
}

}  // namespace
}  // namespace sfs::oss
