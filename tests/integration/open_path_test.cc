// Open by path (issue 18; mds.proto OpenPathReq, Client::OpenPath) on a real
// cluster: one sfs-mds with GET /metrics, four sfs-oss and a FUSE mount.
// Asserts that an open costs one MDS request whatever the depth (the MDS's
// own sfs_mds_requests_total), and that it behaves as the lookup per name
// and open it replaces: a rename or unlink made by another client (a second
// libsfs client, the mount) is seen by the next open; ENOTDIR, ENOENT,
// EACCES (a non-root uid without search permission), ENAMETOOLONG and a
// tenant's fileset ("..": no way out) answer as ResolvePath then Open do.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "client/lib/client.h"
#include "common/metrics/http_server.h"
#include "tests/harness/fixture.h"
#include "tests/integration/exposition.h"

namespace sfs::testing {
namespace {

namespace fs = std::filesystem;

class OpenPathTest : public MountedTest<OpenPathTest> {
 public:
  static ClusterOptions Options() {
    ClusterOptions o;
    o.name = "open-path";
    o.num_oss = 4;  // MountedTest stripes its directories 4 wide
    o.metrics = true;
    return o;
  }

 protected:
  // MDS requests of the ops an open may cost, so far.
  double OpenishRequests() {
    Result<std::string> m = metrics::HttpGet(cluster().mds_metrics_address(), "/metrics");
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    double sum = 0;
    for (const char* op : {"lookup", "getattr", "open", "open_path", "create", "readdir"}) {
      sum += Sample(m.ok() ? *m : "", std::string("sfs_mds_requests_total{op=\"") + op + "\"}");
    }
    return sum;
  }
  static void Put(const std::string& path, const std::string& text) {
    std::ofstream(path) << text;
  }
  // The file's bytes through c (at most 64), or "" if it does not open.
  static std::string Content(client::Client& c, const std::shared_ptr<client::File>& f) {
    std::string buf(64, '\0');
    auto n = c.Read(*f, 0, {reinterpret_cast<uint8_t*>(buf.data()), buf.size()});
    EXPECT_TRUE(n.ok()) << n.status().ToString();
    buf.resize(n.ok() ? *n : 0);
    return buf;
  }
  // errno of c.OpenPath(path) (0: opened; the file's bytes in *text).
  static int ByPath(client::Client& c, const client::Cred& cred, const std::string& path,
                    std::string* text = nullptr) {
    client::Attr a;
    auto f = c.OpenPath(cred, path, O_RDONLY, &a);
    if (!f.ok()) return f.status().code();
    if (text != nullptr) *text = Content(c, *f);
    EXPECT_TRUE(c.Close(*f).ok());
    return 0;
  }
  // errno of the reference: a lookup per name, then an open of the inode.
  static int ByLookups(client::Client& c, const client::Cred& cred, const std::string& path) {
    auto a = c.ResolvePath(cred, path);
    if (!a.ok()) return a.status().code();
    client::Attr attr;
    auto f = c.Open(cred, a->ino, O_RDONLY, &attr);
    if (!f.ok()) return f.status().code();
    EXPECT_TRUE(c.Close(*f).ok());
    return 0;
  }
};

TEST_F(OpenPathTest, AnOpenOfABCCostsOneMdsRequestWhateverTheDepth) {
  fs::create_directories(P("a/b"));
  Put(P("a/b/c"), "abc");
  client::Attr attr;
  double before = OpenishRequests();
  auto f = client().OpenPath(kRoot, rel_ + "/a/b/c", O_RDONLY, &attr);
  double after = OpenishRequests();
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(after - before, 1.0) << "one open_path, no lookup: " << rel_ << "/a/b/c is 4 names";
  EXPECT_EQ(Content(client(), *f), "abc");
  EXPECT_TRUE(client().Close(*f).ok());
  // The reference walk costs a request per name and one for the open.
  before = OpenishRequests();
  EXPECT_EQ(ByLookups(client(), kRoot, rel_ + "/a/b/c"), 0);
  EXPECT_EQ(OpenishRequests() - before, 5.0);
}

TEST_F(OpenPathTest, ARenameOrUnlinkByAnotherClientIsSeenAtTheNextOpen) {
  Put(P("x"), "old");
  Put(P("y"), "new");
  auto other = cluster().Connect();
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  std::string text;
  ASSERT_EQ(ByPath(client(), kRoot, rel_ + "/x", &text), 0);
  EXPECT_EQ(text, "old");
  auto dir = (*other)->ResolvePath(kRoot, rel_);
  ASSERT_TRUE(dir.ok());
  ASSERT_TRUE((*other)->Rename(kRoot, dir->ino, "y", dir->ino, "x", 0).ok());
  ASSERT_EQ(ByPath(client(), kRoot, rel_ + "/x", &text), 0);
  EXPECT_EQ(text, "new") << "the rename by the second client replaced x";
  // Through the mount: x moves away, then its new name goes.
  ASSERT_EQ(std::rename(P("x").c_str(), P("z").c_str()), 0);
  EXPECT_EQ(ByPath(client(), kRoot, rel_ + "/x"), ENOENT);
  ASSERT_EQ(ByPath(client(), kRoot, rel_ + "/z", &text), 0);
  EXPECT_EQ(text, "new");
  ASSERT_EQ(::unlink(P("z").c_str()), 0);
  EXPECT_EQ(ByPath(client(), kRoot, rel_ + "/z"), ENOENT);
}

TEST_F(OpenPathTest, ErrorsAreThoseOfALookupPerNameThenAnOpen) {
  fs::create_directories(P("d"));
  Put(P("d/f"), "f");
  fs::create_directories(P("locked"));
  Put(P("locked/g"), "g");
  ASSERT_EQ(::chmod(P("locked").c_str(), 0700), 0);  // root's; kUser may not search it
  const std::string r = rel_, long_name(256, 'n');
  struct Case {
    std::string path;
    client::Cred cred;
    int want;
  };
  const std::vector<Case> cases = {
      {r + "/d/f", kUser, 0},
      {r + "/d/f/x", kRoot, ENOTDIR},
      {r + "/d/missing/f", kRoot, ENOENT},
      {r + "/d/nothere", kRoot, ENOENT},
      {r + "/locked/g", kUser, EACCES},
      {r + "/locked/g", kRoot, 0},
      {r + "/locked/../d/f", kUser, EACCES},
      {r + "/d/../d/./f", kUser, 0},
      {r + "/d/" + long_name, kRoot, ENAMETOOLONG},
      {r + "/d/f/" + long_name, kRoot, ENAMETOOLONG},
      {r + "/d/" + std::string(255, 'n'), kRoot, ENOENT},
      {r + "/d", kRoot, 0},  // a directory opens read-only (readdir's open)
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ByLookups(client(), c.cred, c.path), c.want) << "lookups: " << c.path.substr(0, 80);
    EXPECT_EQ(ByPath(client(), c.cred, c.path), c.want) << "by path: " << c.path.substr(0, 80);
  }
}

TEST_F(OpenPathTest, ATenantsWalkCannotLeaveItsFileset) {
  fs::create_directories(P("fileset"));
  Put(P("fileset/own.txt"), "mine");
  Put(P("secret.txt"), "not yours");
  const std::string key = cluster().root() + "/open-path-tenant.key";
  std::string out;
  ASSERT_EQ(RunShell(SfsBinary() + " tenant create tp --fileset " + rel_ + "/fileset --key-out " +
                         key + " --mds " + cluster().mds_address() + " 2>&1",
                     &out),
            0)
      << out;
  client::Options o;
  o.mds_address = cluster().mds_address();
  o.tenant = "tp";
  o.keyfile = key;
  auto t = client::Client::Connect(o);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  std::string text;
  for (const char* escape : {"/../secret.txt", "/../../../secret.txt", "/./../secret.txt"}) {
    EXPECT_EQ(ByLookups(**t, kRoot, escape), ENOENT) << escape;
    EXPECT_EQ(ByPath(**t, kRoot, escape), ENOENT) << escape;
  }
  EXPECT_EQ(ByPath(**t, kRoot, rel_ + "/secret.txt"), ENOENT)
      << "the real path is not the tenant's";
  for (const char* own : {"/own.txt", "/../own.txt", "/../../own.txt"}) {
    EXPECT_EQ(ByLookups(**t, kRoot, own), 0) << own;
    ASSERT_EQ(ByPath(**t, kRoot, own, &text), 0) << own;
    EXPECT_EQ(text, "mine") << own;
  }
}

}  // namespace
}  // namespace sfs::testing
