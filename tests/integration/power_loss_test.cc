// Issue 15: a power loss of a server's machine, simulated with sfs-lossyfs
// (tests/powerloss/lossyfs.cc: what no fsync made durable is gone), while
// clients keep running. What must hold:
//   - MDS: every create/mkdir/rename/unlink/rmdir/chmod/truncate that
//     returned success is there after the power cut and restart, clients
//     carry on through the restart, and the offline `sfs fsck` is clean:
//     with replay (the default; also with a 60 s commit interval, so that
//     the whole storm must come back from the clients) and with commit
//     before reply (--replay off). A negative control with --replay off
//     --commit-interval-ms 60000 shows the same check does catch lost ops.
//   - OSS: every byte of a file whose fsync() returned reads back exactly
//     after a power loss of its OSS; bytes never fsync'ed read back as the
//     old bytes or fail cleanly (EIO), never garbage; the OSS does not crash
//     and `sfs fsck` reports or is clean. The un-fsync'ed bytes are lost
//     (the negative control: the check sees it).
// Clients work through a real sfs-mount with calls that hold no fds (the
// harness forks to restart daemons; see recovery_test.cc); the checks read
// through a fresh libsfs client, so no cache of the mount is involved.
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/harness/cluster.h"
#include "tests/harness/fixture.h"
#include "tests/harness/lossy_fs.h"
#include "tests/harness/test_util.h"

namespace sfs::testing {
namespace {

using client::Client;
using std::chrono::milliseconds;

struct StormResult {
  int acked_at_cut = 0;
  int acked_total = 0;
  int errors = 0;                 // ops that failed (each ends its cycle)
  std::vector<std::string> lost;  // acknowledged ops whose effect is missing
};

class PowerLossTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) != 0) {
      GTEST_SKIP() << "needs root and /dev/fuse";
    }
    const char* tmp = getenv("TMPDIR");
    std::string dir = std::string(tmp != nullptr ? tmp : "/tmp") + "/sfs-powerloss-XXXXXX";
    ASSERT_NE(mkdtemp(dir.data()), nullptr) << strerror(errno);
    lossy_ = std::make_unique<LossyFs>(dir);
    Status st = lossy_->Start(dir + "/machine");
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
  void TearDown() override {
    if (HasFailure() && cluster_ != nullptr) cluster_->ReportFailure();
    if (HasFailure() && lossy_ != nullptr) {
      lossy_->Keep();
      std::cerr << "--- " << lossy_->log_path() << "\n" << TailFile(lossy_->log_path(), 20);
    }
    client_.reset();
    cluster_.reset();  // the daemons go before their machine
    lossy_.reset();
  }
  // One MDS and one OSS, the state of the one named by `on_lossy` ("mds" or
  // "oss") on the lossy machine; a mount and a libsfs client.
  void StartCluster(const std::string& on_lossy, std::vector<std::string> mds_args = {}) {
    ClusterOptions o;
    o.name = "powerloss";
    o.num_oss = 1;
    (on_lossy == "mds" ? o.mds_parent : o.ost_parent) = lossy_->mountpoint();
    o.mds_args = std::move(mds_args);
    cluster_ = std::make_unique<TestCluster>(o);
    Status st = cluster_->Start();
    ASSERT_TRUE(st.ok()) << st.ToString();
    auto m = cluster_->Mount();
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    mnt_ = *m;
    auto c = cluster_->Connect();
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    client_ = std::move(*c);
  }
  // The machine loses power under the stopped daemon, reboots, and the
  // daemon starts again on the same port.
  // damage(), if given, runs between the cut and the reboot on the durable image.
  Status PowerCut(bool mds, const std::function<void()>& damage = {}) {
    auto kill = [&](int sig) { return mds ? cluster_->KillMds(sig) : cluster_->KillOss(0, sig); };
    SFS_RETURN_IF_ERROR(kill(SIGSTOP));       // the machine stops at once...
    SFS_RETURN_IF_ERROR(lossy_->PowerCut());  // ...its page cache is gone...
    SFS_RETURN_IF_ERROR(kill(SIGKILL));       // ...and so is the process
    if (damage) damage();
    SFS_RETURN_IF_ERROR(lossy_->Reboot());
    return mds ? cluster_->RestartMds() : cluster_->RestartOss(0);
  }
  // Where a path on the lossy machine's mount lies in its durable image.
  std::string OnDisk(const std::string& path) const {
    return lossy_->durable_dir() + path.substr(lossy_->mountpoint().size());
  }
  // Runs the offline fsck over the MDS's data and the OST (the MDS must be
  // stopped); its exit status, with the command and its output in *out.
  int Fsck(std::string* out) {
    std::string cmd =
        SfsBinary() + " fsck --mds-data " + cluster_->mds_dir() + " --ost " + cluster_->ost_dir(0);
    *out = cmd + "\n";
    return RunShell(cmd, out);
  }
  // Stops the MDS (SIGTERM: it releases its LevelDB lock), then Fsck().
  int OfflineFsck(std::string* out) {
    client_.reset();
    Status st = cluster_->KillMds(SIGTERM);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return Fsck(out);
  }

  // The storm with the MDS on the lossy machine, a power cut after
  // kOpsBeforeCut acknowledged ops, the restart, kOpsAfterRestart more ops.
  void RunMetadataStormAcrossAPowerCut(StormResult* r);
  void ExpectNothingLost(const std::vector<std::string>& mds_args, bool must_replay);

  std::unique_ptr<LossyFs> lossy_;
  std::unique_ptr<TestCluster> cluster_;
  std::unique_ptr<Client> client_;
  std::string mnt_;
};

