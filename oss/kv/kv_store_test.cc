// KvStore on a real directory: round trips, the errors of bad input, the
// files evictions remove, a corrupt block read as a miss, and a reopen that
// starts empty.
#include "oss/kv/kv_store.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "common/crc32c.h"
#include "oss/testing/temp_dir.h"

namespace sfs::oss::kv {
namespace {

constexpr uint64_t kBlock = 4096;

std::vector<uint8_t> Bytes(uint8_t seed, size_t n = kBlock) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7);
  return v;
}

// Every block file under dir (temporary files excluded).
size_t FilesUnder(const std::string& dir) {
  size_t n = 0;
  for (auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().filename().string()[0] != '.') ++n;
  }
  return n;
}

class KvStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    Open(16 * kBlock);
  }
  void Open(uint64_t capacity) {
    store_.reset();
    auto s = KvStore::Open(tmp_.path(), KvOptions{capacity, 0});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
    ASSERT_TRUE(store_->Declare(0, "ns", kBlock).ok());
  }
  Result<bool> Get(const std::string& key, std::vector<uint8_t>* out) {
    out->assign(kBlock, 0);
    uint32_t crc = 0;
    return store_->Get(0, "ns", key, *out, 0, &crc);
  }

  TempDir tmp_;
  std::unique_ptr<KvStore> store_;
};

TEST_F(KvStoreTest, PutThenGetIsByteExactAndAMissIsFalse) {
  std::vector<uint8_t> a = Bytes(1), got;
  ASSERT_TRUE(store_->Put(0, "ns", "key-a", "", a, 0).ok());
  Result<bool> hit = Get("key-a", &got);
  ASSERT_TRUE(hit.ok()) << hit.status().ToString();
  EXPECT_TRUE(*hit);
  EXPECT_EQ(got, a);
  hit = Get("key-b", &got);
  ASSERT_TRUE(hit.ok());
  EXPECT_FALSE(*hit);
  // A re-put replaces the block.
  std::vector<uint8_t> b = Bytes(2);
  ASSERT_TRUE(store_->Put(0, "ns", "key-a", "", b, 0).ok());
  ASSERT_TRUE(*Get("key-a", &got));
  EXPECT_EQ(got, b);
  EXPECT_EQ(store_->blocks(), 1u);
}

TEST_F(KvStoreTest, BadInputIsAClearErrorAndStoresNothing) {
  std::vector<uint8_t> small = Bytes(1, kBlock - 1);
  Status st = store_->Put(0, "ns", "k", "", small, 0);
  EXPECT_EQ(st.code(), EINVAL);
  EXPECT_NE(st.message().find("4096"), std::string::npos) << st.message();
  EXPECT_EQ(store_->Put(0, "other", "k", "", Bytes(1), 0).code(), ENOENT);
  EXPECT_EQ(store_->Put(0, "ns", std::string(65, 'k'), "", Bytes(1), 0).code(), EINVAL);
  EXPECT_EQ(store_->Put(0, "ns", "", "", Bytes(1), 0).code(), EINVAL);
  EXPECT_EQ(store_->Put(0, "ns", "k", std::string(65, 'g'), Bytes(1), 0).code(), EINVAL);
  EXPECT_EQ(store_->Put(0, "ns", "k", "", Bytes(1), KvStore::kMaxTtlSec + 1).code(), EINVAL);
  EXPECT_EQ(store_->Declare(0, "../etc", kBlock).code(), EINVAL);
  EXPECT_EQ(store_->Declare(0, ".hidden", kBlock).code(), EINVAL);
  EXPECT_EQ(store_->Declare(0, "ns", 2 * kBlock).code(), EINVAL);  // another size
  EXPECT_TRUE(store_->Declare(0, "ns", kBlock).ok());              // the same: idempotent
  EXPECT_EQ(store_->Declare(0, "zero", 0).code(), EINVAL);
  std::vector<uint8_t> wrong(kBlock + 1);
  uint32_t crc = 0;
  EXPECT_EQ(store_->Get(0, "ns", "k", wrong, 0, &crc).status().code(), EINVAL);
  std::vector<std::string> many(KvStore::kMaxBatch + 1, "k");
  EXPECT_EQ(store_->Exists(0, "ns", many, 0).status().code(), EINVAL);
  EXPECT_EQ(store_->blocks(), 0u);
  EXPECT_EQ(FilesUnder(store_->dir()), 0u);
}

TEST_F(KvStoreTest, EvictionRemovesTheFilesOfWholeGroups) {
  Open(4 * kBlock);
  for (int g = 0; g < 2; ++g) {
    for (int part = 0; part < 2; ++part) {
      std::string key = "c" + std::to_string(g) + "p" + std::to_string(part);
      ASSERT_TRUE(store_->Put(0, "ns", key, "chunk" + std::to_string(g), Bytes(g), 0).ok());
    }
  }
  EXPECT_EQ(FilesUnder(store_->dir()), 4u);
  ASSERT_TRUE(store_->Put(0, "ns", "c2p0", "chunk2", Bytes(9), 0).ok());
  std::vector<std::string> keys = {"c0p0", "c0p1", "c1p0", "c1p1", "c2p0"};
  auto found = store_->Exists(0, "ns", keys, 0);
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(*found, (std::vector<bool>{false, false, true, true, true}));
  EXPECT_EQ(FilesUnder(store_->dir()), 3u);
  EXPECT_EQ(store_->evicted_groups(), 1u);
}

