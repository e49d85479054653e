// GoogleTest fixtures over TestCluster.
//
// SharedClusterTest<Derived>: one cluster (and Derived::kMounts FUSE mounts)
// for a whole test suite, because starting daemons for every test would
// cost more than the tests on a 2-core machine. Tests keep out of each
// other's way by working under names of their own (TestName()). A test that
// fails prints the repro command and the daemons' log tails.
//
// ClusterPerTest: a fresh cluster for every test; for tests that kill and
// restart daemons or that must see an untouched file system.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "client/lib/client.h"
#include "tests/harness/cluster.h"
#include "tests/harness/test_util.h"

namespace sfs::testing {

inline const client::Cred kRoot{0, 0, {}};
inline const client::Cred kUser{1000, 1000, {1000}};

template <typename Derived>
class SharedClusterTest : public ::testing::Test {
 public:
  static void SetUpTestSuite() {
    cluster_ = std::make_unique<TestCluster>(Derived::Options());
    start_ = cluster_->Start();
    for (int i = 0; start_.ok() && i < Derived::kMounts; ++i) {
      auto m = cluster_->Mount();
      if (m.ok()) mounts_.push_back(*m);
      else start_ = m.status();
    }
    if (start_.ok()) {
      auto c = cluster_->Connect();
      if (c.ok()) client_ = std::move(*c);
      else start_ = c.status();
    }
  }
  static void TearDownTestSuite() {
    client_.reset();
    mounts_.clear();
    cluster_.reset();
  }

  static ClusterOptions Options() { return ClusterOptions{}; }
  static constexpr int kMounts = 0;

 protected:
  void SetUp() override { ASSERT_TRUE(start_.ok()) << "cluster start: " << start_.ToString(); }
  void TearDown() override {
    if (HasFailure() && cluster_) cluster_->ReportFailure();
  }
  static TestCluster& cluster() { return *cluster_; }
  static client::Client& client() { return *client_; }
  static const std::string& mount(int i = 0) { return mounts_[i]; }

  static inline std::unique_ptr<TestCluster> cluster_;
  static inline Status start_;
  static inline std::unique_ptr<client::Client> client_;
  static inline std::vector<std::string> mounts_;
};

// A shared cluster with Derived::kMounts mounts (default 1) in which every test
// gets a fresh directory, dir_ = <mount 0>/<TestName()>, created with mode
// 0755 and given a default layout of 4 stripes of 64 KiB (so that even small
// files cross stripe boundaries). P("x") is dir_ + "/x".
template <typename Derived>
class MountedTest : public SharedClusterTest<Derived> {
 public:
  static constexpr int kMounts = 1;

 protected:
  using Base = SharedClusterTest<Derived>;
  void SetUp() override {
    Base::SetUp();
    if (::testing::Test::HasFatalFailure()) return;
    rel_ = "/" + TestName();
    dir_ = Base::mount(0) + rel_;
    ASSERT_EQ(mkdir(dir_.c_str(), 0755), 0) << dir_ << ": " << strerror(errno);
    ASSERT_EQ(chmod(dir_.c_str(), 0755), 0);
    auto d = Base::client().ResolvePath(kRoot, rel_);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    client::LayoutSpec l;
    l.stripe_count = 4;
    l.stripe_size = 64 * 1024;
    Status st = Base::client().SetLayout(kRoot, d->ino, l, false);
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
  void TearDown() override {
    for (int fd : fds_) ::close(fd);
    fds_.clear();
    Base::TearDown();
  }
  // open(2) of P(name); fails the test on error. The descriptor is closed at
  // TearDown unless the test closes it first (then it pops it off fds_).
  int Open(const std::string& name, int flags, mode_t mode = 0644) {
    int fd = ::open(P(name).c_str(), flags, mode);
    EXPECT_GE(fd, 0) << "open " << name << ": " << strerror(errno);
    if (fd >= 0) fds_.push_back(fd);
    return fd;
  }
  std::string P(const std::string& name) const { return dir_ + "/" + name; }
  // The same path through mount i.
  std::string On(int i, const std::string& name) const {
    return Base::mount(i) + rel_ + "/" + name;
  }

  std::string rel_;   // "/<TestName()>", the dir's path inside the file system
  std::string dir_;
  std::vector<int> fds_;  // opened by Open, closed at TearDown
};

class ClusterPerTest : public ::testing::Test {
 protected:
  virtual ClusterOptions Options() { return ClusterOptions{}; }
  void SetUp() override {
    cluster_ = std::make_unique<TestCluster>(Options());
    Status st = cluster_->Start();
    ASSERT_TRUE(st.ok()) << "cluster start: " << st.ToString();
  }
  void TearDown() override {
    if (HasFailure()) cluster_->ReportFailure();
    cluster_.reset();
  }
  TestCluster& cluster() { return *cluster_; }

  std::unique_ptr<TestCluster> cluster_;
};

}  // namespace sfs::testing
