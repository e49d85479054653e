// Unit tests of the file-backed ObjectStore on a temporary OST directory.
#include "oss/store/object_store.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <random>
#include <thread>
#include <vector>

#include "oss/testing/store_fixture.h"
#include "oss/testing/temp_dir.h"

namespace sfs::oss {
namespace {

using Bytes = std::vector<uint8_t>;

Bytes Pattern(size_t n, uint8_t seed) {
  Bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(seed + i * 31 + (i >> 8));
  return b;
}

int CountOpenFds() {
  int n = 0;
  DIR* d = ::opendir("/proc/self/fd");
  while (d && ::readdir(d)) ++n;
  if (d) ::closedir(d);
  return n;
}

class ObjectStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { Open({}); }

  void Open(FileStoreOptions opts) {
    store_.reset();
    auto s = OpenFileObjectStore(dir_.path() + "/ost0", opts);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(s).value();
  }

  Bytes ReadBack(uint64_t oid, uint64_t off, size_t len, uint64_t* got = nullptr) {
    Bytes b(len, 0xEE);
    auto r = store_->Read(oid, off, b);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (got) *got = r.ok() ? *r : 0;
    return b;
  }

  void WriteOk(uint64_t oid, uint64_t off, const Bytes& data, bool sync = false) {
    Status st = store_->Write(oid, off, data, sync);
    ASSERT_TRUE(st.ok()) << st.ToString();
  }

  std::string ObjectPath(uint64_t oid) { return ObjectFile(dir_.path() + "/ost0", oid); }

  std::string TombPath(uint64_t oid) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "/ost0/tombstones/%016llx.gone",
                  static_cast<unsigned long long>(oid));
    return dir_.path() + buf;
  }

  TempDir dir_;
  std::unique_ptr<ObjectStore> store_;
};

TEST_F(ObjectStoreTest, UuidIsCreatedOnceAndKeptAcrossReopen) {
  std::string uuid = store_->uuid();
  EXPECT_EQ(uuid.size(), 32u);
  Open({});
  EXPECT_EQ(store_->uuid(), uuid);
}

TEST_F(ObjectStoreTest, MissingObjectReadsAsZerosWithReadSizeZero) {
  uint64_t got = 99;
  EXPECT_EQ(ReadBack(7, 100, 4096, &got), Bytes(4096, 0));
  EXPECT_EQ(got, 0u);
  EXPECT_FALSE(std::filesystem::exists(ObjectPath(7)));
}

TEST_F(ObjectStoreTest, ObjectLivesAtItsHexPath) {
  WriteOk(0x1234, 0, Pattern(10, 1));
  EXPECT_TRUE(std::filesystem::exists(ObjectPath(0x1234)));
  EXPECT_EQ(ObjectPath(0x1234), dir_.path() + "/ost0/objects/34/0000000000001234");
}

TEST_F(ObjectStoreTest, HolesAndBytesPastEndReadAsZeros) {
  Bytes data = Pattern(1000, 5);
  WriteOk(1, 1 << 20, data);
  uint64_t got = 0;
  Bytes b = ReadBack(1, (1 << 20) - 500, 2000, &got);
  EXPECT_EQ(got, 1500u);  // 500 hole bytes + 1000 data bytes exist; 500 past the end
  EXPECT_EQ(Bytes(b.begin(), b.begin() + 500), Bytes(500, 0));
  EXPECT_EQ(Bytes(b.begin() + 500, b.begin() + 1500), data);
  EXPECT_EQ(Bytes(b.begin() + 1500, b.end()), Bytes(500, 0));
}

TEST_F(ObjectStoreTest, WritesAtRandomOffsetsMatchAReferenceBuffer) {
  constexpr size_t kSize = 4 << 20;
  Bytes ref(kSize, 0);
  std::mt19937_64 rng(42);
  size_t end = 0;
  for (int i = 0; i < 200; ++i) {
    size_t len = 1 + rng() % 70000;
    size_t off = rng() % (kSize - len);
    Bytes data = Pattern(len, static_cast<uint8_t>(i));
    WriteOk(9, off, data, i % 50 == 0);
    std::copy(data.begin(), data.end(), ref.begin() + static_cast<ptrdiff_t>(off));
    end = std::max(end, off + len);
  }
  uint64_t got = 0;
  EXPECT_EQ(ReadBack(9, 0, kSize, &got), ref);
  EXPECT_EQ(got, end);
  auto st = store_->Stat(9);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->size, end);
}

