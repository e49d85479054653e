// The MDS's OssDestroyer against real OSS services (OssService on file-backed
// stores) over TCP on loopback: the objects of one OST travel in destroy_batch
// calls, each made durable on the OSS with one fsync; an OSS that does not
// know destroy_batch still gets every object destroyed, one call each.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "common/rpc/rpc.h"
#include "mds/service/oss_destroyer.h"
#include "oss.pb.h"
#include "oss/service/oss_service.h"
#include "oss/store/env.h"
#include "oss/store/object_store.h"
#include "oss/testing/temp_dir.h"

namespace sfs {
namespace {

// Counts fsyncs (the object store's directory syncs: one per destroy batch).
class CountingEnv : public oss::EnvWrapper {
 public:
  CountingEnv() : EnvWrapper(oss::DefaultEnv()) {}
  int Fsync(int fd) override {
    fsyncs.fetch_add(1);
    return EnvWrapper::Fsync(fd);
  }
  std::atomic<int> fsyncs{0};
};

// An OSS from before destroy_batch: answers it "no known op" (EPROTO) and
// serves everything else.
class OldOss : public rpc::Handler {
 public:
  explicit OldOss(rpc::Handler* inner) : inner_(inner) {}
  void Handle(rpc::Request& req, rpc::Reply* reply) override {
    proto::OssRequest r;
    if (r.ParseFromString(req.payload) && r.has_destroy_batch()) {
      batches.fetch_add(1);
      proto::OssResponse resp;
      resp.mutable_status()->set_code(EPROTO);
      resp.mutable_status()->set_message("request has no known op");
      resp.SerializeToString(&reply->payload);
      return;
    }
    inner_->Handle(req, reply);
  }
  std::atomic<int> batches{0};

 private:
  rpc::Handler* const inner_;
};

class DestroyBatchTest : public ::testing::Test {
 protected:
  // Two OSTs (indices 3 and 7) behind one OSS; `old` serves as OldOss.
  void StartOss(bool old) {
    for (int i = 0; i < 2; ++i) {
      oss::FileStoreOptions opts;
      opts.env = &env_[i];
      auto s = oss::OpenFileObjectStore(dir_.path() + "/ost" + std::to_string(i), opts);
      ASSERT_TRUE(s.ok()) << s.status().ToString();
      stores_.push_back(std::move(s).value());
    }
    service_.SetTargets({{3, stores_[0].get()}, {7, stores_[1].get()}});
    old_ = std::make_unique<OldOss>(&service_);
    auto server = rpc::StartTcpServer({}, old ? static_cast<rpc::Handler*>(old_.get()) : &service_);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(server).value();
    address_ = "127.0.0.1:" + std::to_string(server_->port());
  }
  void TearDown() override {
    if (server_) server_->Stop();
  }

  // n objects on each OST, half of them written (the rest never were).
  std::vector<mds::ObjectDestroyer::Item> Objects(uint64_t n) {
    std::vector<mds::ObjectDestroyer::Item> items;
    for (uint64_t k = 0; k < n; ++k) {
      for (int i = 0; i < 2; ++i) {
        uint64_t oid = 1000 + 2 * k + static_cast<uint64_t>(i);
        if (k % 2 == 0) {
          Status st = stores_[i]->Write(oid, 0, std::vector<uint8_t>(100, 1), false);
          EXPECT_TRUE(st.ok()) << st.ToString();
        }
        items.push_back({address_, i == 0 ? 3u : 7u, oid});
      }
    }
    return items;
  }

  void ExpectAllDestroyed(const std::vector<mds::ObjectDestroyer::Item>& items,
                          const std::vector<Status>& results) {
    ASSERT_EQ(results.size(), items.size());
    for (size_t k = 0; k < items.size(); ++k) {
      EXPECT_TRUE(results[k].ok()) << items[k].oid << ": " << results[k].ToString();
      oss::ObjectStore& s = *stores_[items[k].ost == 3 ? 0 : 1];
      EXPECT_EQ(s.Stat(items[k].oid).status().code(), ESTALE) << items[k].oid;
    }
  }

  oss::TempDir dir_;
  CountingEnv env_[2];
  std::vector<std::unique_ptr<oss::ObjectStore>> stores_;
  oss::OssService service_;
  std::unique_ptr<OldOss> old_;
  std::unique_ptr<rpc::Server> server_;
  std::string address_;
  std::unique_ptr<rpc::IoContext> io_ = rpc::IoContext::Create();
};

TEST_F(DestroyBatchTest, TheObjectsOfEachOstGoInOneBatchWithOneFsync) {
  StartOss(/*old=*/false);
  auto items = Objects(300);
  mds::OssDestroyer destroyer(io_.get());
  std::vector<Status> results = destroyer.Destroy(items);
  ExpectAllDestroyed(items, results);
  // One batch per OST: one fsync of its tombstone directory and one of the
  // inode its never-written objects' tombstones share (not one per object).
  EXPECT_EQ(env_[0].fsyncs.load(), 2) << "300 objects of OST 3";
  EXPECT_EQ(env_[1].fsyncs.load(), 2);
}

TEST_F(DestroyBatchTest, MoreObjectsThanOneCallCarriesAreSplitIntoCalls) {
  StartOss(/*old=*/false);
  auto items = Objects(mds::OssDestroyer::kMaxPerCall + 10);
  mds::OssDestroyer destroyer(io_.get());
  ExpectAllDestroyed(items, destroyer.Destroy(items));
  EXPECT_EQ(env_[0].fsyncs.load(), 4) << "1034 objects: calls of 1024 and 10, 2 fsyncs each";
  EXPECT_EQ(env_[1].fsyncs.load(), 4);
}

TEST_F(DestroyBatchTest, AnOssWithoutDestroyBatchGetsOneDestroyPerObject) {
  StartOss(/*old=*/true);
  auto items = Objects(20);
  mds::OssDestroyer destroyer(io_.get());
  ExpectAllDestroyed(items, destroyer.Destroy(items));
  EXPECT_EQ(old_->batches.load(), 2) << "one refused batch per OST";
  // Then one destroy per object: 10 written (1 fsync each), 10 never (2 each).
  EXPECT_EQ(env_[0].fsyncs.load(), 30) << "one destroy call per object";
}

TEST_F(DestroyBatchTest, AnUnreachableOssFailsEveryItemAndDestroysNothing) {
  StartOss(/*old=*/false);
  auto items = Objects(4);
  server_->Stop();
  mds::OssDestroyer destroyer(io_.get());
  std::vector<Status> results = destroyer.Destroy(items);
  ASSERT_EQ(results.size(), items.size());
  for (const Status& st : results) EXPECT_FALSE(st.ok());
  EXPECT_TRUE(stores_[0]->Stat(1000).ok()) << "still there";
}

}  // namespace
}  // namespace sfs
