// A real StripeFS cluster over RDMA (issue 7): sfs-mds and three sfs-oss
// processes bound to the soft-RoCE address of ../shared/rdma-vm
// ($RDMA_VM_ADDR), each started with a --transport, and a libsfs client in
// this process with Options::transport. Checks that striped data crosses
// RDMA byte for byte, that an auto client falls back to TCP per peer for an
// OSS that only speaks TCP, and that an OSS killed and restarted in the middle
// of a stream gives the application success (after a retry) or EIO, never
// wrong data; and that the KV-cache tier's blocks (libsfs-kv, issue 19) cross
// RDMA whole, one get and a batch over every OSS.
//
// Needs an RDMA device, so it is in meson suite 'rdma' (excluded by default):
//   ../shared/rdma-vm/run meson test -C BUILD --setup rdma --suite rdma
// On failure the tail of every daemon's log is printed.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "client/lib/client.h"
#include "client/lib/kv.h"
#include "common/net/rdma_transport.h"
#include "common/rpc/testing/rdma_test_env.h"

namespace sfs {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

std::string g_host;  // the RDMA interface address

// One daemon: stdout is a pipe (for the LISTENING line), stderr a log file.
class Daemon {
 public:
  Daemon(std::vector<std::string> argv, std::string log) : argv_(std::move(argv)), log_(log) {}
  ~Daemon() { Kill(SIGKILL); }

  // Starts the process and returns the address from its LISTENING line.
  Result<std::string> Start(milliseconds timeout = milliseconds(60000)) {
    int fds[2];
    if (pipe(fds) != 0) return Status::FromErrno("pipe");
    pid_ = fork();
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      dup2(fds[1], 1);
      int err = open(log_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      dup2(err, 2);
      std::vector<char*> args;
      for (std::string& a : argv_) args.push_back(a.data());
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    close(fds[1]);
    std::string line = ReadLine(fds[0], timeout);
    close(fds[0]);
    if (line.rfind("LISTENING ", 0) != 0) {
      return Status(EIO, argv_[0] + " did not print LISTENING; see " + log_);
    }
    return line.substr(10);
  }

  void Kill(int sig) {
    if (pid_ <= 0) return;
    kill(pid_, sig);
    if (sig == SIGKILL || sig == SIGTERM) {
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }

  const std::string& log() const { return log_; }

 private:
  static std::string ReadLine(int fd, milliseconds timeout) {
    std::string out;
    auto deadline = Clock::now() + timeout;
    while (Clock::now() < deadline) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      char c;
      if (read(fd, &c, 1) != 1) break;
      if (c == '\n') return out;
      out.push_back(c);
    }
    return out;
  }

  std::vector<std::string> argv_;
  std::string log_;
  pid_t pid_ = -1;
};

// MDS + OSSes in a temp dir; oss_transport[i] is the --transport of OSS i.
class RdmaCluster {
 public:
  // oss_args: more flags for every OSS.
  Status Start(const std::vector<std::string>& oss_transport,
               std::vector<std::string> oss_args = {}) {
    oss_args_ = std::move(oss_args);
    char tmpl[] = "/tmp/sfs-rdma-cluster-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return Status::FromErrno("mkdtemp");
    root_ = tmpl;
    mds_ = std::make_unique<Daemon>(
        std::vector<std::string>{SFS_MDS_BIN, "--data", root_ + "/mds", "--listen",
                                 g_host + ":0", "--ost-timeout-ms", "2000",
                                 "--transport=rdma"},
        root_ + "/mds.log");
    SFS_ASSIGN_OR_RETURN(mds_addr_, mds_->Start());
    for (size_t i = 0; i < oss_transport.size(); ++i) {
      transports_.push_back(oss_transport[i]);
      oss_.push_back(nullptr);
      oss_addr_.push_back(g_host + ":0");
      SFS_RETURN_IF_ERROR(StartOss(i));
    }
    return WaitAllUp();
  }

