// Cluster-wide locks (issue 14) through real mounts standing for client
// nodes: fcntl POSIX and OFD byte-range locks and flock(2) taken through
// one mount exclude the others; a blocking wait is woken by the release (of
// an unlock, of a killed holder's close, of a dead mount's expiry), reports
// EDEADLK for a cycle, and sees what the holder wrote under the lock; locks
// survive an MDS restart; a storm of lockers keeps the MDS answering.
//
// One process can stand for several nodes here: the kernel names a lock's
// owner per FUSE connection, so the same process locking through two mounts
// is two owners at the MDS.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/harness/fixture.h"

namespace sfs::testing {
namespace {

using namespace std::chrono_literals;

// fcntl lock/test on fd; returns 0 or the errno.
int Lk(int fd, int cmd, short type, off_t start = 0, off_t len = 0) {
  struct flock l{};
  l.l_type = type;
  l.l_whence = SEEK_SET;
  l.l_start = start;
  l.l_len = len;
  return ErrnoOf(fcntl(fd, cmd, &l));
}

// F_GETLK: the conflicting lock's type (F_UNLCK: none) and its pid.
std::pair<short, pid_t> GetLk(int fd, short type, off_t start = 0, off_t len = 0) {
  struct flock l{};
  l.l_type = type;
  l.l_whence = SEEK_SET;
  l.l_start = start;
  l.l_len = len;
  if (fcntl(fd, F_GETLK, &l) != 0) return {-1, 0};
  return {l.l_type, l.l_pid};
}

class Fd {
 public:
  Fd(const std::string& path, int flags) : fd_(open(path.c_str(), flags | O_CREAT, 0644)) {}
  ~Fd() { Close(); }
  Fd(const Fd&) = delete;
  int get() const { return fd_; }
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

class LockTest : public MountedTest<LockTest> {
 public:
  static constexpr int kMounts = 4;
  static ClusterOptions Options() {
    ClusterOptions o;
    o.name = "locks";
    return o;
  }
};

TEST_F(LockTest, FcntlWriteLockOnOneMountExcludesAnother) {
  Fd a(On(0, "f"), O_RDWR), b(On(1, "f"), O_RDWR);
  ASSERT_GE(a.get(), 0);
  ASSERT_GE(b.get(), 0);
  ASSERT_EQ(Lk(a.get(), F_SETLK, F_WRLCK, 0, 100), 0);
  EXPECT_EQ(Lk(b.get(), F_SETLK, F_WRLCK, 50, 10), EAGAIN);
  EXPECT_EQ(Lk(b.get(), F_SETLK, F_RDLCK, 0, 1), EAGAIN);
  auto [type, pid] = GetLk(b.get(), F_RDLCK, 10, 1);
  EXPECT_EQ(type, F_WRLCK);
  EXPECT_EQ(pid, getpid());
  EXPECT_EQ(Lk(b.get(), F_SETLK, F_WRLCK, 100, 0), 0);  // past a's range
  EXPECT_EQ(GetLk(b.get(), F_WRLCK, 200, 1).first, F_UNLCK);  // its own lock: no conflict
  ASSERT_EQ(Lk(a.get(), F_SETLK, F_UNLCK, 0, 0), 0);
  EXPECT_EQ(Lk(b.get(), F_SETLK, F_WRLCK, 0, 100), 0);
}

TEST_F(LockTest, ReadLocksShareAndExcludeWriters) {
  Fd a(On(0, "f"), O_RDONLY), b(On(1, "f"), O_RDONLY), c(On(2, "f"), O_RDWR);
  ASSERT_EQ(Lk(a.get(), F_SETLK, F_RDLCK), 0);
  ASSERT_EQ(Lk(b.get(), F_SETLK, F_RDLCK), 0);
  EXPECT_EQ(Lk(c.get(), F_SETLK, F_WRLCK), EAGAIN);
  // A lock needs the matching access mode, as POSIX says.
  EXPECT_EQ(Lk(a.get(), F_SETLK, F_WRLCK), EBADF);
  a.Close();  // the close ends a's lock; b's still stands
  EXPECT_EQ(Lk(c.get(), F_SETLK, F_WRLCK), EAGAIN);
  b.Close();
  EXPECT_EQ(Lk(c.get(), F_SETLKW, F_WRLCK), 0);
}

TEST_F(LockTest, OfdLocksExcludeAcrossMountsAndEndWithTheirFile) {
  Fd a(On(0, "f"), O_RDWR), b(On(3, "f"), O_RDWR);
  ASSERT_EQ(Lk(a.get(), F_OFD_SETLK, F_WRLCK, 0, 4096), 0);
  EXPECT_EQ(Lk(b.get(), F_OFD_SETLK, F_WRLCK, 0, 1), EAGAIN);
  a.Close();
  EXPECT_EQ(Lk(b.get(), F_OFD_SETLKW, F_WRLCK, 0, 1), 0);
}

TEST_F(LockTest, FlockExcludesAcrossMountsAndEndsWithTheFile) {
  Fd a(On(0, "f"), O_RDONLY), b(On(1, "f"), O_RDONLY), c(On(2, "f"), O_RDONLY);
  ASSERT_EQ(ErrnoOf(flock(a.get(), LOCK_SH | LOCK_NB)), 0);
  EXPECT_EQ(ErrnoOf(flock(b.get(), LOCK_SH | LOCK_NB)), 0);
  EXPECT_EQ(ErrnoOf(flock(c.get(), LOCK_EX | LOCK_NB)), EWOULDBLOCK);
  // flock and fcntl locks are independent, as on Linux.
  EXPECT_EQ(Lk(c.get(), F_SETLK, F_RDLCK), 0);
  ASSERT_EQ(ErrnoOf(flock(b.get(), LOCK_UN)), 0);
  a.Close();
  EXPECT_EQ(ErrnoOf(flock(c.get(), LOCK_EX)), 0);  // woken once a's file is released
  EXPECT_EQ(ErrnoOf(flock(b.get(), LOCK_SH | LOCK_NB)), EWOULDBLOCK);
}

// The waiter reads the file before it waits (its page cache holds the old
// bytes) and after the grant: it must see what the holder wrote under the
// lock through the other mount.
TEST_F(LockTest, BlockingWaitIsWokenByTheUnlockAndSeesTheHoldersWrites) {
  ASSERT_TRUE(WriteFile(P("f"), std::string(8192, 'a')));
  Fd holder(On(0, "f"), O_RDWR), waiter(On(1, "f"), O_RDWR);
  std::string before(8192, '\0');
  ASSERT_EQ(pread(waiter.get(), before.data(), before.size(), 0), 8192);
  ASSERT_EQ(Lk(holder.get(), F_SETLK, F_WRLCK), 0);
  std::atomic<bool> unlocked{false};
  auto w = std::async(std::launch::async, [&] {
    int rc = Lk(waiter.get(), F_SETLKW, F_WRLCK, 0, 0);
    bool after_unlock = unlocked.load();
    std::string now(12288, '\0');
    ssize_t n = pread(waiter.get(), now.data(), now.size(), 0);
    return std::make_tuple(rc, after_unlock, n, now);
  });
  // Let the waiter reach its wait (the assertions hold whichever comes first).
  std::this_thread::sleep_for(300ms);
  const std::string update = std::string(4096, 'b') + std::string(4096, 'a') + std::string(4096, 'c');
  ASSERT_EQ(pwrite(holder.get(), update.data(), update.size(), 0), 12288);
  unlocked = true;
  ASSERT_EQ(Lk(holder.get(), F_SETLK, F_UNLCK), 0);
  auto [rc, after_unlock, n, now] = w.get();
  EXPECT_EQ(rc, 0);
  EXPECT_TRUE(after_unlock);
  EXPECT_EQ(n, 12288);
  EXPECT_TRUE(SameBytes(now, update));
}

TEST_F(LockTest, AKilledHoldersLocksEndWithItsProcess) {
  ASSERT_TRUE(WriteFile(P("f"), "x"));
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  pid_t child = fork();
  if (child == 0) {
    int fd = open(On(0, "f").c_str(), O_RDWR);
    char ok = Lk(fd, F_SETLK, F_WRLCK) == 0 ? 'y' : 'n';
    (void)!write(pipefd[1], &ok, 1);
    pause();
    _exit(0);
  }
  char ok = 0;
  ASSERT_EQ(read(pipefd[0], &ok, 1), 1);
  ASSERT_EQ(ok, 'y');
  Fd b(On(1, "f"), O_RDWR);
  EXPECT_EQ(Lk(b.get(), F_SETLK, F_WRLCK), EAGAIN);
  auto w = std::async(std::launch::async, [&] { return Lk(b.get(), F_SETLKW, F_WRLCK); });
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_EQ(w.get(), 0);
  close(pipefd[0]);
  close(pipefd[1]);
}

TEST_F(LockTest, AWaitThatWouldDeadlockIsEdeadlk) {
  Fd a(On(0, "f"), O_RDWR), b(On(1, "f"), O_RDWR);
  ASSERT_EQ(Lk(a.get(), F_SETLK, F_WRLCK, 0, 10), 0);
  ASSERT_EQ(Lk(b.get(), F_SETLK, F_WRLCK, 10, 10), 0);
  auto w = std::async(std::launch::async, [&] { return Lk(a.get(), F_SETLKW, F_WRLCK, 10, 10); });
  // a waits for b; b waiting for a closes the cycle. (Let a's wait reach
  // the MDS first; should it not have, b's wait blocks and is bounded here.)
  std::this_thread::sleep_for(300ms);
  auto probe = std::async(std::launch::async, [&] { return Lk(b.get(), F_SETLKW, F_WRLCK, 0, 10); });
  ASSERT_EQ(probe.wait_for(20s), std::future_status::ready) << "b's wait blocked: no EDEADLK";
  int rc = probe.get();
  EXPECT_EQ(rc, EDEADLK);
  ASSERT_EQ(Lk(b.get(), F_SETLK, F_UNLCK, 10, 10), 0);
  EXPECT_EQ(w.get(), 0);
}

TEST_F(LockTest, ALockStormStaysExclusiveAndTheMdsKeepsAnswering) {
  ASSERT_TRUE(WriteFile(P("f"), "x"));
  constexpr int kTasks = 64, kRounds = 10;
  std::atomic<int> inside{0}, max_inside{0}, done{0}, errors{0};
  std::vector<std::thread> tasks;
  for (int t = 0; t < kTasks; ++t) {
    tasks.emplace_back([&, t] {
      // Each task is its own owner: OFD locks on a file of its own opening.
      int fd = open(On(t % 4, "f").c_str(), O_RDWR);
      for (int r = 0; r < kRounds; ++r) {
        if (Lk(fd, F_OFD_SETLKW, F_WRLCK, 0, 1) != 0) { ++errors; continue; }
        int now = ++inside;
        int prev = max_inside.load();
        while (now > prev && !max_inside.compare_exchange_weak(prev, now)) {}
        --inside;
        if (Lk(fd, F_OFD_SETLK, F_UNLCK, 0, 1) != 0) ++errors;
      }
      close(fd);
      ++done;
    });
  }
  // Meanwhile other metadata work is answered.
  int creates = 0;
  while (done.load() < kTasks) {
    ASSERT_TRUE(WriteFile(P("other" + std::to_string(creates % 50)), "y"));
    ++creates;
  }
  for (auto& t : tasks) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(max_inside.load(), 1);
  EXPECT_GT(creates, 0);
}

// Four mounts, one appender each, 200 records of 100 bytes: every record
// lands whole, exactly once (issue 14: O_APPEND across nodes).
TEST_F(LockTest, AppendsFromFourMountsEachLandWholeAndOnce) {
  constexpr int kRecords = 200, kLen = 100;
  std::vector<std::thread> writers;
  std::atomic<int> errors{0};
  for (int m = 0; m < 4; ++m) {
    writers.emplace_back([&, m] {
      int fd = open(On(m, "log").c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
      for (int r = 0; r < kRecords; ++r) {
        char rec[kLen + 1];
        snprintf(rec, sizeof(rec), "mount %d record %03d %*s\n", m, r, kLen - 20, "");  // 100 bytes
        if (write(fd, rec, kLen) != kLen) ++errors;
      }
      if (close(fd) != 0) ++errors;
    });
  }
  for (auto& t : writers) t.join();
  ASSERT_EQ(errors.load(), 0);
  std::string all;
  ASSERT_TRUE(ReadFile(On(1, "log"), &all));
  ASSERT_EQ(all.size(), size_t{4 * kRecords * kLen});
  std::set<std::string> seen;
  for (size_t off = 0; off < all.size(); off += kLen) {
    std::string rec = all.substr(off, kLen);
    ASSERT_EQ(rec.rfind("mount ", 0), 0u) << "a torn or zero record at " << off;
    ASSERT_EQ(rec.back(), '\n') << "a torn record at " << off;
    EXPECT_TRUE(seen.insert(rec.substr(0, 18)).second) << "twice: " << rec.substr(0, 18);
  }
  EXPECT_EQ(seen.size(), size_t{4 * kRecords});
}

// Appends taking turns between mounts, each mount keeping its file open: a
// lone appender appends under its append token without asking the MDS, so
// the other mount's next append must recall it (the holder reports what it
// appended) and land after it. The file is every record in turn order.
TEST_F(LockTest, AppendsTakingTurnsBetweenMountsLandInTurnOrder) {
  constexpr int kLen = 64, kTurns = 6, kPerTurn = 30;
  int fds[2];
  for (int m = 0; m < 2; ++m) {
    fds[m] = open(On(m, "log").c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
    ASSERT_GE(fds[m], 0);
  }
  std::string want;
  for (int turn = 0; turn < kTurns; ++turn) {
    for (int r = 0; r < kPerTurn; ++r) {
      char rec[kLen + 1];
      snprintf(rec, sizeof(rec), "turn %d mount %d record %02d %*s\n", turn, turn % 2, r, kLen - 26, "");
      ASSERT_EQ(write(fds[turn % 2], rec, kLen), kLen);
      want.append(rec, kLen);
    }
  }
  for (int fd : fds) ASSERT_EQ(close(fd), 0);
  std::string got;
  ASSERT_TRUE(ReadFile(On(0, "log"), &got));
  EXPECT_EQ(got.size(), want.size());
  EXPECT_TRUE(SameBytes(got, want));
}

// An O_RDWR handle reads its own writes at once, and what another mount
// wrote and closed before this open.
TEST_F(LockTest, ReadWriteHandlesSeeTheirOwnAndEarlierClosedWrites) {
  ASSERT_TRUE(WriteFile(On(1, "f"), std::string(100000, 'o')));
  Fd rw(On(0, "f"), O_RDWR);
  ASSERT_GE(rw.get(), 0);
  std::string mine(47008, 'm');
  ASSERT_EQ(pwrite(rw.get(), mine.data(), mine.size(), 30000), 47008);
  std::string got(100000, '\0');
  ASSERT_EQ(pread(rw.get(), got.data(), got.size(), 0), 100000);
  std::string want = std::string(30000, 'o') + mine + std::string(100000 - 77008, 'o');
  EXPECT_TRUE(SameBytes(got, want));
  rw.Close();
  std::string other;
  ASSERT_TRUE(ReadFile(On(2, "f"), &other));
  EXPECT_TRUE(SameBytes(other, want));
}

// Daemons killed and restarted: a cluster per test.
class LockRecoveryTest : public ClusterPerTest {
 protected:
  ClusterOptions Options() override {
    ClusterOptions o;
    o.name = "lockrecovery";
    o.client_timeout_ms = 3000;
    return o;
  }
};

TEST_F(LockRecoveryTest, LocksHeldBeforeAnMdsRestartStillExclude) {
  auto m0 = cluster().Mount(), m1 = cluster().Mount();
  ASSERT_TRUE(m0.ok() && m1.ok());
  Fd a(*m0 + "/f", O_RDWR);
  ASSERT_EQ(Lk(a.get(), F_SETLK, F_WRLCK, 0, 100), 0);
  ASSERT_TRUE(cluster().KillMds().ok());
  ASSERT_TRUE(cluster().RestartMds().ok());
  Fd b(*m1 + "/f", O_RDWR);
  ASSERT_GE(b.get(), 0);
  // Answered once the grace period is over, by which time a re-asserted its lock.
  EXPECT_EQ(Lk(b.get(), F_SETLK, F_WRLCK, 0, 1), EAGAIN);
  EXPECT_EQ(GetLk(b.get(), F_WRLCK, 50, 1).first, F_WRLCK);
  ASSERT_EQ(Lk(a.get(), F_SETLK, F_UNLCK), 0);
  EXPECT_EQ(Lk(b.get(), F_SETLK, F_WRLCK, 0, 1), 0);
}

TEST_F(LockRecoveryTest, ADeadMountsLocksAreReleasedAfterTheClientTimeout) {
  auto m0 = cluster().Mount(), m1 = cluster().Mount();
  ASSERT_TRUE(m0.ok() && m1.ok());
  int a = open((*m0 + "/f").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(a, 0);
  ASSERT_EQ(Lk(a, F_SETLK, F_WRLCK), 0);
  ASSERT_TRUE(cluster().SignalMount(*m0, SIGKILL).ok());
  Fd b(*m1 + "/f", O_RDWR);
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(Lk(b.get(), F_SETLKW, F_WRLCK), 0);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);
  close(a);  // on the dead mount: fails, harmlessly
  // Its sfs-mount exited as we made it to; the unmount says so (ECHILD).
  EXPECT_EQ(cluster().Unmount(*m0).code(), ECHILD);
}

}  // namespace
}  // namespace sfs::testing
