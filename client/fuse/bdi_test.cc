// MountDevice: the device of a mount point, from /proc/self/mountinfo text.
#include "client/fuse/bdi.h"

#include <gtest/gtest.h>

namespace sfs::fuse {
namespace {

constexpr char kInfo[] =
    "22 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
    "36 22 0:40 / /mnt/sfs rw,nosuid - fuse.sfs h:1 rw,user_id=0\n"
    "37 22 0:41 / /mnt/my\\040dir rw - fuse.sfs h:1 rw\n"
    "38 36 0:42 / /mnt/sfs rw - fuse.sfs h:2 rw\n";

TEST(BdiTest, LastMountOnThePathWins) {
  Result<std::string> d = MountDevice(kInfo, "/mnt/sfs");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, "0:42");
}

TEST(BdiTest, EscapedSpacesInMountPointsMatch) {
  Result<std::string> d = MountDevice(kInfo, "/mnt/my dir");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, "0:41");
}

TEST(BdiTest, UnknownMountPointIsEnoent) {
  EXPECT_EQ(MountDevice(kInfo, "/mnt").status().code(), ENOENT);
}

}  // namespace
}  // namespace sfs::fuse