// ---- The metadata storm ----
//
// Thread t works in its own directory, in cycles of kOpsPerCycle ops on
// names of that cycle only (c = cycle number):
//   0 mknod f<c>  1 mkdir d<c>  2 rename f<c> g<c>  3 chmod g<c> 0600
//   4 truncate g<c> 1000+c  5 mknod x<c>  6 unlink x<c>  7 mkdir e<c>  8 rmdir e<c>
// so the state of a cycle's five names after k acknowledged ops is known
// (Expected) and each op shows in it. A cycle stops at a failed op, whose
// effect is then unknown: either k or k+1 ops happened.
constexpr int kOpsPerCycle = 9;
constexpr int kStormThreads = 3;
constexpr int kOpsBeforeCut = 270;
constexpr int kOpsAfterRestart = 90;
const char* const kCycleNames = "fgdxe";

int StormOp(const std::string& dir, int c, int k) {
  auto p = [&](char n) { return dir + "/" + n + std::to_string(c); };
  switch (k) {
    case 0:
      return ErrnoOf(mknod(p('f').c_str(), S_IFREG | 0644, 0));
    case 1:
      return ErrnoOf(mkdir(p('d').c_str(), 0755));
    case 2:
      return ErrnoOf(rename(p('f').c_str(), p('g').c_str()));
    case 3:
      return ErrnoOf(chmod(p('g').c_str(), 0600));
    case 4:
      return ErrnoOf(truncate(p('g').c_str(), 1000 + c));
    case 5:
      return ErrnoOf(mknod(p('x').c_str(), S_IFREG | 0644, 0));
    case 6:
      return ErrnoOf(unlink(p('x').c_str()));
    case 7:
      return ErrnoOf(mkdir(p('e').c_str(), 0755));
    case 8:
      return ErrnoOf(rmdir(p('e').c_str()));
  }
  return EINVAL;
}

struct Cycle {
  int acked = 0;  // ops 0..acked-1 returned success
  int error = 0;  // errno of op `acked`, 0 if the cycle completed
};

struct Obs {
  bool dir = false;
  uint32_t perm = 0;
  uint64_t size = 0;  // files only
  bool operator==(const Obs&) const = default;
};
using CycleState = std::map<char, std::optional<Obs>>;  // name letter -> absent or what

CycleState Expected(int c, int k) {
  CycleState s;
  for (const char* n = kCycleNames; *n; ++n) s[*n] = std::nullopt;
  if (k >= 1 && k <= 2) s['f'] = Obs{false, 0644, 0};
  if (k >= 3) s['g'] = Obs{false, k >= 4 ? 0600u : 0644u, k >= 5 ? 1000u + c : 0u};
  if (k >= 2) s['d'] = Obs{true, 0755, 0};
  if (k == 6) s['x'] = Obs{false, 0644, 0};
  if (k == 8) s['e'] = Obs{true, 0755, 0};
  return s;
}

std::string Describe(const CycleState& s) {
  std::string out;
  for (const auto& [n, o] : s) {
    if (!o) continue;
    out += std::string(1, n) + (o->dir ? "(dir " : "(file ") + std::to_string(o->perm) + " " +
           std::to_string(o->size) + ") ";
  }
  return out.empty() ? "(nothing)" : out;
}

