// The KV-cache tier (issue 19, docs/kv.md) on a real cluster: 1 sfs-mds and
// 2 sfs-oss started with --kv-capacity, driven through libsfs-kv from two
// clients (each its own KvClient: own connections, own OST map) and by raw
// OSS requests for what a client library would refuse to send.
//
// KvTest shares one roomy cluster: byte-exact round trips across clients,
// placement over both OSSes, batched exists, misses, removes, bad input
// (client side and server side, malformed requests included), blocks larger
// than the socket buffers, a block corrupted on disk (a miss, removed: the
// OSS sends blocks unread, the client checks them). KvEvictTest
// gets a cluster per test whose OSSes hold 8 blocks each: whole-group
// eviction, pins and leases that survive it, ENOSPC when only pinned groups
// are left. KvKeyedTest: with a cluster key the OSS refuses kv requests
// without a capability that grants the tier.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <fstream>
#include <future>
#include <iterator>
#include <map>
#include <random>
#include <set>

#include "client/lib/kv.h"
#include "client/lib/kv_c.h"
#include "client/lib/kv_keys.h"
#include "common/auth/capability.h"
#include "common/rpc/rpc.h"
#include "oss.pb.h"
#include "tests/harness/fixture.h"

namespace sfs::testing {
namespace {

using client::kv::BlockId;
using client::kv::KvClient;
using client::kv::KvNamespace;

constexpr uint64_t kBlock = 64 * 1024;

std::vector<uint8_t> Pattern(uint64_t seed, size_t n = kBlock) {
  std::vector<uint8_t> v(n);
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i < n; i += 8) {
    uint64_t x = rng();
    std::memcpy(v.data() + i, &x, std::min<size_t>(8, n - i));
  }
  return v;
}

std::unique_ptr<KvClient> ConnectKv(const TestCluster& c, const std::string& capability = "") {
  client::kv::KvOptions o;
  o.mds_address = c.mds_address();
  o.transport = client::Transport::kTcp;
  o.capability = capability;
  auto kv = KvClient::Connect(o);
  EXPECT_TRUE(kv.ok()) << kv.status().ToString();
  return kv.ok() ? std::move(*kv) : nullptr;
}

std::unique_ptr<KvNamespace> OpenNs(KvClient& kv, const std::string& name, uint64_t bs = kBlock) {
  auto ns = kv.Open(name, bs);
  EXPECT_TRUE(ns.ok()) << ns.status().ToString();
  return ns.ok() ? std::move(*ns) : nullptr;
}

// One raw request to the OSS serving OST index ost.
proto::OssResponse Raw(TestCluster& cluster, client::Client& c, uint32_t ost,
                       proto::OssRequest req, std::span<const uint8_t> bulk = {},
                       std::span<uint8_t> in = {}) {
  auto io = rpc::IoContext::Create(1);
  int oss = cluster.OssOfOst(c, ost);
  EXPECT_GE(oss, 0);
  auto ch = io->MakeTcpChannel(cluster.oss_address(oss < 0 ? 0 : oss));
  req.set_ost(ost);
  rpc::Response resp;
  Status st = ch->Call(rpc::kServiceOss, req.SerializeAsString(), bulk, in, &resp);
  EXPECT_TRUE(st.ok()) << st.ToString();
  proto::OssResponse out;
  EXPECT_TRUE(out.ParseFromString(resp.payload));
  return out;
}

class KvTest : public SharedClusterTest<KvTest> {
 public:
  static ClusterOptions Options() {
    ClusterOptions o;
    o.name = "kv";
    o.num_oss = 2;
    o.oss_args = {"--kv-capacity", "64M"};
    return o;
  }

 protected:
  void SetUp() override {
    SharedClusterTest::SetUp();
    if (HasFatalFailure()) return;
    a_ = ConnectKv(cluster());
    b_ = ConnectKv(cluster());
    ASSERT_TRUE(a_ && b_);
    // One namespace per test: tests share the cluster, not their blocks.
    ns_name_ = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    ns_a_ = OpenNs(*a_, ns_name_);
    ns_b_ = OpenNs(*b_, ns_name_);
    ASSERT_TRUE(ns_a_ && ns_b_);
  }

