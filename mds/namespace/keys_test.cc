// Key encoding: a directory's entries form one contiguous, name-ordered
// range in the real store, with no foreign keys inside it.
#include "mds/namespace/keys.h"

#include <algorithm>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "mds/namespace/test_util.h"

namespace sfs::mds {
namespace {

std::string RandomName(std::mt19937& rng) {
  std::uniform_int_distribution<int> len(1, 40), byte(1, 255);
  std::string s(len(rng), 'x');
  for (char& c : s) {
    c = static_cast<char>(byte(rng));
    if (c == '/') c = 'a';
  }
  return s;
}

TEST(KeysTest, DirectoryEntriesAreOneContiguousRangeInNameOrder) {
  std::string dir = MakeTempDir();
  auto store = OpenLevelDbStore(dir);
  ASSERT_TRUE(store.ok());
  std::mt19937 rng(42);
  std::set<std::string> names;
  KvBatch batch;
  // Neighbours whose ids differ from 0x1ff only in low or high bytes.
  const uint64_t target = 0x1ff;
  for (uint64_t other : {uint64_t{0xff}, uint64_t{0x200}, uint64_t{0x2ff}, uint64_t{0x1fe},
                         uint64_t{0x1ff} << 8, ~uint64_t{0}}) {
    for (int i = 0; i < 50; ++i) batch.Put(keys::Dentry(other, RandomName(rng)), "foreign");
    batch.Put(keys::Inode(other), "foreign");
    batch.Put(keys::Xattr(target, RandomName(rng)), "foreign");
  }
  for (int i = 0; i < 500; ++i) {
    std::string n = RandomName(rng);
    names.insert(n);
    batch.Put(keys::Dentry(target, n), "mine");
  }
  batch.Put(keys::Inode(target), "foreign");
  ASSERT_TRUE((*store)->Write(batch, true).ok());

  std::vector<std::string> seen;
  std::string prefix = keys::DentryPrefix(target);
  ASSERT_TRUE((*store)->Scan(prefix, keys::PrefixEnd(prefix), [&](auto k, auto v) {
    EXPECT_EQ(v, "mine");
    seen.emplace_back(keys::NameOf(k));
    return true;
  }).ok());
  EXPECT_EQ(seen, std::vector<std::string>(names.begin(), names.end()));
  store->reset();
  std::filesystem::remove_all(dir);
}

TEST(KeysTest, BigEndianIdsSortNumerically) {
  EXPECT_LT(keys::Inode(255), keys::Inode(256));
  EXPECT_LT(keys::Queue(1), keys::Queue(uint64_t{1} << 40));
  EXPECT_LT(keys::Dentry(1, "zzz"), keys::Dentry(2, "a"));
  EXPECT_EQ(keys::IdOf(keys::Inode(0x0102030405060708)), 0x0102030405060708u);
}

TEST(KeysTest, PrefixEndIsTheFirstKeyAfterThePrefix) {
  EXPECT_EQ(keys::PrefixEnd("ab"), "ac");
  EXPECT_EQ(keys::PrefixEnd(std::string("a\xff", 2)), "b");
  std::string end = keys::PrefixEnd(keys::DentryPrefix(0xff));
  EXPECT_LE(end, keys::DentryPrefix(0x100));
  EXPECT_GT(end, keys::Dentry(0xff, std::string(255, '\xff')));
}

}  // namespace
}  // namespace sfs::mds