  Status StartOss(size_t i) {
    std::string n = std::to_string(i);
    std::vector<std::string> argv{SFS_OSS_BIN, "--mds", mds_addr_, "--ost", root_ + "/ost" + n,
                                  "--listen", oss_addr_[i], "--heartbeat-ms", "200",
                                  "--transport=" + transports_[i]};
    argv.insert(argv.end(), oss_args_.begin(), oss_args_.end());
    oss_[i] = std::make_unique<Daemon>(std::move(argv), root_ + "/oss" + n + ".log");
    SFS_ASSIGN_OR_RETURN(oss_addr_[i], oss_[i]->Start());
    return Status::Ok();
  }
  void KillOss(size_t i) { oss_[i]->Kill(SIGKILL); }

  Result<std::unique_ptr<client::Client>> Connect(client::Transport t,
                                                  milliseconds rpc_timeout = milliseconds(10000)) {
    client::Options o;
    o.mds_address = mds_addr_;
    o.transport = t;
    o.rpc_timeout = rpc_timeout;
    o.connect_timeout = milliseconds(20000);
    return client::Client::Connect(o);
  }

  Status WaitAllUp(milliseconds timeout = milliseconds(60000)) {
    auto deadline = Clock::now() + timeout;
    SFS_ASSIGN_OR_RETURN(auto c, Connect(client::Transport::kTcp));
    while (Clock::now() < deadline) {
      auto osts = c->ListOsts();
      size_t up = 0;
      if (osts.ok()) {
        for (const auto& o : *osts) up += o.up ? 1 : 0;
      }
      if (osts.ok() && up == oss_.size() && osts->size() == oss_.size()) return Status::Ok();
      std::this_thread::sleep_for(milliseconds(100));
    }
    return Status(ETIMEDOUT, "not every OST came up");
  }

  void DumpLogs() {
    std::vector<std::string> logs{mds_ ? mds_->log() : ""};
    for (auto& d : oss_) logs.push_back(d ? d->log() : "");
    for (const std::string& l : logs) {
      std::ifstream in(l);
      std::vector<std::string> lines;
      for (std::string s; std::getline(in, s);) lines.push_back(s);
      std::fprintf(stderr, "---- %s (last 40 lines)\n", l.c_str());
      for (size_t i = lines.size() > 40 ? lines.size() - 40 : 0; i < lines.size(); ++i) {
        std::fprintf(stderr, "%s\n", lines[i].c_str());
      }
    }
  }

  ~RdmaCluster() {
    for (auto& d : oss_) d.reset();
    mds_.reset();
    if (!root_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(root_, ec);
    }
  }

  const std::string& oss_address(size_t i) const { return oss_addr_[i]; }
  const std::string& mds_address() const { return mds_addr_; }

 private:
  std::string root_, mds_addr_;
  std::unique_ptr<Daemon> mds_;
  std::vector<std::unique_ptr<Daemon>> oss_;
  std::vector<std::string> oss_addr_, transports_, oss_args_;
};

const client::Cred kRoot{};

std::vector<uint8_t> Pattern(size_t n, uint64_t seed) {
  std::vector<uint8_t> v(n);
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i < n; i += 8) {
    uint64_t x = rng();
    std::memcpy(&v[i], &x, std::min<size_t>(8, n - i));
  }
  return v;
}

client::LayoutSpec AllOsts(uint64_t stripe_size) {
  client::LayoutSpec l;
  l.stripe_count = -1;
  l.stripe_size = stripe_size;
  return l;
}

class RdmaClusterTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (HasFailure()) cluster_.DumpLogs();
  }

  std::shared_ptr<client::File> NewFile(client::Client& c, const std::string& name) {
    client::LayoutSpec l = AllOsts(64 * 1024);
    auto f = c.Create(kRoot, client::kRootIno, name, 0644, O_RDWR | O_CREAT | O_EXCL, nullptr, &l);
    EXPECT_TRUE(f.ok()) << f.status().ToString();
    return f.ok() ? *f : nullptr;
  }

  // Writes `data` in `chunk` pieces, reads it back whole and in odd pieces.
  void WriteAndVerify(client::Client& c, const std::string& name, const std::vector<uint8_t>& data,
                      size_t chunk) {
    auto f = NewFile(c, name);
    ASSERT_NE(f, nullptr);
    for (size_t off = 0; off < data.size(); off += chunk) {
      size_t n = std::min(chunk, data.size() - off);
      auto w = c.Write(*f, off, std::span(data).subspan(off, n));
      ASSERT_TRUE(w.ok()) << "write at " << off << ": " << w.status().ToString();
    }
    std::vector<uint8_t> back(data.size());
    auto r = c.Read(*f, 0, back);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(*r, data.size());
    ASSERT_TRUE(back == data) << "read back differs";
    size_t off = 12345;
    std::vector<uint8_t> piece(777777);
    r = c.Read(*f, off, piece);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_TRUE(std::equal(piece.begin(), piece.end(), data.begin() + off));
    ASSERT_TRUE(c.Close(f).ok());
  }

  RdmaCluster cluster_;
};

