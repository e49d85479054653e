// Unit tests of a full OST: the writer gets ENOSPC, and everything written
// and acknowledged before reads back intact with its checksums consistent.
// The fault-injected tests run everywhere; the tmpfs one needs root (mount)
// and skips otherwise, a skip scripts/test.sh fails the run for.
#include <gtest/gtest.h>
#include <sys/mount.h>

#include <cstring>
#include <random>
#include <vector>

#include "oss/store/crc_sidecar.h"
#include "oss/store/object_store.h"
#include "oss/testing/fault_env.h"
#include "oss/testing/random_bytes.h"
#include "oss/testing/temp_dir.h"

namespace sfs::oss {
namespace {

using Bytes = std::vector<uint8_t>;
constexpr uint64_t C = kCrcChunk;

Bytes Random(size_t n, uint32_t seed) { return RandomBytes(n, seed); }

class EnospcTest : public ::testing::TestWithParam<bool> {  // param: checksums
 protected:
  void SetUp() override {
    FileStoreOptions opts;
    opts.checksums = GetParam();
    opts.env = &env_;
    auto s = OpenFileObjectStore(dir_.path() + "/ost0", opts);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(s).value();
  }

  Bytes ReadOk(uint64_t oid, uint64_t off, size_t len) {
    Bytes b(len);
    Result<uint64_t> r = store_->Read(oid, off, b);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return b;
  }

  TempDir dir_;
  FaultEnv env_;
  std::unique_ptr<ObjectStore> store_;
};

TEST_P(EnospcTest, AWriteThatFillsTheDiskFailsAndEarlierDataStaysIntact) {
  Bytes first = Random(16 * C, 1);
  ASSERT_TRUE(store_->Write(1, 0, first, false).ok());
  // Room for the sidecar's growth (11 entries of 8 bytes) and part of the data's.
  env_.set_write_budget((GetParam() ? 11 * 8 : 0) + 3 * C + 123);
  Bytes second = Random(16 * C, 2);
  EXPECT_EQ(store_->Write(1, 10 * C + 7, second, false).code(), ENOSPC);
  EXPECT_EQ(store_->Write(2, 0, Bytes(C, 1), false).code(), ENOSPC);
  env_.Heal();
  Bytes got = ReadOk(1, 0, 26 * C + 7);  // no EIO: the sidecar matches what is on disk
  EXPECT_TRUE(std::equal(first.begin(), first.begin() + 10 * C + 7, got.begin()))
      << "bytes the failed write did not cover are untouched";
  for (uint64_t i = 10 * C + 7; i < 26 * C + 7; ++i) {  // each byte is old or new
    uint8_t old = i < first.size() ? first[i] : 0;
    ASSERT_TRUE(got[i] == old || got[i] == second[i - 10 * C - 7]) << i;
  }
  ASSERT_TRUE(store_->Write(1, 10 * C + 7, second, false).ok()) << "retry after space frees";
  EXPECT_EQ(ReadOk(1, 10 * C + 7, second.size()), second);
}

TEST_P(EnospcTest, ASidecarThatCannotGrowFailsTheWriteBeforeTheData) {
  ASSERT_TRUE(store_->Write(3, 0, Bytes(C, 5), false).ok());
  env_.set_write_budget(0);
  EXPECT_EQ(store_->Write(3, 100 * C, Bytes(C, 6), false).code(), ENOSPC);
  EXPECT_EQ(ReadOk(3, 0, C), Bytes(C, 5));
  EXPECT_TRUE(store_->Write(3, 0, Bytes(C, 7), false).ok()) << "overwriting needs no space";
  env_.Heal();
  EXPECT_EQ(ReadOk(3, 0, C), Bytes(C, 7));
  EXPECT_EQ(ReadOk(3, 100 * C, C), Bytes(C, 0));
}

INSTANTIATE_TEST_SUITE_P(Checksums, EnospcTest, ::testing::Bool());

// A real full file system: a 4 MiB tmpfs filled through the store.
TEST(EnospcTmpfsTest, FillingARealFileSystemGivesEnospcAndKeepsEveryAcknowledgedByte) {
  TempDir dir;
  if (::mount("tmpfs", dir.path().c_str(), "tmpfs", 0, "size=4m") != 0) {
    GTEST_SKIP() << "cannot mount a tmpfs here (needs root): " << std::strerror(errno);
  }
  struct Written { uint64_t oid, off; Bytes data; };
  std::vector<Written> acked;
  Status last;
  {
    auto s = OpenFileObjectStore(dir.path() + "/ost0");
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    std::unique_ptr<ObjectStore> store = std::move(s).value();
    for (uint32_t i = 0; i < 200 && last.ok(); ++i) {
      Written w{1 + i % 5, (i / 5) * 100003ull, Random(100003, i)};
      last = store->Write(w.oid, w.off, w.data, /*sync=*/true);
      if (last.ok()) acked.push_back(std::move(w));
    }
    EXPECT_EQ(last.code(), ENOSPC) << last.ToString();
    EXPECT_GT(acked.size(), 10u);
    for (const Written& w : acked) {
      Bytes b(w.data.size());
      ASSERT_TRUE(store->Read(w.oid, w.off, b).ok()) << w.oid << "@" << w.off;
      ASSERT_EQ(b, w.data) << w.oid << "@" << w.off;
    }
    ASSERT_TRUE(store->Destroy(5).ok());
    EXPECT_TRUE(store->Write(6, 0, Bytes(C, 1), false).ok()) << "space freed is usable again";
  }
  ::umount2(dir.path().c_str(), MNT_DETACH);
}

}  // namespace
}  // namespace sfs::oss
