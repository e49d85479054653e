// Tenants (issue 17; docs/security.md) on a real cluster: one sfs-mds, two
// sfs-oss, an admin FUSE mount of the default tenant, and tenants' FUSE
// mounts made with -o tenant=NAME,keyfile=FILE. Asserts that a tenant's mount
// sees its fileset as / and cannot see, open, stat, rename into or guess
// (by inode number, through raw libsfs calls) another tenant's files; that a
// mount without its key, with a wrong, loose or rotated-away key fails with
// a one-line reason; that root squash and uid/gid maps apply; that
// removing a tenant fails its mounts' next requests; and that a mount up
// survives a key rotation (once its key file holds the new key) and an MDS
// restart by making a new handshake by itself.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "client/lib/client.h"
#include "tests/harness/fixture.h"

namespace sfs::testing {
namespace {

namespace fs = std::filesystem;

class TenantTest : public SharedClusterTest<TenantTest> {
 public:
  static ClusterOptions Options() {
    ClusterOptions o;
    o.name = "tenant";
    o.num_oss = 2;
    return o;
  }
  static constexpr int kMounts = 1;  // the admin's, default tenant

 protected:
  std::string Sfs(const std::string& args) {
    return SfsBinary() + " tenant " + args + " --mds " + cluster().mds_address() + " 2>&1";
  }
  std::string KeyPath(const std::string& name) { return cluster().root() + "/" + name + ".key"; }
  // A directory of the admin mount and a tenant over it.
  void MakeTenant(const std::string& name, const std::string& flags = "") {
    fs::create_directories(mount() + "/" + name);
    fs::permissions(mount() + "/" + name, fs::perms::all);
    std::string out;
    ASSERT_EQ(RunShell(Sfs("create " + name + " --fileset /" + name + " " + flags +
                           " --key-out " + KeyPath(name)), &out), 0) << out;
  }
  std::vector<std::string> MountOpts(const std::string& tenant, const std::string& key) {
    return {"tenant=" + tenant, "keyfile=" + key};
  }
  // sfs-mount in the foreground, expected to fail: its exit status and output.
  int FailedMount(const std::string& opts, std::string* out) {
    std::string dir = cluster().root() + "/failed-mnt";
    fs::create_directories(dir);
    return RunShell("timeout 60 " + MountBinary() + " " + cluster().mds_address() + " " + dir +
                    " -f -o " + opts + " 2>&1", out);
  }
  Result<std::unique_ptr<client::Client>> ConnectAs(const std::string& tenant,
                                                    const std::string& key) {
    client::Options o;
    o.mds_address = cluster().mds_address();
    o.tenant = tenant;
    o.keyfile = key;
    return client::Client::Connect(o);
  }
  std::set<std::string> List(const std::string& dir) {
    std::set<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename());
    return names;
  }
  uint64_t InoOf(const std::string& path_in_fs) {  // through the admin's libsfs client
    uint64_t ino = 1;
    std::string rest = path_in_fs;
    size_t pos = 0;
    while (pos < rest.size()) {
      size_t end = rest.find('/', pos);
      if (end == std::string::npos) end = rest.size();
      if (end > pos) {
        auto a = client().Lookup(kRoot, ino, rest.substr(pos, end - pos));
        EXPECT_TRUE(a.ok()) << path_in_fs << ": " << a.status().ToString();
        if (!a.ok()) return 0;
        ino = a->ino;
      }
      pos = end + 1;
    }
    return ino;
  }
};

TEST_F(TenantTest, ATenantSeesOnlyItsFilesetAndCannotReachAnothersFiles) {
  MakeTenant("ta");
  MakeTenant("tb");
  std::ofstream(mount() + "/tb/secret.txt") << "B's data";
  std::ofstream(mount() + "/ta/own.txt") << "A's data";
  struct stat st{};
  ASSERT_EQ(::stat(KeyPath("ta").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u) << "the key file is its owner's only";

  auto ma = cluster().Mount(cluster().root() + "/mnt-ta", MountOpts("ta", KeyPath("ta")));
  ASSERT_TRUE(ma.ok()) << ma.status().ToString();
  auto mb = cluster().Mount(cluster().root() + "/mnt-tb", MountOpts("tb", KeyPath("tb")));
  ASSERT_TRUE(mb.ok()) << mb.status().ToString();
  EXPECT_EQ(List(*ma), std::set<std::string>{"own.txt"});
  EXPECT_EQ(List(*mb), std::set<std::string>{"secret.txt"});
  EXPECT_FALSE(fs::exists(*ma + "/tb")) << "the real root's names are not A's";
  EXPECT_FALSE(fs::exists(*ma + "/secret.txt"));
  // A writes in its fileset; the admin sees it under /ta.
  std::ofstream(*ma + "/new.txt") << "fresh";
  std::string text;
  std::getline(std::ifstream(mount() + "/ta/new.txt"), text);
  EXPECT_EQ(text, "fresh");

  // Raw libsfs calls as tenant A, naming B's inodes by number.
  auto a = ConnectAs("ta", KeyPath("ta"));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  uint64_t b_dir = InoOf("/tb"), b_file = InoOf("/tb/secret.txt"), a_own = InoOf("/ta/own.txt");
  ASSERT_NE(b_file, 0u);
  auto missing = (*a)->GetAttr(kRoot, 1ull << 40);  // no such inode at all
  ASSERT_FALSE(missing.ok());
  for (uint64_t ino : {b_dir, b_file}) {
    auto got = (*a)->GetAttr(kRoot, ino);
    ASSERT_FALSE(got.ok()) << "tenant A stats B's inode " << ino;
    EXPECT_EQ(got.status().code(), ENOENT);
    EXPECT_EQ(got.status().code(), missing.status().code()) << "outside looks like nothing";
    client::Attr attr;
    auto opened = (*a)->Open(kRoot, ino, O_RDONLY, &attr);
    ASSERT_FALSE(opened.ok());
    EXPECT_EQ(opened.status().code(), ENOENT);
  }
  EXPECT_EQ((*a)->Lookup(kRoot, 1, "secret.txt").status().code(), ENOENT);
  auto up = (*a)->Lookup(kRoot, 1, "..");
  ASSERT_TRUE(up.ok()) << up.status().ToString();
  EXPECT_EQ(up->ino, 1u) << "'..' of the fileset is the fileset";
  Status moved = (*a)->Rename(kRoot, 1, "own.txt", b_dir, "stolen", 0);
  EXPECT_EQ(moved.code(), ENOENT) << moved.ToString();
  EXPECT_TRUE(fs::exists(mount() + "/ta/own.txt"));
  EXPECT_FALSE(fs::exists(mount() + "/tb/stolen"));
  auto own = (*a)->GetAttr(kRoot, a_own);
  EXPECT_TRUE(own.ok()) << "A's own inode by number: " << own.status().ToString();
  // Admin requests are not a tenant's.
  EXPECT_EQ((*a)->QosRemove(kRoot, "job:x").code(), EPERM);

  EXPECT_TRUE(cluster().Unmount(*ma).ok());
  EXPECT_TRUE(cluster().Unmount(*mb).ok());
}

TEST_F(TenantTest, AMountWithoutTheKeyOrWithAWrongLooseOrRotatedKeyFailsWithAReason) {
  MakeTenant("tc");
  std::string out;
  EXPECT_NE(FailedMount("tenant=tc", &out), 0);
  EXPECT_NE(out.find("tenant= and keyfile= go together"), std::string::npos) << out;

  ASSERT_EQ(RunShell(SfsBinary() + " key generate " + KeyPath("other") + " 2>&1", &out), 0) << out;
  out.clear();
  EXPECT_NE(FailedMount("tenant=tc,keyfile=" + KeyPath("other"), &out), 0);
  EXPECT_NE(out.find("wrong key"), std::string::npos) << out;

  std::string loose = cluster().root() + "/loose.key";
  fs::copy_file(KeyPath("tc"), loose);
  fs::permissions(loose, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                             fs::perms::others_read);
  out.clear();
  EXPECT_NE(FailedMount("tenant=tc,keyfile=" + loose, &out), 0);
  EXPECT_NE(out.find("group or others"), std::string::npos) << out;

  out.clear();
  EXPECT_NE(FailedMount("tenant=nosuch,keyfile=" + KeyPath("tc"), &out), 0);
  EXPECT_NE(out.find("no tenant 'nosuch'"), std::string::npos) << out;

  // Rotation: the old key is refused, the new one works; --key-out never
  // overwrites a file.
  auto before = ConnectAs("tc", KeyPath("tc"));
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  ASSERT_EQ(RunShell(Sfs("rotate-key tc --key-out " + KeyPath("tc2")), &out), 0) << out;
  out.clear();
  EXPECT_NE(RunShell(Sfs("rotate-key tc --key-out " + KeyPath("tc2")), &out), 0);
  EXPECT_NE(out.find("exists"), std::string::npos) << out;
  out.clear();
  EXPECT_NE(FailedMount("tenant=tc,keyfile=" + KeyPath("tc"), &out), 0);
  EXPECT_NE(out.find("wrong key"), std::string::npos) << out;
  auto after = ConnectAs("tc", KeyPath("tc2"));
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_TRUE((*after)->GetAttr(kRoot, 1).ok());
  auto old_session = (*before)->GetAttr(kRoot, 1);
  EXPECT_EQ(old_session.status().code(), EACCES) << "a session of the old key ends";
  // `sfs tenant show` lists it without its key.
  out.clear();
  ASSERT_EQ(RunShell(Sfs("show tc --json"), &out), 0) << out;
  EXPECT_NE(out.find("\"fileset\":\"/tc\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"key_generation\":2"), std::string::npos) << out;
}

TEST_F(TenantTest, RootIsSquashedAndUidsAndGidsAreMapped) {
  MakeTenant("td", "--squash-root --map-uid 1000:5001 --map-gid 1000:5002");
  auto md = cluster().Mount(cluster().root() + "/mnt-td", MountOpts("td", KeyPath("td")));
  ASSERT_TRUE(md.ok()) << md.status().ToString();
  std::string out;
  ASSERT_EQ(RunShell("touch " + *md + "/by-root 2>&1", &out), 0) << out;
  ASSERT_EQ(RunShell("setpriv --reuid=1000 --regid=1000 --clear-groups touch " + *md +
                     "/by-user 2>&1", &out), 0) << out;
  struct stat st{};
  ASSERT_EQ(::stat((mount() + "/td/by-root").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 65534u) << "root on the tenant's node is nobody on the file system";
  EXPECT_EQ(st.st_gid, 65534u);
  ASSERT_EQ(::stat((mount() + "/td/by-user").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 5001u) << "uid 1000 of the tenant is 5001 on the file system";
  EXPECT_EQ(st.st_gid, 5002u);
  ASSERT_EQ(::stat((*md + "/by-user").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 1000u) << "and shows as 1000 to the tenant";
  EXPECT_EQ(st.st_gid, 1000u);
  // Squashed root may not write where only root may.
  fs::create_directories(mount() + "/td/rootonly");
  fs::permissions(mount() + "/td/rootonly", fs::perms::owner_all);
  EXPECT_NE(RunShell("touch " + *md + "/rootonly/x 2>&1", &out), 0) << out;
  EXPECT_TRUE(cluster().Unmount(*md).ok());
}

TEST_F(TenantTest, RemovingATenantFailsItsMountsNextRequests) {
  MakeTenant("te");
  auto me = cluster().Mount(cluster().root() + "/mnt-te", MountOpts("te", KeyPath("te")));
  ASSERT_TRUE(me.ok()) << me.status().ToString();
  auto c = ConnectAs("te", KeyPath("te"));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_TRUE((*c)->GetAttr(kRoot, 1).ok());
  std::string out;
  ASSERT_EQ(RunShell("touch " + *me + "/before 2>&1", &out), 0) << out;
  ASSERT_EQ(RunShell(Sfs("remove te"), &out), 0) << out;
  auto gone = (*c)->GetAttr(kRoot, 1);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.status().code(), EACCES);
  EXPECT_NE(gone.status().message().find("was removed"), std::string::npos)
      << gone.status().ToString();
  errno = 0;
  EXPECT_NE(::open((*me + "/after").c_str(), O_CREAT | O_WRONLY, 0644), 0);
  EXPECT_EQ(errno, EACCES) << "the FUSE mount's next request";
  out.clear();
  EXPECT_NE(FailedMount("tenant=te,keyfile=" + KeyPath("te"), &out), 0);
  EXPECT_NE(out.find("no tenant 'te'"), std::string::npos) << out;
  EXPECT_TRUE(cluster().Unmount(*me).ok());
}

// Key rotation with a mount up: the mount's session of the old key ends at
// its next request; the mount then reads its key file again and makes a new
// handshake by itself. While the file holds the old key the request is
// EACCES; once the admin installs the new key there, the mount carries on.
TEST_F(TenantTest, AMountUpPicksUpARotatedKeyFromItsKeyFile) {
  MakeTenant("tk");
  const std::string live = cluster().root() + "/tk-live.key";
  fs::copy_file(KeyPath("tk"), live);  // mode 0600 with it
  auto mk = cluster().Mount(cluster().root() + "/mnt-tk", MountOpts("tk", live));
  ASSERT_TRUE(mk.ok()) << mk.status().ToString();
  std::string out;
  ASSERT_EQ(RunShell("echo one > " + *mk + "/before 2>&1", &out), 0) << out;
  ASSERT_EQ(RunShell(Sfs("rotate-key tk --key-out " + KeyPath("tk-new")), &out), 0) << out;

  errno = 0;
  int fd = ::open((*mk + "/refused").c_str(), O_CREAT | O_WRONLY, 0644);
  EXPECT_LT(fd, 0) << "the old key's session went on after rotate-key";
  EXPECT_EQ(errno, EACCES);
  if (fd >= 0) ::close(fd);

  fs::rename(KeyPath("tk-new"), live);  // the admin installs the new key
  ASSERT_EQ(RunShell("echo two > " + *mk + "/after 2>&1", &out), 0) << out;
  std::string text;
  std::getline(std::ifstream(mount() + "/tk/after"), text);
  EXPECT_EQ(text, "two");
  std::getline(std::ifstream(*mk + "/before"), text);
  EXPECT_EQ(text, "one");
  EXPECT_FALSE(fs::exists(mount() + "/tk/refused"));
  EXPECT_TRUE(cluster().Unmount(*mk).ok());
}

// Sessions live in the MDS's memory: after an MDS restart (SIGKILL) a
// tenant's mount authenticates again by itself, replays what the MDS had not
// committed, inside its fileset, and carries on without an error.
TEST_F(TenantTest, AMountCarriesOnAfterAnMdsRestart) {
  MakeTenant("tg");
  auto mg = cluster().Mount(cluster().root() + "/mnt-tg", MountOpts("tg", KeyPath("tg")));
  ASSERT_TRUE(mg.ok()) << mg.status().ToString();
  std::string out;
  ASSERT_EQ(RunShell("mkdir " + *mg + "/d && echo one > " + *mg + "/d/before 2>&1", &out), 0)
      << out;
  ASSERT_TRUE(cluster().KillMds().ok());
  ASSERT_TRUE(cluster().RestartMds().ok());
  ASSERT_EQ(RunShell("echo two > " + *mg + "/d/after && cat " + *mg + "/d/before 2>&1", &out), 0)
      << out;
  EXPECT_NE(out.find("one"), std::string::npos) << out;
  EXPECT_EQ(List(mount() + "/tg/d"), (std::set<std::string>{"after", "before"}))
      << "the tenant's names are in its fileset, and nowhere else";
  EXPECT_FALSE(fs::exists(mount() + "/d"));
  EXPECT_TRUE(cluster().Unmount(*mg).ok());
}

// Last in the suite: while tenants are required, the fixture's default
// client and mount are refused too.
TEST_F(TenantTest, WithTenantsRequiredAClientWithoutATenantIsRefused) {
  fs::create_directories(mount() + "/tf");
  std::string out;
  ASSERT_EQ(RunShell(Sfs("create adm --fileset / --key-out " + KeyPath("adm")), &out), 0) << out;
  MakeTenant("tf");
  ASSERT_EQ(RunShell(Sfs("require on"), &out), 0) << out;
  std::string as_admin = "SFS_TENANT=adm SFS_KEYFILE=" + KeyPath("adm") + " ";
  struct Off {  // whatever fails below, the rest of the suite gets its default tenant back
    std::string cmd;
    ~Off() {
      std::string o;
      RunShell(cmd, &o);
    }
  } off{as_admin + Sfs("require off")};

  auto plain = client().GetAttr(kRoot, 1);
  ASSERT_FALSE(plain.ok()) << "the default tenant is refused";
  EXPECT_EQ(plain.status().code(), EACCES);
  EXPECT_NE(plain.status().message().find("serves tenants only"), std::string::npos)
      << plain.status().ToString();
  out.clear();
  EXPECT_NE(RunShell(Sfs("list"), &out), 0);
  EXPECT_NE(out.find("serves tenants only"), std::string::npos) << out;
  // A tenant still mounts and works; the admin tenant administers.
  auto f = ConnectAs("tf", KeyPath("tf"));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_TRUE((*f)->GetAttr(kRoot, 1).ok());
  EXPECT_EQ((*f)->QosRemove(kRoot, "job:x").code(), EPERM) << "not an admin tenant";
  out.clear();
  ASSERT_EQ(RunShell(as_admin + Sfs("list --json"), &out), 0) << out;
  EXPECT_NE(out.find("\"required\":true"), std::string::npos) << out;
  // A required flag survives an MDS restart (it is a record, not memory).
  ASSERT_TRUE(cluster().KillMds(SIGTERM).ok());
  Status restarted = cluster().RestartMds();
  ASSERT_TRUE(restarted.ok()) << restarted.ToString();
  auto after = ConnectAs("tf", KeyPath("tf"));
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  client::Options o;
  o.mds_address = cluster().mds_address();
  auto anon = client::Client::Connect(o);
  ASSERT_TRUE(anon.ok()) << "ping and the OST map stay open (the OSSes need them)";
  EXPECT_EQ((*anon)->GetAttr(kRoot, 1).status().code(), EACCES);
  out.clear();
  ASSERT_EQ(RunShell(as_admin + Sfs("require off"), &out), 0) << out;
  EXPECT_TRUE((*anon)->GetAttr(kRoot, 1).ok()) << "open again";
}

}  // namespace
}  // namespace sfs::testing
