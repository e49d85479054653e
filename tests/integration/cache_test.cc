// The client cache (issue 18; docs/cache.md) on a real cluster: 1 MDS and 2
// OSSes serving /metrics, and real FUSE mounts with -o cache_*. Each test has
// its own cluster (one kills the OSSes).
//
// What must hold: a second read is served by the cache (the OSSes' read byte
// counters do not move), also by a new mount over the same cache_dir with
// every OSS gone; a rewrite through another mount is never served stale
// after the next open; `sfs prefetch --list` warms the cache so that the
// reads that follow are all hits; a mount without the options has no cache.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "client/lib/cache_text.h"
#include "client/lib/hint_resolver.h"
#include "common/metrics/http_server.h"
#include "tests/harness/fixture.h"
#include "tests/integration/exposition.h"
#include "tests/integration/oss_metrics.h"

namespace sfs::testing {
namespace {


std::string Random(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

class CacheTest : public ClusterPerTest {
 protected:
  ClusterOptions Options() override {
    ClusterOptions o;
    o.name = "cache";
    o.num_oss = 2;
    o.metrics = true;
    return o;
  }
  void SetUp() override {
    ClusterPerTest::SetUp();
    if (HasFatalFailure()) return;
    auto c = cluster().Connect();
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    client_ = std::move(*c);
  }
  void TearDown() override {
    client_.reset();
    ClusterPerTest::TearDown();
  }

  // Writes data as name in directory parent (default /) through libsfs (no
  // mount has its pages).
  void Put(const std::string& name, const std::string& data,
           uint64_t parent = client::kRootIno) {
    client::Attr a;
    auto f = client_->Create(kRoot, parent, name, S_IFREG | 0644,
                             O_WRONLY | O_CREAT | O_TRUNC, &a);
    ASSERT_TRUE(f.ok()) << name << ": " << f.status().ToString();
    auto w = client_->Write(**f, 0, {reinterpret_cast<const uint8_t*>(data.data()), data.size()});
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    ASSERT_TRUE(client_->Close(*f).ok());
  }
  // All of path, read past the kernel's page cache (its pages dropped first),
  // so that every byte comes from sfs-mount. errno on failure.
  int ReadFresh(const std::string& path, std::string* out) {
    int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) return errno;
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    out->clear();
    char buf[1 << 16];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof(buf))) > 0) out->append(buf, static_cast<size_t>(n));
    int err = n < 0 ? errno : 0;
    ::close(fd);
    return err;
  }
  double OssReadBytes() { return OssSum(cluster(), "sfs_oss_read_bytes_total"); }
  // `sfs cache status` of the mount at mp.
  client::CacheStats StatusOf(const std::string& mp) {
    std::string out;
    EXPECT_EQ(RunShell(SfsBinary() + " cache status " + mp + " 2>&1", &out), 0) << out;
    Result<client::CacheStats> s = client::ParseCacheStats(out);
    EXPECT_TRUE(s.ok()) << out;
    return s.ok() ? *s : client::CacheStats{};
  }
  std::vector<std::string> CacheOptions(const std::string& ram = "8M") {
    return {"cache_dir=" + cluster().root() + "/cache", "cache_size=64M", "cache_ram=" + ram};
  }

  std::unique_ptr<client::Client> client_;
};

