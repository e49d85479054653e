// ParseMountArgs: our options taken out, the rest handed to libfuse.
#include "client/fuse/mount_args.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace sfs::fuse {
namespace {

Result<MountArgs> Parse(std::vector<const char*> argv) {
  argv.insert(argv.begin(), "sfs-mount");
  return ParseMountArgs(static_cast<int>(argv.size()), argv.data());
}

std::string Joined(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += x + " ";
  return s;
}

TEST(MountArgsTest, AddressAndMountPointAreTheTwoPositionals) {
  Result<MountArgs> a = Parse({"mds:7700", "/mnt/sfs"});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->mds_address, "mds:7700");
  EXPECT_EQ(a->mountpoint, "/mnt/sfs");
  EXPECT_FALSE(a->foreground);
  EXPECT_EQ(a->client.mds_address, "mds:7700");
  EXPECT_EQ(Joined(a->fuse_argv),
            "sfs-mount -o default_permissions,fsname=mds:7700,subtype=sfs ");
}

TEST(MountArgsTest, EveryWorkerIsKeptIdleUnlessMaxIdleThreadsSaysOtherwise) {
  Result<MountArgs> a = Parse({"h:1", "/m"});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->max_idle_threads, a->max_threads);
  a = Parse({"-o", "max_threads=8", "h:1", "/m"});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->max_idle_threads, 8u);
  a = Parse({"-o", "max_threads=8,max_idle_threads=2", "h:1", "/m"});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->max_threads, 8u);
  EXPECT_EQ(a->max_idle_threads, 2u);
}

TEST(MountArgsTest, TenantAndKeyfileGoToTheLibraryTogether) {
  Result<MountArgs> a = Parse({"-o", "tenant=teamA,keyfile=/etc/a.key,ro", "h:1", "/m"});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->client.tenant, "teamA");
  EXPECT_EQ(a->client.keyfile, "/etc/a.key");
  EXPECT_EQ(Joined(a->fuse_argv).find("tenant"), std::string::npos) << "not for libfuse";
  EXPECT_EQ(Joined(a->fuse_argv).find("keyfile"), std::string::npos) << "not for libfuse";
  for (const char* half : {"tenant=teamA", "keyfile=/etc/a.key"}) {
    a = Parse({"-o", half, "h:1", "/m"});
    ASSERT_FALSE(a.ok()) << half;
    EXPECT_EQ(a.status().code(), EINVAL);
    EXPECT_NE(a.status().message().find("go together"), std::string::npos);
  }
  a = Parse({"h:1", "/m"});
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->client.tenant.empty()) << "no tenant: the default tenant, no handshake";
}

TEST(MountArgsTest, CacheReadAheadIsASizeForTheLibraryAndJunkIsRefused) {
  Result<MountArgs> a = Parse({"-o", "cache_ram=1G", "h:1", "/m"});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->client.cache_read_ahead, uint64_t{64} << 20) << "the library's default";
  a = Parse({"-o", "cache_ram=1G,cache_read_ahead=16M", "h:1", "/m"});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->client.cache_read_ahead, uint64_t{16} << 20);
  EXPECT_EQ(Joined(a->fuse_argv).find("read_ahead"), std::string::npos) << "not for libfuse";
  a = Parse({"-o", "cache_read_ahead=0", "h:1", "/m"});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->client.cache_read_ahead, 0u);
  a = Parse({"-o", "cache_read_ahead=lots", "h:1", "/m"});
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), EINVAL);
  EXPECT_NE(a.status().message().find("cache_read_ahead"), std::string::npos);
}

TEST(MountArgsTest, LeasesAreOnByDefaultAndNoleasesTurnsThemOffForMountAndLibrary) {
  Result<MountArgs> a = Parse({"h:1", "/m"});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_TRUE(a->fuse.leases);
  EXPECT_TRUE(a->client.leases);
  a = Parse({"-o", "noleases,ro", "h:1", "/m"});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_FALSE(a->fuse.leases);
  EXPECT_FALSE(a->client.leases);
  EXPECT_EQ(Joined(a->fuse_argv).find("noleases"), std::string::npos) << "not for libfuse";
}