TEST_F(RdmaClusterTest, StripedWritesAndReadsOverRdmaMatchByteForByte) {
  ASSERT_TRUE(cluster_.Start({"rdma", "rdma", "rdma"}).ok());
  auto c = cluster_.Connect(client::Transport::kRdma);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  WriteAndVerify(**c, "big", Pattern(24 << 20, 1), 1 << 20);
  WriteAndVerify(**c, "odd", Pattern((3 << 20) + 4321, 2), 100000);
  auto osts = (*c)->ListOsts();
  ASSERT_TRUE(osts.ok());
  ASSERT_EQ(osts->size(), 3u);
  for (const auto& o : *osts) EXPECT_EQ(o.transport, "rdma") << o.address;
}

TEST_F(RdmaClusterTest, KvBlocksCrossRdmaWholeOneByOneAndInABatch) {
  ASSERT_TRUE(cluster_.Start({"rdma", "rdma", "rdma"}, {"--kv-capacity", "256M"}).ok());
  client::kv::KvOptions o;
  o.mds_address = cluster_.mds_address();
  o.transport = client::Transport::kRdma;
  o.connect_timeout = milliseconds(20000);
  auto kv = client::kv::KvClient::Connect(o);
  ASSERT_TRUE(kv.ok()) << kv.status().ToString();
  ASSERT_EQ((*kv)->osts().size(), 3u);
  constexpr uint64_t kBlock = 1 << 20;
  auto ns = (*kv)->Open("rdma", kBlock);
  ASSERT_TRUE(ns.ok()) << ns.status().ToString();
  constexpr int kBlocks = 48;
  std::vector<std::string> keys;
  std::vector<std::vector<uint8_t>> data, got(kBlocks, std::vector<uint8_t>(kBlock, 0));
  std::vector<client::kv::KvNamespace::PutItem> puts;
  std::vector<client::kv::KvNamespace::GetItem> gets;
  for (int i = 0; i < kBlocks; ++i) keys.push_back("block-" + std::to_string(i));
  for (int i = 0; i < kBlocks; ++i) {
    data.push_back(Pattern(kBlock, 100 + i));
    puts.push_back({{keys[i], ""}, data[i]});
    gets.push_back({{keys[i], ""}, got[i]});
  }
  std::set<uint32_t> used;
  for (const auto& p : puts) used.insert((*kv)->Place(p.id));
  EXPECT_EQ(used.size(), 3u) << "the batch should span every OSS";
  for (const Status& st : (*ns)->MultiPut(puts)) ASSERT_TRUE(st.ok()) << st.ToString();
  std::vector<Result<bool>> hits = (*ns)->MultiGet(gets);
  for (int i = 0; i < kBlocks; ++i) {
    ASSERT_TRUE(hits[i].ok()) << keys[i] << ": " << hits[i].status().ToString();
    EXPECT_TRUE(*hits[i]) << keys[i];
    EXPECT_TRUE(got[i] == data[i]) << keys[i] << " differs";
  }
  std::vector<uint8_t> one(kBlock, 0);
  auto hit = (*ns)->GetInto({keys[7], ""}, one);
  ASSERT_TRUE(hit.ok()) << hit.status().ToString();
  EXPECT_TRUE(*hit);
  EXPECT_TRUE(one == data[7]);
  auto miss = (*ns)->GetInto({"absent", ""}, one);
  ASSERT_TRUE(miss.ok()) << miss.status().ToString();
  EXPECT_FALSE(*miss);
}

