// Unit tests of ObjectStore::OpenCachedRange: the range it hands out holds
// exactly the object's bytes there and its crc is theirs (aligned and
// unaligned ranges, ranges across the end), a byte rotted in a middle chunk
// makes the crc disagree with the bytes (what the client's frame check
// catches), and it declines (ENOTSUP) where the caller must read: a rotted
// end chunk, uncached pages, a large object, a short read, no stored crcs.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <vector>

#include "common/crc32c.h"
#include "oss/store/direct_io.h"
#include "oss/store/object_store.h"
#include "oss/testing/random_bytes.h"
#include "oss/testing/store_fixture.h"

namespace sfs::oss {
namespace {

using Bytes = std::vector<uint8_t>;

class CachedRangeTest : public StoreFixture {
 protected:
  // Writes data as oid and reads it back once, buffered (a small object), so
  // it is in the page cache whichever way the write went.
  void WriteCached(uint64_t oid, const Bytes& data) {
    WriteOk(oid, 0, data);
    Bytes b(data.size());
    ASSERT_TRUE(store_->Read(oid, 0, b).ok());
  }
  // The range's bytes as the server's sendfile would send them.
  static Bytes Sent(const CachedRange& r) {
    Bytes b(r.length);
    EXPECT_EQ(::pread(r.fd, b.data(), b.size(), static_cast<off_t>(r.offset)),
              static_cast<ssize_t>(b.size()));
    return b;
  }
  Status Code(uint64_t oid, uint64_t off, uint64_t len) {
    return store_->OpenCachedRange(oid, off, len).status();
  }
};

TEST_F(CachedRangeTest, TheRangeHoldsTheObjectsBytesUnderTheirCrc) {
  const Bytes data = RandomBytes(110 * 1024 + 123, 1);  // ends inside a chunk
  WriteCached(7, data);
  for (auto [off, len] : {std::pair<uint64_t, uint64_t>{0, data.size()},
                          {0, 256 * 1024},  // past the end: only the bytes that exist
                          {4096, 64 * 1024},
                          {4095, 64 * 1024 + 2},
                          {5000, 200 * 1024}}) {
    Result<CachedRange> r = store_->OpenCachedRange(7, off, len);
    ASSERT_TRUE(r.ok()) << "off " << off << " len " << len << ": " << r.status().ToString();
    const uint64_t want = std::min<uint64_t>(data.size(), off + len) - off;
    ASSERT_EQ(r->length, want) << "off " << off << " len " << len;
    EXPECT_EQ(r->offset, off);
    const Bytes sent = Sent(*r);
    EXPECT_TRUE(std::equal(sent.begin(), sent.end(), data.begin() + off)) << "off " << off;
    EXPECT_EQ(r->crc, crc32c::Value(sent.data(), sent.size())) << "off " << off << " len " << len;
  }
}

// The server sends the range after the handler returned: its descriptor must
// outlive the store's fd cache entry (a Destroy drops it) and the store.
TEST_F(CachedRangeTest, TheRangeKeepsItsDescriptorOpenAfterTheStoreDropsIt) {
  WriteCached(8, RandomBytes(100 * 1024, 2));
  Result<CachedRange> r = store_->OpenCachedRange(8, 0, 100 * 1024);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(store_->Destroy(8).ok());
  store_.reset();
  EXPECT_NE(::fcntl(r->fd, F_GETFD), -1);
  r->owner.reset();
  EXPECT_EQ(::fcntl(r->fd, F_GETFD), -1) << "closed with its last owner";
}

TEST_F(CachedRangeTest, ARottedMiddleByteMakesTheCrcDisagreeWithTheBytes) {
  const Bytes data = RandomBytes(200 * 1024, 3);
  WriteCached(9, data);
  FlipByteOnDisk(9, 100000);
  Bytes b(data.size());
  (void)store_->Read(9, 0, b);  // EIO, but the rotted page is cached again
  Result<CachedRange> r = store_->OpenCachedRange(9, 0, data.size());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Bytes sent = Sent(*r);
  EXPECT_NE(sent[100000], data[100000]) << "the rotted byte is what the disk holds";
  EXPECT_NE(r->crc, crc32c::Value(sent.data(), sent.size()))
      << "the crc must be the stored crcs', so the client's check catches the rot";
}

TEST_F(CachedRangeTest, DeclinesWhatTheCallerMustRead) {
  WriteCached(10, RandomBytes(200 * 1024, 4));
  FlipByteOnDisk(10, 100);  // the partly requested first chunk of [50, ...)
  EXPECT_EQ(Code(10, 50, 128 * 1024).code(), ENOTSUP) << "a rotted end chunk";
  WriteCached(11, RandomBytes(200 * 1024, 5));
  EXPECT_EQ(Code(11, 0, 4096).code(), ENOTSUP) << "a short read";
  EXPECT_EQ(Code(11, 300 * 1024, 128 * 1024).code(), ENOTSUP) << "no bytes there";
  EXPECT_EQ(Code(12345, 0, 128 * 1024).code(), ENOTSUP) << "a missing object";
  WriteCached(12, RandomBytes(kDirectReadMinObject, 6));
  EXPECT_EQ(Code(12, 0, 128 * 1024).code(), ENOTSUP) << "a large object";
  WriteOk(13, 0, RandomBytes(200 * 1024, 7));
  int fd = ::open(ObjectPath(13).c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ::fdatasync(fd);
  ASSERT_EQ(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
  ::close(fd);
  EXPECT_EQ(Code(13, 0, 128 * 1024).code(), ENOTSUP) << "not in the page cache";
  Open(false);
  WriteCached(14, RandomBytes(200 * 1024, 8));
  EXPECT_EQ(Code(14, 0, 128 * 1024).code(), ENOTSUP) << "no stored crcs";
}

}  // namespace
}  // namespace sfs::oss
