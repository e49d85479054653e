// Faults against a real cluster, through libsfs: OSSes killed (SIGKILL) or hung
// (SIGSTOP) under an open file, OSSes and the MDS killed and restarted on the
// same port, and garbage bytes thrown at the servers' ports.
//
// What must hold (DESIGN.md "Failure model"): I/O to a dead OSS's stripes
// fails with EIO after the client's rpc timeout and never returns wrong data;
// it works again once the OSS is back; nothing acknowledged (fsync'd data,
// completed namespace operations) is lost by a SIGKILL; bad frames close one
// connection and the servers keep serving.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <random>
#include <span>

#include <gtest/gtest.h>

#include "common/net/frame.h"
#include "common/rpc/rpc.h"
#include "oss.pb.h"
#include "tests/harness/fixture.h"

namespace sfs::testing {
namespace {

using client::Attr;
using client::Client;
using client::File;
using client::LayoutSpec;
using std::chrono::milliseconds;

constexpr uint64_t kKiB = 1024;
constexpr milliseconds kRpcTimeout{1500};

class FaultTest : public ClusterPerTest {
 protected:
  ClusterOptions Options() override {
    ClusterOptions o;
    o.name = "fault";
    o.ost_timeout_ms = 2000;
    return o;
  }

  std::unique_ptr<Client> Connect(milliseconds rpc_timeout = milliseconds(10000)) {
    auto c = cluster().Connect(rpc_timeout);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(*c) : nullptr;
  }

  // Creates name in the root, 4 stripes of 64 KiB, filled with `data`, fsync'd.
  std::shared_ptr<File> CreateFilled(Client& c, const std::string& name,
                                     const std::vector<uint8_t>& data) {
    LayoutSpec l;
    l.stripe_count = 4;
    l.stripe_size = 64 * kKiB;
    Attr attr;
    auto f = c.Create(kRoot, client::kRootIno, name, 0644, O_RDWR | O_CREAT, &attr, &l);
    EXPECT_TRUE(f.ok()) << f.status().ToString();
    if (!f.ok()) return nullptr;
    auto n = c.Write(**f, 0, data);
    EXPECT_TRUE(n.ok()) << n.status().ToString();
    EXPECT_TRUE(c.Fsync(**f, false).ok());
    return *f;
  }

  // What ReadAndCheck returns for a read that came back short: every range
  // read here lies inside the file, so success is all of it.
  static constexpr int kShortRead = -1;