TEST_F(CacheTest, HitsAreServedWithoutTheOssesAlsoByANewMountWhenTheyAreGone) {
  // One block, several blocks and a tail, exactly one block (blocks are 1 MiB).
  const std::vector<std::pair<std::string, std::string>> files = {
      {"small", Random(100 << 10, 1)}, {"multi", Random(3 * (1 << 20) + 7, 2)},
      {"edge", Random(1 << 20, 3)}};
  for (const auto& [name, data] : files) Put(name, data);
  auto a = cluster().Mount({}, CacheOptions());
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  std::string got;
  for (const auto& [name, data] : files) {
    ASSERT_EQ(ReadFresh(*a + "/" + name, &got), 0) << name;
    EXPECT_TRUE(SameBytes(got, data)) << name;
  }
  const double after_first = OssReadBytes();
  EXPECT_GE(after_first, double(files[1].second.size())) << "the first reads came from the OSSes";
  client::CacheStats s1 = StatusOf(*a);
  EXPECT_GT(s1.misses, 0u);
  for (const auto& [name, data] : files) {
    ASSERT_EQ(ReadFresh(*a + "/" + name, &got), 0) << name;
    EXPECT_TRUE(SameBytes(got, data)) << name;
  }
  EXPECT_EQ(OssReadBytes(), after_first) << "a cached block was read from an OSS again";
  client::CacheStats s2 = StatusOf(*a);
  EXPECT_EQ(s2.misses, s1.misses);
  EXPECT_GT(s2.hits, 0u);
  EXPECT_EQ(s2.dir.rfind(cluster().root() + "/cache/", 0), 0u) << s2.dir;

  // Persistence: unmount, stop every OSS, mount again over the same cache_dir.
  Put("unseen", Random(5000, 4));
  ASSERT_TRUE(cluster().Unmount(*a).ok());
  for (int i = 0; i < cluster().num_oss(); ++i) ASSERT_TRUE(cluster().KillOss(i).ok());
  std::vector<std::string> opts = CacheOptions();
  opts.push_back("rpc_timeout_ms=1500");
  auto b = cluster().Mount({}, opts);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  for (const auto& [name, data] : files) {
    ASSERT_EQ(ReadFresh(*b + "/" + name, &got), 0) << name << " not served from cache_dir";
    EXPECT_TRUE(SameBytes(got, data)) << name;
  }
  EXPECT_EQ(StatusOf(*b).misses, 0u);
  // ...while a file the cache never saw really needs the (gone) OSSes.
  EXPECT_EQ(ReadFresh(*b + "/unseen", &got), EIO);
}

TEST_F(CacheTest, ARewriteThroughAnotherMountIsNeverServedStaleAfterReopen) {
  auto a = cluster().Mount({}, {"cache_ram=32M"});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  auto b = cluster().Mount();  // no cache
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  const std::string v1 = Random((2 << 20) + 100, 10), v2 = Random(v1.size(), 11);
  Put("f", v1);  // closed at the MDS when this returns (a mount's release is asynchronous)
  std::string got;
  ASSERT_EQ(ReadFresh(*a + "/f", &got), 0);
  ASSERT_TRUE(SameBytes(got, v1));
  ASSERT_EQ(ReadFresh(*a + "/f", &got), 0);  // now cached
  ASSERT_TRUE(SameBytes(got, v1));
  const client::CacheStats before = StatusOf(*a);
  EXPECT_GT(before.hits, 0u);

  // Same size, other bytes, written in place (no O_TRUNC: the size never
  // changes). Whether B's release reached the MDS before A's open or not, A
  // must read v2: a new version, or an open that shares a writer (uncached).
  int fd = ::open((*b + "/f").c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::pwrite(fd, v2.data(), v2.size(), 0), static_cast<ssize_t>(v2.size()));
  ASSERT_EQ(::close(fd), 0);
  ASSERT_EQ(ReadFresh(*a + "/f", &got), 0);
  EXPECT_TRUE(SameBytes(got, v2)) << "stale bytes served after the rewrite";
  // Its first block was not in the cache: the new version missed (the
  // kernel's later pieces of a fetched block may hit, so hits can grow).
  EXPECT_GT(StatusOf(*a).misses, before.misses) << "the reopen after a rewrite must miss";

  // Truncated and rewritten shorter.
  const std::string v3 = Random(70000, 12);
  ASSERT_TRUE(WriteFile(*b + "/f", v3));
  ASSERT_EQ(ReadFresh(*a + "/f", &got), 0);
  EXPECT_TRUE(SameBytes(got, v3));

  // The default is off: the plain mount has no cache to ask.
  std::string out;
  EXPECT_EQ(RunShell(SfsBinary() + " cache status " + *b + " 2>&1", &out), 1) << out;
  EXPECT_NE(out.find("no client cache"), std::string::npos) << out;
}