TEST_F(ObjectStoreTest, TruncateCreatesShrinksAndExtendsWithZeros) {
  ASSERT_TRUE(store_->Truncate(3, 5000).ok());
  auto st = store_->Stat(3);
  ASSERT_TRUE(st.ok());
  EXPECT_TRUE(st->exists);
  EXPECT_EQ(st->size, 5000u);

  WriteOk(3, 0, Pattern(5000, 9));
  ASSERT_TRUE(store_->Truncate(3, 100).ok());
  ASSERT_TRUE(store_->Truncate(3, 300).ok());
  uint64_t got = 0;
  Bytes b = ReadBack(3, 0, 400, &got);
  EXPECT_EQ(got, 300u);
  Bytes want = Pattern(100, 9);
  want.resize(400, 0);
  EXPECT_EQ(b, want);
}

TEST_F(ObjectStoreTest, PunchZeroesTheRangeFreesBlocksAndKeepsSize) {
  WriteOk(4, 0, Pattern(1 << 20, 3), /*sync=*/true);
  auto before = store_->Stat(4);
  ASSERT_TRUE(before.ok());
  ASSERT_TRUE(store_->Punch(4, 256 << 10, 512 << 10).ok());
  auto after = store_->Stat(4);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->size, 1u << 20);
  EXPECT_LT(after->blocks, before->blocks);
  Bytes want = Pattern(1 << 20, 3);
  std::fill(want.begin() + (256 << 10), want.begin() + (768 << 10), 0);
  EXPECT_EQ(ReadBack(4, 0, 1 << 20), want);
}

TEST_F(ObjectStoreTest, PunchOrSyncOfMissingObjectIsANoOp) {
  EXPECT_TRUE(store_->Punch(5, 0, 4096).ok());
  EXPECT_TRUE(store_->Sync(5).ok());
  auto st = store_->Stat(5);
  ASSERT_TRUE(st.ok());
  EXPECT_FALSE(st->exists);
}

// Every op on a destroyed object but Destroy is ESTALE: the caller's layout is stale.
void ExpectEveryOpIsEstale(ObjectStore& s, uint64_t oid) {
  Bytes b(100, 0xEE);
  EXPECT_EQ(s.Read(oid, 0, b).status().code(), ESTALE);
  EXPECT_EQ(s.Write(oid, 0, Pattern(10, 1), false).code(), ESTALE);
  EXPECT_EQ(s.Write(oid, 0, Pattern(10, 1), true).code(), ESTALE);
  EXPECT_EQ(s.Truncate(oid, 4096).code(), ESTALE);
  EXPECT_EQ(s.Punch(oid, 0, 4096).code(), ESTALE);
  EXPECT_EQ(s.Stat(oid).status().code(), ESTALE);
  EXPECT_EQ(s.Sync(oid).code(), ESTALE);
}

TEST_F(ObjectStoreTest, DestroyLeavesAnEmptyTombstoneAndEveryLaterOpIsEstale) {
  WriteOk(6, 0, Pattern(8192, 1));
  Bytes warm(10);
  ASSERT_TRUE(store_->Read(6, 0, warm).ok());  // the object's fd is cached now
  ASSERT_TRUE(store_->Destroy(6).ok());
  EXPECT_FALSE(std::filesystem::exists(ObjectPath(6)));
  EXPECT_FALSE(std::filesystem::exists(ObjectPath(6) + ".crc"));
  ASSERT_TRUE(std::filesystem::exists(TombPath(6)));
  EXPECT_EQ(std::filesystem::file_size(TombPath(6)), 0u);
  ExpectEveryOpIsEstale(*store_, 6);
  EXPECT_FALSE(std::filesystem::exists(ObjectPath(6))) << "a write re-created the object";
  EXPECT_FALSE(std::filesystem::exists(ObjectPath(6) + ".crc"));
  EXPECT_TRUE(store_->Destroy(6).ok());  // again: success
}

