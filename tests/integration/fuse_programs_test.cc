// Real programs on a real sfs-mount: tar, diff, git, cp -a and rsync -a.
//
// A source-like tree is generated locally (nested directories, empty, small
// and multi-stripe files, an executable, relative, absolute-free and dangling
// symlinks, a hard link), then moved onto the mount by each program and
// compared with `diff -r --no-dereference` and with a listing of every
// entry's type, mode, size, link target and (for files) mtime. Each
// command's output goes to logs/programs.log in the cluster's temp dir.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "tests/harness/fixture.h"

namespace sfs::testing {
namespace {

namespace fs = std::filesystem;

class FuseProgramsTest : public MountedTest<FuseProgramsTest> {
 public:
  static ClusterOptions Options() {
    ClusterOptions o;
    o.name = "programs";
    return o;
  }

 protected:
  void SetUp() override {
    MountedTest::SetUp();
    if (HasFatalFailure()) return;
    local_ = cluster().root() + "/local-" + TestName();
    ASSERT_NO_FATAL_FAILURE(MakeTree(local_ + "/src"));
  }

  std::string Log() const { return cluster().root() + "/logs/programs.log"; }

  // Runs a shell command line; fails the test with its output's tail otherwise.
  void Sh(const std::string& cmd) {
    {
      std::ofstream(Log(), std::ios::app) << "\n$ " << cmd << "\n";
    }
    auto st = RunCommand({"/bin/sh", "-c", cmd}, Log(), std::chrono::seconds(120));
    ASSERT_TRUE(st.ok()) << cmd << ": " << st.status().ToString();
    ASSERT_EQ(*st, 0) << cmd << " → " << DescribeWaitStatus(*st) << "\n" << TailFile(Log(), 20);
  }

  void MakeTree(const std::string& top) {
    std::mt19937_64 rng(PerTestSeed());
    const std::vector<size_t> sizes = {0, 1, 100, 4095, 4096, 65537, 300000, 1100000};
    for (const char* d : {"", "/lib", "/lib/core", "/lib/core/deep/er/still", "/docs", "/empty"}) {
      fs::create_directories(top + d);
    }
    int n = 0;
    for (const char* d : {"", "/lib", "/lib/core", "/lib/core/deep/er/still", "/docs"}) {
      for (size_t size : sizes) {
        auto bytes = RandomBytes(rng, size);
        std::string path = top + d + "/file" + std::to_string(n++) + ".c";
        ASSERT_TRUE(WriteFile(path, std::string(bytes.begin(), bytes.end())));
      }
    }
    ASSERT_TRUE(WriteFile(top + "/run.sh", "#!/bin/sh\necho hello\n"));
    chmod((top + "/run.sh").c_str(), 0755);
    chmod((top + "/docs/file33.c").c_str(), 0600);
    fs::create_symlink("lib/core", top + "/core-link");
    fs::create_symlink("../file0.c", top + "/lib/up-link");
    fs::create_symlink("does/not/exist", top + "/dangling");
    fs::create_hard_link(top + "/file1.c", top + "/lib/hard-link.c");
  }

  // Every entry below dir: path, type, mode; size and link target (not for
// directories, whose sizes differ between file systems); files' mtimes in
// whole seconds (tar keeps no more).
  std::string Listing(const std::string& dir) {
    std::string out = cluster().root() + "/listing";
    Sh("cd '" + dir + "' && { find . ! -type d -printf '%p %y %m %s %l\\n'; " +
       "find . -type d -printf '%p %y %m\\n'; find . -type f -exec stat -c '%n %Y' {} +; } " +
       "| sort > '" + out + "'");
    std::string s;
    ReadFile(out, &s);
    return s;
  }

  void ExpectSameTree(const std::string& a, const std::string& b) {
    ASSERT_NO_FATAL_FAILURE(Sh("diff -r --no-dereference '" + a + "' '" + b + "'"));
    std::string diff = LinesOnlyIn(Listing(a), Listing(b));
    EXPECT_TRUE(diff.empty()) << "listings differ (- " << a << ", + " << b << "):\n" << diff;
  }