  std::unique_ptr<KvClient> a_, b_;
  std::string ns_name_;
  std::unique_ptr<KvNamespace> ns_a_, ns_b_;
};

TEST_F(KvTest, PutFromOneClientGetFromAnotherIsByteExact) {
  constexpr int kChunks = 16, kLayers = 4;
  const std::vector<uint32_t> tokens(kChunks * 16, 7);
  client::kv::ChainSpec spec{"tenant", "tiny", "fp32", 16};
  std::vector<client::kv::Hash> chunks = client::kv::ChainKeys(spec, tokens);
  ASSERT_EQ(chunks.size(), static_cast<size_t>(kChunks));
  std::vector<std::string> keys;
  std::vector<std::vector<uint8_t>> data;
  for (int c = 0; c < kChunks; ++c) {
    for (int l = 0; l < kLayers; ++l) {
      keys.push_back(client::kv::BlockKey(chunks[c], l));
      data.push_back(Pattern(c * 100 + l));
    }
  }
  std::vector<KvNamespace::PutItem> puts;
  std::set<uint32_t> osts;
  for (size_t i = 0; i < keys.size(); ++i) {
    BlockId id{keys[i], client::kv::AsBytes(chunks[i / kLayers])};
    puts.push_back({id, data[i]});
    osts.insert(a_->Place(id));
    EXPECT_EQ(a_->Place(id), b_->Place(id)) << "both clients place alike";
  }
  EXPECT_EQ(osts.size(), 2u) << "16 chunks spread over both OSSes";
  for (const Status& st : ns_a_->MultiPut(puts)) ASSERT_TRUE(st.ok()) << st.ToString();

  std::vector<std::vector<uint8_t>> got(keys.size(), std::vector<uint8_t>(kBlock, 0));
  std::vector<KvNamespace::GetItem> gets;
  for (size_t i = 0; i < keys.size(); ++i) gets.push_back({puts[i].id, got[i]});
  std::vector<Result<bool>> r = ns_b_->MultiGet(gets);
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_TRUE(r[i].ok()) << i << ": " << r[i].status().ToString();
    EXPECT_TRUE(*r[i]) << i;
    EXPECT_EQ(got[i], data[i]) << "block " << i;
  }
  // A single get, too, and the group decides the OST: the same key under
  // another group is not found.
  std::vector<uint8_t> one(kBlock);
  auto hit = ns_b_->GetInto(puts[5].id, one);
  ASSERT_TRUE(hit.ok() && *hit);
  EXPECT_EQ(one, data[5]);
}

TEST_F(KvTest, ExistsIsBatchedAndAMissIsNotAnError) {
  std::vector<std::string> keys;
  for (int i = 0; i < 20; ++i) keys.push_back("block-" + std::to_string(i));
  for (int i = 0; i < 20; i += 2) {
    ASSERT_TRUE(ns_a_->Put({keys[i], ""}, Pattern(i)).ok());
  }
  std::vector<BlockId> ids;
  for (const std::string& k : keys) ids.push_back({k, ""});
  auto found = ns_b_->Exists(ids);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  for (int i = 0; i < 20; ++i) EXPECT_EQ((*found)[i], i % 2 == 0) << keys[i];
  std::vector<uint8_t> buf(kBlock);
  auto miss = ns_b_->GetInto({keys[1], ""}, buf);
  ASSERT_TRUE(miss.ok()) << miss.status().ToString();
  EXPECT_FALSE(*miss);
  // Remove answers per key; a removed block is a miss for everyone.
  auto removed = ns_b_->Remove(std::span(ids).subspan(0, 2));
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(*removed, (std::vector<bool>{true, false}));
  auto gone = ns_a_->GetInto({keys[0], ""}, buf);
  ASSERT_TRUE(gone.ok());
  EXPECT_FALSE(*gone);
}

TEST_F(KvTest, NamespacesKeepTheirBlocksApart) {
  auto other = OpenNs(*a_, ns_name_ + "-other");
  ASSERT_TRUE(other);
  ASSERT_TRUE(ns_a_->Put({"k", ""}, Pattern(1)).ok());
  std::vector<uint8_t> buf(kBlock);
  auto hit = other->GetInto({"k", ""}, buf);
  ASSERT_TRUE(hit.ok());
  EXPECT_FALSE(*hit);
}