TEST_F(ObjectStoreTest, ANeverWrittenObjectDestroyedIsEstaleToo) {
  ASSERT_TRUE(store_->Destroy(7).ok());
  ExpectEveryOpIsEstale(*store_, 7);
  EXPECT_FALSE(std::filesystem::exists(ObjectPath(7)));
}

TEST_F(ObjectStoreTest, ANeverWrittenObjectStillReadsAsZerosBesideADestroyedOne) {
  WriteOk(300, 0, Pattern(10, 1));
  ASSERT_TRUE(store_->Destroy(300).ok());
  uint64_t got = 1;
  EXPECT_EQ(ReadBack(301, 0, 64, &got), Bytes(64, 0));
  EXPECT_EQ(got, 0u);
  WriteOk(301, 0, Pattern(10, 2));
  EXPECT_EQ(ReadBack(301, 0, 10), Pattern(10, 2));
}

TEST_F(ObjectStoreTest, TombstonesSurviveReopeningTheOst) {
  WriteOk(12, 0, Pattern(100, 1), /*sync=*/true);
  ASSERT_TRUE(store_->Destroy(12).ok());
  Open({});  // a restarted OSS
  ExpectEveryOpIsEstale(*store_, 12);
}

TEST_F(ObjectStoreTest, ExpiredTombstonesAreRemovedAndOnlyThose) {
  ASSERT_TRUE(store_->Destroy(13).ok());
  ASSERT_TRUE(store_->Destroy(14 + 256).ok());
  auto none = store_->ExpireTombstones(std::chrono::system_clock::now() - std::chrono::hours(1));
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_EQ(*none, 0u);
  EXPECT_EQ(store_->Stat(13).status().code(), ESTALE);
  auto all = store_->ExpireTombstones(std::chrono::system_clock::now() + std::chrono::seconds(2));
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(*all, 2u);
  EXPECT_FALSE(std::filesystem::exists(TombPath(13)));
  uint64_t got = 1;
  EXPECT_EQ(ReadBack(13, 0, 8, &got), Bytes(8, 0));  // past its tombstone: never written again
  EXPECT_EQ(got, 0u);
}

TEST_F(ObjectStoreTest, StatBlocksReflectSparseness) {
  WriteOk(8, 64ull << 20, Pattern(4096, 1), /*sync=*/true);
  auto st = store_->Stat(8);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->size, (64ull << 20) + 4096);
  EXPECT_LT(st->blocks * 512, 1ull << 20);  // far less than the 64 MiB size
  EXPECT_GE(st->blocks * 512, 4096u);
}

TEST_F(ObjectStoreTest, ConcurrentWritersToDisjointRangesOfOneObjectAllLand) {
  constexpr int kThreads = 8;
  constexpr size_t kChunk = 64 << 10;
  constexpr int kChunksPerThread = 16;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int c = 0; c < kChunksPerThread; ++c) {
        size_t idx = static_cast<size_t>(c * kThreads + t);  // interleaved chunks
        Bytes data = Pattern(kChunk, static_cast<uint8_t>(idx));
        EXPECT_TRUE(store_->Write(11, idx * kChunk, data, false).ok());
      }
    });
  }
  for (auto& th : threads) th.join();
  for (size_t idx = 0; idx < kThreads * kChunksPerThread; ++idx) {
    ASSERT_EQ(ReadBack(11, idx * kChunk, kChunk), Pattern(kChunk, static_cast<uint8_t>(idx)))
        << "chunk " << idx;
  }
}