TEST_F(CacheTest, PrefetchOfAListWarmsTheCacheAndTheReadsThatFollowAreHits) {
  auto a = cluster().Mount({}, {"cache_ram=64M"});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  constexpr int kFiles = 20;
  std::vector<std::string> data;
  std::string list;
  for (int i = 0; i < kFiles; ++i) {
    data.push_back(Random(100 << 10, 100 + i));
    Put("s" + std::to_string(i), data.back());
    list += *a + "/s" + std::to_string(i) + "\n";
  }
  list += *a + "/missing\n";  // skipped and counted, no error for the others
  const std::string list_path = cluster().root() + "/order.txt";
  ASSERT_TRUE(WriteFile(list_path, list));
  std::string out;
  ASSERT_EQ(RunShell(SfsBinary() + " prefetch --wait --list " + list_path + " 2>&1", &out), 0)
      << out;
  EXPECT_NE(out.find("21 entries fetched or skipped"), std::string::npos) << out;
  client::CacheStats s = StatusOf(*a);
  EXPECT_EQ(s.prefetch_files, uint64_t{kFiles});
  EXPECT_EQ(s.prefetch_skipped, 1u);
  EXPECT_EQ(s.blocks, uint64_t{kFiles});
  EXPECT_EQ(s.misses, 0u);

  const double before = OssReadBytes();
  std::string got;
  for (int i = 0; i < kFiles; ++i) {
    ASSERT_EQ(ReadFresh(*a + "/s" + std::to_string(i), &got), 0);
    EXPECT_TRUE(SameBytes(got, data[i])) << i;
  }
  EXPECT_EQ(OssReadBytes(), before) << "prefetched files were read from the OSSes again";
  s = StatusOf(*a);
  EXPECT_EQ(s.misses, 0u);
  EXPECT_GE(s.hits, uint64_t{kFiles});

  ASSERT_EQ(RunShell(SfsBinary() + " cache drop " + *a + " 2>&1", &out), 0) << out;
  EXPECT_EQ(StatusOf(*a).blocks, 0u);
  // Bad input: a list line with a range that is not numbers.
  ASSERT_TRUE(WriteFile(list_path, *a + "/s0\tx\t5\n"));
  EXPECT_EQ(RunShell(SfsBinary() + " prefetch --list " + list_path + " 2>&1", &out), 1) << out;
  EXPECT_NE(out.find("bad offset"), std::string::npos) << out;
}

// A CacheTest whose MDS leases (and so the mount's kept opens) last 60 s:
// long enough that a slow machine (a sanitizer build) runs every step within
// them. Revocations do not wait for their end.
class CacheLongLeaseTest : public CacheTest {
 protected:
  ClusterOptions Options() override {
    ClusterOptions o = CacheTest::Options();
    o.mds_args = {"--lease-ms", "60000"};
    return o;
  }
};

