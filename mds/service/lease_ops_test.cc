// MdsService with a LeaseTable: leases on replies, Watch, and changes that
// are answered only after the other holders acked (fake clock, no network).
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "mds/namespace/test_util.h"
#include "mds/service/mds_service.h"

namespace sfs::mds {
namespace {

constexpr uint64_t kA = 11, kB = 22;
using Slot = std::shared_ptr<std::optional<proto::MdsResponse>>;

class LeaseServiceTest : public NamespaceTest {
 protected:
  void SetUp() override {
    // These tests look at a reply as soon as the service sends it; with a
    // commit before each reply it would come later, from the commit thread
    // (that is tested by CommitBeforeReplyTest below).
    opts_.commit_interval_ms = 3600000;
    NamespaceTest::SetUp();
    LeaseOptions o;
    o.grace_ms = 0;
    leases_ = std::make_unique<LeaseTable>(o, [this] { return now_; });
    service_ = std::make_unique<MdsService>(ns_.get(), osts_.get(), leases_.get());
  }
  void TearDown() override {
    service_.reset();
    leases_.reset();
    NamespaceTest::TearDown();
  }
  // Sends req as client; the reply lands in the returned slot when it is sent.
  Slot Send(uint64_t client, proto::MdsRequest req) {
    req.set_client_id(client);
    req.set_xid(++xid_);
    rpc::Request r;
    r.service = rpc::kServiceMds;
    r.payload = req.SerializeAsString();
    auto slot = std::make_shared<std::optional<proto::MdsResponse>>();
    service_->HandleAsync(r, [slot](rpc::Reply reply) {
      slot->emplace();
      EXPECT_TRUE((*slot)->ParseFromString(reply.payload));
    });
    return slot;
  }
  Slot Watch(uint64_t client, uint64_t ack) {
    proto::MdsRequest req;
    req.mutable_watch()->set_ack_seq(ack);
    return Send(client, req);
  }
  proto::MdsResponse Create(uint64_t client, const std::string& name) {
    proto::MdsRequest req;
    req.mutable_create()->set_parent(kRootIno);
    req.mutable_create()->set_name(name);
    req.mutable_create()->set_mode(0644);
    Slot s = Send(client, req);
    EXPECT_TRUE(s->has_value());
    return s->value_or(proto::MdsResponse());
  }
  int64_t now_ = 1000000;
  uint64_t xid_ = 0;
  std::unique_ptr<LeaseTable> leases_;
  std::unique_ptr<MdsService> service_;
};

TEST_F(LeaseServiceTest, OnlyAWatchingClientGetsALeaseWithItsFileOrDirectory) {
  Watch(kB, 0);
  EXPECT_EQ(Create(kA, "g").open().lease_ms(), 0u);
  EXPECT_EQ(Create(kB, "f").open().lease_ms(), 5000u);
  proto::MdsRequest mkdir;
  mkdir.mutable_mkdir()->set_parent(kRootIno);
  mkdir.mutable_mkdir()->set_name("d");
  mkdir.mutable_mkdir()->set_mode(0755);
  Slot d = Send(kB, mkdir);
  ASSERT_TRUE(d->has_value());
  EXPECT_EQ((*d)->attr().lease_ms(), 5000u);
  EXPECT_EQ((*d)->parent_lease_ms(), 5000u) << "and on the directory it was made in";
  Slot e = Send(kA, mkdir);
  ASSERT_TRUE(e->has_value());
  EXPECT_EQ((*e)->status().code(), EEXIST);
  EXPECT_EQ((*e)->parent_lease_ms(), 0u);
}

TEST_F(LeaseServiceTest, ALookupThatFindsNothingLeasesTheDirectoryAndACreateThereRevokesIt) {
  Slot watch = Watch(kB, 0);
  proto::MdsRequest lookup;
  lookup.mutable_lookup()->set_parent(kRootIno);
  lookup.mutable_lookup()->set_name("later");
  Slot miss = Send(kB, lookup);
  ASSERT_TRUE(miss->has_value());
  EXPECT_EQ((*miss)->status().code(), ENOENT);
  EXPECT_EQ((*miss)->parent_lease_ms(), 5000u);
  proto::MdsRequest create;
  create.mutable_create()->set_parent(kRootIno);
  create.mutable_create()->set_name("later");
  create.mutable_create()->set_mode(0644);
  Slot done = Send(kA, create);
  EXPECT_FALSE(done->has_value()) << "B may still cache the name as absent";
  ASSERT_TRUE(watch->has_value());
  const proto::WatchResp& w = (*watch)->watch();
  ASSERT_EQ(w.items_size(), 1);
  EXPECT_EQ(w.items(0).ino(), kRootIno);
  EXPECT_EQ(w.items(0).parent(), kRootIno);
  EXPECT_EQ(w.items(0).name(), "later");
  Watch(kB, w.seq());
  ASSERT_TRUE(done->has_value());
  EXPECT_EQ((*done)->status().code(), 0);
  EXPECT_TRUE((*done)->open().created());
}

TEST_F(LeaseServiceTest, AChmodOfADirectoryRevokesItsHoldersAndACreateThatOpensChangesNoName) {
  Slot watch = Watch(kB, 0);
  Create(kB, "f");  // B holds the root's lease (parent_lease_ms)
  Slot open = Send(kA, [] {
    proto::MdsRequest r;
    r.mutable_create()->set_parent(kRootIno);
    r.mutable_create()->set_name("f");
    r.mutable_create()->set_mode(0644);
    return r;
  }());
  ASSERT_TRUE(open->has_value()) << "opening an existing file waits for nobody";
  EXPECT_FALSE((*open)->open().created());
  EXPECT_FALSE(watch->has_value());
  proto::MdsRequest chmod;
  chmod.mutable_setattr()->set_ino(kRootIno);
  chmod.mutable_setattr()->set_valid(proto::SETATTR_MODE);
  chmod.mutable_setattr()->set_mode(0777);
  Slot done = Send(kA, chmod);
  EXPECT_FALSE(done->has_value());
  ASSERT_TRUE(watch->has_value());
  ASSERT_EQ((*watch)->watch().items_size(), 1);
  EXPECT_EQ((*watch)->watch().items(0).ino(), kRootIno);
  EXPECT_EQ((*watch)->watch().items(0).parent(), 0u);
  Watch(kB, (*watch)->watch().seq());
  EXPECT_TRUE(done->has_value());
}

TEST_F(LeaseServiceTest, AnUnlinkIsAnsweredOnlyAfterTheOtherHolderAcked) {
  Slot watch = Watch(kB, 0);
  uint64_t ino = Create(kB, "f").open().attr().ino();
  proto::MdsRequest unlink;
  unlink.mutable_unlink()->set_parent(kRootIno);
  unlink.mutable_unlink()->set_name("f");
  Slot done = Send(kA, unlink);
  EXPECT_FALSE(done->has_value());
  ASSERT_TRUE(watch->has_value());
  const proto::WatchResp& w = (*watch)->watch();
  ASSERT_EQ(w.items_size(), 2);  // the file's lease, then the name on the root's
  EXPECT_EQ(w.items(0).ino(), ino);
  EXPECT_EQ(w.items(0).parent(), kRootIno);
  EXPECT_EQ(w.items(0).name(), "f");
  Watch(kB, w.seq());
  ASSERT_TRUE(done->has_value());
  EXPECT_EQ((*done)->status().code(), 0);
}

TEST_F(LeaseServiceTest, ARenameOverRevokesTheMovedFileAndTheReplacedOne) {
  Slot watch = Watch(kB, 0);
  uint64_t f = Create(kB, "f").open().attr().ino();
  uint64_t g = Create(kB, "g").open().attr().ino();
  proto::MdsRequest rename;
  rename.mutable_rename()->set_parent(kRootIno);
  rename.mutable_rename()->set_name("f");
  rename.mutable_rename()->set_new_parent(kRootIno);
  rename.mutable_rename()->set_new_name("g");
  Slot done = Send(kA, rename);
  ASSERT_TRUE(watch->has_value());
  std::set<std::pair<uint64_t, std::string>> got;
  for (const auto& i : (*watch)->watch().items()) got.insert({i.ino(), i.name()});
  EXPECT_EQ(got, (std::set<std::pair<uint64_t, std::string>>{
                     {f, "f"}, {g, "g"}, {kRootIno, "f"}, {kRootIno, "g"}}))
      << "the files' leases, and both names on the directory's";
  EXPECT_FALSE(done->has_value());
  now_ += 5500;  // B never acks: its leases run out
  leases_->RunDue();
  ASSERT_TRUE(done->has_value());
  EXPECT_EQ((*done)->status().code(), 0);
}

TEST_F(LeaseServiceTest, AChangeByTheOnlyHolderIsAnsweredAtOnce) {
  Watch(kB, 0);
  uint64_t ino = Create(kB, "f").open().attr().ino();
  proto::MdsRequest chmod;
  chmod.mutable_setattr()->set_ino(ino);
  chmod.mutable_setattr()->set_valid(proto::SETATTR_MODE);
  chmod.mutable_setattr()->set_mode(0600);
  Slot done = Send(kB, chmod);
  ASSERT_TRUE(done->has_value());
  EXPECT_EQ((*done)->attr().attr().mode() & 0777, 0600u);
  EXPECT_EQ((*done)->attr().lease_ms(), 5000u);
}


// The default mode: a change is answered only once it is durable, and the
// reply is held by the Committer, not by the calling thread.
class CommitBeforeReplyTest : public NamespaceTest {
 protected:
  void SetUp() override {
    opts_.commit_interval_ms = 0;
    NamespaceTest::SetUp();
    LeaseOptions o;
    o.grace_ms = 0;  // a fresh MDS: nobody can hold a lease yet
    leases_ = std::make_unique<LeaseTable>(o);
    service_ = std::make_unique<MdsService>(ns_.get(), osts_.get(), leases_.get());
  }
  void TearDown() override {
    service_.reset();
    leases_.reset();
    NamespaceTest::TearDown();
  }
  struct Answer {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    bool sent_on_caller = false;
    uint64_t committed_at_reply = 0;
    uint64_t written_at_reply = 0;
    proto::MdsResponse resp;
  };
  std::shared_ptr<Answer> Send(proto::MdsRequest req) {
    req.set_client_id(kA);
    req.set_xid(++xid_);
    rpc::Request r;
    r.service = rpc::kServiceMds;
    r.payload = req.SerializeAsString();
    auto a = std::make_shared<Answer>();
    const std::thread::id caller = std::this_thread::get_id();
    service_->HandleAsync(r, [this, a, caller](rpc::Reply reply) {
      std::lock_guard<std::mutex> l(a->mu);
      a->sent_on_caller = std::this_thread::get_id() == caller;
      a->committed_at_reply = ns_->committer().committed();
      a->written_at_reply = ns_->committer().written();
      EXPECT_TRUE(a->resp.ParseFromString(reply.payload));
      a->done = true;
      a->cv.notify_all();
    });
    return a;
  }
  bool Wait(Answer& a) {
    std::unique_lock<std::mutex> l(a.mu);
    return a.cv.wait_for(l, std::chrono::seconds(10), [&] { return a.done; });
  }
  std::unique_ptr<LeaseTable> leases_;
  std::unique_ptr<MdsService> service_;
  uint64_t xid_ = 0;
};

TEST_F(CommitBeforeReplyTest, AChangeIsAnsweredOnlyOnceCommitted) {
  const uint64_t commits = ns_->committer().commits();
  for (const char* name : {"a", "b", "c"}) {
    proto::MdsRequest req;
    req.mutable_mkdir()->set_parent(kRootIno);
    req.mutable_mkdir()->set_name(name);
    req.mutable_mkdir()->set_mode(0755);
    auto a = Send(req);
    ASSERT_TRUE(Wait(*a)) << "no reply within 10 s";
    EXPECT_EQ(a->resp.status().code(), 0) << a->resp.status().message();
    EXPECT_FALSE(a->sent_on_caller) << "the caller's thread waited for the disk";
    EXPECT_GE(a->committed_at_reply, a->written_at_reply) << "answered before its commit";
  }
  EXPECT_GE(ns_->committer().commits(), commits + 1);
}

TEST_F(CommitBeforeReplyTest, AReadIsAnsweredAtOnce) {
  proto::MdsRequest req;
  req.mutable_getattr()->set_ino(kRootIno);
  auto a = Send(req);
  ASSERT_TRUE(a->done) << "a read waited";
  EXPECT_TRUE(a->sent_on_caller);
  EXPECT_EQ(a->resp.status().code(), 0);
}

}  // namespace
}  // namespace sfs::mds
