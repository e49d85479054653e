// Overload and the memory bound (issue 6): 64 tasks (threads of this process)
// write and read back 1 MiB blocks through one sfs-mount (max_threads 64, the
// default, and 8: more tasks than FUSE threads) while one OSS at a time is
// stopped (SIGSTOP) until no task can make progress, then let go (SIGCONT).
// Latency grows; nothing may fail, be dropped or come back
// wrong, and the peak RSS (VmHWM) of sfs-mount, each sfs-oss and sfs-mds must
// stay under the bounds stated below and in docs/benchmarks.md
// ("Performance pass 2").
//
// Where the bounds come from (the code as of this test):
// - sfs-mount serves at most max_threads (default 64) FUSE requests at once
//   (libfuse's multi-threaded loop). Each worker thread owns one receive
//   buffer of 256 pages + 4 KiB (libfuse, max_write 1 MiB) and, for a READ, a
//   reply buffer of at most 1 MiB (FuseOps::OnRead; the mount here has
//   max_read_kb=1024: larger READs would also wait for the 64 MiB of large
//   reply buffers, which the stall accounting below cannot see; that bound
//   is read_buffers_test's). libsfs sends write data
//   from the receive buffer and receives OSS read data into the reply buffer
//   (rpc zero copy), so file data in the client is at most
//   max_threads x 2 MiB = 128 MiB, plus a fixed part.
// - An sfs-oss holds, per request in flight, its request bulk (a write) or
//   its reply bulk (a read), at most 1 MiB (a write, Striper::kMaxPiece) or
//   4 MiB (a read, kMaxReadPiece) from libsfs (the protocol allows 64 MiB).
//   What its clients can have in flight: one worker's request at a time,
//   1 MiB each, and of READs above 1 MiB 64 MiB in all (the mount's reply
//   buffers), so per mount at most 64 + 64 MiB; here (1 MiB READs) max_threads
//   x 1 MiB = 64 MiB, plus a fixed part. The server caps it on its own too
//   (common/rpc/admission.h): at most 64 MiB per connection and 256 MiB per
//   server (--max-inflight-mib) are admitted at once, whatever the number of
//   clients; OssBudgetTest below drives one OSS past that.
// - sfs-mds carries no file data: LevelDB's memtables (16 MiB write buffer,
//   two at a time), its 8 MiB block cache, the reply cache (65536 records)
//   and payloads of at most 4 MiB per request in flight.
//
// Synchronisation is by events and polling real state: each stop comes when
// all tasks wait at a gate (after their first write, after their first read),
// and the let-go waits until every task is inside a call and the calls needing
// the stopped OSS hold every FUSE thread (none of them can return before
// SIGCONT; see StallOss). Each task needs both OSSes for its remaining blocks,
// so none can finish while one is stopped.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/harness/fixture.h"

