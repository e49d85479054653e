// Unit tests of on-disk checksums: random I/O verifies, corruption on disk is
// EIO for its chunk only, truncate/punch/reopen keep crcs right, a write cut
// short by a crash leaves chunks that verify, and checksums can be turned off.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <thread>
#include <vector>

#include "common/rpc/bulk_crc.h"
#include "oss/store/crc_sidecar.h"
#include "oss/store/object_store.h"
#include "oss/testing/fault_env.h"
#include "oss/testing/random_bytes.h"
#include "oss/testing/store_fixture.h"
#include "oss/testing/temp_dir.h"

namespace sfs::oss {
namespace {

using Bytes = std::vector<uint8_t>;
constexpr uint64_t C = kCrcChunk;

Bytes Random(size_t n, uint32_t seed) { return RandomBytes(n, seed); }

class ChecksumTest : public StoreFixture {
 protected:
  Result<Bytes> Read(uint64_t oid, uint64_t off, size_t len) {
    Bytes b(len, 0xEE);
    Result<uint64_t> r = store_->Read(oid, off, b);
    if (!r.ok()) return r.status();
    return b;
  }

  Bytes ReadOk(uint64_t oid, uint64_t off, size_t len) {
    Result<Bytes> r = Read(oid, off, len);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : Bytes();
  }
};

TEST_F(ChecksumTest, RandomAlignedAndUnalignedWritesReadBackLikeAReference) {
  std::mt19937 rng(7);
  Bytes ref(300 * 1024, 0);
  for (int i = 0; i < 300; ++i) {
    bool aligned = i % 3 == 0;
    uint64_t len = aligned ? C * (1 + rng() % 8) : 1 + rng() % (3 * C);
    uint64_t off = aligned ? C * (rng() % (ref.size() / C - 8)) : rng() % (ref.size() - len);
    Bytes data = Random(len, i);
    WriteOk(1, off, data);
    std::copy(data.begin(), data.end(), ref.begin() + off);
  }
  for (int i = 0; i < 200; ++i) {
    uint64_t off = rng() % ref.size(), len = 1 + rng() % (ref.size() - off);
    ASSERT_EQ(ReadOk(1, off, len), Bytes(ref.begin() + off, ref.begin() + off + len)) << off;
  }
  EXPECT_EQ(ReadOk(1, 0, ref.size()), ref);
}

TEST_F(ChecksumTest, AFlippedByteOnDiskFailsItsChunkWithEioAndOtherChunksStillRead) {
  Bytes data = Random(8 * C, 1);
  WriteOk(2, 0, data);
  FlipByteOnDisk(2, 3 * C + 17);
  Result<Bytes> bad = Read(2, 3 * C + 100, 10);  // bytes of the bad chunk, not the flipped one
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), EIO);
  EXPECT_NE(bad.status().message().find("offset " + std::to_string(3 * C)), std::string::npos)
      << bad.status().message();
  EXPECT_EQ(Read(2, 0, 8 * C).status().code(), EIO) << "a whole-object read touches it too";
  EXPECT_EQ(ReadOk(2, 0, 3 * C), Bytes(data.begin(), data.begin() + 3 * C));
  EXPECT_EQ(ReadOk(2, 4 * C + 5, 100), Bytes(data.begin() + 4 * C + 5, data.begin() + 4 * C + 105));
}

TEST_F(ChecksumTest, APartialWriteIntoACorruptChunkFailsButAWholeChunkWriteRepairsIt) {
  WriteOk(3, 0, Random(2 * C, 2));
  FlipByteOnDisk(3, 10);
  EXPECT_EQ(store_->Write(3, 100, Bytes(5, 1), false).code(), EIO) << "would bless bad bytes";
  Bytes fresh = Random(C, 3);
  WriteOk(3, 0, fresh);
  EXPECT_EQ(ReadOk(3, 0, C), fresh);
}