TEST_F(KvTest, BadInputIsAClearErrorNeverACrash) {
  std::vector<uint8_t> small(kBlock - 1), big(kBlock + 1);
  EXPECT_EQ(ns_a_->Put({"k", ""}, small).code(), EINVAL);
  EXPECT_EQ(ns_a_->GetInto({"k", ""}, big).status().code(), EINVAL);
  std::string long_key(65, 'k');
  EXPECT_EQ(ns_a_->Put({long_key, ""}, Pattern(1)).code(), EINVAL);
  EXPECT_EQ(ns_a_->Put({"", ""}, Pattern(1)).code(), EINVAL);
  EXPECT_EQ(ns_a_->Exists(std::vector<BlockId>{{long_key, ""}}).status().code(), EINVAL);
  // The namespace has 64 KiB blocks: opening it with another size fails.
  auto clash = b_->Open(ns_name_, 2 * kBlock);
  ASSERT_FALSE(clash.ok());
  EXPECT_EQ(clash.status().code(), EINVAL);
  EXPECT_NE(clash.status().message().find("65536"), std::string::npos) << clash.status().message();
  EXPECT_EQ(b_->Open("../../etc", kBlock).status().code(), EINVAL);
  EXPECT_EQ(b_->Open("zero", 0).status().code(), EINVAL);

  // What a client library would never send, straight to an OSS.
  const uint32_t ost = a_->osts()[0];
  proto::OssRequest put;
  put.mutable_kv_put()->set_ns(ns_name_);
  put.mutable_kv_put()->set_key("raw");
  std::vector<uint8_t> odd(1000);
  EXPECT_EQ(Raw(cluster(), client(), ost, put, odd).status().code(), EINVAL);
  proto::OssRequest unknown = put;
  unknown.mutable_kv_put()->set_ns("never-declared");
  EXPECT_EQ(Raw(cluster(), client(), ost, unknown, Pattern(1)).status().code(), ENOENT);
  proto::OssRequest get;
  get.mutable_kv_get()->set_ns(ns_name_);
  get.mutable_kv_get()->set_key("raw");
  get.mutable_kv_get()->set_block_size(1 << 30);  // a lie about the size
  EXPECT_EQ(Raw(cluster(), client(), ost, get).status().code(), EINVAL);
  proto::OssRequest exists;
  exists.mutable_kv_exists()->set_ns(ns_name_);
  for (int i = 0; i < 5000; ++i) exists.mutable_kv_exists()->add_keys("k");
  EXPECT_EQ(Raw(cluster(), client(), ost, exists).status().code(), EINVAL);
  // A payload that is no OssRequest at all.
  auto io = rpc::IoContext::Create(1);
  auto ch = io->MakeTcpChannel(cluster().oss_address(0));
  rpc::Response resp;
  ASSERT_TRUE(ch->Call(rpc::kServiceOss, std::string("\xff\xff\xff garbage", 12), {}, {}, &resp).ok());
  proto::OssResponse out;
  ASSERT_TRUE(out.ParseFromString(resp.payload));
  EXPECT_EQ(out.status().code(), EPROTO);
  // Nothing was stored, and both OSSes still serve.
  std::vector<uint8_t> buf(kBlock);
  auto raw = ns_a_->GetInto({"raw", ""}, buf);
  ASSERT_TRUE(raw.ok());
  EXPECT_FALSE(*raw);
  ASSERT_TRUE(ns_a_->Put({"after", ""}, Pattern(2)).ok());
  EXPECT_TRUE(cluster().OssRunning(0) && cluster().OssRunning(1));
}