TEST(MountArgsTest, WireFlagsAreOnByDefaultAndNowireflagsTurnsThemOff) {
  Result<MountArgs> a = Parse({"h:1", "/m"});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_TRUE(a->wire_flags);
  a = Parse({"-o", "nowireflags", "h:1", "/m"});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_FALSE(a->wire_flags);
  EXPECT_EQ(Joined(a->fuse_argv).find("nowireflags"), std::string::npos) << "not for libfuse";
}

TEST(MountArgsTest, ReadsAreFourMiBByDefaultAndMaxReadKbIsWholePagesFromOneMiB) {
  Result<MountArgs> a = Parse({"h:1", "/m"});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->max_read_kb, 4096u);
  EXPECT_EQ(a->fuse.max_read, 4u << 20);
  a = Parse({"-o", "max_read_kb=8190", "h:1", "/m"});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->max_read_kb, 8188u);
  EXPECT_EQ(Joined(a->fuse_argv).find("max_read_kb"), std::string::npos) << "not for libfuse";
  a = Parse({"-o", "max_read_kb=64", "h:1", "/m"});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->max_read_kb, 1024u) << "libfuse's own 1 MiB at least";
}

TEST(MountArgsTest, OwnOptionsAreTakenAndOthersPassThrough) {
  Result<MountArgs> a = Parse({"-o", "allow_other,attr_timeout=2.5,rpc_timeout_ms=1500",
                               "h:1", "/m", "-f", "-o", "ro,entry_timeout=0"});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_TRUE(a->foreground);
  EXPECT_DOUBLE_EQ(a->fuse.attr_timeout, 2.5);
  EXPECT_DOUBLE_EQ(a->fuse.entry_timeout, 0.0);
  EXPECT_DOUBLE_EQ(a->fuse.file_attr_timeout, 0.0);
  EXPECT_EQ(a->client.rpc_timeout.count(), 1500);
  EXPECT_EQ(Joined(a->fuse_argv),
            "sfs-mount -o default_permissions,fsname=h:1,subtype=sfs -o allow_other,ro ");
}

TEST(MountArgsTest, DebugImpliesForegroundAndReachesLibfuse) {
  Result<MountArgs> a = Parse({"h:1", "/m", "-d"});
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->debug);
  EXPECT_TRUE(a->foreground);
  EXPECT_NE(Joined(a->fuse_argv).find("-d"), std::string::npos);
}

TEST(MountArgsTest, BadCommandLinesAreEinval) {
  for (const auto& argv : std::vector<std::vector<const char*>>{
           {"h:1"}, {"h:1", "/m", "/x"}, {"nocolon", "/m"}, {"h:port", "/m"},
           {"h:1", "/m", "-z"}, {"h:1", "/m", "-o", "attr_timeout=-1"},
           {"h:1", "/m", "-o", "rpc_timeout_ms=0"}}) {
    Result<MountArgs> a = Parse(argv);
    EXPECT_FALSE(a.ok()) << Joined(std::vector<std::string>(argv.begin(), argv.end()));
    if (!a.ok()) {
      EXPECT_EQ(a.status().code(), EINVAL);
    }
  }
}

TEST(MountArgsTest, TransportOptionReachesLibsfsAndIsNotPassedToLibfuse) {
  Result<MountArgs> a = Parse({"h:1", "/m", "-o", "transport=tcp"});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->client.transport, client::Transport::kTcp);
  EXPECT_EQ(Joined(a->fuse_argv).find("transport"), std::string::npos);
  a = Parse({"h:1", "/m", "-o", "transport=rdma"});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->client.transport, client::Transport::kRdma);
  a = Parse({"h:1", "/m"});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->client.transport, client::Transport::kAuto);
  EXPECT_EQ(Parse({"h:1", "/m", "-o", "transport=ib"}).status().code(), EINVAL);
}