namespace sfs::testing {
namespace {

using std::chrono::milliseconds;

constexpr int kTasks = 64;
constexpr size_t kBlock = 1 << 20;
constexpr int kBlocksPerFile = 4;
constexpr uint64_t kMiB = 1 << 20;

// The stated bounds (see the top of the file) for a mount with max_threads T
// (default 64), one mount per OSS. The fixed 64 MiB covers code, libraries,
// thread stacks and heap slack (measured: sfs-mds peaks at ~8 MiB in all, and
// sfs-mount with T = 8 at ~25 MiB).
constexpr uint64_t kFixed = 64 * kMiB;
constexpr uint64_t ClientBound(int max_threads) { return kFixed + max_threads * 2 * kMiB; }
constexpr uint64_t OssBound(int max_threads) { return kFixed + 1 /*mount*/ * max_threads * kMiB; }
constexpr uint64_t kMdsBound = 128 * kMiB;
// A bound as checked: under ASan or TSan most of a process's memory is the
// sanitizer's (shadow memory, freed blocks held in quarantine), so none is
// checked there; the load and every other check run all the same.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr uint64_t Enforced(uint64_t) { return UINT64_MAX; }
#else
constexpr uint64_t Enforced(uint64_t bound) { return bound; }
#endif

// Which server a task's current call needs (an OSS index, or one of these).
constexpr int kNone = -1;  // not in a call on the mount
constexpr int kAll = -2;   // every OSS of the file (fsync, close of a writer)
constexpr int kMds = -3;   // the MDS only (open, close of a reader)

struct TaskState {
  std::atomic<bool> done{false};
  std::atomic<int> needs{kNone};
  int oss_of_stripe[2] = {0, 0};  // the file has 2 stripes of 1 MiB
  std::string error;  // written by the task before `done`
};

// Where every task waits once (after its first write, after its first read)
// until the test has stopped an OSS, so that the stop always meets all 64
// tasks mid-way, however the machine schedules them. A task that ends early
// (an error) passes its gates with Leave().
class Gate {
 public:
  // Counts the caller in and blocks until Open().
  void Arrive() {
    std::unique_lock<std::mutex> l(mu_);
    ++arrived_;
    cv_.wait(l, [&] { return open_; });
  }
  void Leave() {
    std::lock_guard<std::mutex> l(mu_);
    ++arrived_;
  }
  int arrived() {
    std::lock_guard<std::mutex> l(mu_);
    return arrived_;
  }
  void Open() {
    std::lock_guard<std::mutex> l(mu_);
    open_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
  bool open_ = false;
};

// The word at byte offset `off` of task t's file.
uint64_t Word(int task, uint64_t off) {
  uint64_t x = (static_cast<uint64_t>(task) << 40) ^ off ^ 0x9e3779b97f4a7c15ULL;
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ULL;
  return x ^ (x >> 29);
}

void Fill(int task, uint64_t off, std::span<uint8_t> buf) {
  for (size_t i = 0; i < buf.size(); i += 8) {
    uint64_t w = Word(task, off + i);
    std::memcpy(buf.data() + i, &w, 8);
  }
}

// Offset of the first wrong byte of buf as task's data at off, or -1.
int64_t FirstWrong(int task, uint64_t off, std::span<const uint8_t> buf) {
  for (size_t i = 0; i < buf.size(); i += 8) {
    uint64_t w = Word(task, off + i);
    if (std::memcmp(buf.data() + i, &w, 8) != 0) return static_cast<int64_t>(off + i);
  }
  return -1;
}

// One /proc/PID/status field in bytes ("VmHWM", "VmRSS"), or 0.
uint64_t StatusKb(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) != 0) continue;
    std::istringstream f(line.substr(field.size() + 1));
    uint64_t kb = 0;
    f >> kb;
    return kb * 1024;
  }
  return 0;
}

// The pid of the process whose argv[0] ends in `name` and that has `arg` among
// its arguments, or -1.
pid_t PidOf(const std::string& name, const std::string& arg) {
  DIR* d = opendir("/proc");
  if (d == nullptr) return -1;
  pid_t found = -1;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::ifstream in(std::string("/proc/") + e->d_name + "/cmdline");
    std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<std::string> argv;
    std::istringstream split(all);
    for (std::string a; std::getline(split, a, '\0');) argv.push_back(a);
    if (argv.size() < 2 || argv[0].size() < name.size() ||
        argv[0].compare(argv[0].size() - name.size(), name.size(), name) != 0) {
      continue;
    }
    for (size_t i = 1; i < argv.size(); ++i) {
      if (argv[i] == arg) found = static_cast<pid_t>(std::atoi(e->d_name));
    }
  }
  closedir(d);
  return found;
}

// True iff every thread of pid is stopped (state T in /proc/PID/task/*/stat).
// kill(SIGSTOP) returns before the threads stop: each stops at its next
// return from the kernel, and until then it may still serve requests.
bool AllThreadsStopped(pid_t pid) {
  std::string dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return false;
  bool all = true;
  int threads = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream in(dir + "/" + e->d_name + "/stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t paren = stat.rfind(") ");
    if (paren == std::string::npos) continue;  // the thread just exited
    ++threads;
    if (stat[paren + 2] != 'T' && stat[paren + 2] != 't') all = false;
  }
  closedir(d);
  return all && threads > 0;
}

class OverloadMemoryTest : public ClusterPerTest, public ::testing::WithParamInterface<int> {
 protected:
  ClusterOptions Options() override {
    ClusterOptions o;
    o.name = "overload";
    o.num_oss = 2;
    // A stopped OSS sends no heartbeats: keep its OST "up" at the MDS meanwhile.
    o.ost_timeout_ms = 120000;
    return o;
  }