  // Reads [off, off+len); returns 0 iff all len bytes came back, else the
  // errno or kShortRead. Whatever came back must be exactly `want`'s bytes.
  int ReadAndCheck(Client& c, File& f, const std::vector<uint8_t>& want, uint64_t off,
                   uint64_t len) {
    std::vector<uint8_t> got(len);
    auto n = c.Read(f, off, got);
    if (!n.ok()) return n.status().code();
    if (*n > len) {
      ADD_FAILURE() << "read of " << len << " bytes at " << off << " returned " << *n;
      return kShortRead;
    }
    got.resize(*n);
    std::vector<uint8_t> expect(want.begin() + off, want.begin() + off + *n);
    EXPECT_EQ(FirstDifference(got, expect), -1) << "WRONG DATA read at " << off;
    if (*n == len) return 0;
    std::fprintf(stderr, "short read at %llu: %llu of %llu bytes\n",
                 static_cast<unsigned long long>(off), static_cast<unsigned long long>(*n),
                 static_cast<unsigned long long>(len));
    return kShortRead;
  }
};

TEST_F(FaultTest, KilledOssGivesEioForItsStripesOnlyAndRecoversAfterRestart) {
  auto c = Connect(kRpcTimeout);
  ASSERT_TRUE(c);
  std::mt19937_64 rng(PerTestSeed());
  auto data = RandomBytes(rng, 1024 * kKiB);
  auto f = CreateFilled(*c, TestName(), data);
  ASSERT_TRUE(f);
  int victim = cluster().OssOfOst(*c, f->layout().objects[1].ost);
  ASSERT_GE(victim, 0);
  ASSERT_TRUE(cluster().KillOss(victim).ok());

  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(ReadAndCheck(*c, *f, data, 64 * kKiB, 64 * kKiB), EIO);  // stripe 1
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  EXPECT_EQ(ReadAndCheck(*c, *f, data, 0, data.size()), EIO);        // spans stripe 1
  EXPECT_EQ(ReadAndCheck(*c, *f, data, 0, 64 * kKiB), 0);            // stripe 0 still serves
  EXPECT_EQ(c->Write(*f, 64 * kKiB + 10, std::vector<uint8_t>(10, 1)).status().code(), EIO);

  ASSERT_TRUE(cluster().RestartOss(victim).ok());
  EXPECT_TRUE(PollUntil([&] { return ReadAndCheck(*c, *f, data, 0, data.size()) == 0; },
                        std::chrono::seconds(30)))
      << "I/O to the restarted OSS's stripe still fails";
  std::vector<uint8_t> patch(10, 7);
  ASSERT_TRUE(c->Write(*f, 64 * kKiB + 10, patch).ok());
  std::copy(patch.begin(), patch.end(), data.begin() + 64 * kKiB + 10);
  EXPECT_EQ(ReadAndCheck(*c, *f, data, 0, data.size()), 0);
  EXPECT_TRUE(c->Close(f).ok());
}

TEST_F(FaultTest, HungOssGivesEioAfterTheRpcTimeoutAndServesAgainWhenResumed) {
  auto c = Connect(kRpcTimeout);
  ASSERT_TRUE(c);
  std::mt19937_64 rng(PerTestSeed());
  auto data = RandomBytes(rng, 256 * kKiB);
  auto f = CreateFilled(*c, TestName(), data);
  ASSERT_TRUE(f);
  int victim = cluster().OssOfOst(*c, f->layout().objects[2].ost);
  ASSERT_GE(victim, 0);
  ASSERT_TRUE(cluster().KillOss(victim, SIGSTOP).ok());

  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(ReadAndCheck(*c, *f, data, 128 * kKiB, 64 * kKiB), EIO);  // stripe 2
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, kRpcTimeout / 2) << "EIO before the rpc timeout: was the OSS really asked?";
  EXPECT_LT(took, std::chrono::seconds(20)) << "the rpc timeout was not honoured";
  EXPECT_EQ(ReadAndCheck(*c, *f, data, 64 * kKiB, 64 * kKiB), 0);     // stripe 1 still serves

