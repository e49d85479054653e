// Operations pieces (issue 20): the man pages, the systemd units and the
// Debian packages, checked with the Debian tools an administrator would use.
//   ManPages   groff -man -ww prints no warning for any page, and every flag
//              that a binary's --help prints (each subcommand's too) is in its page.
//   Units      systemd-analyze verify is silent on both units.
//   ConfigFiles the daemons start from TOML config files (a flag wins) and
//              notify a Type=notify unit's socket; mistakes name file and line.
//   Packages   scripts/package-deb.sh builds the three packages, lintian finds no
//              error in them; dpkg installs
//              them into an empty root (against this host's package database,
//              so their Depends must be met); the installed binaries run, the
//              installed servers start and stop, the installed units verify
//              and man finds every installed page.
// Paths come from meson (tests/ops/meson.build).
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/harness/subprocess.h"

namespace sfs::testing {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

const std::string kSource = SFS_SOURCE_ROOT;
const std::string kBuild = SFS_BUILD_ROOT;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Ran {
  int status = -1;  // wait status, -1 if it could not run
  std::string output;  // stdout and stderr
  bool ok() const { return status == 0; }
};

// Runs a shell command line; stdout and stderr together.
Ran Sh(const std::string& cmd, seconds timeout = seconds(60)) {
  static int n = 0;
  std::string log = ::testing::TempDir() + "/ops_test_cmd." + std::to_string(getpid()) + "." +
                    std::to_string(n++);
  Ran r;
  auto st = RunCommand({"/bin/sh", "-c", cmd}, log, timeout);
  if (st.ok()) r.status = *st;
  r.output = ReadFile(log);
  fs::remove(log);
  return r;
}

// Every directory TempDir made, removed when the test program ends.
std::vector<std::string>& MadeDirs() {
  static std::vector<std::string> dirs;
  return dirs;
}
class RemoveTempDirs : public ::testing::Environment {
 public:
  void TearDown() override {
    for (const std::string& d : MadeDirs()) fs::remove_all(d);
  }
};
const auto* const kRemoveTempDirs = ::testing::AddGlobalTestEnvironment(new RemoveTempDirs);

std::string TempDir(const std::string& tag) {
  std::string tmpl = ::testing::TempDir() + "/sfs_ops_" + tag + "_XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  char* d = mkdtemp(buf.data());
  EXPECT_NE(d, nullptr);
  if (d) MadeDirs().push_back(d);
  return d ? d : "";
}

// The options a --help text names: --long ones, -short ones, and for
// sfs-mount the -o option names (allow_other, read_ahead_kb=...).
std::set<std::string> FlagsIn(const std::string& help, bool mount_options) {
  std::set<std::string> out;
  static const std::regex flag(R"((^|[\s\[(|,])(--?[A-Za-z][A-Za-z0-9_-]*))");
  for (auto it = std::sregex_iterator(help.begin(), help.end(), flag); it != std::sregex_iterator();
       ++it) {
    out.insert((*it)[2]);
  }
  if (mount_options) {
    // "-o name" and the ", name=VALUE" that follows one on the same line.
    static const std::regex opt(R"((-o |, )([a-z][a-z_]+)(?=[=\s]))");
    for (auto it = std::sregex_iterator(help.begin(), help.end(), opt);
         it != std::sregex_iterator(); ++it) {
      if ((*it)[1] == "-o " || it->str().find('_') != std::string::npos) out.insert((*it)[2]);
    }
  }
  return out;
}

// A page's text with roff escapes undone enough to search for flags.
std::string PageText(const std::string& page) {
  std::string s = ReadFile(page);
  s = std::regex_replace(s, std::regex(R"(\\f[BIRP])"), "");
  s = std::regex_replace(s, std::regex(R"(\\-)"), "-");
  s = std::regex_replace(s, std::regex(R"(\\&)"), "");
  // ".BR a , b" and ".BI --flag " N"" put a space between the pieces of one word.
  s = std::regex_replace(s, std::regex(R"(\n\.(B|I|BR|BI|IR|RB|IB|RI) )"), "\n");
  return s;
}

bool Contains(const std::string& text, const std::string& flag) {
  // As a whole word: "-d" must not be found inside "--data".
  std::regex word("(^|[^A-Za-z0-9_-])" + std::regex_replace(flag, std::regex(R"([-])"), R"(\-)") +
                  "([^A-Za-z0-9_-]|$)");
  return std::regex_search(text, word);
}

struct Page {
  std::string file;                    // under dist/man
  std::vector<std::string> help_cmds;  // command lines whose output lists the flags
  bool mount_options = false;
  size_t min_flags = 5;                // fewer found means the extraction broke
};

std::vector<Page> Pages() {
  std::string b = kBuild;
  std::vector<Page> pages = {
      {"sfs-mds.8", {b + "/mds/sfs-mds --help"}},
      {"sfs-oss.8", {b + "/oss/sfs-oss --help"}},
      {"sfs-mount.8", {b + "/client/fuse/sfs-mount --help"}, true},
      {"sfs-bench.1",
       {b + "/tools/sfs-bench --help", b + "/tools/sfs-bench ior --help",
        b + "/tools/sfs-bench mdtest --help", b + "/tools/sfs-bench kv --help"}},
  };
  // sfs-demo has no options: with none its usage line shows.
  pages.push_back({"sfs-demo.1", {b + "/client/sfs-demo"}, false, 0});
  Page sfs{"sfs.1", {b + "/tools/sfs --help"}};
  for (const char* c : {"setstripe", "getstripe", "df", "servers", "find", "pool", "migrate",
                        "mirror", "fsck", "stats", "top", "key", "prefetch", "cache", "ost",
                        "rebuild", "scrub", "tenant"}) {
    sfs.help_cmds.push_back(b + "/tools/sfs " + c + " --help");
  }
  pages.push_back(sfs);
  return pages;
}

TEST(ManPages, FormatWithoutWarnings) {
  int checked = 0;
  for (const Page& p : Pages()) {
    std::string path = kSource + "/dist/man/" + p.file;
    Ran r = Sh("groff -man -Tutf8 -ww -z '" + path + "'");
    EXPECT_TRUE(r.ok()) << p.file << ": groff failed: " << r.output;
    EXPECT_EQ(r.output, "") << p.file << ": groff warnings";
    // man(1) itself, as a reader gets it, also warning-free.
    Ran m = Sh("MANWIDTH=80 man --warnings -l '" + path + "' 2>&1 >/dev/null");
    EXPECT_TRUE(m.ok()) << p.file << ": " << m.output;
    EXPECT_EQ(m.output, "") << p.file << ": man warnings";
    ++checked;
  }
  EXPECT_EQ(checked, 6);
  // The checker sees a warning when there is one.
  std::string bad = TempDir("man") + "/bad.1";
  std::ofstream(bad) << ".TH BAD 1\n.SH NAME\nbad \\- x\n.XX unknown macro\n";
  Ran r = Sh("groff -man -Tutf8 -ww -z '" + bad + "'");
  EXPECT_NE(r.output, "") << "groff -ww printed nothing for an unknown macro";
}

TEST(ManPages, EveryHelpFlagIsInItsPage) {
  for (const Page& p : Pages()) {
    std::string text = PageText(kSource + "/dist/man/" + p.file);
    ASSERT_FALSE(text.empty()) << p.file;
    size_t flags = 0;
    for (const std::string& cmd : p.help_cmds) {
      Ran r = Sh(cmd + " 2>&1");
      ASSERT_TRUE(WIFEXITED(r.status)) << cmd;
      if (cmd.ends_with("--help")) EXPECT_EQ(WEXITSTATUS(r.status), 0) << cmd << " must exit 0";
      ASSERT_NE(r.output.find("usage:"), std::string::npos) << cmd << ": " << r.output;
      for (const std::string& f : FlagsIn(r.output, p.mount_options)) {
        ++flags;
        EXPECT_TRUE(Contains(text, f)) << p.file << " does not mention " << f << " (from `"
                                       << cmd << "`)";
      }
    }
    EXPECT_GE(flags, p.min_flags) << p.file << ": too few flags found in --help; is the regex broken?";
  }
}

// A unit, with ExecStart pointed at `bindir`, checked by systemd-analyze with
// the pages under `manpath` (Documentation=man:... is checked too).
Ran VerifyUnits(const std::vector<std::string>& units, const std::string& from_bindir,
                const std::string& to_bindir, const std::string& manpath) {
  std::string dir = TempDir("units");
  std::string args;
  for (const std::string& u : units) {
    std::string text = ReadFile(u);
    EXPECT_NE(text.find(from_bindir + "/sfs-"), std::string::npos) << u;
    text = std::regex_replace(text, std::regex(from_bindir + "/sfs-"), to_bindir + "/sfs-");
    std::string name = fs::path(u).filename();
    std::ofstream(dir + "/" + name) << text;
    // A template is verified as an instance of itself.
    if (name.find("@.") != std::string::npos) name.replace(name.find("@."), 2, "@test.");
    args += " '" + dir + "/" + name + "'";
  }
  return Sh("MANPATH='" + manpath + "' systemd-analyze verify" + args + " 2>&1");
}

bool HaveSystemdAnalyze() { return Sh("command -v systemd-analyze").ok(); }

TEST(Units, VerifyCleanly) {
  if (!HaveSystemdAnalyze()) {
    GTEST_SKIP() << "systemd-analyze not found (Debian package systemd; scripts/install-deps.sh)";
  }
  // The units meson configured for this build, ExecStart at the build's binaries.
  std::string prefix_bin = ReadFile(kBuild + "/dist/sfs-mds.service");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(prefix_bin, m, std::regex(R"(ExecStart=(\S+)/sfs-mds )")));
  std::string bindir = m[1];
  // sfs-mds and sfs-oss live in different build dirs: link them into one.
  std::string bins = TempDir("bin");
  fs::create_symlink(kBuild + "/mds/sfs-mds", bins + "/sfs-mds");
  fs::create_symlink(kBuild + "/oss/sfs-oss", bins + "/sfs-oss");
  std::string man = TempDir("manpath");
  fs::create_directories(man + "/man8");
  for (const char* p : {"sfs-mds.8", "sfs-oss.8"}) {
    fs::copy_file(kSource + "/dist/man/" + p, man + "/man8/" + p);
  }
  Ran r = VerifyUnits({kBuild + "/dist/sfs-mds.service", kBuild + "/dist/sfs-oss@.service"},
                      bindir, bins, man);
  EXPECT_TRUE(r.ok()) << r.output;
  EXPECT_EQ(r.output, "");
  // And it does complain: about a misspelt key, and about a missing binary.
  std::string dir = TempDir("badunit");
  std::ofstream(dir + "/bad.service") << "[Service]\nExecStart=/bin/true\nExecStrat=/x\n";
  EXPECT_NE(Sh("systemd-analyze verify '" + dir + "/bad.service' 2>&1").output, "");
  Ran missing = VerifyUnits({kBuild + "/dist/sfs-mds.service"}, bindir, "/nonexistent", man);
  EXPECT_NE(missing.output, "");
}