TEST_F(KvTest, BlocksLargerThanTheSocketBuffersArriveWhole) {
  // 8 MiB blocks: the OSS's sendfile waits for room mid-block, many times.
  constexpr uint64_t kBig = 8 << 20;
  auto big_a = OpenNs(*a_, ns_name_ + "-big", kBig), big_b = OpenNs(*b_, ns_name_ + "-big", kBig);
  ASSERT_TRUE(big_a && big_b);
  std::vector<std::vector<uint8_t>> data, got;
  std::vector<KvNamespace::GetItem> gets;
  const std::vector<std::string> keys = {"big-0", "big-1", "big-2", "big-3"};  // ids view them
  for (int i = 0; i < 4; ++i) data.push_back(Pattern(900 + i, kBig));
  got.assign(4, std::vector<uint8_t>(kBig, 0));
  for (int i = 0; i < 4; ++i) {
    BlockId id{keys[i], ""};
    ASSERT_TRUE(big_a->Put(id, data[i]).ok());
    gets.push_back({id, got[i]});
  }
  std::vector<Result<bool>> r = big_b->MultiGet(gets);
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(r[i].ok()) << i << ": " << r[i].status().ToString();
    EXPECT_TRUE(*r[i]) << "block " << i << " missed";
    EXPECT_TRUE(got[i] == data[i]) << "block " << i;
  }
}

TEST_F(KvTest, ABlockCorruptOnDiskIsAMissAndIsRemovedNeverWrongBytes) {
  // The OSS sends a block from its file unread; the client's end-to-end
  // check (the crc recorded at the put) is what catches a flipped byte.
  const BlockId id{"rotten", ""};
  ASSERT_TRUE(ns_a_->Put(id, Pattern(5)).ok());
  const std::string hex = "726f7474656e";  // "rotten"
  int oss = cluster().OssOfOst(client(), a_->Place(id));
  ASSERT_GE(oss, 0);
  const std::string file = cluster().ost_dir(oss) + "/kv/00000000/" + ns_name_ + "/" +
                           hex.substr(0, 2) + "/" + hex;
  int fd = ::open(file.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0) << file;
  ASSERT_EQ(::pwrite(fd, "X", 1, 1000), 1);
  ::close(fd);
  std::vector<uint8_t> buf(kBlock);
  auto hit = ns_b_->GetInto(id, buf);
  ASSERT_TRUE(hit.ok()) << hit.status().ToString();
  EXPECT_FALSE(*hit) << "wrong bytes handed out as a hit";
  auto there = ns_a_->Exists(std::vector<BlockId>{id});
  ASSERT_TRUE(there.ok());
  EXPECT_FALSE((*there)[0]) << "the rotten block is still in the tier";
  // A fresh put of the key serves again.
  ASSERT_TRUE(ns_a_->Put(id, Pattern(6)).ok());
  hit = ns_b_->GetInto(id, buf);
  ASSERT_TRUE(hit.ok() && *hit);
  EXPECT_EQ(buf, Pattern(6));
}