  ASSERT_TRUE(cluster().KillOss(victim, SIGCONT).ok());
  EXPECT_TRUE(PollUntil([&] { return ReadAndCheck(*c, *f, data, 0, data.size()) == 0; },
                        std::chrono::seconds(30)));
  EXPECT_TRUE(c->Close(f).ok());
}

TEST_F(FaultTest, OssesKilledAndRestartedKeepEveryFsyncedByte) {
  auto c = Connect();
  ASSERT_TRUE(c);
  std::mt19937_64 rng(PerTestSeed());
  auto data = RandomBytes(rng, 3 * 1024 * kKiB + 777);
  auto f = CreateFilled(*c, TestName(), data);
  ASSERT_TRUE(f);
  ASSERT_TRUE(c->Close(f).ok());
  for (int i = 0; i < cluster().num_oss(); ++i) ASSERT_TRUE(cluster().KillOss(i).ok());
  for (int i = 0; i < cluster().num_oss(); ++i) ASSERT_TRUE(cluster().RestartOss(i).ok());
  ASSERT_TRUE(cluster().WaitForOstsUp(cluster().num_oss()).ok());

  auto fresh = Connect();
  ASSERT_TRUE(fresh);
  Attr attr;
  auto f2 = fresh->Open(kRoot, f->ino(), O_RDONLY, &attr);
  ASSERT_TRUE(f2.ok()) << f2.status().ToString();
  EXPECT_EQ(attr.size, data.size());
  EXPECT_EQ(ReadAndCheck(*fresh, **f2, data, 0, data.size()), 0);
}

// A set of namespace operations that must all survive an MDS SIGKILL.
void MakeAcknowledgedState(Client& c, const std::vector<uint8_t>& data) {
  using client::kRootIno;
  auto d1 = c.Mkdir(kRoot, kRootIno, "d1", 0750);
  ASSERT_TRUE(d1.ok()) << d1.status().ToString();
  for (int i = 0; i < 20; ++i) {
    Attr a;
    auto f = c.Create(kRoot, d1->ino, "f" + std::to_string(i), 0600 + i % 8, O_RDWR | O_CREAT, &a);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    if (i == 5) {
      ASSERT_TRUE(c.Write(**f, 0, data).ok());
    }
    ASSERT_TRUE(c.Close(*f).ok());
  }
  ASSERT_TRUE(c.Mkdir(kRoot, d1->ino, "sub", 0700).ok());
  ASSERT_TRUE(c.Rename(kRoot, d1->ino, "f0", kRootIno, "moved", 0).ok());
  ASSERT_TRUE(c.Rename(kRoot, d1->ino, "sub", kRootIno, "d2", 0).ok());
  ASSERT_TRUE(c.Unlink(kRoot, d1->ino, "f1").ok());
  ASSERT_TRUE(c.Symlink(kRoot, kRootIno, "link", "d1/f2").ok());
  auto f3 = c.Lookup(kRoot, d1->ino, "f3");
  ASSERT_TRUE(f3.ok());
  ASSERT_TRUE(c.Link(kRoot, f3->ino, kRootIno, "hard").ok());
  ASSERT_TRUE(c.SetXattr(kRoot, f3->ino, "user.k", "v1", 0).ok());
  client::SetAttrArgs chmod;
  chmod.valid = client::kSetMode;
  chmod.mode = 0641;
  ASSERT_TRUE(c.SetAttr(kRoot, f3->ino, chmod).ok());
}

void ExpectAcknowledgedState(Client& c, const std::vector<uint8_t>& data) {
  using client::kRootIno;
  auto d1 = c.Lookup(kRoot, kRootIno, "d1");
  ASSERT_TRUE(d1.ok()) << d1.status().ToString();
  EXPECT_EQ(d1->mode & 07777, 0750u);
  EXPECT_TRUE(c.Lookup(kRoot, kRootIno, "moved").ok());
  EXPECT_EQ(c.Lookup(kRoot, d1->ino, "f0").status().code(), ENOENT);
  EXPECT_EQ(c.Lookup(kRoot, d1->ino, "f1").status().code(), ENOENT);
  EXPECT_EQ(c.Lookup(kRoot, d1->ino, "sub").status().code(), ENOENT);
  auto d2 = c.Lookup(kRoot, kRootIno, "d2");
  ASSERT_TRUE(d2.ok());
  EXPECT_TRUE(S_ISDIR(d2->mode));
  for (int i = 2; i < 20; ++i) EXPECT_TRUE(c.Lookup(kRoot, d1->ino, "f" + std::to_string(i)).ok());
  auto link = c.Lookup(kRoot, kRootIno, "link");
  ASSERT_TRUE(link.ok());
  auto target = c.Readlink(kRoot, link->ino);
  ASSERT_TRUE(target.ok());
  EXPECT_EQ(*target, "d1/f2");
  auto f3 = c.Lookup(kRoot, d1->ino, "f3");
  auto hard = c.Lookup(kRoot, kRootIno, "hard");
  ASSERT_TRUE(f3.ok() && hard.ok());
  EXPECT_EQ(f3->ino, hard->ino);
  EXPECT_EQ(f3->nlink, 2u);
  EXPECT_EQ(f3->mode & 07777, 0641u);
  auto x = c.GetXattr(kRoot, f3->ino, "user.k");
  ASSERT_TRUE(x.ok()) << x.status().ToString();
  EXPECT_EQ(*x, "v1");
  auto f5 = c.Lookup(kRoot, d1->ino, "f5");
  ASSERT_TRUE(f5.ok());
  EXPECT_EQ(f5->size, data.size());
}

TEST_F(FaultTest, MdsKilledAndRestartedKeepsEveryAcknowledgedOperation) {
  auto c = Connect();
  ASSERT_TRUE(c);
  std::mt19937_64 rng(PerTestSeed());
  auto data = RandomBytes(rng, 200 * kKiB + 3);
  ASSERT_NO_FATAL_FAILURE(MakeAcknowledgedState(*c, data));
  ASSERT_TRUE(cluster().KillMds(SIGKILL).ok());
  ASSERT_TRUE(cluster().RestartMds().ok());
  ASSERT_TRUE(cluster().WaitForOstsUp(cluster().num_oss()).ok());

  auto fresh = Connect();
  ASSERT_TRUE(fresh);
  ASSERT_NO_FATAL_FAILURE(ExpectAcknowledgedState(*fresh, data));
  auto d1 = fresh->Lookup(kRoot, client::kRootIno, "d1");
  ASSERT_TRUE(d1.ok());
  auto f5 = fresh->Lookup(kRoot, d1->ino, "f5");
  ASSERT_TRUE(f5.ok());
  Attr attr;
  auto f = fresh->Open(kRoot, f5->ino, O_RDONLY, &attr);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(ReadAndCheck(*fresh, **f, data, 0, data.size()), 0);
  // The client from before the crash carries on too (it reconnects).
  EXPECT_TRUE(c->Mkdir(kRoot, client::kRootIno, "after-restart", 0755).ok());
}

// ---- Garbage on the wire -------------------------------------------------

// A raw TCP connection to "127.0.0.1:port".
int Dial(const std::string& address) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(std::stoi(address.substr(address.rfind(':') + 1))));
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