TEST(MountArgsTest, WriteBehindIsOnWithSixteenMibByDefaultAndZeroTurnsItOff) {
  Result<MountArgs> a = Parse({"h:1", "/m"});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->client.write_behind_bytes, 16u << 20);
  a = Parse({"h:1", "/m", "-o", "write_behind_kb=0"});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->client.write_behind_bytes, 0u);
  a = Parse({"h:1", "/m", "-o", "write_behind_kb=512"});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->client.write_behind_bytes, 512u << 10);
  EXPECT_EQ(Joined(a->fuse_argv).find("write_behind"), std::string::npos);
}

TEST(MountArgsTest, ClosesAreDeferredTenMsByDefaultAndZeroMakesThemSynchronous) {
  Result<MountArgs> a = Parse({"h:1", "/m"});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->client.close_delay, std::chrono::milliseconds(10));
  a = Parse({"h:1", "/m", "-o", "close_delay_ms=0"});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->client.close_delay, std::chrono::milliseconds(0));
  EXPECT_EQ(Joined(a->fuse_argv).find("close_delay"), std::string::npos);
}

TEST(MountArgsTest, HelpNeedsNothingElse) {
  Result<MountArgs> a = Parse({"--help"});
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->help);
}

}  // namespace
}  // namespace sfs::fuse

namespace sfs::fuse {
namespace {

// client.conf: -o options as TOML keys, the command line's -o winning.
class MountConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sfs-mount-conf-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/client.conf";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Write(const std::string& text) { std::ofstream(path_, std::ios::trunc) << text; }
  Result<MountArgs> Parse(std::vector<const char*> argv) {
    argv.insert(argv.begin(), "sfs-mount");
    return ParseMountArgsWithConfig(static_cast<int>(argv.size()), argv.data(), path_);
  }
  std::string dir_, path_;
};

TEST_F(MountConfigTest, FileOptionsApplyAndTheCommandLineWins) {
  Write("read_ahead_kb = 8192\nrpc-timeout-ms = 7000\nallow_other = true\nnoleases = false\n"
        "transport = \"tcp\"\n");
  Result<MountArgs> a = Parse({"h:1", "/m", "-o", "rpc_timeout_ms=9000"});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->read_ahead_kb, 8192u);
  EXPECT_EQ(a->client.rpc_timeout, std::chrono::milliseconds(9000));
  EXPECT_TRUE(a->fuse.leases) << "noleases = false must leave leases on";
  EXPECT_EQ(a->client.transport, client::Transport::kTcp);
  EXPECT_NE(Joined(a->fuse_argv).find("allow_other"), std::string::npos) << Joined(a->fuse_argv);
}

TEST_F(MountConfigTest, NoFileIsTheCommandLineAlone) {
  Result<MountArgs> a = Parse({"h:1", "/m"});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->read_ahead_kb, 4096u);
}

TEST_F(MountConfigTest, MistakesNameTheFileAndLine) {
  Write("read_ahead_kb = 8192\nallow_othr = true\n");
  Result<MountArgs> a = Parse({"h:1", "/m"});
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().message(), path_ + ":2: unknown option allow_othr");
  Write("\n\nmax_threads = 0\n");
  a = Parse({"h:1", "/m"});
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().message().rfind(path_ + ":3: ", 0), 0u) << a.status().message();
  Write("transport = \"carrier-pigeon\"\n");
  a = Parse({"h:1", "/m"});
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().message().rfind(path_ + ":1: ", 0), 0u) << a.status().message();
  const char* named[] = {"sfs-mount", "--config", "/nonexistent.conf", "h:1", "/m"};
  EXPECT_EQ(ParseMountArgsWithConfig(5, named, "").status().code(), ENOENT);
}

}  // namespace
}  // namespace sfs::fuse