  // Task t: write its file in 1 MiB blocks, fsync, close; then read it back
  // with O_DIRECT (past the page cache), 1 MiB at a time, and verify every byte.
  void RunTask(int t) {
    TaskState& s = tasks_[t];
    int gates = 0;  // passed
    s.error = Work(t, &gates);
    if (gates < 1) write_gate_.Leave();
    if (gates < 2) read_gate_.Leave();
    s.needs = kNone;
    s.done = true;
  }

  std::string Work(int t, int* gates) {
    TaskState& s = tasks_[t];
    std::string path = dir_ + "/f" + std::to_string(t);
    // Page-aligned, for the O_DIRECT reads.
    std::unique_ptr<uint8_t, decltype(&std::free)> mem(
        static_cast<uint8_t*>(std::aligned_alloc(4096, kBlock)), &std::free);
    std::span<uint8_t> buf(mem.get(), kBlock);
    s.needs = kMds;
    int fd = open(path.c_str(), O_WRONLY);  // created empty by the test body
    if (fd < 0) return "open " + path + ": " + std::strerror(errno);
    for (int b = 0; b < kBlocksPerFile; ++b) {
      uint64_t off = b * kBlock;
      Fill(t, off, buf);
      s.needs = s.oss_of_stripe[b % 2];
      ssize_t n = pwrite(fd, buf.data(), kBlock, static_cast<off_t>(off));
      s.needs = kNone;
      if (n != static_cast<ssize_t>(kBlock)) return Failed("pwrite", path, off, n, fd);
      ++writes_done_;
      if (b == 0) {
        write_gate_.Arrive();
        *gates = 1;
      }
    }
    s.needs = kAll;
    if (fsync(fd) != 0) return Failed("fsync", path, 0, -1, fd);
    if (close(fd) != 0) return "close " + path + ": " + std::strerror(errno);
    s.needs = kMds;
    // O_DIRECT: each pread is one FUSE READ of exactly its block, so it needs
    // exactly that block's OSS (buffered reads would also wait for readahead
    // of the neighbouring block, on the other OSS).
    fd = open(path.c_str(), O_RDONLY | O_DIRECT);
    if (fd < 0) return "open " + path + ": " + std::strerror(errno);
    s.needs = kNone;
    for (int b = 0; b < kBlocksPerFile; ++b) {
      uint64_t off = b * kBlock;
      std::memset(buf.data(), 0, buf.size());
      s.needs = s.oss_of_stripe[b % 2];
      ssize_t n = pread(fd, buf.data(), kBlock, static_cast<off_t>(off));
      s.needs = kNone;
      if (n != static_cast<ssize_t>(kBlock)) return Failed("pread", path, off, n, fd);
      int64_t bad = FirstWrong(t, off, buf);
      if (bad >= 0) {
        close(fd);
        return "WRONG DATA in " + path + " at byte " + std::to_string(bad);
      }
      ++reads_done_;
      if (b == 0) {
        read_gate_.Arrive();
        *gates = 2;
      }
    }
    s.needs = kMds;
    close(fd);
    return "";
  }

  static std::string Failed(const char* op, const std::string& path, uint64_t off, ssize_t n,
                            int fd) {
    std::string why = n < 0 ? std::strerror(errno) : "short: " + std::to_string(n);
    close(fd);
    return std::string(op) + " " + path + " at " + std::to_string(off) + ": " + why;
  }

  // Once every task has reached `gate`, stops OSS `oss`, opens the gate,
  // waits until no task can make progress, then lets the OSS go. Returns how
  // many tasks were then in a call that needs the stopped OSS.
  //
  // "No progress": every task still working is in a call, and the calls that
  // need the stopped OSS hold every FUSE thread (min(unfinished, max_threads)
  // of them): the rest, whatever server they need, wait for a thread.
  int StallOss(int oss, Gate& gate, int max_threads) {
    bool reached = PollUntil([&] { return gate.arrived() == kTasks; }, milliseconds(60000));
    EXPECT_TRUE(reached) << gate.arrived() << " of " << kTasks << " tasks reached the gate";
    EXPECT_TRUE(cluster().KillOss(oss, SIGSTOP).ok());
    bool stopped = PollUntil([&] { return AllThreadsStopped(oss_pids_[oss]); }, milliseconds(20000),
                             milliseconds(1));
    EXPECT_TRUE(stopped) << "oss" << oss << " did not stop";
    gate.Open();
    int blocked = 0;
    bool stuck = PollUntil(
        [&] {
          int unfinished = 0;
          blocked = 0;
          for (auto& s : tasks_) {
            if (s.done) continue;
            int n = s.needs;
            if (n == kNone) return false;
            ++unfinished;
            if (n == oss || n == kAll) ++blocked;
          }
          return blocked >= std::min(unfinished, max_threads);
        },
        milliseconds(20000), milliseconds(2));
    peak_rss_while_stalled_ = std::max(peak_rss_while_stalled_, StatusKb(mount_pid_, "VmRSS"));
    EXPECT_TRUE(cluster().KillOss(oss, SIGCONT).ok());
    EXPECT_TRUE(stuck) << "the tasks never all got stuck behind the stopped oss" << oss;
    return blocked;
  }

