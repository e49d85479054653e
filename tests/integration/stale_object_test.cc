// Stale layouts (issue 8): a client that still holds a file's layout after
// the file's objects were destroyed must get ESTALE from its reads and
// writes, never zeros, and its writes must not re-create an object nobody
// would free. Real sfs-mds / sfs-oss processes and two libsfs clients:
// A opens and writes a file, B unlinks it; the MDS drops A's opens after
// --client-timeout-ms (A pings only every 5 s), so the orphan is destroyed
// while A still holds the layout. The test polls the OST directory for the
// object file to go and its tombstone (`tombstones/<oid>.gone`) to appear, then reads
// and writes through A. Online and offline `sfs fsck` are clean afterwards.
#include <fcntl.h>
#include <sys/wait.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/harness/fixture.h"

namespace sfs::testing {
namespace {

using std::chrono::milliseconds;

class StaleObjectTest : public ClusterPerTest {
 protected:
  ClusterOptions Options() override {
    ClusterOptions o;
    o.name = "stale";
    o.num_oss = 2;
    o.client_timeout_ms = 1500;  // below libsfs's 5 s ping period: A's opens get dropped
    return o;
  }
  std::unique_ptr<client::Client> ConnectOrDie() {
    auto c = cluster().Connect();
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(*c) : nullptr;
  }
  // Online fsck with the MDS up, then offline over its data and every OST.
  void ExpectFsckClean() {
    std::string out;
    std::string online = SfsBinary() + " fsck --mds " + cluster().mds_address();
    EXPECT_EQ(RunShell(online, &out), 0) << online << "\n" << out;
    ASSERT_TRUE(cluster().KillMds(SIGTERM).ok());
    std::string offline = SfsBinary() + " fsck --mds-data " + cluster().root() + "/mds";
    for (int i = 0; i < cluster().num_oss(); ++i) offline += " --ost " + cluster().ost_dir(i);
    out.clear();
    EXPECT_EQ(RunShell(offline, &out), 0) << offline << "\n" << out;
  }
};

TEST_F(StaleObjectTest, ReadAndWriteThroughALayoutWhoseObjectsWereDestroyedAreEstaleNotZeros) {
  auto a = ConnectOrDie();
  auto b = ConnectOrDie();
  ASSERT_TRUE(a && b);
  client::Attr attr;
  client::LayoutSpec two;  // two stripes of 64 KiB: both OSSes hold an object
  two.stripe_count = 2;
  two.stripe_size = 64 * 1024;
  auto f = a->Create(kRoot, 1, "f", 0644, O_CREAT | O_RDWR, &attr, &two);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  std::vector<uint8_t> data(256 * 1024);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7 + 1);
  ASSERT_TRUE(a->Write(**f, 0, data).ok());
  ASSERT_TRUE(a->Fsync(**f, false).ok());
  std::vector<std::string> objects;
  for (const auto& o : (*f)->layout().objects) {
    objects.push_back(cluster().ObjectPath(*a, o.ost, o.oid));
    ASSERT_TRUE(std::filesystem::exists(objects.back())) << objects.back();
  }
  ASSERT_EQ(objects.size(), 2u);

  ASSERT_TRUE(b->Unlink(kRoot, 1, "f").ok());
  // <ost>/objects/XX/<oid> -> <ost>/tombstones/<oid>.gone (docs/formats.md).
  auto tombstone = [](const std::filesystem::path& object) {
    return object.parent_path().parent_path().parent_path() / "tombstones" /
           (object.filename().string() + ".gone");
  };
  bool destroyed = PollUntil(
      [&] {
        for (const auto& p : objects) {
          if (std::filesystem::exists(p) || !std::filesystem::exists(tombstone(p))) return false;
        }
        return true;
      },
      milliseconds(30000), milliseconds(50));
  ASSERT_TRUE(destroyed) << "the unlinked file's objects were not destroyed";

  std::vector<uint8_t> got(data.size(), 0xEE);
  auto r = a->Read(**f, 0, got);
  ASSERT_FALSE(r.ok()) << "read " << *r << " bytes of a destroyed file";
  EXPECT_EQ(r.status().code(), ESTALE) << r.status().ToString();
  auto w = a->Write(**f, 4096, std::span<const uint8_t>(data.data(), 8192));
  ASSERT_FALSE(w.ok()) << "a write to a destroyed object succeeded";
  EXPECT_EQ(w.status().code(), ESTALE) << w.status().ToString();
  auto w2 = a->Write(**f, 64 * 1024, std::span<const uint8_t>(data.data(), 8192));
  EXPECT_EQ(w2.status().code(), ESTALE) << "second stripe";
  for (const auto& p : objects) {
    EXPECT_FALSE(std::filesystem::exists(p)) << "a stale write re-created " << p;
  }
  (void)a->Close(*f);  // the MDS dropped this open already; whatever it answers
  a.reset();
  b.reset();
  ExpectFsckClean();
}

}  // namespace
}  // namespace sfs::testing
