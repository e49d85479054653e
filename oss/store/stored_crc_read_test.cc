// Unit tests of ObjectStore::ReadWithStoredCrc: the bytes are the object's,
// the value it returns is the crc32c of exactly those bytes (for aligned and
// unaligned ranges, holes, ranges across and past the end), a byte rotted in
// a middle chunk on disk makes the value disagree with the bytes (what the
// client's frame check catches), and it falls back (ENOTSUP) where it cannot
// vouch for the bytes.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <random>
#include <vector>

#include "common/crc32c.h"
#include "oss/store/crc_sidecar.h"
#include "oss/store/object_store.h"
#include "oss/testing/random_bytes.h"
#include "oss/testing/store_fixture.h"
#include "oss/testing/temp_dir.h"

namespace sfs::oss {
namespace {

using Bytes = std::vector<uint8_t>;
constexpr uint64_t C = kCrcChunk;

Bytes Random(size_t n, uint32_t seed) { return RandomBytes(n, seed); }

class StoredCrcReadTest : public StoreFixture {
 protected:
  // The verified read's bytes, the reference.
  Bytes Verified(uint64_t oid, uint64_t off, size_t len) {
    Bytes b(len, 0xEE);
    Result<uint64_t> r = store_->Read(oid, off, b);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return b;
  }
  // ReadWithStoredCrc must give the verified read's bytes and their crc.
  void ExpectSameAsVerified(uint64_t oid, uint64_t off, size_t len) {
    Bytes got(len, 0xEE);
    uint32_t value = 0;
    Result<uint64_t> n = store_->ReadWithStoredCrc(oid, off, got, &value);
    ASSERT_TRUE(n.ok()) << "off " << off << " len " << len << ": " << n.status().ToString();
    Bytes want(len, 0xEE);
    Result<uint64_t> m = store_->Read(oid, off, want);
    ASSERT_TRUE(m.ok());
    EXPECT_EQ(*n, *m) << "read_size, off " << off << " len " << len;
    EXPECT_TRUE(got == want) << "bytes differ, off " << off << " len " << len;
    EXPECT_EQ(value, crc32c::Value(got.data(), got.size())) << "off " << off << " len " << len;
  }
};

TEST_F(StoredCrcReadTest, BytesAndValueMatchTheVerifiedReadForAlignedAndUnalignedRanges) {
  const Bytes data = Random(3 << 20, 1);
  WriteOk(7, 0, data);
  for (auto [off, len] : {std::pair<uint64_t, size_t>{0, 1 << 20},
                          {1 << 20, 1 << 20},
                          {47008, 3 * 47008},
                          {4095, 64 * 1024 + 2},
                          {123457, 540000},
                          {C, 16 * C}}) {
    ExpectSameAsVerified(7, off, len);
  }
}

TEST_F(StoredCrcReadTest, HolesAndBytesPastTheEndReadAsZerosWithTheirCrc) {
  WriteOk(8, 0, Random(100000, 2));          // ends inside a chunk
  WriteOk(8, 1 << 20, Random(70000, 3));     // a hole between the two
  ExpectSameAsVerified(8, 0, 1 << 20);       // data, the partial chunk, then the hole
  ExpectSameAsVerified(8, 90001, 1 << 20);   // unaligned, across the hole into data
  ExpectSameAsVerified(8, (1 << 20) + 5000, 1 << 20);  // across the end of the object
  ExpectSameAsVerified(8, 4 << 20, 256 * 1024);       // wholly past the end
}

TEST_F(StoredCrcReadTest, AByteRottedInAMiddleChunkMakesTheValueDisagreeWithTheBytes) {
  const Bytes data = Random(1 << 20, 4);
  WriteOk(9, 0, data);
  FlipByteOnDisk(9, 300000);
  Bytes got(1 << 20);
  uint32_t value = 0;
  Result<uint64_t> n = store_->ReadWithStoredCrc(9, 0, got, &value);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_NE(got[300000], data[300000]) << "the rotted byte is what the disk holds";
  EXPECT_NE(value, crc32c::Value(got.data(), got.size()))
      << "the value must be the stored crcs', so the client's check catches the rot";
  Bytes verified(1 << 20);
  EXPECT_EQ(store_->Read(9, 0, verified).status().code(), EIO) << "the verified retry reports it";
}

TEST_F(StoredCrcReadTest, ARottedEndChunkFallsBackToTheVerifiedRead) {
  WriteOk(10, 0, Random(1 << 20, 5));
  FlipByteOnDisk(10, 100);  // in the partly requested first chunk of [50, ...)
  Bytes got(512 * 1024);
  uint32_t value = 0;
  EXPECT_EQ(store_->ReadWithStoredCrc(10, 50, got, &value).status().code(), ENOTSUP);
}

TEST_F(StoredCrcReadTest, ShortReadsMissingObjectsAndUnchecksummedObjectsFallBack) {
  WriteOk(11, 0, Random(1 << 20, 6));
  Bytes small(4096);
  uint32_t value = 0;
  EXPECT_EQ(store_->ReadWithStoredCrc(11, 0, small, &value).status().code(), ENOTSUP);
  Bytes big(1 << 20);
  EXPECT_EQ(store_->ReadWithStoredCrc(12345, 0, big, &value).status().code(), ENOTSUP);
  Open(false);  // drops the sidecar on first use
  WriteOk(13, 0, Random(1 << 20, 7));
  EXPECT_EQ(store_->ReadWithStoredCrc(13, 0, big, &value).status().code(), ENOTSUP);
}

TEST_F(StoredCrcReadTest, AChunkMidMutationFallsBack) {
  WriteOk(14, 0, Random(1 << 20, 8));
  // A mutation in flight leaves a chunk's two slots different (checked_object.h).
  int fd = ::open((ObjectPath(14) + ".crc").c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  uint8_t pending[4] = {1, 2, 3, 4};
  ASSERT_EQ(::pwrite(fd, pending, 4, 20 * kCrcEntrySize + 4), 4);
  ::close(fd);
  Bytes big(1 << 20);
  uint32_t value = 0;
  EXPECT_EQ(store_->ReadWithStoredCrc(14, 0, big, &value).status().code(), ENOTSUP);
}

}  // namespace
}  // namespace sfs::oss