// Threads doing the storm through the mount; joined by the destructor.
class Storm {
 public:
  explicit Storm(const std::vector<std::string>& dirs) : cycles_(dirs.size()) {
    for (size_t t = 0; t < dirs.size(); ++t) {
      threads_.emplace_back([this, t, dir = dirs[t]] { Run(dir, &cycles_[t]); });
    }
  }
  ~Storm() { Join(); }
  void Join() {
    stop_ = true;
    for (auto& th : threads_) th.join();
    threads_.clear();
  }
  int acked() const { return acked_.load(); }
  // REQUIRES: joined.
  const std::vector<Cycle>& cycles(size_t t) const { return cycles_[t]; }

 private:
  void Run(const std::string& dir, std::vector<Cycle>* out) {
    for (int c = 0; !stop_.load(); ++c) {
      Cycle cy;
      while (cy.acked < kOpsPerCycle && (cy.error = StormOp(dir, c, cy.acked)) == 0) {
        ++cy.acked;
        ++acked_;
      }
      out->push_back(cy);
    }
  }

  std::atomic<bool> stop_{false};
  std::atomic<int> acked_{0};
  std::vector<std::vector<Cycle>> cycles_;  // per thread, written by it until joined
  std::vector<std::thread> threads_;
};

// What the MDS holds for cycle c's names in directory dir_ino.
Result<CycleState> Observe(Client& c, uint64_t dir_ino, int cycle) {
  CycleState s;
  for (const char* n = kCycleNames; *n; ++n) {
    auto a = c.Lookup(kRoot, dir_ino, std::string(1, *n) + std::to_string(cycle));
    if (!a.ok() && a.status().code() != ENOENT) return a.status();
    if (!a.ok()) {
      s[*n] = std::nullopt;
      continue;
    }
    bool dir = S_ISDIR(a->mode);
    s[*n] = Obs{dir, a->mode & 07777, dir ? 0 : a->size};
  }
  return s;
}

// One line per acknowledged op whose effect is missing (or per name no op
// made) in thread t's directory `rel`.
std::vector<std::string> CheckStormDir(Client& c, const std::string& rel,
                                       const std::vector<Cycle>& cycles) {
  std::vector<std::string> problems;
  auto dir = c.ResolvePath(kRoot, rel);
  if (!dir.ok()) return {rel + ": " + dir.status().ToString()};
  for (int cy = 0; cy < static_cast<int>(cycles.size()); ++cy) {
    const Cycle& k = cycles[cy];
    auto got = Observe(c, dir->ino, cy);
    if (!got.ok()) {
      problems.push_back(rel + " cycle " + std::to_string(cy) + ": " + got.status().ToString());
      continue;
    }
    if (*got == Expected(cy, k.acked) || (k.error != 0 && *got == Expected(cy, k.acked + 1))) {
      continue;
    }
    problems.push_back(rel + " cycle " + std::to_string(cy) + ": " + std::to_string(k.acked) +
                       " ops acknowledged" +
                       (k.error ? " (then " + std::string(strerror(k.error)) + ")" : "") +
                       ", want " + Describe(Expected(cy, k.acked)) + "got " + Describe(*got));
  }
  std::string after;
  for (;;) {
    auto page = c.Readdir(kRoot, dir->ino, after, 1000, false);
    if (!page.ok()) return problems.push_back(rel + ": " + page.status().ToString()), problems;
    for (const auto& e : page->entries) {
      after = e.name;
      char* end = nullptr;
      long cy = e.name.size() > 1 ? strtol(e.name.c_str() + 1, &end, 10) : -1;
      bool known = strchr(kCycleNames, e.name[0]) != nullptr && end != nullptr && *end == '\0' &&
                   cy >= 0 && cy < static_cast<long>(cycles.size());
      if (!known) problems.push_back(rel + ": a name no op made: " + e.name);
    }
    if (page->eof) break;
  }
  return problems;
}

