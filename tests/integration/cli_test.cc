// The admin CLI `sfs` against a real cluster (1 MDS, 4 OSS) and a FUSE
// mount: every check runs the sfs binary as an administrator would, parses
// its --json output, and verifies it against an independent source — POSIX
// calls on the mount, libsfs, the OST directories' object files (an object
// lives at <ost>/objects/<oid%256 hex2>/<oid hex16>) and statvfs.
#include <spawn.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "common/crc32c.h"
#include "tests/harness/fixture.h"
#include "tests/integration/mini_json.h"

extern char** environ;

namespace sfs::testing {
namespace {

using std::chrono::milliseconds;

struct SfsRun {
  int exit = -1;
  std::string out, err;
};

class CliTest : public MountedTest<CliTest> {
 public:
  static ClusterOptions Options() {
    ClusterOptions o;
    o.name = "cli";
    return o;
  }

 protected:
  // Runs `sfs args...`; stdout and stderr go through files in the cluster's logs/.
  SfsRun Sfs(std::vector<std::string> args) {
    static int n = 0;
    std::string base = cluster().root() + "/logs/sfs-" + std::to_string(++n);
    args.insert(args.begin(), SfsBinary());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, (base + ".out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, (base + ".err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    SfsRun r;
    pid_t pid;
    if (posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ) == 0) {
      int status = 0;
      waitpid(pid, &status, 0);
      r.exit = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    posix_spawn_file_actions_destroy(&fa);
    ReadFile(base + ".out", &r.out);
    ReadFile(base + ".err", &r.err);
    return r;
  }
  // `sfs args... --json`, expected to succeed; its output parsed.
  Json SfsJson(std::vector<std::string> args) {
    args.push_back("--json");
    SfsRun r = Sfs(args);
    EXPECT_EQ(r.exit, 0) << r.err;
    auto j = Json::Parse(r.out);
    EXPECT_TRUE(j.has_value()) << "not JSON: " << r.out;
    return j.value_or(Json());
  }
  // Expects a failure reported as exactly one line "sfs CMD: ...want...".
  void ExpectOneLineError(const std::vector<std::string>& args, const std::string& want) {
    SfsRun r = Sfs(args);
    EXPECT_NE(r.exit, 0) << args[0];
    EXPECT_EQ(r.err.rfind("sfs ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(want), std::string::npos) << "stderr: " << r.err << "want: " << want;
  }
  static std::set<uint32_t> Osts(const Json& layout) {
    std::set<uint32_t> s;
    for (const Json& o : layout["objects"].arr) s.insert(static_cast<uint32_t>(o["ost"].U64()));
    return s;
  }
  bool ObjectExists(uint32_t ost, uint64_t oid) {
    return access(cluster().ObjectPath(client(), ost, oid).c_str(), F_OK) == 0;
  }
  static std::string Data(size_t n, uint64_t seed) {
    std::mt19937_64 rng(seed);
    auto v = RandomBytes(rng, n);
    return std::string(v.begin(), v.end());
  }
};

TEST_F(CliTest, SetstripeOnDirsAndNewFilesIsShownByGetstripeAndInherited) {
  ASSERT_EQ(mkdir(P("d").c_str(), 0755), 0);
  ASSERT_EQ(Sfs({"setstripe", "-c", "2", "-S", "128K", P("d")}).exit, 0);
  Json d = SfsJson({"getstripe", P("d")});
  EXPECT_EQ(d["stripe_count"].Int(), 2);
  EXPECT_EQ(d["stripe_size"].Int(), 128 * 1024);
  EXPECT_FALSE(d["inherited"].b);
  ASSERT_EQ(mkdir(P("d/sub").c_str(), 0755), 0);
  Json sub = SfsJson({"getstripe", P("d/sub")});
  EXPECT_TRUE(sub["inherited"].b);
  EXPECT_EQ(sub["stripe_count"].Int(), 2);
  ASSERT_TRUE(WriteFile(P("d/sub/f"), "hello"));
  Json f = SfsJson({"getstripe", P("d/sub/f")});
  EXPECT_EQ(f["stripe_size"].Int(), 128 * 1024);
  EXPECT_EQ(Osts(f).size(), 2u);
  ASSERT_EQ(Sfs({"setstripe", "-c", "3", "-S", "1M", P("new")}).exit, 0);
  struct stat st;
  ASSERT_EQ(stat(P("new").c_str(), &st), 0) << "setstripe creates the file";
  Json n = SfsJson({"getstripe", P("new")});
  EXPECT_EQ(n["stripe_count"].Int(), 3);
  EXPECT_EQ(Osts(n).size(), 3u);
}

TEST_F(CliTest, FilesCreatedUnderAPoolUseOnlyThatPoolsOsts) {
  std::string pool = "p" + std::to_string(getpid());
  ASSERT_EQ(Sfs({"pool", "create", pool, "-m", dir_}).exit, 0);
  ASSERT_EQ(Sfs({"pool", "add", pool, "1", "OST0003", "-m", dir_}).exit, 0);
  Json list = SfsJson({"pool", "list", pool, "-m", dir_});
  ASSERT_EQ(list["pools"].arr.size(), 1u);
  EXPECT_EQ(list["pools"].arr[0]["osts"].arr.size(), 2u);
  ASSERT_EQ(mkdir(P("fast").c_str(), 0755), 0);
  ASSERT_EQ(Sfs({"setstripe", "-p", pool, "-c", "2", "-S", "64K", P("fast")}).exit, 0);
  for (int i = 0; i < 4; ++i) {
    std::string path = P("fast/f" + std::to_string(i));
    ASSERT_TRUE(WriteFile(path, Data(512 * 1024, i)));
    Json f = SfsJson({"getstripe", path});
    EXPECT_EQ(f["pool"].str, pool);
    EXPECT_EQ(Osts(f), (std::set<uint32_t>{1, 3}));
    for (const Json& o : f["objects"].arr) {
      for (uint32_t ost = 0; ost < 4; ++ost) {
        EXPECT_EQ(ObjectExists(ost, o["oid"].U64()), ost == o["ost"].U64())
            << "object " << o["oid"].U64() << " on OST " << ost;
      }
    }
  }
  ExpectOneLineError({"pool", "destroy", pool, "-m", dir_}, "not empty");
  ASSERT_EQ(Sfs({"pool", "remove", pool, "1", "3", "-m", dir_}).exit, 0);
  EXPECT_EQ(Sfs({"pool", "destroy", pool, "-m", dir_}).exit, 0);
}

// sfs key: a new cluster key is 0600, accepted by the daemons' loader, never
// overwritten; a key others may read is refused with one line.
TEST_F(CliTest, KeyGenerateWritesAnOwnerOnlyKeyOnceAndCheckRefusesAReadableOne) {
  std::string key = cluster().root() + "/cli.key";
  SfsRun made = Sfs({"key", "generate", key});
  ASSERT_EQ(made.exit, 0) << made.err;
  struct stat st;
  ASSERT_EQ(::stat(key.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(st.st_size, 65);  // 64 hex digits and a newline
  SfsRun ok = Sfs({"key", "check", key});
  EXPECT_EQ(ok.exit, 0) << ok.err;
  std::string before;
  ASSERT_TRUE(ReadFile(key, &before));
  ExpectOneLineError({"key", "generate", key}, "File exists");
  std::string after;
  ASSERT_TRUE(ReadFile(key, &after));
  EXPECT_EQ(after, before) << "generate overwrote an existing key";
  ASSERT_EQ(::chmod(key.c_str(), 0644), 0);
  ExpectOneLineError({"key", "check", key}, "group or others");
  EXPECT_EQ(Sfs({"key", "bogus", key}).exit, 2);
}

TEST_F(CliTest, DfTotalsMatchTheOstDirectoriesUsage) {
  Json df = SfsJson({"df", dir_});
  ASSERT_EQ(df["osts"].arr.size(), 4u);
  double total = 0, avail = 0;
  for (int i = 0; i < cluster().num_oss(); ++i) {
    struct statvfs sv;
    ASSERT_EQ(statvfs(cluster().ost_dir(i).c_str(), &sv), 0);
    total += static_cast<double>(sv.f_blocks) * sv.f_frsize;
    avail += static_cast<double>(sv.f_bavail) * sv.f_frsize;
  }
  double margin = std::max(total * 0.02, 256.0 * (1 << 20));
  EXPECT_NEAR(df["summary"]["total"].num, total, margin);
  EXPECT_NEAR(df["summary"]["avail"].num, avail, margin);
  double used = 0;
  for (const Json& o : df["osts"].arr) used += o["used"].num;
  EXPECT_NEAR(df["summary"]["used"].num, used, 1.0);
}

TEST_F(CliTest, FindByOstFindsExactlyTheFilesWithAStripeThere) {
  std::map<uint32_t, std::set<std::string>> want;
  for (int i = 0; i < 8; ++i) {
    std::string path = P("f" + std::to_string(i));
    ASSERT_EQ(Sfs({"setstripe", "-c", std::to_string(1 + i % 3), path}).exit, 0);
    auto a = client().ResolvePath(kRoot, rel_ + "/f" + std::to_string(i));
    ASSERT_TRUE(a.ok());
    auto l = client().GetLayout(kRoot, a->ino);
    ASSERT_TRUE(l.ok());
    for (const auto& o : l->objects) want[o.ost].insert(path);
  }
  for (uint32_t ost = 0; ost < 4; ++ost) {
    SfsRun r = Sfs({"find", dir_, "--ost", std::to_string(ost)});
    ASSERT_EQ(r.exit, 0) << r.err;
    std::set<std::string> got;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) got.insert(line);
    EXPECT_EQ(got, want[ost]) << "OST " << ost;
  }
}

TEST_F(CliTest, MigratePreservesContentAndFreesTheOldObjects) {
  ASSERT_EQ(Sfs({"setstripe", "-c", "1", P("m")}).exit, 0);
  std::string data = Data(3 << 20, 7);
  data.append(2 << 20, '\0');  // a hole in the middle
  data += Data(300 * 1024, 8);
  int fd = open(P("m").c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(pwrite(fd, data.data(), 3 << 20, 0), 3 << 20);
  ASSERT_EQ(pwrite(fd, data.data() + (5 << 20), 300 * 1024, 5 << 20), 300 * 1024);
  ASSERT_EQ(close(fd), 0);
  uint32_t crc = crc32c::Value(data.data(), data.size());
  Json before = SfsJson({"getstripe", P("m")});
  ASSERT_EQ(before["objects"].arr.size(), 1u);
  uint32_t old_ost = static_cast<uint32_t>(before["objects"].arr[0]["ost"].U64());
  uint64_t old_oid = before["objects"].arr[0]["oid"].U64();
  ASSERT_TRUE(ObjectExists(old_ost, old_oid));
  Json after = SfsJson({"migrate", "-c", "4", "-S", "128K", P("m")});
  EXPECT_EQ(after["stripe_count"].Int(), 4);
  EXPECT_EQ(Osts(SfsJson({"getstripe", P("m")})).size(), 4u);
  std::string got;
  ASSERT_TRUE(ReadFile(P("m"), &got));
  EXPECT_EQ(crc32c::Value(got.data(), got.size()), crc);
  EXPECT_TRUE(SameBytes(got, data));
  EXPECT_TRUE(PollUntil([&] { return !ObjectExists(old_ost, old_oid); }, milliseconds(20000)))
      << "the old object is destroyed";
}

TEST_F(CliTest, AReaderThatOpenedBeforeTheMigrationKeepsTheOldObjectsUntilItCloses) {
  ASSERT_EQ(Sfs({"setstripe", "-c", "2", P("r")}).exit, 0);
  std::string data = Data(1 << 20, 9);
  ASSERT_TRUE(WriteFile(P("r"), data));
  auto a = client().ResolvePath(kRoot, rel_ + "/r");
  ASSERT_TRUE(a.ok());
  auto f = client().Open(kRoot, a->ino, O_RDONLY, nullptr);
  ASSERT_TRUE(f.ok());
  ASSERT_EQ(Sfs({"migrate", "-c", "3", P("r")}).exit, 0);
  std::string got(data.size(), 'x');
  auto n = client().Read(**f, 0, {reinterpret_cast<uint8_t*>(got.data()), got.size()});
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_TRUE(SameBytes(got, data)) << "the old objects are still readable";
  auto old = (*f)->layout().objects;
  ASSERT_TRUE(client().Close(*f).ok());
  for (const auto& o : old) {
    EXPECT_TRUE(PollUntil([&] { return !ObjectExists(o.ost, o.oid); }, milliseconds(20000)));
  }
}

TEST_F(CliTest, AFileOpenForWriteIsNotMigrated) {
  ASSERT_TRUE(WriteFile(P("w"), "data"));
  int fd = open(P("w").c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ExpectOneLineError({"migrate", "-c", "2", P("w")}, P("w") + ": file is open for write");
  close(fd);
}

TEST_F(CliTest, BadArgumentsGiveOneLineErrorsAndANonZeroExit) {
  ASSERT_EQ(mkdir(P("d").c_str(), 0755), 0);
  ExpectOneLineError({"setstripe", "-S", "100K", P("d")}, "not a positive multiple of 64K");
  ExpectOneLineError({"setstripe", "-c", "5", P("d")}, P("d") + ": stripe count 5 exceeds");
  ExpectOneLineError({"setstripe", "-p", "nosuchpool", P("d")}, "unknown pool 'nosuchpool'");
  ExpectOneLineError({"setstripe", "-p", "nosuchpool", "-c", "1", P("newf")}, "unknown pool");
  ExpectOneLineError({"getstripe", "/proc/self"}, "/proc/self: not a StripeFS path");
  ASSERT_TRUE(WriteFile(P("f"), "x"));
  ExpectOneLineError({"migrate", "-c", "9", P("f")}, P("f") + ": ");
  ExpectOneLineError({"migrate", "-p", "nosuchpool", P("f")}, "unknown pool");
  ExpectOneLineError({"pool", "add", "nosuchpool", "1", "-m", dir_}, "nosuchpool");
}

TEST_F(CliTest, EverySubcommandHasHelpWithExamples) {
  for (const char* cmd : {"setstripe", "getstripe", "df", "servers", "find", "pool", "migrate"}) {
    SfsRun r = Sfs({cmd, "--help"});
    EXPECT_EQ(r.exit, 0) << cmd;
    EXPECT_NE(r.out.find("examples:"), std::string::npos) << cmd;
  }
}

}  // namespace
}  // namespace sfs::testing