// A NOTIFY_SOCKET as systemd makes one for a Type=notify unit: the daemons
// started while it is set send their sd_notify datagrams here.
class NotifySocket {
 public:
  explicit NotifySocket(const std::string& path) : path_(path) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    EXPECT_LT(path.size(), sizeof(addr.sun_path));
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0) << path;
    ::setenv("NOTIFY_SOCKET", path.c_str(), 1);
  }
  ~NotifySocket() {
    ::unsetenv("NOTIFY_SOCKET");
    ::close(fd_);
  }
  // The next datagram, or "" after `timeout` without one.
  std::string Next(seconds timeout) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count() * 1000)) != 1) return "";
    char buf[4096];
    ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  }

 private:
  std::string path_;
  int fd_ = -1;
};

// The daemons take their options from config files (common/config), the
// command line winning, and tell a Type=notify unit when they are ready and
// when they stop.
TEST(ConfigFiles, DaemonsStartFromThemAndNotifySystemd) {
  std::string dir = TempDir("conf");
  NotifySocket notify(dir + "/notify");
  std::ofstream(dir + "/mds.conf") << "# the MDS\ndata = \"" << dir << "/mds\"\n"
                                   << "listen = \"127.0.0.1:0\"\ncommit_interval_ms = 0\n";
  auto mds = Subprocess::Spawn({kBuild + "/mds/sfs-mds", "--config", dir + "/mds.conf"},
                               dir + "/mds.log");
  ASSERT_TRUE(mds.ok()) << mds.status().ToString();
  auto line = (*mds)->ReadLine(std::chrono::seconds(30));
  ASSERT_TRUE(line.ok()) << TailFile(dir + "/mds.log", 20);
  ASSERT_EQ(line->rfind("LISTENING ", 0), 0u) << *line;
  std::string mds_addr = line->substr(10);
  EXPECT_TRUE(fs::exists(dir + "/mds")) << "data = ... from the file was not used";
  std::string ready = notify.Next(seconds(30));
  EXPECT_NE(ready.find("READY=1"), std::string::npos) << "sfs-mds sent: '" << ready << "'";

  // The file's listen address cannot be bound; the command line's wins. Two
  // OSTs come from the file's list.
  std::ofstream(dir + "/oss.conf") << "mds = \"" << mds_addr << "\"\n"
                                   << "ost = [\"" << dir << "/ost0\", \"" << dir << "/ost1\"]\n"
                                   << "listen = \"192.0.2.1:1\"\nheartbeat-ms = 200\n";
  auto oss = Subprocess::Spawn({kBuild + "/oss/sfs-oss", "--listen", "127.0.0.1:0", "--config",
                                dir + "/oss.conf"},
                               dir + "/oss.log");
  ASSERT_TRUE(oss.ok());
  auto oline = (*oss)->ReadLine(std::chrono::seconds(30));
  ASSERT_TRUE(oline.ok()) << TailFile(dir + "/oss.log", 20);
  EXPECT_EQ(oline->rfind("LISTENING 127.0.0.1:", 0), 0u) << *oline;
  ready = notify.Next(seconds(30));
  EXPECT_NE(ready.find("READY=1"), std::string::npos) << "sfs-oss sent: '" << ready << "'";
  EXPECT_NE(ready.find("registered"), std::string::npos) << ready;
  EXPECT_TRUE(fs::exists(dir + "/ost0/ost_uuid") && fs::exists(dir + "/ost1/ost_uuid"));

  int oss_status = (*oss)->Terminate(std::chrono::seconds(20));
  EXPECT_TRUE(WIFEXITED(oss_status) && WEXITSTATUS(oss_status) == 0)
      << DescribeWaitStatus(oss_status);
  EXPECT_NE(notify.Next(seconds(5)).find("STOPPING=1"), std::string::npos);
  int mds_status = (*mds)->Terminate(std::chrono::seconds(20));
  EXPECT_TRUE(WIFEXITED(mds_status) && WEXITSTATUS(mds_status) == 0)
      << DescribeWaitStatus(mds_status);
  EXPECT_NE(notify.Next(seconds(5)).find("STOPPING=1"), std::string::npos);
}