void PowerLossTest::RunMetadataStormAcrossAPowerCut(StormResult* r) {
  std::vector<std::string> dirs;
  for (int t = 0; t < kStormThreads; ++t) {
    dirs.push_back(mnt_ + "/t" + std::to_string(t));
    ASSERT_EQ(mkdir(dirs.back().c_str(), 0755), 0) << strerror(errno);
  }
  // The directories are durable in any mode, so only the storm's ops can be lost.
  ASSERT_TRUE(client_->SyncMetadata().ok());
  Storm storm(dirs);
  bool started = PollUntil([&] { return storm.acked() >= kOpsBeforeCut; }, milliseconds(60000));
  r->acked_at_cut = storm.acked();
  Status cut_st = started ? PowerCut(/*mds=*/true) : Status::Errno(ETIMEDOUT, "storm too slow");
  int at_restart = storm.acked();
  bool resumed =
      cut_st.ok() && PollUntil([&] { return storm.acked() >= at_restart + kOpsAfterRestart; },
                               milliseconds(60000));
  storm.Join();
  r->acked_total = storm.acked();
  ASSERT_TRUE(cut_st.ok()) << cut_st.ToString();
  EXPECT_TRUE(resumed) << "the clients did not carry on after the restart: " << storm.acked()
                       << " ops, " << at_restart << " when the MDS was back";
  auto checker = cluster_->Connect();
  ASSERT_TRUE(checker.ok()) << checker.status().ToString();
  for (int t = 0; t < kStormThreads; ++t) {
    for (const Cycle& cy : storm.cycles(t)) r->errors += cy.error != 0;
    auto p = CheckStormDir(**checker, "/t" + std::to_string(t), storm.cycles(t));
    r->lost.insert(r->lost.end(), p.begin(), p.end());
  }
}

std::string FirstLines(const std::vector<std::string>& v, size_t n) {
  std::string out;
  for (size_t i = 0; i < v.size() && i < n; ++i) out += "  " + v[i] + "\n";
  return out;
}

// The requests the MDS's log says it applied again from clients' replays.
int ReplayedAgain(const std::string& log_path) {
  std::ifstream in(log_path);
  std::string line;
  int total = 0;
  const std::string tag = " applied again";
  while (std::getline(in, line)) {
    size_t at = line.find(tag);
    if (at == std::string::npos || line.find("replayed ") == std::string::npos) continue;
    size_t start = line.rfind(' ', at - 1);
    total += std::atoi(line.substr(start + 1, at - start - 1).c_str());
  }
  return total;
}

// (a) Nothing acknowledged is lost, no client call fails, fsck is clean:
// replay with the default commit interval, replay with a 60 s one (every op
// of the storm is then uncommitted at the cut: all must come back through
// the clients' replays), and commit before reply.
void PowerLossTest::ExpectNothingLost(const std::vector<std::string>& mds_args,
                                      bool must_replay) {
  ASSERT_NO_FATAL_FAILURE(StartCluster("mds", mds_args));
  StormResult r;
  ASSERT_NO_FATAL_FAILURE(RunMetadataStormAcrossAPowerCut(&r));
  std::cerr << "metadata storm: " << r.acked_total << " ops acknowledged, " << r.acked_at_cut
            << " at the power cut; " << r.errors << " failed\n";
  EXPECT_EQ(r.lost.size(), 0u) << "acknowledged ops lost:\n" << FirstLines(r.lost, 10);
  EXPECT_EQ(r.errors, 0) << "an MDS restart must be invisible to clients";
  if (must_replay) {
    EXPECT_GT(ReplayedAgain(cluster_->root() + "/logs/mds.log"), 0)
        << "the power cut took acknowledged ops only replay can bring back";
  }
  std::string out;
  EXPECT_EQ(OfflineFsck(&out), 0) << out;
}

TEST_F(PowerLossTest, AnMdsPowerCutLosesNoAcknowledgedMetadataOp) {
  ExpectNothingLost({}, /*must_replay=*/false);
}

TEST_F(PowerLossTest, WithReplayEvenALongCommitIntervalLosesNothing) {
  ExpectNothingLost({"--commit-interval-ms", "60000"}, /*must_replay=*/true);
}

TEST_F(PowerLossTest, CommitBeforeReplyLosesNothing) {
  ExpectNothingLost({"--replay", "off"}, /*must_replay=*/false);
}