// The hint's resolution (client/lib/hint_resolver.h): a directory the hint
// names many files of is listed once instead of looked up file by file, a
// file held at the version the listing shows is neither opened nor fetched,
// and one rewritten since the last epoch is fetched at its new version.
// Through a mount a held file is opened by name ahead of its reader (whose
// lookup and open that answers) unless an open of it is still kept.
TEST_F(CacheLongLeaseTest, AHintListsItsDirectoryOnceAndOpensOnlyWhatItMustFetch) {
  auto a = cluster().Mount({}, {"cache_ram=64M"});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  auto d = client_->Mkdir(kRoot, client::kRootIno, "d", 0755);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  constexpr int kFiles = 40;
  std::vector<std::string> data;
  std::string list;
  for (int i = 0; i < kFiles; ++i) {
    data.push_back(Random(20 << 10, 300 + i));
    Put("f" + std::to_string(i), data.back(), d->ino);
    list += *a + "/d/f" + std::to_string(i) + "\n";
  }
  const std::string list_path = cluster().root() + "/order.txt";
  ASSERT_TRUE(WriteFile(list_path, list));
  auto mds_ops = [&](const std::string& op) {
    // The prefetcher opens by name (open_path) where the mount may answer a
    // lookup from the open, by inode (open) elsewhere.
    if (op == "open") return MdsRequests(cluster(), op) + MdsRequests(cluster(), "open_path");
    return MdsRequests(cluster(), op);
  };
  auto prefetch = [&] {
    std::string out;
    EXPECT_EQ(RunShell(SfsBinary() + " prefetch --wait --list " + list_path + " 2>&1", &out), 0)
        << out;
  };
  // Cold: one lookup of /d, one of its first entry, one listing; an open per
  // file. (The CLI's look at its first path may cost the mount two lookups
  // more; a lookup per file would be 40.)
  double lookups = mds_ops("lookup"), opens = mds_ops("open"), lists = mds_ops("readdir");
  prefetch();
  EXPECT_LE(mds_ops("lookup") - lookups, 4.0);
  EXPECT_EQ(mds_ops("readdir") - lists, 1.0);
  EXPECT_EQ(mds_ops("open") - opens, double{kFiles});
  EXPECT_EQ(StatusOf(*a).prefetch_files, uint64_t{kFiles});

  // Another epoch, everything held and every open of the last kept: nothing
  // fetched, no open at all (a reader's open takes the kept one).
  lookups = mds_ops("lookup"), opens = mds_ops("open");
  prefetch();
  EXPECT_LE(mds_ops("lookup") - lookups, 4.0);
  EXPECT_EQ(mds_ops("open") - opens, 0.0);
  EXPECT_EQ(StatusOf(*a).prefetch_files, uint64_t{kFiles});

  // f7 rewritten by another client, which revokes the mount's lease and so
  // ends every kept open: the next hint fetches f7, at its new version, and
  // opens each held file by name (one MDS call ahead of the reader, which
  // answers its lookup and open: HintedLookupTest).
  data[7] = Random(24 << 10, 999);
  Put("f7", data[7], d->ino);
  opens = mds_ops("open");
  const double by_name = MdsRequests(cluster(), "open_path");
  prefetch();
  EXPECT_EQ(mds_ops("open") - opens, double{kFiles});
  EXPECT_EQ(MdsRequests(cluster(), "open_path") - by_name, double{kFiles});
  EXPECT_EQ(StatusOf(*a).prefetch_files, uint64_t{kFiles} + 1);  // f7 alone fetched
  const double before = OssReadBytes();
  std::string got;
  for (int i = 0; i < kFiles; ++i) {
    ASSERT_EQ(ReadFresh(*a + "/d/f" + std::to_string(i), &got), 0);
    EXPECT_TRUE(SameBytes(got, data[i])) << i;
  }
  EXPECT_EQ(OssReadBytes(), before) << "hinted files were read from the OSSes again";
}

