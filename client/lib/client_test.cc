// Unit tests of libsfs's pure helpers (no servers): ParseSize and Attr::ToStat.
// The end-to-end behaviour (real sfs-mds + sfs-oss) is tested in tests/.
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <gtest/gtest.h>

#include "client/lib/client.h"

namespace sfs::client {
namespace {

uint64_t Parsed(std::string_view s) {
  Result<uint64_t> r = ParseSize(s);
  EXPECT_TRUE(r.ok()) << s << ": " << r.status().ToString();
  return r.ok() ? *r : 0;
}

TEST(ParseSizeTest, PlainNumbersAreBytes) {
  EXPECT_EQ(Parsed("4096"), 4096u);
  EXPECT_EQ(Parsed("0"), 0u);
  EXPECT_EQ(Parsed("4096B"), 4096u);
}

TEST(ParseSizeTest, UnitLettersAreBinaryInAnyCase) {
  EXPECT_EQ(Parsed("64K"), 64u << 10);
  EXPECT_EQ(Parsed("64k"), 64u << 10);
  EXPECT_EQ(Parsed("1M"), 1u << 20);
  EXPECT_EQ(Parsed("2G"), 2ull << 30);
  EXPECT_EQ(Parsed("3t"), 3ull << 40);
}

TEST(ParseSizeTest, TrailingBOrIbIsAccepted) {
  EXPECT_EQ(Parsed("64KB"), 64u << 10);
  EXPECT_EQ(Parsed("1MiB"), 1u << 20);
  EXPECT_EQ(Parsed("1mib"), 1u << 20);
  EXPECT_EQ(Parsed("2Gb"), 2ull << 30);
}

TEST(ParseSizeTest, JunkIsEinval) {
  for (std::string_view s : {"", "K", "-1", "1.5M", "1X", "1MM", "1 M", " 1", "1M ", "1iB",
                             "0x10", "1Mx", "M1"}) {
    Result<uint64_t> r = ParseSize(s);
    EXPECT_FALSE(r.ok()) << "'" << s << "'";
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), EINVAL) << s;
    }
  }
}

TEST(ParseSizeTest, OverflowIsEinval) {
  EXPECT_EQ(Parsed("18446744073709551615"), UINT64_MAX);
  EXPECT_EQ(ParseSize("18446744073709551616").status().code(), EINVAL);
  EXPECT_EQ(ParseSize("16777216T").status().code(), EINVAL);
  EXPECT_EQ(Parsed("16777215T"), 16777215ull << 40);
}

TEST(AttrToStatTest, FillsEveryFieldFromTheAttr) {
  Attr a;
  a.ino = 42;
  a.mode = S_IFREG | 0640;
  a.uid = 1000;
  a.gid = 100;
  a.nlink = 2;
  a.size = 8 << 20;
  a.blocks = 16384;
  a.atime_ns = 1'700'000'000'123'456'789;
  a.mtime_ns = 1'700'000'001'000'000'001;
  a.ctime_ns = 1'700'000'002'999'999'999;
  a.rdev = 0;
  struct stat st = a.ToStat();
  EXPECT_EQ(st.st_ino, 42u);
  EXPECT_EQ(st.st_mode, S_IFREG | 0640u);
  EXPECT_EQ(st.st_uid, 1000u);
  EXPECT_EQ(st.st_gid, 100u);
  EXPECT_EQ(st.st_nlink, 2u);
  EXPECT_EQ(st.st_size, 8 << 20);
  EXPECT_EQ(st.st_blocks, 16384);
  EXPECT_EQ(st.st_blksize, 4096);
  EXPECT_EQ(st.st_atim.tv_sec, 1'700'000'000);
  EXPECT_EQ(st.st_atim.tv_nsec, 123'456'789);
  EXPECT_EQ(st.st_mtim.tv_sec, 1'700'000'001);
  EXPECT_EQ(st.st_mtim.tv_nsec, 1);
  EXPECT_EQ(st.st_ctim.tv_nsec, 999'999'999);
}

TEST(AttrToStatTest, TimesBeforeTheEpochKeepNanosecondsPositive) {
  Attr a;
  a.mtime_ns = -1;  // one nanosecond before 1970
  struct stat st = a.ToStat();
  EXPECT_EQ(st.st_mtim.tv_sec, -1);
  EXPECT_EQ(st.st_mtim.tv_nsec, 999'999'999);
}

TEST(AttrToStatTest, DeviceNumberIsKept) {
  Attr a;
  a.mode = S_IFCHR | 0600;
  a.rdev = makedev(1, 3);
  EXPECT_EQ(a.ToStat().st_rdev, makedev(1, 3));
}

}  // namespace
}  // namespace sfs::client