TEST_F(ChecksumTest, CorruptionInTheLastPartialChunkIsDetected) {
  Bytes data = Random(C + 100, 4);
  WriteOk(4, 0, data);
  uint64_t got = 0;
  Bytes buf(3 * C);
  ASSERT_TRUE(store_->Read(4, 0, buf).ok());
  FlipByteOnDisk(4, C + 99);
  EXPECT_EQ(store_->Read(4, 0, buf).status().code(), EIO);
  EXPECT_EQ(store_->Read(4, C + 50, {buf.data(), 10}).status().code(), EIO);
  Result<uint64_t> past = store_->Read(4, 2 * C, buf);
  ASSERT_TRUE(past.ok());
  got = *past;
  EXPECT_EQ(got, 0u) << "chunks past the end are zeros, not checked";
}

TEST_F(ChecksumTest, TruncateDownAndUpKeepsEveryChunkVerifiable) {
  Bytes data = Random(5 * C, 5);
  WriteOk(5, 0, data);
  ASSERT_TRUE(store_->Truncate(5, 2 * C + 300).ok());
  Bytes want(6 * C, 0);
  std::copy(data.begin(), data.begin() + 2 * C + 300, want.begin());
  ASSERT_TRUE(store_->Truncate(5, 6 * C).ok());
  EXPECT_EQ(ReadOk(5, 0, 6 * C), want);
  WriteOk(5, 4 * C + 1, Bytes(10, 9));  // into the zeros the truncate made
  std::fill(want.begin() + 4 * C + 1, want.begin() + 4 * C + 11, 9);
  EXPECT_EQ(ReadOk(5, 0, 6 * C), want);
  ASSERT_TRUE(store_->Truncate(5, 0).ok());
  EXPECT_EQ(ReadOk(5, 0, C), Bytes(C, 0));
  WriteOk(5, 3 * C, Bytes(C, 4));
  EXPECT_EQ(ReadOk(5, 0, 3 * C), Bytes(3 * C, 0)) << "a gap left by a later write is a hole";
}

TEST_F(ChecksumTest, PunchedRangesReadAsZerosAndTheRestStillVerifies) {
  Bytes data = Random(6 * C, 6);
  WriteOk(6, 0, data);
  ASSERT_TRUE(store_->Punch(6, C + 10, 2 * C).ok());   // partial, whole, partial
  ASSERT_TRUE(store_->Punch(6, 5 * C, 10 * C).ok());   // tail, past the end
  std::fill(data.begin() + C + 10, data.begin() + 3 * C + 10, 0);
  std::fill(data.begin() + 5 * C, data.end(), 0);
  EXPECT_EQ(ReadOk(6, 0, 6 * C), data);
  auto attr = store_->Stat(6);
  ASSERT_TRUE(attr.ok());
  EXPECT_EQ(attr->size, 6 * C);
}

TEST_F(ChecksumTest, ChecksumsSurviveReopenOfTheStore) {
  Bytes data = Random(3 * C + 7, 8);
  ASSERT_TRUE(store_->Write(8, 0, data, /*sync=*/true).ok());
  Open();
  EXPECT_EQ(ReadOk(8, 0, data.size()), data);
  FlipByteOnDisk(8, 2 * C);
  Open();
  EXPECT_EQ(Read(8, 2 * C, 1).status().code(), EIO);
}

TEST_F(ChecksumTest, TheSidecarSitsBesideTheObjectAndDestroyRemovesIt) {
  WriteOk(9, 0, Bytes(10, 1));
  EXPECT_TRUE(std::filesystem::exists(ObjectPath(9) + ".crc"));
  ASSERT_TRUE(store_->Destroy(9).ok());
  EXPECT_FALSE(std::filesystem::exists(ObjectPath(9)));
  EXPECT_FALSE(std::filesystem::exists(ObjectPath(9) + ".crc"));
}

TEST_F(ChecksumTest, WithChecksumsOffNothingIsVerifiedAndStaleCrcsAreDropped) {
  WriteOk(10, 0, Random(2 * C, 10));
  Open(/*checksums=*/false);
  WriteOk(10, 0, Bytes(C, 3));  // the old crc of chunk 0 would now be wrong
  FlipByteOnDisk(10, C + 1);
  EXPECT_TRUE(Read(10, 0, 2 * C).ok());
  EXPECT_FALSE(std::filesystem::exists(ObjectPath(10) + ".crc"));
  Open(/*checksums=*/true);
  EXPECT_EQ(ReadOk(10, 0, C), Bytes(C, 3)) << "an object without sidecar reads unchecked";
}