// A hint handed over in parts (`sfs prefetch --list` through a mount sends
// a setxattr per 60 KB of paths): a directory the first part names too few
// of for a listing to pay is listed once later parts name enough of it,
// instead of a lookup per entry (at 100,000 files, 100,000 MDS lookups an
// epoch). Once listed for the hint, the readers' own lookups there start no
// statahead, which would list the same directory again and again.
TEST_F(CacheTest, AHintInPartsListsABigDirectoryOnceItNamesEnoughOfIt) {
  using client::HintResolver;
  // A window over the whole hint: --wait returns with no reader behind it.
  auto a = cluster().Mount({}, {"cache_ram=64M", "prefetch_depth=4096"});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  auto d = client_->Mkdir(kRoot, client::kRootIno, "many", 0755);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  // More than two listing pages (HintResolver::kPage): the first part's
  // listing gives up after its second.
  constexpr int kEntries = 2 * HintResolver::kPage + 200;
  auto name = [](int i) { return "e" + std::to_string(100000 + i); };
  for (int i = 0; i < kEntries; ++i) {
    ASSERT_TRUE(client_->Mknod(kRoot, d->ino, name(i), S_IFREG | 0644, 0).ok()) << i;
  }
  auto hand_over = [&](int from, int to, bool append) {
    std::string list;
    for (int i = from; i < to; ++i) list += *a + "/many/" + name(i) + "\n";
    const std::string path = cluster().root() + "/part.txt";
    ASSERT_TRUE(WriteFile(path, list));
    std::string out;
    EXPECT_EQ(RunShell(SfsBinary() + " prefetch --wait " + (append ? "--append " : "") + "--list " +
                           path + " 2>&1",
                       &out),
              0)
        << out;
  };
  const uint64_t kFirst = HintResolver::kListThreshold;
  double lookups = MdsRequests(cluster(), "lookup");
  hand_over(0, kFirst, false);
  EXPECT_GE(MdsRequests(cluster(), "lookup") - lookups, double{kFirst}) << "a lookup per entry";
  // The second part makes the hint name over 8x more of the directory:
  // one listing, no lookup per entry.
  lookups = MdsRequests(cluster(), "lookup");
  double lists = MdsRequests(cluster(), "readdir");
  hand_over(kFirst, 1000, true);
  EXPECT_LE(MdsRequests(cluster(), "lookup") - lookups, 2.0);
  EXPECT_EQ(MdsRequests(cluster(), "readdir") - lists, double{kEntries / HintResolver::kPage + 1});
  // Lookups of names the hint does not name go to the MDS, and list nothing.
  lookups = MdsRequests(cluster(), "lookup");
  lists = MdsRequests(cluster(), "readdir");
  constexpr int kStats = 32;  // 4x the misses that start a statahead (StatAhead::kTrigger)
  struct stat st;
  for (int i = 0; i < kStats; ++i) {
    ASSERT_EQ(::stat((*a + "/many/" + name(2000 + i)).c_str(), &st), 0) << i;
  }
  EXPECT_EQ(MdsRequests(cluster(), "lookup") - lookups, double{kStats});
  EXPECT_EQ(MdsRequests(cluster(), "readdir") - lists, 0.0) << "a statahead listed it";
}

// The mount's LOOKUPs of hinted files are answered by the prefetcher's opens
// of them by name (hint_resolver.h, "Names the prefetcher opened"): no MDS
// lookup while their leases run. A rename by another client revokes them: the
// old name is gone and a name replaced shows the new file.
class HintedLookupTest : public CacheLongLeaseTest {};