  std::string dir_;
  pid_t mount_pid_ = -1;
  std::vector<pid_t> oss_pids_;
  uint64_t peak_rss_while_stalled_ = 0;
  std::vector<TaskState> tasks_ = std::vector<TaskState>(kTasks);
  std::atomic<int> writes_done_{0};
  std::atomic<int> reads_done_{0};
  Gate write_gate_;
  Gate read_gate_;
};

// GetParam() is the mount's max_threads: 64 (the default, one FUSE thread per
// task) and 8 (eight tasks per FUSE thread: the rest queue in the kernel).
TEST_P(OverloadMemoryTest, SixtyFourTasksThroughOneMountWithAStalledOssAllFinishVerifiedWithinTheMemoryBounds) {
  const int max_threads = GetParam();
  const uint64_t client_bound = ClientBound(max_threads);
  const uint64_t oss_bound = OssBound(max_threads);
  // Synchronous writes (write_behind_kb=0): the stall accounting below needs
  // every write call to wait for its OSS. With write-behind (the default) a
  // write waits only for room in the mount's window (16 MiB more data in the
  // client); fuse_write_behind_test covers that path. READs of 1 MiB, for
  // the same reason (see the head of this file).
  auto mnt = cluster().Mount({}, {"max_threads=" + std::to_string(max_threads),
                                  "write_behind_kb=0", "max_read_kb=1024"});
  ASSERT_TRUE(mnt.ok()) << mnt.status().ToString();
  auto c = cluster().Connect();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  dir_ = *mnt + "/load";
  ASSERT_EQ(mkdir(dir_.c_str(), 0755), 0);
  auto d = (*c)->ResolvePath(kRoot, "/load");
  ASSERT_TRUE(d.ok());
  client::LayoutSpec two{.stripe_size = kBlock, .stripe_count = 2};
  ASSERT_TRUE((*c)->SetLayout(kRoot, d->ino, two, false).ok());
  mount_pid_ = PidOf("sfs-mount", *mnt);
  ASSERT_GT(mount_pid_, 0) << "sfs-mount's pid";
  for (int i = 0; i < cluster().num_oss(); ++i) {
    oss_pids_.push_back(PidOf("sfs-oss", cluster().ost_dir(i)));
    ASSERT_GT(oss_pids_.back(), 0) << "pid of oss" << i;
  }
  pid_t mds_pid = PidOf("sfs-mds", cluster().root() + "/mds");
  ASSERT_GT(mds_pid, 0) << "sfs-mds's pid";

  // Create the files first (empty), so that the OSS of each stripe is known
  // before the load starts: block b of a file lives on stripe b % 2.
  for (int t = 0; t < kTasks; ++t) {
    std::string name = "/load/f" + std::to_string(t);
    int fd = open((*mnt + name).c_str(), O_WRONLY | O_CREAT, 0644);
    ASSERT_GE(fd, 0) << name << ": " << std::strerror(errno);
    close(fd);
    auto a = (*c)->ResolvePath(kRoot, name);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    auto l = (*c)->GetLayout(kRoot, a->ino);
    ASSERT_TRUE(l.ok() && l->objects.size() == 2u) << name << " should have 2 stripes";
    for (int k = 0; k < 2; ++k) {
      tasks_[t].oss_of_stripe[k] = cluster().OssOfOst(**c, l->objects[k].ost);
      ASSERT_GE(tasks_[t].oss_of_stripe[k], 0);
    }
  }

  std::vector<std::thread> threads;
  for (int t = 0; t < kTasks; ++t) threads.emplace_back([this, t] { RunTask(t); });
  // oss0 stalls once every task has written its first block, oss1 once
  // every task has read its first block back.
  int blocked_writing = StallOss(0, write_gate_, max_threads);
  int blocked_reading = StallOss(1, read_gate_, max_threads);
  for (auto& th : threads) th.join();

  int failed = 0;
  for (int t = 0; t < kTasks; ++t) {
    if (tasks_[t].error.empty()) continue;
    ++failed;
    ADD_FAILURE() << "task " << t << ": " << tasks_[t].error;
  }
  EXPECT_EQ(failed, 0);
  EXPECT_EQ(writes_done_, kTasks * kBlocksPerFile);
  EXPECT_EQ(reads_done_, kTasks * kBlocksPerFile);
  // Overload: every FUSE thread's call waited on the stopped OSS (64 calls
  // against its 8 workers with max_threads 64), the other tasks behind them.
  EXPECT_GE(blocked_writing, std::min(kTasks, max_threads)) << "calls held while writing";
  EXPECT_GE(blocked_reading, std::min(kTasks, max_threads)) << "calls held while reading";

  uint64_t mount_hwm = StatusKb(mount_pid_, "VmHWM");
  uint64_t mds_hwm = StatusKb(mds_pid, "VmHWM");
  std::printf("max_threads %d; blocked on the stalled OSS: %d writing, %d reading\n",
              max_threads, blocked_writing, blocked_reading);
  std::printf("sfs-mount VmHWM %.1f MiB (bound %.0f; VmRSS while stalled %.1f)\n",
              mount_hwm / double(kMiB), client_bound / double(kMiB),
              peak_rss_while_stalled_ / double(kMiB));
  EXPECT_GT(mount_hwm, 0u);
  EXPECT_LE(mount_hwm, Enforced(client_bound));
  for (size_t i = 0; i < oss_pids_.size(); ++i) {
    uint64_t hwm = StatusKb(oss_pids_[i], "VmHWM");
    std::printf("sfs-oss %zu VmHWM %.1f MiB (bound %.0f)\n", i, hwm / double(kMiB),
                oss_bound / double(kMiB));
    EXPECT_GT(hwm, 0u);
    EXPECT_LE(hwm, Enforced(oss_bound)) << "oss" << i;
  }
  std::printf("sfs-mds VmHWM %.1f MiB (bound %.0f)\n", mds_hwm / double(kMiB),
              kMdsBound / double(kMiB));
  EXPECT_GT(mds_hwm, 0u);
  EXPECT_LE(mds_hwm, Enforced(kMdsBound));
  // The mount stops cleanly, while this test's own libsfs client (which holds
  // leases on the files) is still there to answer the MDS's revocations.
  auto t0 = std::chrono::steady_clock::now();
  Status unmounted = cluster().Unmount(*mnt);
  EXPECT_TRUE(unmounted.ok()) << unmounted.ToString();
  std::printf("unmount + sfs-mount exit: %lld ms\n",
              static_cast<long long>(std::chrono::duration_cast<milliseconds>(
                                         std::chrono::steady_clock::now() - t0)
                                         .count()));
}