TEST_F(RdmaClusterTest, AutoClientFallsBackToTcpForTheOssThatOnlySpeaksTcp) {
  ASSERT_TRUE(cluster_.Start({"rdma", "rdma", "tcp"}).ok());
  auto c = cluster_.Connect(client::Transport::kAuto);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  auto osts = (*c)->ListOsts();
  ASSERT_TRUE(osts.ok());
  for (const auto& o : *osts) {
    EXPECT_EQ(o.transport, o.address == cluster_.oss_address(2) ? "tcp" : "rdma") << o.address;
  }
  WriteAndVerify(**c, "mixed", Pattern(16 << 20, 3), 1 << 20);
}

TEST_F(RdmaClusterTest, OssRestartedMidStreamGivesSuccessOrEioNeverWrongData) {
  ASSERT_TRUE(cluster_.Start({"rdma", "rdma", "rdma"}).ok());
  auto cr = cluster_.Connect(client::Transport::kRdma, milliseconds(3000));
  ASSERT_TRUE(cr.ok()) << cr.status().ToString();
  client::Client& c = **cr;
  constexpr size_t kChunk = 256 * 1024, kChunks = 32;
  auto stable = Pattern(2 << 20, 4);  // read during the outage
  WriteAndVerify(c, "stable", stable, 1 << 20);
  auto stable_attr = c.Lookup(kRoot, client::kRootIno, "stable");
  ASSERT_TRUE(stable_attr.ok());
  uint64_t stable_ino = stable_attr->ino;
  auto f = NewFile(c, "stream");
  ASSERT_NE(f, nullptr);
  std::vector<std::vector<uint8_t>> want(kChunks);
  std::vector<bool> failed(kChunks, false);
  std::atomic<size_t> written{0};
  std::atomic<int> bad_codes{0}, eio{0};
  std::thread writer([&] {
    for (size_t i = 0; i < kChunks; ++i) {
      want[i] = Pattern(kChunk, 100 + i);
      auto w = c.Write(*f, i * kChunk, want[i]);
      failed[i] = !w.ok();
      if (!w.ok()) (w.status().code() == EIO ? eio : bad_codes)++;
      written = i + 1;
      std::this_thread::sleep_for(milliseconds(50));
    }
  });
  while (written < 6) std::this_thread::sleep_for(milliseconds(10));
  cluster_.KillOss(1);
  // A read during the outage: the whole file or EIO, never other bytes.
  auto g = c.Open(kRoot, stable_ino, O_RDONLY, nullptr);
  std::vector<uint8_t> back(stable.size());
  if (g.ok()) {
    auto r = c.Read(**g, 0, back);
    if (r.ok()) {
      EXPECT_TRUE(back == stable) << "wrong data read during the outage";
    } else {
      EXPECT_EQ(r.status().code(), EIO) << r.status().ToString();
    }
    (void)c.Close(*g);
  }
  std::this_thread::sleep_for(milliseconds(1000));
  ASSERT_TRUE(cluster_.StartOss(1).ok());
  writer.join();
  EXPECT_EQ(bad_codes.load(), 0) << "a write failed with something other than EIO";
  ASSERT_TRUE(cluster_.WaitAllUp().ok());
  // The application retries what failed; every retry succeeds now.
  for (size_t i = 0; i < kChunks; ++i) {
    if (!failed[i]) continue;
    auto w = c.Write(*f, i * kChunk, want[i]);
    ASSERT_TRUE(w.ok()) << "retry of chunk " << i << ": " << w.status().ToString();
  }
  std::vector<uint8_t> all(kChunk * kChunks);
  auto r = c.Read(*f, 0, all);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  for (size_t i = 0; i < kChunks; ++i) {
    ASSERT_TRUE(std::equal(want[i].begin(), want[i].end(), all.begin() + i * kChunk))
        << "chunk " << i << " differs";
  }
  std::fprintf(stderr, "restart test: %d of %zu writes saw EIO and were retried\n", eio.load(),
               kChunks);
  EXPECT_TRUE(c.Close(f).ok());
}

}  // namespace
}  // namespace sfs

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const char* addr = sfs::rpc::test_support::RdmaTestAddress("rdma_cluster_test");
  if (addr == nullptr) return 1;
  sfs::g_host = addr;
  signal(SIGPIPE, SIG_IGN);
  return RUN_ALL_TESTS();
}