TEST_F(HintedLookupTest, LookupsOfHintedFilesCostNoMdsRoundTripAndARenameEndsThem) {
  auto a = cluster().Mount({}, {"cache_ram=64M"});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  auto d = client_->Mkdir(kRoot, client::kRootIno, "d", 0755);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  constexpr int kFiles = 24;
  std::vector<std::string> data;
  std::string list;
  for (int i = 0; i < kFiles; ++i) {
    data.push_back(Random(12 << 10, 700 + i));
    Put("f" + std::to_string(i), data.back(), d->ino);
    list += *a + "/d/f" + std::to_string(i) + "\n";
  }
  const std::string list_path = cluster().root() + "/order.txt";
  ASSERT_TRUE(WriteFile(list_path, list));
  std::string out;
  ASSERT_EQ(RunShell(SfsBinary() + " prefetch --wait --list " + list_path + " 2>&1", &out), 0)
      << out;
  // f1..f12 read through the mount: every lookup answered locally. (The CLI
  // looked f0 up itself, so the kernel holds that name already.)
  const double lookups = MdsRequests(cluster(), "lookup");
  const uint64_t hinted = StatusOf(*a).hinted_lookups;
  std::string got;
  for (int i = 1; i <= kFiles / 2; ++i) {
    ASSERT_EQ(ReadFresh(*a + "/d/f" + std::to_string(i), &got), 0) << i;
    EXPECT_TRUE(SameBytes(got, data[i])) << i;
  }
  EXPECT_EQ(MdsRequests(cluster(), "lookup") - lookups, 0.0);
  EXPECT_EQ(StatusOf(*a).hinted_lookups - hinted, uint64_t{kFiles / 2});

  // Another client renames f13 away and f14 onto f15, then the mount looks.
  const int gone = kFiles / 2 + 1, from = kFiles / 2 + 2, onto = kFiles / 2 + 3;
  ASSERT_TRUE(
      client_->Rename(kRoot, d->ino, "f" + std::to_string(gone), d->ino, "moved", 0, nullptr).ok());
  ASSERT_TRUE(client_
                  ->Rename(kRoot, d->ino, "f" + std::to_string(from), d->ino,
                           "f" + std::to_string(onto), 0, nullptr)
                  .ok());
  struct stat st;
  EXPECT_NE(::stat((*a + "/d/f" + std::to_string(gone)).c_str(), &st), 0);
  EXPECT_EQ(errno, ENOENT);
  ASSERT_EQ(ReadFresh(*a + "/d/f" + std::to_string(onto), &got), 0);
  EXPECT_TRUE(SameBytes(got, data[from])) << "the replaced name showed the old file";
  ASSERT_EQ(ReadFresh(*a + "/d/moved", &got), 0);
  EXPECT_TRUE(SameBytes(got, data[gone]));
  for (int i = kFiles / 2 + 1; i < kFiles; ++i) {
    if (i == gone || i == from || i == onto) continue;
    ASSERT_EQ(ReadFresh(*a + "/d/f" + std::to_string(i), &got), 0) << i;
    EXPECT_TRUE(SameBytes(got, data[i])) << i;
  }
}

TEST_F(CacheTest, TheCacheNeverGrowsPastItsSize) {
  auto a = cluster().Mount({}, {"cache_ram=2M"});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  std::string got;
  for (int i = 0; i < 6; ++i) {
    std::string d = Random((1 << 20) + 1000, 200 + i);
    Put("big" + std::to_string(i), d);
    ASSERT_EQ(ReadFresh(*a + "/big" + std::to_string(i), &got), 0);
    EXPECT_TRUE(SameBytes(got, d));
  }
  client::CacheStats s = StatusOf(*a);
  EXPECT_EQ(s.capacity, 2u << 20);
  EXPECT_LE(s.bytes, s.capacity);
  EXPECT_GT(s.evictions, 0u);
}