TEST_F(KvTest, ABlockOutOfThePageCacheIsReadFromDiskAndChecked) {
  // Not all in memory: the OSS's I/O thread leaves the get to a worker,
  // which reads the block and checks it against the crc of its put.
  const BlockId good{"cold", ""}, bad{"cold-rotten", ""};
  ASSERT_TRUE(ns_a_->Put(good, Pattern(7)).ok());
  ASSERT_TRUE(ns_a_->Put(bad, Pattern(8)).ok());
  auto drop = [&](const BlockId& id, const std::string& hex, bool corrupt) {
    int oss = cluster().OssOfOst(client(), a_->Place(id));
    ASSERT_GE(oss, 0);
    const std::string file =
        cluster().ost_dir(oss) + "/kv/00000000/" + ns_name_ + "/" + hex.substr(0, 2) + "/" + hex;
    int fd = ::open(file.c_str(), O_RDWR);
    ASSERT_GE(fd, 0) << file;
    if (corrupt) ASSERT_EQ(::pwrite(fd, "X", 1, 1000), 1);
    ASSERT_EQ(::fdatasync(fd), 0);  // clean pages, which the advice drops
    ASSERT_EQ(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
    ::close(fd);
  };
  drop(good, "636f6c64", false);
  drop(bad, "636f6c642d726f7474656e", true);
  std::vector<uint8_t> buf(kBlock);
  auto hit = ns_b_->GetInto(good, buf);
  ASSERT_TRUE(hit.ok()) << hit.status().ToString();
  EXPECT_TRUE(*hit);
  EXPECT_EQ(buf, Pattern(7));
  hit = ns_b_->GetInto(bad, buf);
  ASSERT_TRUE(hit.ok()) << hit.status().ToString();
  EXPECT_FALSE(*hit) << "wrong bytes handed out as a hit";
  // Caught by the OSS's worker (the client would catch a block sent unread).
  const int oss = cluster().OssOfOst(client(), a_->Place(bad));
  std::ifstream log(cluster().root() + "/logs/oss" + std::to_string(oss) + ".log");
  const std::string text{std::istreambuf_iterator<char>(log), std::istreambuf_iterator<char>()};
  EXPECT_NE(text.find("636f6c642d726f7474656e: crc mismatch"), std::string::npos);
  auto there = ns_a_->Exists(std::vector<BlockId>{good, bad});
  ASSERT_TRUE(there.ok());
  EXPECT_EQ(*there, (std::vector<bool>{true, false}));
}

TEST_F(KvTest, AsyncBatchesCompleteThroughAFutureOrACallbackInCAndCpp) {
  constexpr int kN = 16;
  std::vector<std::string> keys;
  std::vector<std::vector<uint8_t>> data, got(kN, std::vector<uint8_t>(kBlock, 0));
  std::vector<KvNamespace::PutItem> puts;
  std::vector<KvNamespace::GetItem> gets;
  for (int i = 0; i < kN; ++i) keys.push_back("async-" + std::to_string(i));
  for (int i = 0; i < kN; ++i) {
    data.push_back(Pattern(7000 + i));
    puts.push_back({{keys[i], ""}, data[i]});
    gets.push_back({{keys[i], ""}, got[i]});
  }
  std::future<std::vector<Status>> put = ns_a_->MultiPutAsync(puts);
  for (const Status& st : put.get()) ASSERT_TRUE(st.ok()) << st.ToString();
  std::future<std::vector<Result<bool>>> get = ns_b_->MultiGetAsync(gets);
  std::vector<Result<bool>> hits = get.get();
  for (int i = 0; i < kN; ++i) {
    ASSERT_TRUE(hits[i].ok()) << keys[i] << ": " << hits[i].status().ToString();
    EXPECT_TRUE(*hits[i]) << keys[i];
    EXPECT_TRUE(got[i] == data[i]) << keys[i];
  }

  // The C API: the same blocks through a connection of its own, callbacks.
  sfs_kv* kv = nullptr;
  ASSERT_EQ(sfs_kv_connect(cluster().mds_address().c_str(), &kv), 0) << sfs_kv_last_error();
  sfs_kv_ns* ns = nullptr;
  ASSERT_EQ(sfs_kv_open(kv, ns_name_.c_str(), kBlock, &ns), 0) << sfs_kv_last_error();
  std::vector<sfs_kv_id> ids(kN + 1);
  std::vector<void*> bufs(kN + 1);
  std::vector<std::vector<uint8_t>> c_got(kN + 1, std::vector<uint8_t>(kBlock, 0));
  const std::string absent = "async-absent";
  for (int i = 0; i <= kN; ++i) {
    const std::string& k = i < kN ? keys[i] : absent;
    ids[i] = {k.data(), k.size(), nullptr, 0};
    bufs[i] = c_got[i].data();
  }
  struct Done {
    std::promise<std::vector<int>> results;
  } done;
  std::future<std::vector<int>> c_results = done.results.get_future();
  ASSERT_EQ(sfs_kv_multi_get_async(ns, ids.data(), bufs.data(), ids.size(), 0,
                                   [](void* arg, const int* r, size_t n) {
                                     static_cast<Done*>(arg)->results.set_value({r, r + n});
                                   },
                                   &done),
            0)
      << sfs_kv_last_error();
  std::vector<int> r = c_results.get();
  ASSERT_EQ(r.size(), ids.size());
  for (int i = 0; i < kN; ++i) {
    EXPECT_EQ(r[i], 1) << keys[i];
    EXPECT_TRUE(c_got[i] == data[i]) << keys[i];
  }
  EXPECT_EQ(r[kN], 0) << "a miss";
  EXPECT_EQ(sfs_kv_multi_get_async(ns, ids.data(), bufs.data(), ids.size(), 0, nullptr, nullptr),
            -EINVAL)
      << "no callback is bad input";
  sfs_kv_ns_close(ns);
  sfs_kv_close(kv);
}

TEST_F(KvTest, AStoppedOssInABatchGivesMissesAndTheOthersHits) {
  // A MultiGet runs each OSS's share on a thread of its own (kv.cc,
  // PerOst): the caller's share here is the stopped OSS's, whose calls time
  // out, while a share thread reads the running OSS's 32 MiB; the call
  // returns when both are done, with misses for the one and the bytes of
  // the other. (Its speed is measured in bench/kv_restore.py.)
  constexpr uint64_t kMiB = 1 << 20;
  client::kv::KvOptions o;
  o.mds_address = cluster().mds_address();
  o.transport = client::Transport::kTcp;
  o.rpc_timeout = std::chrono::milliseconds(2000);
  auto reader = KvClient::Connect(o);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  auto w = OpenNs(*a_, ns_name_ + "-mib", kMiB), r = OpenNs(**reader, ns_name_ + "-mib", kMiB);
  ASSERT_TRUE(w && r);
  const uint32_t stopped_ost = a_->osts()[0];
  std::vector<std::string> keys;  // the stopped OST's 4 blocks first, then the running one's 32
  std::vector<std::string> running;
  for (int i = 0; keys.size() < 4 || running.size() < 32; ++i) {
    std::string k = "stall-" + std::to_string(i);
    if (a_->Place({k, ""}) == stopped_ost) {
      if (keys.size() < 4) keys.push_back(k);
    } else if (running.size() < 32) {
      running.push_back(k);
    }
  }
  keys.insert(keys.end(), running.begin(), running.end());
  std::vector<std::vector<uint8_t>> got(keys.size(), std::vector<uint8_t>(kMiB));
  std::vector<KvNamespace::GetItem> gets;
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_TRUE(w->Put({keys[i], ""}, Pattern(4000 + i, kMiB)).ok()) << keys[i];
    gets.push_back({{keys[i], ""}, got[i]});
  }
  const int oss = cluster().OssOfOst(client(), stopped_ost);
  ASSERT_GE(oss, 0);
  ASSERT_TRUE(cluster().KillOss(oss, SIGSTOP).ok());
  std::vector<Result<bool>> hits = r->MultiGet(gets);
  ASSERT_TRUE(cluster().KillOss(oss, SIGCONT).ok());
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_TRUE(hits[i].ok()) << keys[i] << ": " << hits[i].status().ToString();
    if (i < 4) {
      EXPECT_FALSE(*hits[i]) << keys[i] << " came from a stopped OSS";
    } else {
      EXPECT_TRUE(*hits[i]) << keys[i] << " (on the running OSS) missed";
      if (*hits[i]) {
        EXPECT_TRUE(got[i] == Pattern(4000 + i, kMiB)) << keys[i];
      }
    }
  }
}