TEST_F(ChecksumTest, AWriteCutOffBeforeItsDataLeavesTheOldBytesReadable) {
  Bytes old = Random(2 * C, 11);
  WriteOk(11, 0, old);
  FaultEnv env;
  Open(true, &env);
  env.set_dead_after_writes(1);  // the pending crcs land, the data does not
  EXPECT_FALSE(store_->Write(11, 100, Random(C, 12), false).ok());
  Open();
  EXPECT_EQ(ReadOk(11, 0, 2 * C), old);
  WriteOk(11, 200, Bytes(3, 1));  // a later partial write settles the entry
  std::fill(old.begin() + 200, old.begin() + 203, 1);
  EXPECT_EQ(ReadOk(11, 0, 2 * C), old);
}

TEST_F(ChecksumTest, AWriteCutOffBeforeItsCommitLeavesTheNewBytesReadable) {
  WriteOk(12, 0, Random(2 * C, 13));
  FaultEnv env;
  Open(true, &env);
  env.set_dead_after_writes(2);  // pending crcs and data land, the commit does not
  Bytes fresh = Random(2 * C, 14);
  EXPECT_FALSE(store_->Write(12, 0, fresh, false).ok());
  Open();
  EXPECT_EQ(ReadOk(12, 0, 2 * C), fresh);
}

TEST_F(ChecksumTest, ConcurrentUnalignedWritersSharingChunksAllLandAndVerify) {
  constexpr int kThreads = 4, kRounds = 200;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {  // thread t owns bytes [k*16+4t, k*16+4t+4)
        uint64_t k = static_cast<uint64_t>(r) * 97 % 2048;
        EXPECT_TRUE(store_->Write(13, k * 16 + 4 * t, Bytes(4, uint8_t(t + 1)), false).ok());
        Bytes b(C);
        EXPECT_TRUE(store_->Read(13, (k * 16 / C) * C, b).ok()) << "no spurious EIO";
      }
    });
  }
  for (auto& th : threads) th.join();
  Bytes all = ReadOk(13, 0, 2048 * 16);
  for (int r = 0; r < kRounds; ++r) {
    uint64_t k = static_cast<uint64_t>(r) * 97 % 2048;
    for (int t = 0; t < kThreads; ++t) ASSERT_EQ(all[k * 16 + 4 * t], t + 1) << k;
  }
}

// The server's per-4 KiB crcs (rpc/bulk_crc.h) stand in for the store's own
// pass over written bytes, and a read hands back the ones it verified with.
TEST_F(ChecksumTest, PieceCrcsGivenToAWriteBecomeTheChunkCrcs) {
  Bytes data = Random(3 * C + 100, 41);
  std::vector<uint32_t> pieces = rpc::PieceCrcs(data);
  ASSERT_TRUE(store_->Write(5, 4 * C, data, false, pieces).ok());
  EXPECT_EQ(ReadOk(5, 4 * C, data.size()), data);
  // A crc that does not match its bytes is what the store keeps: the chunk
  // then fails its check (so the store did not read the bytes again).
  pieces[1] ^= 1;
  ASSERT_TRUE(store_->Write(6, 0, data, false, pieces).ok());
  EXPECT_EQ(Read(6, 0, C).status().code(), 0);
  EXPECT_EQ(Read(6, C, C).status().code(), EIO);
}

TEST_F(ChecksumTest, AnAlignedReadReturnsTheCrcOfEachPieceItFilled) {
  Bytes data = Random(2 * C + 300, 42);
  WriteOk(7, 0, data);
  for (size_t len : {size_t{C}, size_t{2 * C + 300}, size_t{5 * C + 7}}) {  // the last: past the end
    Bytes b(len, 0xEE);
    std::vector<uint32_t> pieces;
    Result<uint64_t> got = store_->Read(7, 0, b, &pieces);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(pieces, rpc::PieceCrcs(b)) << len;
  }
  Bytes b(C);
  std::vector<uint32_t> pieces{1, 2};
  ASSERT_TRUE(store_->Read(7, 10, b, &pieces).ok());  // unaligned: none
  EXPECT_TRUE(pieces.empty());
}

}  // namespace
}  // namespace sfs::oss