// sfs prefetch --wait with a hint longer than the look-ahead and no reader:
// it returns once the window's entries are fetched (before, it waited for
// the whole hint, which only a reader can move the window over: forever),
// and says how many wait for a reader; a reader's close moves the window.
TEST_F(CacheTest, PrefetchWaitReturnsOnceTheWindowIsFetchedWithoutAReader) {
  auto a = cluster().Mount({}, {"cache_ram=64M", "prefetch_depth=4"});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  constexpr int kFiles = 12;
  std::vector<std::string> data;
  std::string list;
  for (int i = 0; i < kFiles; ++i) {
    data.push_back(Random(64 << 10, 300 + i));
    Put("w" + std::to_string(i), data.back());
    list += *a + "/w" + std::to_string(i) + "\n";
  }
  const std::string list_path = cluster().root() + "/window.txt";
  ASSERT_TRUE(WriteFile(list_path, list));
  std::string out;
  ASSERT_EQ(RunShell(SfsBinary() + " prefetch --wait --list " + list_path + " 2>&1", &out), 0)
      << out;
  EXPECT_NE(out.find("12 entries queued"), std::string::npos) << out;
  EXPECT_NE(out.find("4 of the hint's 12 fetched or skipped"), std::string::npos) << out;
  client::CacheStats s = StatusOf(*a);
  EXPECT_EQ(s.prefetch_files, 4u);
  EXPECT_EQ(s.hint_done, 4u);
  EXPECT_EQ(s.hint_window, 4u);
  EXPECT_EQ(s.hint_length, uint64_t{kFiles});

  // The reader's first file moves the window one entry on (to 1..4).
  std::string got;
  ASSERT_EQ(ReadFresh(*a + "/w0", &got), 0);
  EXPECT_TRUE(SameBytes(got, data[0]));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (StatusOf(*a).prefetch_files < 5 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  s = StatusOf(*a);
  EXPECT_EQ(s.prefetch_files, 5u);
  EXPECT_EQ(s.hint_window, 5u);
}

// Readers that passed the prefetcher's window (as while the first listing of
// a huge directory runs) still move it: the listing tells the cache where
// every hinted file of the directory comes in the order, so a reader's close
// of entry 40 brings the window to 41..44 (the entries it passed are not
// fetched), and the reader's next file is a hit. Before, the close named a
// file whose use the cache did not know, the window stayed at 0..3, and the
// whole first epoch over 100,000 files had no hit.
TEST_F(CacheTest, AReaderPastThePrefetchersWindowMovesItFromWhereItIs) {
  client::Options opts;
  opts.mds_address = cluster().mds_address();
  opts.cache_ram = 64 << 20;
  opts.prefetch_threads = 1;
  opts.prefetch_depth = 4;
  auto reader = client::Client::Connect(opts);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  client::Client& c = **reader;
  auto d = client_->Mkdir(kRoot, client::kRootIno, "big", 0755);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  constexpr int kFiles = 64;  // listed: more than HintResolver::kListThreshold
  std::vector<std::string> data;
  std::vector<client::PrefetchItem> hint;
  for (int i = 0; i < kFiles; ++i) {
    data.push_back(Random(8 << 10, 900 + i));
    Put("f" + std::to_string(i), data.back(), d->ino);
    hint.push_back({"/big/f" + std::to_string(i), 0, UINT64_MAX});
  }
  ASSERT_TRUE(c.Prefetch(kRoot, hint).ok());
  auto wait_files = [&](uint64_t n) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (c.CacheStatus()->prefetch_files < n && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return c.CacheStatus()->prefetch_files;
  };
  ASSERT_EQ(wait_files(4), 4u);  // the first window, 0..3
  auto read_whole = [&](int i) {
    auto f = c.OpenPath(kRoot, "/big/f" + std::to_string(i), O_RDONLY, nullptr);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    std::string got(data[i].size(), '\0');
    auto n = c.Read(**f, 0, {reinterpret_cast<uint8_t*>(got.data()), got.size()});
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    EXPECT_TRUE(SameBytes(got, data[i])) << i;
    ASSERT_TRUE(c.Close(*f).ok());
  };
  read_whole(40);
  // The window is 41..44 now: done are 0..3, the 37 passed and those 4.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (c.CacheStatus()->hint_done < 45 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const client::CacheStats s = *c.CacheStatus();
  ASSERT_EQ(s.hint_done, 45u) << "the window did not move to the reader";
  EXPECT_EQ(s.prefetch_files, 8u) << "entries the reader passed were fetched";
  read_whole(41);
  EXPECT_EQ(c.CacheStatus()->hits, s.hits + 1) << "the reader's next file was not fetched ahead";
  EXPECT_EQ(c.CacheStatus()->misses, s.misses);
}

// Sequential read-ahead (client/lib/read_ahead.h), through libsfs as the
// Python binding reads: a handle read front to back has the next window
// (here 4 MiB: a 2 x 1 MiB stripe row is less) fetched into the cache
// before it gets there, every byte fetched once; random reads ask for none.
TEST_F(CacheTest, ASequentialReaderFindsTheNextWindowFetchedAheadAndRandomReadsAskNone) {
  constexpr uint64_t kMiB = 1 << 20;
  client::Options opts;
  opts.mds_address = cluster().mds_address();
  opts.cache_ram = 64 * kMiB;  // read-ahead at most 8 MiB (an eighth)
  auto reader = client::Client::Connect(opts);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  client::LayoutSpec l;
  l.stripe_size = kMiB;
  l.stripe_count = 2;
  const std::string data = Random(24 * kMiB, 7), other = Random(24 * kMiB, 8);
  for (const auto& [name, bytes] : {std::pair{"seq", &data}, std::pair{"rand", &other}}) {
    client::Attr a;
    auto f = client_->Create(kRoot, client::kRootIno, name, S_IFREG | 0644,
                             O_WRONLY | O_CREAT | O_TRUNC, &a, &l);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    ASSERT_TRUE(
        client_->Write(**f, 0, {reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size()})
            .ok());
    ASSERT_TRUE(client_->Close(*f).ok());
  }
  client::Client& c = **reader;
  auto f = c.OpenPath(kRoot, "/seq", O_RDONLY, nullptr);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const double before = OssReadBytes();
  std::string got(data.size(), '\0');
  auto read = [&](client::Client& cl, client::File& file, uint64_t off) {
    auto n = cl.Read(file, off, {reinterpret_cast<uint8_t*>(got.data()) + off, kMiB});
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    ASSERT_EQ(*n, kMiB);
  };
  read(c, **f, 0);
  EXPECT_EQ(c.CacheStatus()->read_ahead_bytes, 4 * kMiB);  // [1, 5) MiB, asked at once
  // The fill runs in the background: polled, with a deadline.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (c.CacheStatus()->blocks < 5) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "read-ahead not in the cache";
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const uint64_t hits = c.CacheStatus()->hits;
  read(c, **f, kMiB);
  EXPECT_EQ(c.CacheStatus()->hits, hits + 1) << "the next MiB was not read ahead";
  for (uint64_t off = 2 * kMiB; off < data.size(); off += kMiB) read(c, **f, off);
  EXPECT_TRUE(SameBytes(got, data));
  client::CacheStats s = *c.CacheStatus();
  EXPECT_EQ(s.read_ahead_bytes, data.size() - kMiB);  // all but the first MiB, asked ahead
  EXPECT_GE(s.hits, 5u);
  // Each block came from the OSSes once: fetched by the reader itself or by
  // a read-ahead (which a reader that got there first waited for: joined).
  EXPECT_EQ(s.miss_bytes - s.joined_bytes + s.prefetched_bytes, data.size())
      << "misses " << s.miss_bytes << " joined " << s.joined_bytes << " read ahead "
      << s.prefetched_bytes;
  EXPECT_LE(OssReadBytes() - before, static_cast<double>(data.size()))
      << "a block was fetched twice";
  ASSERT_TRUE(c.Close(*f).ok());

  auto g = c.OpenPath(kRoot, "/rand", O_RDONLY, nullptr);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  for (uint64_t mib : {10, 3, 17, 0, 12}) read(c, **g, mib * kMiB);
  EXPECT_EQ(c.CacheStatus()->read_ahead_bytes, s.read_ahead_bytes) << "random reads read ahead";
  for (uint64_t mib : {10, 3, 17, 0, 12}) {
    EXPECT_TRUE(SameBytes(std::string_view(got).substr(mib * kMiB, kMiB),
                          std::string_view(other).substr(mib * kMiB, kMiB)))
        << mib;
  }
  ASSERT_TRUE(c.Close(*g).ok());
}

}  // namespace
}  // namespace sfs::testing