TEST_F(KvTest, ALostOssMakesItsBlocksMisses) {
  // Last in this suite: it kills an OSS of the shared cluster.
  std::vector<std::string> keys;
  std::vector<BlockId> ids;
  for (int i = 0; i < 16; ++i) keys.push_back("lost-" + std::to_string(i));
  for (const std::string& k : keys) ids.push_back({k, ""});
  for (size_t i = 0; i < ids.size(); ++i) ASSERT_TRUE(ns_a_->Put(ids[i], Pattern(i)).ok());
  const uint32_t dead_ost = a_->osts()[0];
  int oss = cluster().OssOfOst(client(), dead_ost);
  ASSERT_GE(oss, 0);
  ASSERT_TRUE(cluster().KillOss(oss).ok());
  auto found = ns_b_->Exists(ids);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  std::vector<uint8_t> buf(kBlock);
  for (size_t i = 0; i < ids.size(); ++i) {
    const bool on_dead = b_->Place(ids[i]) == dead_ost;
    EXPECT_EQ((*found)[i], !on_dead) << keys[i];
    auto hit = ns_b_->GetInto(ids[i], buf);
    ASSERT_TRUE(hit.ok()) << keys[i] << ": " << hit.status().ToString();
    EXPECT_EQ(*hit, !on_dead) << keys[i];
    if (*hit) {
      EXPECT_EQ(buf, Pattern(i));
    }
  }
}