TEST_F(KvStoreTest, ACorruptBlockIsAMissNeverWrongBytes) {
  ASSERT_TRUE(store_->Put(0, "ns", "k", "", Bytes(3), 0).ok());
  // Flip a byte of the block's file behind the store's back.
  std::string file;
  for (auto& e : std::filesystem::recursive_directory_iterator(store_->dir())) {
    if (e.is_regular_file()) file = e.path();
  }
  ASSERT_FALSE(file.empty());
  int fd = ::open(file.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::pwrite(fd, "X", 1, 100), 1);
  ::close(fd);
  std::vector<uint8_t> got;
  Result<bool> hit = Get("k", &got);
  ASSERT_TRUE(hit.ok());
  EXPECT_FALSE(*hit);
  EXPECT_EQ(store_->blocks(), 0u);  // dropped
}

TEST_F(KvStoreTest, OpenHandsOutTheFileAndThePutsCrcWithoutReadingIt) {
  const std::vector<uint8_t> a = Bytes(4);
  ASSERT_TRUE(store_->Put(0, "ns", "k", "", a, 0).ok());
  Result<KvStore::OpenBlock> b = store_->Open(0, "ns", "k", 0);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  ASSERT_GE(b->fd, 0);
  EXPECT_EQ(b->crc, crc32c::Value(a.data(), a.size()));
  EXPECT_TRUE(b->cached) << "just written: in the page cache";
  std::vector<uint8_t> got(kBlock);
  ASSERT_EQ(::pread(b->fd, got.data(), got.size(), 0), static_cast<ssize_t>(kBlock));
  EXPECT_EQ(got, a);
  // A re-put renames a new file over the key: the open one keeps the old bytes.
  ASSERT_TRUE(store_->Put(0, "ns", "k", "", Bytes(5), 0).ok());
  ASSERT_EQ(::pread(b->fd, got.data(), got.size(), 0), static_cast<ssize_t>(kBlock));
  EXPECT_EQ(got, a);
  ::close(b->fd);
  Result<KvStore::OpenBlock> miss = store_->Open(0, "ns", "absent", 0);
  ASSERT_TRUE(miss.ok());
  EXPECT_EQ(miss->fd, -1);
  EXPECT_EQ(store_->Open(0, "nope", "k", 0).status().code(), ENOENT);
}

TEST_F(KvStoreTest, OpenSaysABlockOutOfThePageCacheIsNotCached) {
  struct statfs fs;
  ASSERT_EQ(::statfs(store_->dir().c_str(), &fs), 0);
  if (fs.f_type == TMPFS_MAGIC) GTEST_SKIP() << "tmpfs keeps every page in memory";
  ASSERT_TRUE(store_->Put(0, "ns", "k", "", Bytes(6), 0).ok());
  std::string file;
  for (auto& e : std::filesystem::recursive_directory_iterator(store_->dir())) {
    if (e.is_regular_file()) file = e.path();
  }
  int fd = ::open(file.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::fdatasync(fd), 0);  // clean pages, which the advice below drops
  ASSERT_EQ(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
  ::close(fd);
  Result<KvStore::OpenBlock> b = store_->Open(0, "ns", "k", 0);
  ASSERT_TRUE(b.ok());
  ASSERT_GE(b->fd, 0);
  EXPECT_FALSE(b->cached);
  std::vector<uint8_t> got(kBlock);
  ASSERT_EQ(::pread(b->fd, got.data(), got.size(), 0), static_cast<ssize_t>(kBlock));
  ::close(b->fd);
  b = store_->Open(0, "ns", "k", 0);
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(b->cached) << "read back in";
  ::close(b->fd);
}

TEST_F(KvStoreTest, RemoveAndPinAnswerPerKey) {
  ASSERT_TRUE(store_->Put(0, "ns", "a", "", Bytes(1), 0).ok());
  std::vector<std::string> keys = {"a", "b"};
  auto pinned = store_->Pin(0, "ns", keys, 1000);
  ASSERT_TRUE(pinned.ok());
  EXPECT_EQ(*pinned, (std::vector<bool>{true, false}));
  EXPECT_EQ(store_->Pin(0, "ns", keys, KvStore::kMaxPinMs + 1).status().code(), EINVAL);
  auto removed = store_->Remove(0, "ns", keys);
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(*removed, (std::vector<bool>{true, false}));
  EXPECT_EQ(FilesUnder(store_->dir()), 0u);
}

TEST_F(KvStoreTest, TenantsAndNamespacesAreApart) {
  ASSERT_TRUE(store_->Declare(1, "ns", kBlock).ok());
  ASSERT_TRUE(store_->Put(0, "ns", "k", "", Bytes(1), 0).ok());
  std::vector<uint8_t> got(kBlock);
  uint32_t crc = 0;
  Result<bool> hit = store_->Get(1, "ns", "k", got, 0, &crc);
  ASSERT_TRUE(hit.ok());
  EXPECT_FALSE(*hit);  // tenant 1 does not see tenant 0's block
  EXPECT_EQ(store_->Get(2, "ns", "k", got, 0, &crc).status().code(), ENOENT);
}

TEST_F(KvStoreTest, AReopenedStoreStartsEmpty) {
  ASSERT_TRUE(store_->Put(0, "ns", "k", "", Bytes(1), 0).ok());
  Open(16 * kBlock);
  std::vector<uint8_t> got;
  EXPECT_FALSE(*Get("k", &got));
  EXPECT_EQ(FilesUnder(store_->dir()), 0u);
}

TEST_F(KvStoreTest, ATtlEndsTheBlock) {
  static int64_t now = 0;
  store_->set_clock_for_test([] { return now; });
  ASSERT_TRUE(store_->Put(0, "ns", "k", "", Bytes(1), 2).ok());  // 2 s
  std::vector<uint8_t> got;
  now = 1999;
  EXPECT_TRUE(*Get("k", &got));
  now = 2000;
  EXPECT_FALSE(*Get("k", &got));
  EXPECT_EQ(FilesUnder(store_->dir()), 0u);
}

}  // namespace
}  // namespace sfs::oss::kv