  // The first few lines of `a` that `b` lacks and vice versa, as "-line"/"+line".
  static std::string LinesOnlyIn(const std::string& a, const std::string& b) {
    auto lines = [](const std::string& s) {
      std::set<std::string> out;
      std::istringstream in(s);
      for (std::string l; std::getline(in, l);) out.insert(l);
      return out;
    };
    std::set<std::string> la = lines(a), lb = lines(b);
    std::string diff;
    int minus = 0, plus = 0;
    for (const auto& l : la) {
      if (!lb.count(l) && minus++ < 8) diff += "-" + l + "\n";
    }
    for (const auto& l : lb) {
      if (!la.count(l) && plus++ < 8) diff += "+" + l + "\n";
    }
    return diff;
  }

  std::string local_;
};

TEST_F(FuseProgramsTest, AnUntarredTreeMatchesTheOriginal) {
  Sh("tar -C '" + local_ + "' -cf '" + local_ + "/src.tar' src");
  Sh("tar -C '" + dir_ + "' -xpf '" + local_ + "/src.tar'");
  ExpectSameTree(local_ + "/src", dir_ + "/src");
  Sh("tar -C '" + dir_ + "' -cf '" + local_ + "/back.tar' src");  // and read back by tar
  Sh("mkdir '" + local_ + "/back' && tar -C '" + local_ + "/back' -xpf '" + local_ + "/back.tar'");
  ExpectSameTree(local_ + "/src", local_ + "/back/src");
}

TEST_F(FuseProgramsTest, GitInitAddCommitAndCloneWorkOnTheMount) {
  Sh("cp -a '" + local_ + "/src' '" + dir_ + "/repo'");
  std::string git = "git -c user.name=t -c user.email=t@example.com -c init.defaultBranch=main "
                    "-c safe.directory='*' -C '" + dir_ + "/repo' ";
  Sh(git + "init -q");
  Sh(git + "add -A");
  Sh(git + "commit -q -m 'first commit'");
  Sh("echo change >> '" + dir_ + "/repo/file0.c' && " + git + "commit -q -am second");
  Sh(git + "fsck --strict");
  Sh("test -z \"$(" + git + "status --porcelain)\"");
  Sh("test \"$(" + git + "rev-list --count HEAD)\" = 2");
  Sh("git -c safe.directory='*' clone -q '" + dir_ + "/repo' '" + local_ + "/clone'");
  // git does not track empty directories, so the clone has no empty/.
  Sh("diff -r --no-dereference --exclude=.git --exclude=empty '" + dir_ + "/repo' '" + local_ +
     "/clone'");
}

TEST_F(FuseProgramsTest, CpArchiveCopiesBothWaysKeepTheTree) {
  Sh("cp -a '" + local_ + "/src' '" + dir_ + "/copy'");
  ExpectSameTree(local_ + "/src", dir_ + "/copy");
  Sh("cp -a '" + dir_ + "/copy' '" + local_ + "/back'");
  ExpectSameTree(local_ + "/src", local_ + "/back");
  struct stat a {}, b {};
  ASSERT_EQ(stat((dir_ + "/copy/file1.c").c_str(), &a), 0);
  ASSERT_EQ(stat((dir_ + "/copy/lib/hard-link.c").c_str(), &b), 0);
  EXPECT_EQ(a.st_ino, b.st_ino) << "cp -a keeps hard links";
  EXPECT_EQ(a.st_nlink, 2u);
}

TEST_F(FuseProgramsTest, RsyncArchiveCopiesBothWaysKeepTheTree) {
  Sh("rsync -aH '" + local_ + "/src/' '" + dir_ + "/synced/'");
  ExpectSameTree(local_ + "/src", dir_ + "/synced");
  Sh("rsync -aH '" + dir_ + "/synced/' '" + local_ + "/back/'");
  ExpectSameTree(local_ + "/src", local_ + "/back");
  // A second run finds nothing to do, and an update is transferred.
  Sh("echo update >> '" + local_ + "/src/lib/file8.c'");
  Sh("rsync -aH '" + local_ + "/src/' '" + dir_ + "/synced/'");
  ExpectSameTree(local_ + "/src", dir_ + "/synced");
}

}  // namespace
}  // namespace sfs::testing