// Replays of several clients go in their original order: changes of two
// clients that build on each other (B's mkdir in A's directory, A's mknod in
// B's, B's rename of A's file), all uncommitted at the cut (a 60 s commit
// interval), come back complete. Applied per client as each reports, A's
// mknod would find B's directory missing.
TEST_F(PowerLossTest, ReplaysOfTwoClientsGoInTheirOriginalOrder) {
  ASSERT_NO_FATAL_FAILURE(StartCluster("mds", {"--commit-interval-ms", "60000"}));
  auto a = cluster_->Connect();
  auto b = cluster_->Connect();
  ASSERT_TRUE(a.ok() && b.ok());
  constexpr int kRounds = 10;
  for (int i = 0; i < kRounds; ++i) {
    const std::string d = "d" + std::to_string(i);
    auto dir = (*a)->Mkdir(kRoot, client::kRootIno, d, 0755);
    ASSERT_TRUE(dir.ok()) << dir.status().ToString();
    auto sub = (*b)->Mkdir(kRoot, dir->ino, "e", 0755);
    ASSERT_TRUE(sub.ok()) << sub.status().ToString();
    auto file = (*a)->Mknod(kRoot, sub->ino, "f", S_IFREG | 0644, 0);
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    Status mv = (*b)->Rename(kRoot, sub->ino, "f", dir->ino, "g", 0);
    ASSERT_TRUE(mv.ok()) << mv.ToString();
  }
  ASSERT_TRUE(PowerCut(/*mds=*/true).ok());
  // Each client's next call waits until the recovery is over (its own
  // replay first): then every change of both is back.
  ASSERT_TRUE((*a)->ResolvePath(kRoot, "/").ok());
  ASSERT_TRUE((*b)->ResolvePath(kRoot, "/").ok());
  auto checker = cluster_->Connect();
  ASSERT_TRUE(checker.ok()) << checker.status().ToString();
  for (int i = 0; i < kRounds; ++i) {
    const std::string d = "/d" + std::to_string(i);
    auto e = (*checker)->ResolvePath(kRoot, d + "/e");
    EXPECT_TRUE(e.ok() && S_ISDIR(e->mode)) << d << "/e: " << e.status().ToString();
    auto g = (*checker)->ResolvePath(kRoot, d + "/g");
    EXPECT_TRUE(g.ok() && S_ISREG(g->mode)) << d << "/g: " << g.status().ToString();
    EXPECT_EQ((*checker)->ResolvePath(kRoot, d + "/e/f").status().code(), ENOENT) << d;
  }
  // Each client's first change is committed with its record; the cut took the rest.
  EXPECT_GE(ReplayedAgain(cluster_->root() + "/logs/mds.log"), 4 * kRounds - 2)
      << "the cut took every later change: all must have been replayed";
  a->reset();
  b->reset();
  std::string out;
  EXPECT_EQ(OfflineFsck(&out), 0) << out;
}

// (b) The negative control: with a 60 s commit interval the acknowledged
// ops since the storm began are not durable, and the same check finds them
// lost. The store is still consistent (a clean prefix of the log survives):
// fsck may report only the objects of files the power cut took (exit 1).
TEST_F(PowerLossTest, WithALongCommitIntervalTheCheckFindsLostOps) {
  ASSERT_NO_FATAL_FAILURE(StartCluster("mds", {"--replay", "off", "--commit-interval-ms", "60000"}));
  StormResult r;
  ASSERT_NO_FATAL_FAILURE(RunMetadataStormAcrossAPowerCut(&r));
  std::cerr << "metadata storm (commit every 60 s): " << r.acked_total << " ops acknowledged, "
            << r.acked_at_cut << " at the power cut; " << r.errors << " failed; " << r.lost.size()
            << " cycles show lost ops, e.g.\n"
            << FirstLines(r.lost, 3);
  EXPECT_GT(r.lost.size(), 0u) << "the check missed ops a power cut must have taken";
  std::string out;
  int rc = OfflineFsck(&out);
  EXPECT_TRUE(rc == 0 || rc == 1) << "fsck must not fail or crash: exit " << rc << "\n" << out;
}

// ---- OSS data ----

constexpr size_t kPiece = 4096;  // the OSS's crc chunk: a torn write tears no smaller unit
constexpr int kFiles = 3;
constexpr size_t kFileBytes = 3 * 65536 + 1234;
constexpr size_t kPieces = (kFileBytes + kPiece - 1) / kPiece;

std::string RandomString(std::mt19937_64& rng, size_t n) {
  auto b = RandomBytes(rng, n);
  return std::string(b.begin(), b.end());
}

// Writes data to path through the mount; fsyncs before the close iff sync.
::testing::AssertionResult WriteThroughMount(const std::string& path, const std::string& data,
                                             bool sync) {
  int fd = open(path.c_str(), O_CREAT | O_WRONLY, 0644);
  if (fd < 0) return ::testing::AssertionFailure() << path << ": " << strerror(errno);
  bool ok = pwrite(fd, data.data(), data.size(), 0) == static_cast<ssize_t>(data.size());
  std::string what = ok ? "fsync" : "write";
  ok = ok && (!sync || fsync(fd) == 0);
  int err = errno;
  ok = (close(fd) == 0) && ok;
  if (!ok) return ::testing::AssertionFailure() << what << " " << path << ": " << strerror(err);
  return ::testing::AssertionSuccess();
}