INSTANTIATE_TEST_SUITE_P(MaxThreads, OverloadMemoryTest, ::testing::Values(64, 8));

// The OSS's own memory budget (rpc.h ServerOptions; sfs-oss --max-inflight-mib,
// default 256 MiB per server and 64 MiB per connection): 8 libsfs clients x 8
// threads = 64 tasks each write, then read back, one 16 MiB block in a single
// call (16 RPCs of 1 MiB in flight per call), 1 GiB offered to the one OSS at
// once, while it is stopped; once let go it admits at most its budget (bulk
// of writes, and of reads through OssService::ReplyBulkHint), so its VmHWM
// stays under the budget plus the fixed part.
constexpr int kBudgetClients = 8;
constexpr int kBudgetTasks = 64;
constexpr size_t kBudgetCall = 16 << 20;
constexpr uint64_t kOssBudget = 256 * kMiB;
constexpr uint64_t kOssBudgetBound = kOssBudget + kFixed;

class OssBudgetTest : public ClusterPerTest {
 protected:
  ClusterOptions Options() override {
    ClusterOptions o;
    o.name = "budget";
    o.num_oss = 1;
    o.ost_timeout_ms = 120000;  // no heartbeats while stopped
    return o;
  }
  // Stops the OSS, starts op(t) on every task, lets the OSS go once every
  // task is inside its call, and waits for all. Returns the tasks' errors.
  std::string AllAgainstAStoppedOss(pid_t oss, const std::function<std::string(int)>& op) {
    EXPECT_TRUE(cluster().KillOss(0, SIGSTOP).ok());
    EXPECT_TRUE(PollUntil([&] { return AllThreadsStopped(oss); }, milliseconds(20000),
                          milliseconds(1)));
    std::atomic<int> entered{0};
    std::vector<std::string> errors(kBudgetTasks);
    std::vector<std::thread> threads;
    for (int t = 0; t < kBudgetTasks; ++t) {
      threads.emplace_back([&, t] {
        entered++;
        errors[t] = op(t);
      });
    }
    EXPECT_TRUE(PollUntil([&] { return entered == kBudgetTasks; }, milliseconds(20000)));
    EXPECT_TRUE(cluster().KillOss(0, SIGCONT).ok());
    for (auto& th : threads) th.join();
    std::string all;
    for (int t = 0; t < kBudgetTasks; ++t) {
      if (!errors[t].empty()) all += "task " + std::to_string(t) + ": " + errors[t] + "\n";
    }
    return all;
  }
};