// OSSes of 8 blocks each (--kv-capacity 512K over 64 KiB blocks).
class KvEvictTest : public ClusterPerTest {
 protected:
  ClusterOptions Options() override {
    ClusterOptions o;
    o.name = "kv-evict";
    o.num_oss = 2;
    o.oss_args = {"--kv-capacity", "512K"};
    return o;
  }
  void SetUp() override {
    ClusterPerTest::SetUp();
    if (HasFatalFailure()) return;
    kv_ = ConnectKv(cluster());
    ASSERT_TRUE(kv_);
    ns_ = OpenNs(*kv_, "evict");
    ASSERT_TRUE(ns_);
    ost_ = kv_->osts()[0];
  }
  // n group names that all land on OST ost_, in order.
  std::vector<std::string> GroupsOnOneOst(int n) {
    std::vector<std::string> out;
    for (int i = 0; static_cast<int>(out.size()) < n; ++i) {
      std::string g = "group-" + std::to_string(i);
      if (kv_->Place({"x", g}) == ost_) out.push_back(g);
    }
    return out;
  }
  static std::string Key(const std::string& group, int part) {
    return group + "/" + std::to_string(part);
  }
  Status PutGroup(const std::string& g, int parts) {
    for (int p = 0; p < parts; ++p) {
      std::string k = Key(g, p);
      SFS_RETURN_IF_ERROR(ns_->Put({k, g}, Pattern(p)));
    }
    return Status::Ok();
  }
  std::vector<bool> Present(const std::string& g, int parts) {
    std::vector<std::string> keys;
    for (int p = 0; p < parts; ++p) keys.push_back(Key(g, p));
    std::vector<BlockId> ids;
    for (const std::string& k : keys) ids.push_back({k, g});
    auto r = ns_->Exists(ids);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : std::vector<bool>();
  }

  std::unique_ptr<KvClient> kv_;
  std::unique_ptr<KvNamespace> ns_;
  uint32_t ost_ = 0;
};

TEST_F(KvEvictTest, CapacityEvictsWholeGroupsOldestFirst) {
  std::vector<std::string> g = GroupsOnOneOst(3);
  ASSERT_TRUE(PutGroup(g[0], 4).ok());  // 4 layers of chunk 0
  ASSERT_TRUE(PutGroup(g[1], 4).ok());  // the OST is full: 8 blocks
  EXPECT_EQ(Present(g[0], 4), std::vector<bool>(4, true));
  ASSERT_TRUE(PutGroup(g[2], 1).ok());  // one more block: all of g0 goes
  EXPECT_EQ(Present(g[0], 4), std::vector<bool>(4, false));
  EXPECT_EQ(Present(g[1], 4), std::vector<bool>(4, true));
  EXPECT_EQ(Present(g[2], 1), std::vector<bool>(1, true));
  // A chunk read back (a hit) outlives a newer one never read (SLRU).
  std::vector<uint8_t> buf(kBlock);
  ASSERT_TRUE(*ns_->GetInto({Key(g[1], 0), g[1]}, buf));
  std::vector<std::string> more = GroupsOnOneOst(6);
  ASSERT_TRUE(PutGroup(more[3], 3).ok());  // 5 + 3: full again
  // One more: g2 goes (probation), not g1 (older, but hit: protected).
  ASSERT_TRUE(PutGroup(more[4], 1).ok());
  EXPECT_EQ(Present(g[1], 4), std::vector<bool>(4, true));
  EXPECT_EQ(Present(g[2], 1), std::vector<bool>(1, false));
}