// An unknown key, a bad value, a syntax error or a missing file: one line that
// names the file (and line), exit 2, nothing started.
TEST(ConfigFiles, MistakesAreOneLineNamingFileAndLine) {
  std::string dir = TempDir("badconf");
  struct Case {
    std::string bin, text, want;
  };
  std::vector<Case> cases = {
      {"/mds/sfs-mds", "data = \"" + dir + "/m\"\nlisten = \"127.0.0.1:0\"\nbogus = 1\n",
       dir + "/c.conf:3: unknown flag --bogus"},
      {"/mds/sfs-mds", "data = \"" + dir + "/m\"\nlease-ms = \"soon\"\n",
       dir + "/c.conf:2: bad value for --lease-ms"},
      {"/mds/sfs-mds", "data = \"" + dir + "/m\"\nlisten = \n", dir + "/c.conf:2:"},
      {"/oss/sfs-oss", "mds = \"h:1\"\nworkers = 0\n", dir + "/c.conf:2: bad value for --workers"},
      {"/oss/sfs-oss", "ost = [\"/a\"]\n\ntypo = \"x\"\n", dir + "/c.conf:3: unknown flag --typo"},
      {"/oss/sfs-oss", "[oss]\nmds = \"h:1\"\n", dir + "/c.conf:1: value of oss"},
  };
  for (const Case& c : cases) {
    std::ofstream(dir + "/c.conf", std::ios::trunc) << c.text;
    Ran r = Sh("'" + kBuild + c.bin + "' --config '" + dir + "/c.conf' 2>&1 >/dev/null");
    ASSERT_TRUE(WIFEXITED(r.status)) << c.want;
    EXPECT_EQ(WEXITSTATUS(r.status), 2) << c.want << ": " << r.output;
    std::string first = r.output.substr(0, r.output.find('\n'));
    EXPECT_NE(first.find(c.want), std::string::npos) << "want '" << c.want << "' in: " << first;
  }
  EXPECT_FALSE(fs::exists(dir + "/m")) << "a daemon started despite a bad config file";
  Ran missing = Sh("'" + kBuild + "/mds/sfs-mds' --config '" + dir + "/none.conf' 2>&1");
  EXPECT_EQ(WEXITSTATUS(missing.status), 2);
  EXPECT_NE(missing.output.find(dir + "/none.conf: no such config file"), std::string::npos)
      << missing.output;
}