// Reads all of the file at rel (size bytes) through c; EIO pieces as "".
struct PieceRead {
  std::vector<std::string> pieces;  // kPiece bytes each (the last may be shorter)
  std::vector<int> errors;          // errno per piece, 0 if read
};

Result<PieceRead> ReadPieces(Client& c, const std::string& rel, size_t size) {
  SFS_ASSIGN_OR_RETURN(auto attr, c.ResolvePath(kRoot, rel));
  SFS_ASSIGN_OR_RETURN(auto f, c.Open(kRoot, attr.ino, O_RDONLY, nullptr));
  PieceRead r;
  for (size_t off = 0; off < size; off += kPiece) {
    std::vector<uint8_t> buf(std::min(kPiece, size - off));
    auto n = c.Read(*f, off, buf);
    r.errors.push_back(n.ok() ? 0 : n.status().code());
    r.pieces.push_back(n.ok() ? std::string(buf.begin(), buf.begin() + *n) : "");
  }
  (void)c.Close(f);
  return r;
}

// Appends what an fsck line names the file at rel by: "inode N " and, for
// each of its objects, "oid M " and "object OST:M ".
void FsckNames(Client& c, const std::string& rel, std::vector<std::string>* names) {
  auto attr = c.ResolvePath(kRoot, rel);
  ASSERT_TRUE(attr.ok()) << rel << ": " << attr.status().ToString();
  auto layout = c.GetLayout(kRoot, attr->ino);
  ASSERT_TRUE(layout.ok()) << rel << ": " << layout.status().ToString();
  names->push_back("inode " + std::to_string(attr->ino) + " ");
  for (const auto& o : layout->objects) {
    names->push_back("oid " + std::to_string(o.oid) + " ");
    names->push_back("object " + std::to_string(o.ost) + ":" + std::to_string(o.oid) + " ");
  }
}