void SendAll(int fd, const std::vector<uint8_t>& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return;  // the server may close early; that is allowed
    off += static_cast<size_t>(n);
  }
}

// True iff the server closes the connection (EOF or reset) within timeout.
// Any reply bytes before the close are skipped.
bool ServerCloses(int fd, milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    char buf[4096];
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return true;
  }
}

std::vector<uint8_t> Frame(uint16_t service, const std::string& payload) {
  net::FrameHeader h;
  h.service = service;
  h.request_id = 1;
  h.payload_len = static_cast<uint32_t>(payload.size());
  std::span<const uint8_t> p(reinterpret_cast<const uint8_t*>(payload.data()), payload.size());
  return net::EncodeFrame(h, p, {});
}

// One malformed byte stream per case, each on its own connection.
std::vector<std::pair<std::string, std::vector<uint8_t>>> GarbageCases(uint16_t service,
                                                                      std::mt19937_64& rng) {
  std::vector<std::pair<std::string, std::vector<uint8_t>>> cases;
  cases.push_back({"random bytes", RandomBytes(rng, 100000)});
  auto valid = Frame(service, std::string(1000, 'p'));
  cases.push_back({"truncated frame", std::vector<uint8_t>(valid.begin(), valid.begin() + 60)});
  net::FrameHeader big;
  big.service = service;
  big.request_id = 2;
  big.payload_len = net::kMaxPayload + 1;
  big.bulk_len = 0xFFFFFFFFu;
  std::vector<uint8_t> oversized(net::kHeaderSize);
  net::EncodeHeader(big, oversized.data());
  cases.push_back({"oversized lengths", oversized});
  auto bytes = RandomBytes(rng, 300);
  cases.push_back({"garbage payload", Frame(service, std::string(bytes.begin(), bytes.end()))});
  cases.push_back({"unknown service", Frame(77, "x")});
  auto bad_crc = valid;
  bad_crc.back() ^= 0xFF;
  cases.push_back({"payload crc mismatch", bad_crc});
  return cases;
}

