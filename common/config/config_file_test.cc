#include "common/config/config_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace sfs::config {
namespace {

class ConfigFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sfs-config-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& text) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  static std::vector<std::string> Texts(const std::vector<Arg>& args) {
    std::vector<std::string> out;
    for (const Arg& a : args) out.push_back(a.text);
    return out;
  }

  std::string dir_;
};

TEST_F(ConfigFileTest, EntriesBecomeFlagsInFileOrderWithTheirLines) {
  std::string path = Write("mds.conf",
                           "# comment\n"
                           "data = \"/var/lib/sfs\"\n"
                           "\n"
                           "commit_interval_ms = 0\n"
                           "inline = false\n"
                           "ost = [\"/a\", \"/b\"]\n");
  auto args = ReadConfigFile(path);
  ASSERT_TRUE(args.ok()) << args.status().ToString();
  EXPECT_EQ(Texts(*args), (std::vector<std::string>{"--data=/var/lib/sfs", "--commit-interval-ms=0",
                                                     "--inline=off", "--ost=/a", "--ost=/b"}));
  EXPECT_EQ((*args)[0].origin, path + ":2");
  EXPECT_EQ((*args)[1].origin, path + ":4");
  EXPECT_EQ(Where((*args)[4]), path + ":6: ");
}

TEST_F(ConfigFileTest, SyntaxErrorNamesFileAndLine) {
  std::string path = Write("bad.conf", "listen = \"a:1\"\nthis is not toml\n");
  auto args = ReadConfigFile(path);
  ASSERT_FALSE(args.ok());
  EXPECT_EQ(args.status().code(), EINVAL);
  EXPECT_NE(args.status().message().find(path + ":2: "), std::string::npos)
      << args.status().message();
}

TEST_F(ConfigFileTest, TablesAndFloatsAreRefusedWithTheirLine) {
  std::string path = Write("t.conf", "a = 1\n[section]\nb = 2\n");
  auto args = ReadConfigFile(path);
  ASSERT_FALSE(args.ok());
  EXPECT_NE(args.status().message().find(path + ":2: "), std::string::npos)
      << args.status().message();
  path = Write("f.conf", "a = 1\nlease-ms = 1.5\n");
  args = ReadConfigFile(path);
  ASSERT_FALSE(args.ok());
  EXPECT_NE(args.status().message().find(path + ":2: value of lease-ms"), std::string::npos)
      << args.status().message();
}

TEST_F(ConfigFileTest, MissingNamedFileIsAnErrorMissingDefaultIsNot) {
  const char* argv1[] = {"prog", "--config", "/nonexistent/x.conf", "--listen", "h:1"};
  auto args = ExpandArgs(5, argv1, "");
  ASSERT_FALSE(args.ok());
  EXPECT_EQ(args.status().code(), ENOENT);
  const char* argv2[] = {"prog", "--listen", "h:1"};
  args = ExpandArgs(3, argv2, dir_ + "/absent.conf");
  ASSERT_TRUE(args.ok());
  EXPECT_EQ(Texts(*args), (std::vector<std::string>{"--listen", "h:1"}));
  const char* argv3[] = {"prog", "--config"};
  EXPECT_FALSE(ExpandArgs(2, argv3, "").ok());
}

TEST_F(ConfigFileTest, CommandLineFlagWinsOverTheFileAndReplacesLists) {
  std::string path = Write("oss.conf",
                           "listen = \"0.0.0.0:7701\"\n"
                           "mds = \"m:7700\"\n"
                           "ost = [\"/a\", \"/b\"]\n");
  const char* argv[] = {"prog", "--ost", "/c", "--config=" , "--listen=h:2"};
  std::string config = "--config=" + path;
  argv[3] = config.c_str();
  auto args = ExpandArgs(5, argv, "");
  ASSERT_TRUE(args.ok()) << args.status().ToString();
  EXPECT_EQ(Texts(*args),
            (std::vector<std::string>{"--mds=m:7700", "--ost", "/c", "--listen=h:2"}));
  EXPECT_EQ((*args)[0].origin, path + ":2");
  EXPECT_EQ((*args)[1].origin, "");
}

TEST_F(ConfigFileTest, DefaultFileIsReadWhenPresent) {
  std::string path = Write("mds.conf", "listen = \"h:3\"\n");
  const char* argv[] = {"prog", "--data", "/d"};
  auto args = ExpandArgs(3, argv, path);
  ASSERT_TRUE(args.ok());
  EXPECT_EQ(Texts(*args), (std::vector<std::string>{"--listen=h:3", "--data", "/d"}));
}

}  // namespace
}  // namespace sfs::config