// (c) fsync'ed files on the OSS's machine survive its power cut byte for
// byte; a file written again without fsync reads as the old or the new bytes
// (or EIO) piece by piece; files never fsync'ed read as their old contents
// (zeros: never written before) or EIO, never garbage, and the loss shows.
TEST_F(PowerLossTest, AnOssPowerCutKeepsEveryFsyncedByte) {
  ASSERT_NO_FATAL_FAILURE(StartCluster("oss"));
  std::mt19937_64 rng(PerTestSeed());
  ASSERT_EQ(mkdir((mnt_ + "/synced").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((mnt_ + "/unsynced").c_str(), 0755), 0);
  std::vector<std::string> synced, unsynced;
  for (int i = 0; i < kFiles; ++i) {
    synced.push_back(RandomString(rng, kFileBytes));
    ASSERT_TRUE(WriteThroughMount(mnt_ + "/synced/s" + std::to_string(i), synced.back(), true));
  }
  std::string v1 = RandomString(rng, kFileBytes), v2 = RandomString(rng, kFileBytes);
  ASSERT_TRUE(WriteThroughMount(mnt_ + "/over", v1, true));
  ASSERT_TRUE(WriteThroughMount(mnt_ + "/over", v2, false));
  for (int i = 0; i < kFiles; ++i) {
    unsynced.push_back(RandomString(rng, kFileBytes));
    ASSERT_TRUE(
        WriteThroughMount(mnt_ + "/unsynced/u" + std::to_string(i), unsynced.back(), false));
  }
  Status st = PowerCut(/*mds=*/false);
  ASSERT_TRUE(st.ok()) << st.ToString();

  auto c = cluster_->Connect();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  for (int i = 0; i < kFiles; ++i) {
    auto r = ReadPieces(**c, "/synced/s" + std::to_string(i), kFileBytes);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    std::string got;
    for (size_t p = 0; p < r->pieces.size(); ++p) {
      EXPECT_EQ(r->errors[p], 0) << "s" << i << " piece " << p << ": " << strerror(r->errors[p]);
      got += r->pieces[p];
    }
    EXPECT_TRUE(SameBytes(got, synced[i])) << "fsync'ed file s" << i;
  }
  // Every piece of a file not fsync'ed since `now` was written: `now` or `old`, or EIO.
  int lost = 0, garbage = 0, eio = 0;
  auto check = [&](const std::string& rel, const std::string& now, const std::string& old) {
    auto r = ReadPieces(**c, rel, kFileBytes);
    ASSERT_TRUE(r.ok()) << rel << ": " << r.status().ToString();
    for (size_t p = 0; p < r->pieces.size(); ++p) {
      std::string want = now.substr(p * kPiece, kPiece), was = old.substr(p * kPiece, kPiece);
      if (r->errors[p] != 0) {
        EXPECT_EQ(r->errors[p], EIO) << rel << " piece " << p << ": " << strerror(r->errors[p]);
        ++eio;
      } else if (r->pieces[p] != want) {
        ++lost;
        if (r->pieces[p] != was && ++garbage <= 3) {
          ADD_FAILURE() << rel << " piece " << p << " is neither the old nor the new bytes: "
                        << SameBytes(r->pieces[p], want).message();
        }
      }
    }
  };
  check("/over", v2, v1);
  for (int i = 0; i < kFiles; ++i) {
    check("/unsynced/u" + std::to_string(i), unsynced[i], std::string(kFileBytes, '\0'));
  }
  std::cerr << "pieces written without fsync: " << lost << " lost (old bytes), " << eio << " EIO, "
            << garbage << " garbage, of " << (kFiles + 1) * kPieces << "\n";
  EXPECT_EQ(garbage, 0);
  EXPECT_GT(lost + eio, 0) << "negative control: bytes never fsync'ed survived the power cut, "
                              "so this test could not tell a lost byte";
  EXPECT_TRUE(cluster_->OssRunning(0)) << "the OSS crashed after its power cut";
  std::vector<std::string> synced_markers;  // how fsck would name a problem of an fsync'ed file
  for (int i = 0; i < kFiles; ++i) {
    ASSERT_NO_FATAL_FAILURE(FsckNames(**c, "/synced/s" + std::to_string(i), &synced_markers));
  }
  c->reset();
  std::string out;
  int rc = OfflineFsck(&out);
  EXPECT_TRUE(rc == 0 || rc == 1) << "fsck must report or be clean, not fail: exit " << rc << "\n"
                                  << out;
  for (const std::string& m : synced_markers) {
    EXPECT_EQ(out.find(m), std::string::npos) << "an fsync'ed file has a problem:\n" << out;
  }
  std::cerr << "fsck after the OSS power cut (exit " << rc << "):\n" << out;
}

// ---- Torn tails ----

// Cuts the last `cut` bytes of the file at path and appends `junk` random
// bytes: what a power loss during the file's last write can leave.
void TearTail(const std::string& path, off_t cut, size_t junk, std::mt19937_64& rng) {
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0) << path << ": " << strerror(errno);
  ASSERT_GT(st.st_size, cut) << path;
  ASSERT_EQ(truncate(path.c_str(), st.st_size - cut), 0) << strerror(errno);
  std::string tail = RandomString(rng, junk);
  int fd = open(path.c_str(), O_WRONLY | O_APPEND);
  ASSERT_GE(fd, 0) << strerror(errno);
  EXPECT_EQ(write(fd, tail.data(), tail.size()), static_cast<ssize_t>(tail.size()));
  close(fd);
}

// The newest non-empty LevelDB log (NNNNNN.log) under dir, or "".
std::string NewestLog(const std::string& dir) {
  std::filesystem::path newest;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    const auto& p = e.path();
    if (p.extension() == ".log" && e.file_size() > 0 &&
        (newest.empty() || p.filename() > newest.filename())) {
      newest = p;
    }
  }
  return newest;
}