TEST_F(KvEvictTest, APinnedBlockSurvivesAndOnlyPinnedLeftIsEnospc) {
  std::vector<std::string> g = GroupsOnOneOst(40);
  ASSERT_TRUE(PutGroup(g[0], 1).ok());
  auto pinned = ns_->Pin(std::vector<BlockId>{{Key(g[0], 0), g[0]}}, 60000);
  ASSERT_TRUE(pinned.ok());
  EXPECT_EQ(*pinned, std::vector<bool>{true});
  // A lease taken by exists (lookup before fetch) protects as a pin does.
  ASSERT_TRUE(PutGroup(g[1], 1).ok());
  auto leased = ns_->Exists(std::vector<BlockId>{{Key(g[1], 0), g[1]}}, 60000);
  ASSERT_TRUE(leased.ok() && (*leased)[0]);
  for (int i = 2; i < 30; ++i) ASSERT_TRUE(PutGroup(g[i], 1).ok()) << i;  // 28 more: 3.5 x the OST
  EXPECT_EQ(Present(g[0], 1), std::vector<bool>{true});
  EXPECT_EQ(Present(g[1], 1), std::vector<bool>{true});
  std::vector<uint8_t> buf(kBlock);
  auto hit = ns_->GetInto({Key(g[0], 0), g[0]}, buf);
  ASSERT_TRUE(hit.ok() && *hit);
  EXPECT_EQ(buf, Pattern(0));
  // Pin the 6 others there: the OST holds only pinned blocks now.
  std::vector<std::string> keys;
  std::vector<BlockId> ids;
  for (int i = 24; i < 30; ++i) keys.push_back(Key(g[i], 0));
  for (int i = 0; i < 6; ++i) ids.push_back({keys[i], g[24 + i]});
  auto all = ns_->Pin(ids, 60000);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(*all, std::vector<bool>(6, true));
  Status full = PutGroup(g[30], 1);
  EXPECT_EQ(full.code(), ENOSPC) << full.ToString();
  EXPECT_EQ(Present(g[30], 1), std::vector<bool>{false});
  // Unpinned, the oldest goes again and the put fits.
  ASSERT_TRUE(ns_->Pin(std::vector<BlockId>{{Key(g[0], 0), g[0]}}, 0).ok());
  ASSERT_TRUE(PutGroup(g[30], 1).ok());
  EXPECT_EQ(Present(g[0], 1), std::vector<bool>{false});
}

// With a cluster key, the tier is only for requests whose capability the
// OSS verifies: one the MDS signed (a KV grant), not one made with the
// cluster key.
class KvKeyedTest : public ClusterPerTest {
 protected:
  ClusterOptions Options() override {
    ClusterOptions o;
    o.name = "kv-keyed";
    o.num_oss = 2;
    o.cluster_key = true;
    o.oss_args = {"--kv-capacity", "16M"};
    return o;
  }
};

TEST_F(KvKeyedTest, NoCapabilityIsRefusedAGrantingOneServes) {
  auto bare = ConnectKv(cluster());
  ASSERT_TRUE(bare);
  auto refused = bare->Open("keyed", kBlock);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), EACCES);
  auto key = auth::LoadKey(cluster().cluster_key_path());
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  auto forged = key->bytes;
  forged[0] ^= 1;
  auth::ClusterKey wrong{forged, key->id};
  auto bad = ConnectKv(cluster(), auth::ServerToken(wrong));
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->Open("keyed", kBlock).status().code(), EACCES);
  // The cluster key itself signs no capability (the MDS's rotating keys do:
  // docs/security.md "Rotating signing keys"): the MDS's grant serves.
  auto by_cluster_key = ConnectKv(cluster(), auth::ServerToken(*key));
  ASSERT_TRUE(by_cluster_key);
  EXPECT_EQ(by_cluster_key->Open("keyed", kBlock).status().code(), EACCES);
  auto c = cluster().Connect();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  auto grant = (*c)->KvCapability();
  ASSERT_TRUE(grant.ok() && !grant->empty()) << grant.status().ToString();
  auto good = ConnectKv(cluster(), *grant);
  ASSERT_TRUE(good);
  auto ns = OpenNs(*good, "keyed");
  ASSERT_TRUE(ns);
  ASSERT_TRUE(ns->Put({"k", ""}, Pattern(1)).ok());
  std::vector<uint8_t> buf(kBlock);
  auto hit = ns->GetInto({"k", ""}, buf);
  ASSERT_TRUE(hit.ok() && *hit);
  EXPECT_EQ(buf, Pattern(1));
}

}  // namespace
}  // namespace sfs::testing