TEST_F(ObjectStoreTest, ManyMoreObjectsThanTheFdCacheKeepTheirData) {
  FileStoreOptions opts;
  opts.fd_cache_capacity = 16;
  Open(opts);
  int fds_before = CountOpenFds();
  constexpr uint64_t kObjects = 300;
  for (int round = 0; round < 2; ++round) {
    for (uint64_t oid = 1000; oid < 1000 + kObjects; ++oid) {
      uint8_t seed = static_cast<uint8_t>(oid + static_cast<uint64_t>(round));
      WriteOk(oid, static_cast<uint64_t>(round) * 100, Pattern(100, seed));
    }
  }
  // At most one cached object per shard (16), each holding its data file and sidecar.
  EXPECT_LE(CountOpenFds(), fds_before + 2 * 16);
  for (uint64_t oid = 1000; oid < 1000 + kObjects; ++oid) {
    Bytes want = Pattern(100, static_cast<uint8_t>(oid));
    Bytes second = Pattern(100, static_cast<uint8_t>(oid + 1));
    want.insert(want.end(), second.begin(), second.end());
    ASSERT_EQ(ReadBack(oid, 0, 200), want) << "oid " << oid;
  }
}

TEST_F(ObjectStoreTest, ConcurrentDestroyAndReadsNeverResurrectAnObject) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t oid = 2000 + t; oid < 2400; oid += 4) {
        Bytes one(1, 1);
        EXPECT_TRUE(store_->Write(oid, 0, one, false).ok());
        std::thread reader([&] {
          Bytes b(1);
          auto r = store_->Read(oid, 0, b);  // before the destroy, or after it
          EXPECT_TRUE(r.ok() || r.status().code() == ESTALE) << r.status().ToString();
        });
        EXPECT_TRUE(store_->Destroy(oid).ok());
        reader.join();
        Bytes b(1);
        EXPECT_EQ(store_->Read(oid, 0, b).status().code(), ESTALE) << "oid " << oid;
      }
    });
  }
  for (auto& th : threads) th.join();
}

TEST_F(ObjectStoreTest, WritersRacingADestroyNeverLeaveAnObjectBehind) {
  for (uint64_t oid = 3000; oid < 3100; ++oid) {
    std::vector<std::thread> writers;
    for (int t = 0; t < 2; ++t) {
      writers.emplace_back([&, t] {
        Status st = store_->Write(oid, static_cast<uint64_t>(t) * 4096, Pattern(4096, 1), false);
        EXPECT_TRUE(st.ok() || st.code() == ESTALE) << st.ToString();
      });
    }
    EXPECT_TRUE(store_->Destroy(oid).ok());
    for (auto& w : writers) w.join();
    EXPECT_FALSE(std::filesystem::exists(ObjectPath(oid))) << "oid " << oid << " leaked";
    EXPECT_FALSE(std::filesystem::exists(ObjectPath(oid) + ".crc")) << "oid " << oid;
  }
}

TEST_F(ObjectStoreTest, StatfsReportsTheOstFileSystem) {
  auto s = store_->Statfs();
  ASSERT_TRUE(s.ok());
  EXPECT_GT(s->total_bytes, 0u);
  EXPECT_LE(s->avail_bytes, s->free_bytes);
  EXPECT_LE(s->free_bytes, s->total_bytes);
}

TEST_F(ObjectStoreTest, OffsetsBeyondOffTAreRejected) {
  Bytes one(1, 1);
  EXPECT_EQ(store_->Write(1, ~0ull - 10, one, false).code(), EFBIG);
  Bytes buf(16);
  EXPECT_EQ(store_->Read(1, ~0ull - 3, buf).status().code(), EINVAL);
  EXPECT_EQ(store_->Truncate(1, ~0ull).code(), EFBIG);
}

TEST_F(ObjectStoreTest, MalformedUuidFileIsAnError) {
  store_.reset();
  std::string ost = dir_.path() + "/bad";
  ::mkdir(ost.c_str(), 0755);
  FILE* f = std::fopen((ost + "/ost_uuid").c_str(), "w");
  std::fputs("not-a-uuid\n", f);
  std::fclose(f);
  EXPECT_EQ(OpenFileObjectStore(ost).status().code(), EINVAL);
}

}  // namespace
}  // namespace sfs::oss