// (d) The MDS's LevelDB log torn at its end by the power cut: the MDS
// recovers what the log holds before the tear and serves, or refuses to
// start with a message (an exit status, not a crash); fsck is clean or
// reports, never crashes.
TEST_F(PowerLossTest, AnMdsLogTornByThePowerCutIsRecoveredOrReported) {
  ASSERT_NO_FATAL_FAILURE(StartCluster("mds"));
  std::mt19937_64 rng(PerTestSeed());
  ASSERT_EQ(mkdir((mnt_ + "/before").c_str(), 0755), 0);
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(mknod((mnt_ + "/before/f" + std::to_string(i)).c_str(), S_IFREG | 0644, 0), 0);
  }
  ASSERT_TRUE(client_->SyncMetadata().ok());
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(mknod((mnt_ + "/g" + std::to_string(i)).c_str(), S_IFREG | 0644, 0), 0);
  }
  ASSERT_TRUE(client_->SyncMetadata().ok());  // the tear falls in these records
  std::string torn;
  Status st = PowerCut(/*mds=*/true, [&] {
    torn = NewestLog(OnDisk(cluster_->mds_dir()));
    ASSERT_NE(torn, "") << "no LevelDB log in the durable image";
    TearTail(torn, 40, 300, rng);
  });
  ASSERT_FALSE(torn.empty());
  if (!st.ok()) {
    std::cerr << "the MDS refused the torn log: " << st.ToString() << "\n";
    EXPECT_EQ(st.ToString().find("signal"), std::string::npos) << "the MDS crashed";
  } else {
    auto c = cluster_->Connect();
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    auto before = (*c)->ResolvePath(kRoot, "/before/f19");
    EXPECT_TRUE(before.ok()) << "a record before the tear is gone: " << before.status().ToString();
    EXPECT_EQ(mknod((mnt_ + "/after").c_str(), S_IFREG | 0644, 0), 0) << strerror(errno);
    EXPECT_TRUE(cluster_->MdsRunning());
  }
  std::string out;
  int rc = st.ok() ? OfflineFsck(&out) : Fsck(&out);
  EXPECT_TRUE(rc == 0 || rc == 1 || rc == 8) << "fsck crashed: exit " << rc << "\n" << out;
  std::cerr << "fsck after the torn log (exit " << rc << "):\n" << out;
}

// (e) Sidecars (crc files) torn or truncated by a power cut of their OSS:
// the OSS starts and serves; every piece of the files reads as the right
// bytes or EIO, never wrong bytes; fsck reports the damage or is clean.
TEST_F(PowerLossTest, OssSidecarsTornByThePowerCutAreRecoveredOrReported) {
  ASSERT_NO_FATAL_FAILURE(StartCluster("oss"));
  std::mt19937_64 rng(PerTestSeed());
  std::vector<std::string> data;
  std::vector<std::string> sidecars;
  for (int i = 0; i < 2; ++i) {
    data.push_back(RandomString(rng, kFileBytes));
    std::string rel = "/f" + std::to_string(i);
    ASSERT_TRUE(WriteThroughMount(mnt_ + rel, data.back(), true));
    auto attr = client_->ResolvePath(kRoot, rel);
    ASSERT_TRUE(attr.ok());
    auto layout = client_->GetLayout(kRoot, attr->ino);
    ASSERT_TRUE(layout.ok());
    const auto& o = layout->objects[0];
    sidecars.push_back(cluster_->ObjectPath(*client_, o.ost, o.oid) + ".crc");
  }
  Status st = PowerCut(/*mds=*/false, [&] {
    struct stat sb {};
    ASSERT_EQ(stat(OnDisk(sidecars[0]).c_str(), &sb), 0) << OnDisk(sidecars[0]);
    ASSERT_EQ(truncate(OnDisk(sidecars[0]).c_str(), sb.st_size / 2), 0);  // truncated
    TearTail(OnDisk(sidecars[1]), sb.st_size / 3, 64, rng);               // torn
  });
  ASSERT_TRUE(st.ok()) << "the OSS did not start over torn sidecars: " << st.ToString();
  auto c = cluster_->Connect();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  int eio = 0;
  for (int i = 0; i < 2; ++i) {
    auto r = ReadPieces(**c, "/f" + std::to_string(i), kFileBytes);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    for (size_t p = 0; p < r->pieces.size(); ++p) {
      if (r->errors[p] != 0) {
        EXPECT_EQ(r->errors[p], EIO) << "f" << i << " piece " << p;
        ++eio;
        continue;
      }
      EXPECT_TRUE(SameBytes(r->pieces[p], data[i].substr(p * kPiece, kPiece)))
          << "f" << i << " piece " << p << " (its sidecar was damaged)";
    }
  }
  std::cerr << "after torn sidecars: " << eio << " of " << 2 * kPieces << " pieces EIO\n";
  EXPECT_TRUE(cluster_->OssRunning(0)) << "the OSS crashed reading objects with torn sidecars";
  c->reset();
  std::string out;
  int rc = OfflineFsck(&out);
  EXPECT_TRUE(rc == 0 || rc == 1) << "fsck must report or be clean, not fail: exit " << rc << "\n"
                                  << out;
  std::cerr << "fsck after torn sidecars (exit " << rc << "):\n" << out;
}

}  // namespace
}  // namespace sfs::testing