TEST(Packages, BuildInstallAndRun) {
  // A build dir beside the main one, so that ccache reuses its objects.
  std::string build = fs::path(kBuild).parent_path() / "build-deb";
  std::string out = TempDir("debs");
  Ran made = Sh("NINJA_JOBS=2 '" + kSource + "/scripts/package-deb.sh' --build-dir '" + build +
                    "' --out '" + out + "' 2>&1",
                seconds(1500));
  ASSERT_TRUE(made.ok()) << made.output;

  std::map<std::string, std::vector<std::string>> owns = {
      {"stripefs-server",
       {"./usr/bin/sfs-mds", "./usr/bin/sfs-oss", "./usr/lib/systemd/system/sfs-mds.service",
        "./usr/lib/systemd/system/sfs-oss@.service", "./usr/share/man/man8/sfs-mds.8.gz",
        "./usr/share/man/man8/sfs-oss.8.gz"}},
      {"stripefs-client",
       {"./usr/bin/sfs-mount", "./sbin/mount.fuse.sfs", "./usr/share/man/man8/sfs-mount.8.gz",
        "./usr/share/man/man8/mount.fuse.sfs.8.gz", "./usr/bin/sfs-demo",
        "./usr/share/man/man1/sfs-demo.1.gz"}},
      {"stripefs-tools",
       {"./usr/bin/sfs", "./usr/bin/sfs-bench", "./usr/share/man/man1/sfs.1.gz",
        "./usr/share/man/man1/sfs-bench.1.gz"}},
  };
  std::map<std::string, std::vector<std::string>> depends = {
      {"stripefs-server", {"libc6", "libleveldb1d", "libprotobuf32"}},
      {"stripefs-client", {"libc6", "libfuse3-3", "fuse3"}},
      {"stripefs-tools", {"libc6", "libleveldb1d"}},
  };
  std::string debs;
  for (const auto& [pkg, files] : owns) {
    std::string deb;
    for (const auto& e : fs::directory_iterator(out)) {
      if (e.path().filename().string().rfind(pkg + "_", 0) == 0) deb = e.path();
    }
    ASSERT_FALSE(deb.empty()) << pkg << " not built: " << made.output;
    debs += " '" + deb + "'";
    Ran list = Sh("dpkg-deb -c '" + deb + "'");
    ASSERT_TRUE(list.ok()) << list.output;
    for (const std::string& f : files) {
      EXPECT_TRUE(Contains(list.output, f)) << pkg << " lacks " << f << ":\n" << list.output;
    }
    Ran dep = Sh("dpkg-deb -f '" + deb + "' Depends");
    for (const std::string& d : depends[pkg]) {
      EXPECT_TRUE(Contains(dep.output, d)) << pkg << " Depends lacks " << d << ": " << dep.output;
    }
    EXPECT_TRUE(Contains(Sh("dpkg-deb -f '" + deb + "' Package").output, pkg));
  }
  // lintian, Debian's package checker: no errors (a warning remains: no
  // license is declared yet).
  Ran lint = Sh("lintian --fail-on error" + debs + " 2>&1", seconds(300));
  EXPECT_TRUE(lint.ok()) << "lintian (scripts/install-deps.sh installs it): " << lint.output;
  EXPECT_EQ(lint.output.find("\nE: "), std::string::npos) << lint.output;
  EXPECT_NE(lint.output.rfind("E: ", 0), 0u) << lint.output;
  // apt resolves the three together against this system (no network: their
  // Depends are installed here, as scripts/install-deps.sh installs them).
  Ran apt = Sh("apt-get install -s --no-download" + debs + " 2>&1");
  EXPECT_TRUE(apt.ok()) << apt.output;
  for (const auto& [pkg, files] : owns) {
    EXPECT_TRUE(Contains(apt.output, "Inst " + pkg)) << apt.output;
  }

  // Install into an empty root. Its package database is a copy of this host's
  // status file, so dpkg checks the Depends against real packages (no --force).
  std::string root = TempDir("root");
  fs::create_directories(root + "/var/lib/dpkg/info");
  fs::create_directories(root + "/var/lib/dpkg/updates");
  fs::copy_file("/var/lib/dpkg/status", root + "/var/lib/dpkg/status");
  // As another user than root, dpkg needs telling that an unprivileged install is meant.
  std::string not_root = geteuid() == 0 ? "" : " --force-not-root";
  Ran inst = Sh("dpkg --root='" + root + "' --log=/dev/null" + not_root + " -i" + debs + " 2>&1");
  ASSERT_TRUE(inst.ok()) << inst.output;
  Ran status = Sh("dpkg-query --admindir='" + root + "/var/lib/dpkg' -W -f='${Package} ${Status}\\n'"
                  " 'stripefs-*'");
  for (const auto& [pkg, files] : owns) {
    EXPECT_TRUE(Contains(status.output, pkg + " install ok installed")) << status.output;
    for (const std::string& f : files) EXPECT_TRUE(fs::exists(root + "/" + f.substr(2))) << f;
  }

  // The installed binaries run.
  std::string bin = root + "/usr/bin";
  for (const char* cmd : {"sfs", "sfs-bench", "sfs-mount"}) {
    Ran r = Sh("'" + bin + "/" + cmd + "' --help");
    EXPECT_TRUE(r.ok()) << cmd << ": " << r.output;
    EXPECT_NE(r.output.find("usage:"), std::string::npos) << cmd;
  }
  std::string helper = root + "/sbin/mount.fuse.sfs";
  Ran h = Sh("SFS_MOUNT_BIN='" + bin + "/sfs-mount' '" + helper + "' h:1 /nonexistent -f -o _netdev");
  EXPECT_TRUE(h.ok()) << "mount.fuse.sfs -f (fake mount): " << h.output;
  // The installed servers start, register and stop on SIGTERM.
  std::string data = TempDir("srv");
  auto mds = Subprocess::Spawn({bin + "/sfs-mds", "--data", data + "/mds", "--listen",
                                "127.0.0.1:0"},
                               data + "/mds.log");
  ASSERT_TRUE(mds.ok()) << mds.status().ToString();
  auto line = (*mds)->ReadLine(std::chrono::seconds(30));
  ASSERT_TRUE(line.ok()) << TailFile(data + "/mds.log", 20);
  ASSERT_EQ(line->rfind("LISTENING ", 0), 0u) << *line;
  std::string mds_addr = line->substr(10);
  auto oss = Subprocess::Spawn({bin + "/sfs-oss", "--mds", mds_addr, "--ost", data + "/ost0",
                                "--listen", "127.0.0.1:0"},
                               data + "/oss.log");
  ASSERT_TRUE(oss.ok());
  auto oline = (*oss)->ReadLine(std::chrono::seconds(30));
  ASSERT_TRUE(oline.ok()) << TailFile(data + "/oss.log", 20);
  EXPECT_EQ(oline->rfind("LISTENING ", 0), 0u) << *oline;
  Ran df = Sh("'" + bin + "/sfs' df --mds " + mds_addr);
  EXPECT_TRUE(df.ok()) << df.output;
  EXPECT_NE(df.output.find("filesystem_summary"), std::string::npos) << df.output;
  int oss_status = (*oss)->Terminate(std::chrono::seconds(20));
  int mds_status = (*mds)->Terminate(std::chrono::seconds(20));
  EXPECT_TRUE(WIFEXITED(oss_status) && WEXITSTATUS(oss_status) == 0)
      << DescribeWaitStatus(oss_status);
  EXPECT_TRUE(WIFEXITED(mds_status) && WEXITSTATUS(mds_status) == 0)
      << DescribeWaitStatus(mds_status);

  // man finds every installed page, the mount helper's link included.
  std::string manpath = root + "/usr/share/man";
  for (const char* page : {"sfs", "sfs-bench", "sfs-demo", "sfs-mount", "sfs-mds", "sfs-oss",
                           "mount.fuse.sfs"}) {
    Ran r = Sh("MANPATH='" + manpath + "' MANWIDTH=80 man " + page + " 2>&1");
    EXPECT_TRUE(r.ok()) << page << ": " << r.output;
    EXPECT_NE(r.output.find("NAME"), std::string::npos) << page;
  }
  // The installed units verify, ExecStart at the installed binaries.
  if (HaveSystemdAnalyze()) {
    std::string units = root + "/usr/lib/systemd/system/";
    Ran v = VerifyUnits({units + "sfs-mds.service", units + "sfs-oss@.service"}, "/usr/bin", bin,
                        manpath);
    EXPECT_TRUE(v.ok()) << v.output;
    EXPECT_EQ(v.output, "");
  }
}

}  // namespace
}  // namespace sfs::testing