TEST_F(OssBudgetTest, SixtyFourTasksOfferingTwiceItsBudgetKeepTheOssUnderItsBudgetPlusTheFixedPart) {
  pid_t oss = PidOf("sfs-oss", cluster().ost_dir(0));
  ASSERT_GT(oss, 0);
  std::vector<std::unique_ptr<client::Client>> clients;
  for (int i = 0; i < kBudgetClients; ++i) {
    auto c = cluster().Connect(milliseconds(120000));  // latency grows; nothing may fail
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    clients.push_back(std::move(*c));
  }
  std::vector<std::shared_ptr<client::File>> files(kBudgetTasks);
  std::vector<std::vector<uint8_t>> bufs(kBudgetTasks, std::vector<uint8_t>(kBudgetCall));
  for (int t = 0; t < kBudgetTasks; ++t) {
    client::Client& c = *clients[t % kBudgetClients];
    client::Attr attr;
    auto f = c.Create(kRoot, 1, "b" + std::to_string(t), 0644, O_CREAT | O_RDWR, &attr);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    files[t] = *f;
    Fill(t, 0, bufs[t]);
  }
  std::string errors = AllAgainstAStoppedOss(oss, [&](int t) -> std::string {
    auto n = clients[t % kBudgetClients]->Write(*files[t], 0, bufs[t]);
    return n.ok() ? "" : "write: " + n.status().ToString();
  });
  EXPECT_EQ(errors, "");
  uint64_t after_writes = StatusKb(oss, "VmHWM");
  errors = AllAgainstAStoppedOss(oss, [&](int t) -> std::string {
    std::fill(bufs[t].begin(), bufs[t].end(), 0);
    auto n = clients[t % kBudgetClients]->Read(*files[t], 0, bufs[t]);
    if (!n.ok() || *n != kBudgetCall) return "read: " + (n.ok() ? "short" : n.status().ToString());
    int64_t bad = FirstWrong(t, 0, bufs[t]);
    return bad < 0 ? "" : "WRONG DATA at byte " + std::to_string(bad);
  });
  EXPECT_EQ(errors, "");
  uint64_t hwm = StatusKb(oss, "VmHWM");
  std::printf("sfs-oss VmHWM %.1f MiB after the writes, %.1f after the reads (bound %.0f = budget "
              "%.0f + fixed %.0f; offered %.0f at once)\n",
              after_writes / double(kMiB), hwm / double(kMiB), kOssBudgetBound / double(kMiB),
              kOssBudget / double(kMiB), kFixed / double(kMiB),
              kBudgetTasks * kBudgetCall / double(kMiB));
  EXPECT_GT(hwm, 0u);
  EXPECT_LE(hwm, Enforced(kOssBudgetBound));
  for (int t = 0; t < kBudgetTasks; ++t) {
    EXPECT_TRUE(clients[t % kBudgetClients]->Close(files[t]).ok());
  }
}

}  // namespace
}  // namespace sfs::testing