class GarbageTest : public FaultTest {
 protected:
  void ThrowGarbageAt(const std::string& address, uint16_t service) {
    std::mt19937_64 rng(PerTestSeed());
    for (auto& [what, bytes] : GarbageCases(service, rng)) {
      int fd = Dial(address);
      ASSERT_GE(fd, 0) << "cannot connect to " << address << " before sending " << what;
      SendAll(fd, bytes);
      if (what != "truncated frame" && what != "garbage payload" && what != "unknown service") {
        EXPECT_TRUE(ServerCloses(fd, milliseconds(10000)))
            << address << " kept the connection open after " << what;
      }
      close(fd);
    }
  }

  // A normal round trip through the MDS and every OSS.
  void ExpectClusterServes() {
    EXPECT_TRUE(cluster().MdsRunning());
    for (int i = 0; i < cluster().num_oss(); ++i) EXPECT_TRUE(cluster().OssRunning(i)) << i;
    auto c = Connect();
    ASSERT_TRUE(c);
    std::mt19937_64 rng(PerTestSeed() + 1);
    auto data = RandomBytes(rng, 512 * kKiB);
    auto f = CreateFilled(*c, "after-" + TestName(), data);
    ASSERT_TRUE(f);
    EXPECT_EQ(ReadAndCheck(*c, *f, data, 0, data.size()), 0);
    EXPECT_TRUE(c->Close(f).ok());
  }
};

TEST_F(GarbageTest, GarbageSentToTheMdsPortLeavesTheClusterServing) {
  ThrowGarbageAt(cluster().mds_address(), rpc::kServiceMds);
  ExpectClusterServes();
}

TEST_F(GarbageTest, GarbageSentToEveryOssPortLeavesTheClusterServing) {
  for (int i = 0; i < cluster().num_oss(); ++i) {
    ThrowGarbageAt(cluster().oss_address(i), rpc::kServiceOss);
  }
  ExpectClusterServes();
}

// Reads one reply frame's header and payload; false on EOF or timeout.
bool ReadReply(int fd, net::FrameHeader* h, std::string* payload) {
  std::vector<uint8_t> buf;
  auto fill = [&](size_t want) {
    while (buf.size() < want) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 10000) <= 0) return false;
      uint8_t tmp[4096];
      ssize_t n = recv(fd, tmp, std::min(sizeof tmp, want - buf.size()), 0);
      if (n <= 0) return false;
      buf.insert(buf.end(), tmp, tmp + n);
    }
    return true;
  };
  if (!fill(net::kHeaderSize)) return false;
  auto dh = net::DecodeHeader(buf.data());
  if (!dh.ok() || !fill(net::kHeaderSize + dh->payload_len)) return false;
  *h = *dh;
  payload->assign(buf.begin() + net::kHeaderSize, buf.end());
  return true;
}

TEST_F(GarbageTest, AnOssRequestWithAnAbsurdLengthGetsEinval) {
  auto c = Connect();
  ASSERT_TRUE(c);
  uint32_t ost = 0;
  while (ost < 16 && cluster().OssOfOst(*c, ost) != 0) ++ost;
  ASSERT_LT(ost, 16u) << "no OST index maps to oss0";
  int fd = Dial(cluster().oss_address(0));
  ASSERT_GE(fd, 0);
  proto::OssRequest req;
  req.set_ost(ost);
  req.set_oid(12345);
  req.mutable_read()->set_offset(0);
  req.mutable_read()->set_length(uint64_t{1} << 40);
  SendAll(fd, Frame(rpc::kServiceOss, req.SerializeAsString()));
  net::FrameHeader h;
  std::string payload;
  bool got = ReadReply(fd, &h, &payload);
  close(fd);
  ASSERT_TRUE(got) << "no reply to a read of 1 TiB";
  proto::OssResponse resp;
  ASSERT_TRUE(resp.ParseFromString(payload));
  EXPECT_EQ(resp.status().code(), EINVAL) << resp.status().message();
  EXPECT_EQ(h.bulk_len, 0u);
  ExpectClusterServes();
}

}  // namespace
}  // namespace sfs::testing
