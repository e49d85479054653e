// The OST directory layout, pinned as literals: an OST written by one
// version must be readable by the next, and by fsck.
#include "common/ondisk/ost_dir.h"

#include <gtest/gtest.h>

namespace sfs::ondisk {
namespace {

TEST(OstDirTest, AnObjectLivesUnderItsLowByteAsSixteenHexDigits) {
  EXPECT_EQ(ObjectPath("/o", 0x1234), "/o/objects/34/0000000000001234");
  EXPECT_EQ(ObjectPath("/o", 0xabcdef0123456789ull), "/o/objects/89/abcdef0123456789");
  EXPECT_EQ(ObjectPath("/o", 0), "/o/objects/00/0000000000000000");
  EXPECT_EQ(CrcPath(ObjectPath("/o", 7)), "/o/objects/07/0000000000000007.crc");
  EXPECT_EQ(ObjectsDir("/o"), "/o/objects");
  EXPECT_EQ(ObjectSubdir("/o", 255), "/o/objects/ff");
  EXPECT_EQ(OstUuidPath("/o"), "/o/ost_uuid");
}

TEST(OstDirTest, AnObjectNameParsesBackToItsOidAndSaysWhetherItIsTheSidecar) {
  uint64_t oid = 0;
  bool crc = true;
  ASSERT_TRUE(ParseObjectName(ObjectName(0xfeed), &oid, &crc));
  EXPECT_EQ(oid, 0xfeedu);
  EXPECT_FALSE(crc);
  ASSERT_TRUE(ParseObjectName("00000000000000ff.crc", &oid, &crc));
  EXPECT_EQ(oid, 0xffu);
  EXPECT_TRUE(crc);
}

TEST(OstDirTest, OtherNamesAreNotObjects) {
  uint64_t oid = 0;
  bool crc = false;
  for (const char* name : {"", ".", "..", "00000000000000FF", "000000000000000",
                           "00000000000000ffx", "00000000000000ff.gone", "00000000000000ff.crcx",
                           "ost_uuid"}) {
    EXPECT_FALSE(ParseObjectName(name, &oid, &crc)) << name;
  }
}

}  // namespace
}  // namespace sfs::ondisk
