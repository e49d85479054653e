// DataCache: bounded footprint, the directory tier across instances (a
// remount), a flipped byte caught by the checksum, an unusable directory.
#include "client/lib/data_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

namespace sfs::client {
namespace {

Block Bytes(uint32_t len, uint8_t fill) {
  std::shared_ptr<uint8_t> p(new uint8_t[len], std::default_delete<uint8_t[]>());
  std::memset(p.get(), fill, len);
  return Block{.data = p, .len = len};
}

std::string TempDir() {
  char tmpl[] = "/tmp/sfs_cache_test_XXXXXX";
  return mkdtemp(tmpl);
}

TEST(DataCacheTest, RamOnlyNeverGrowsPastItsSize) {
  auto c = DataCache::Open({.ram_bytes = 10000});
  ASSERT_NE(c, nullptr);
  for (uint64_t i = 0; i < 20; ++i) c->Put({.ino = 2, .version = 1, .index = i}, Bytes(1000, 1));
  CacheStats s = c->Stats();
  EXPECT_LE(s.bytes, 10000u);
  EXPECT_EQ(s.blocks, 10u);
  EXPECT_EQ(s.evictions, 10u);
  EXPECT_EQ(s.dir, "");
  // LRU without a hint: the first ten went.
  EXPECT_FALSE(c->Get({.ino = 2, .version = 1, .index = 0}, 1000).data);
  EXPECT_TRUE(c->Get({.ino = 2, .version = 1, .index = 19}, 1000).data);
  // Another version of the inode is another key.
  EXPECT_FALSE(c->Get({.ino = 2, .version = 2, .index = 19}, 1000).data);
  s = c->Stats();
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.misses, 2u);
}

TEST(DataCacheTest, NoSizeMeansNoCache) {
  EXPECT_EQ(DataCache::Open({}), nullptr);
}

TEST(DataCacheTest, DirectoryBlocksSurviveANewInstanceAndABadOneIsRefetched) {
  std::string dir = TempDir();
  DataCache::Options o{.dir = dir, .disk_bytes = 1 << 20, .ram_bytes = 0, .fs_id = 0xabc};
  {
    auto c = DataCache::Open(o);
    ASSERT_NE(c, nullptr);
    EXPECT_NE(c->Stats().dir, "");
    c->Put({.ino = 7, .version = 3, .index = 0}, Bytes(5000, 0x5a));
    c->Put({.ino = 8, .version = 1, .index = 0}, Bytes(4000, 0x11));
  }
  auto c = DataCache::Open(o);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->Stats().blocks, 2u);
  Block b = c->Get({.ino = 7, .version = 3, .index = 0}, 5000);
  ASSERT_TRUE(b.data);
  EXPECT_EQ(b.data.get()[4999], 0x5a);
  // Flip a byte of the other block's data: the checksum catches it.
  std::string path = dir + "/0000000000000abc/0000000000000008-0000000000000001-00000000";
  int fd = ::open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0) << path;
  uint8_t x = 0x12;
  ASSERT_EQ(::pwrite(fd, &x, 1, 100), 1);
  ::close(fd);
  EXPECT_FALSE(c->Get({.ino = 8, .version = 1, .index = 0}, 4000).data);
  EXPECT_EQ(c->Stats().corrupt, 1u);
  EXPECT_FALSE(std::filesystem::exists(path));
  c->Drop();
  EXPECT_EQ(c->Stats().blocks, 0u);
  std::filesystem::remove_all(dir);
}

TEST(DataCacheTest, DirectoryThatCannotBeUsedFallsBackToRam) {
  std::string dir = TempDir();
  std::string file = dir + "/a_file";
  ::close(::open(file.c_str(), O_WRONLY | O_CREAT, 0600));
  DataCache::Options o{.dir = file + "/sub", .disk_bytes = 1 << 20, .ram_bytes = 4096, .fs_id = 1};
  auto c = DataCache::Open(o);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->Stats().dir, "");
  EXPECT_EQ(c->Stats().capacity, 4096u);
  o.ram_bytes = 0;
  EXPECT_EQ(DataCache::Open(o), nullptr);  // nothing left: uncached
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sfs::client
