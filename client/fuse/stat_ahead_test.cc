// StatAhead: when a run of lookups lists a directory ahead, what it keeps,
// and what forgets it.
#include "client/fuse/stat_ahead.h"

#include <dirent.h>
#include <sys/stat.h>

#include <atomic>
#include <functional>
#include <string>

#include <gtest/gtest.h>

namespace sfs::fuse {
namespace {

constexpr uint64_t kDir = 7;

client::DirEntry File(const std::string& name, uint64_t ino, uint32_t lease_ms) {
  client::DirEntry e;
  e.name = name;
  e.ino = ino;
  e.type = DT_REG;
  client::Attr a;
  a.ino = ino;
  a.mode = S_IFREG | 0644;
  a.size = ino * 10;
  a.lease_ms = lease_ms;
  e.attr = a;
  return e;
}

// A directory of n files f0..f(n-1), listed in pages of StatAhead::kPageEntries.
struct FakeDir {
  int n = 10;
  uint32_t dir_lease_ms = 5000;
  uint32_t entry_lease_ms = 5000;
  std::function<void()> during_list;  // runs inside each page request
  std::atomic<int> pages{0};

  Result<client::DirPage> List(uint64_t dir, std::string_view after) {
    ++pages;
    if (during_list) during_list();
    client::DirPage p;
    p.dir_lease_ms = dir_lease_ms;
    int start = after.empty() ? 0 : std::stoi(std::string(after.substr(1))) + 1;
    for (int i = start; i < n && p.entries.size() < StatAhead::kPageEntries; ++i) {
      p.entries.push_back(File("f" + std::to_string(i), 100 + i, entry_lease_ms));
    }
    p.eof = start + static_cast<int>(p.entries.size()) >= n;
    return p;
  }
  StatAhead::ListFn Fn() {
    return [this](const client::Cred&, uint64_t dir, std::string_view after) {
      return List(dir, after);
    };
  }
};

void Misses(StatAhead& s, uint64_t dir, int n) {
  for (int i = 0; i < n; ++i) s.NoteMiss(dir, client::Cred{});
}

TEST(StatAheadTest, ARunOfLookupsListsTheDirectoryAndEachEntryIsHandedOutOnce) {
  FakeDir d;
  d.n = 3000;  // three pages
  StatAhead s(d.Fn());
  Misses(s, kDir, StatAhead::kTrigger - 1);
  s.WaitIdle();
  EXPECT_EQ(s.listings(), 0u) << "fewer lookups than the trigger";
  Misses(s, kDir, 1);
  s.WaitIdle();
  EXPECT_EQ(s.listings(), 1u);
  EXPECT_EQ(d.pages.load(), 3);
  EXPECT_EQ(s.size(), 3000u);
  client::Attr a;
  ASSERT_TRUE(s.Take(kDir, "f2999", &a));
  EXPECT_EQ(a.ino, 3099u);
  EXPECT_EQ(a.size, 30990u);
  EXPECT_GT(a.lease_ms, 4000u);
  EXPECT_LE(a.lease_ms, 5000u);
  EXPECT_FALSE(s.Take(kDir, "f2999", &a)) << "handed out once";
  EXPECT_FALSE(s.Take(kDir + 1, "f1", &a)) << "another directory";
  EXPECT_EQ(s.hits(), 1u);
}

TEST(StatAheadTest, LookupsSpreadOverDirectoriesListNothing) {
  FakeDir d;
  StatAhead s(d.Fn());
  for (int i = 0; i < 4 * StatAhead::kTrigger; ++i) s.NoteMiss(kDir + (i % 2), client::Cred{});
  s.WaitIdle();
  EXPECT_EQ(s.listings(), 0u);
}

TEST(StatAheadTest, AClearForgetsEverythingAndResetsTheCount) {
  FakeDir d;
  StatAhead s(d.Fn());
  Misses(s, kDir, StatAhead::kTrigger);
  s.WaitIdle();
  ASSERT_EQ(s.size(), 10u);
  s.Clear();
  client::Attr a;
  EXPECT_FALSE(s.Take(kDir, "f1", &a));
  EXPECT_EQ(s.size(), 0u);
  // A lookup-then-change loop (rm) never lists: each change clears the count.
  for (int i = 0; i < 4 * StatAhead::kTrigger; ++i) {
    s.NoteMiss(kDir, client::Cred{});
    s.Clear();
  }
  s.WaitIdle();
  EXPECT_EQ(s.listings(), 1u);
}

TEST(StatAheadTest, APageInFlightAcrossAClearIsNotKept) {
  FakeDir d;
  StatAhead* self = nullptr;
  d.during_list = [&] { self->Clear(); };  // a change here while the page is at the MDS
  StatAhead s(d.Fn());
  self = &s;
  Misses(s, kDir, StatAhead::kTrigger);
  s.WaitIdle();
  EXPECT_EQ(s.listings(), 1u);
  EXPECT_EQ(s.size(), 0u);
}

client::Attr FileAttr(uint64_t ino, uint32_t nlink) {
  client::Attr a;
  a.ino = ino;
  a.mode = S_IFREG | 0644;
  a.nlink = nlink;
  return a;
}

// An unlink loop (mdtest -r): each LOOKUP showed a file with one link, so the
// unlink forgets only that name; the listing and the count of lookups stay.
TEST(StatAheadTest, TheUnlinkOfAFilesOnlyLinkForgetsOnlyItsName) {
  FakeDir d;
  StatAhead s(d.Fn());
  Misses(s, kDir, StatAhead::kTrigger);
  s.WaitIdle();
  ASSERT_EQ(s.size(), 10u);
  client::Attr a;
  ASSERT_TRUE(s.Take(kDir, "f1", &a));
  s.Seen(kDir, "f1", FileAttr(101, 1));
  s.Seen(kDir, "f2", FileAttr(102, 1));
  ASSERT_TRUE(s.Unlinking(kDir, "f1"));
  s.Unlinked(kDir, "f1");
  ASSERT_TRUE(s.Unlinking(kDir, "f2")) << "a name still held is forgotten too";
  s.Unlinked(kDir, "f2");
  EXPECT_FALSE(s.Take(kDir, "f2", &a));
  EXPECT_TRUE(s.Take(kDir, "f3", &a)) << "the rest of the listing stays";
  EXPECT_EQ(s.size(), 7u);
  // Never seen, or a file with another link: the caller must clear.
  EXPECT_FALSE(s.Unlinking(kDir, "f4"));
  s.Seen(kDir, "f5", FileAttr(105, 2));
  EXPECT_FALSE(s.Unlinking(kDir, "f5"));
}

// A page at the MDS while an unlink is in flight may still show the name:
// it is kept without it.
TEST(StatAheadTest, APageInFlightAcrossAnUnlinkIsKeptWithoutTheName) {
  FakeDir d;
  StatAhead* self = nullptr;
  d.during_list = [&] {
    self->Seen(kDir, "f4", FileAttr(104, 1));
    ASSERT_TRUE(self->Unlinking(kDir, "f4"));
    self->Unlinked(kDir, "f4");
  };
  StatAhead s(d.Fn());
  self = &s;
  Misses(s, kDir, StatAhead::kTrigger);
  s.WaitIdle();
  EXPECT_EQ(s.size(), 9u);
  client::Attr a;
  EXPECT_FALSE(s.Take(kDir, "f4", &a));
  EXPECT_TRUE(s.Take(kDir, "f5", &a));
}

TEST(StatAheadTest, EntriesWithoutBothLeasesAreNotKept) {
  FakeDir d;
  d.dir_lease_ms = 0;
  {
    StatAhead s(d.Fn());
    Misses(s, kDir, StatAhead::kTrigger);
    s.WaitIdle();
    EXPECT_EQ(s.size(), 0u) << "no lease on the directory's names";
  }
  d.dir_lease_ms = 5000;
  d.entry_lease_ms = 0;
  StatAhead s(d.Fn());
  Misses(s, kDir, StatAhead::kTrigger);
  s.WaitIdle();
  EXPECT_EQ(s.size(), 0u) << "no lease on the attributes";
}

TEST(StatAheadTest, AnEntryLivesNoLongerThanTheShorterLease) {
  FakeDir d;
  d.dir_lease_ms = 300;
  StatAhead s(d.Fn());
  Misses(s, kDir, StatAhead::kTrigger);
  s.WaitIdle();
  client::Attr a;
  ASSERT_TRUE(s.Take(kDir, "f0", &a));
  EXPECT_LE(a.lease_ms, 300u);
}

TEST(StatAheadTest, ADirectoryIsNotListedAgainAtOnceUnlessSomethingChanged) {
  FakeDir d;
  StatAhead s(d.Fn());
  Misses(s, kDir, StatAhead::kTrigger);
  s.WaitIdle();
  Misses(s, kDir, StatAhead::kTrigger);
  s.WaitIdle();
  EXPECT_EQ(s.listings(), 1u);
  s.Clear();
  Misses(s, kDir, StatAhead::kTrigger);
  s.WaitIdle();
  EXPECT_EQ(s.listings(), 2u);
}

// A listing that its directory's lookups do not take from (a directory
// larger than a listing, read in random order) makes the next one wait
// longer, even across a Clear; one they take from does not.
TEST(StatAheadTest, AListingThatDoesNotPayDelaysTheNextOne) {
  FakeDir d;
  d.n = 3000;
  StatAhead s(d.Fn());
  auto list_again = [&] {
    s.Clear();  // relisted at once otherwise (no back-off)
    Misses(s, kDir, StatAhead::kTrigger);
    s.WaitIdle();
  };
  Misses(s, kDir, StatAhead::kTrigger);
  s.WaitIdle();
  ASSERT_EQ(s.listings(), 1u);
  // The lookups that follow are all of names the listing does not hold.
  list_again();
  EXPECT_EQ(s.listings(), 2u);
  EXPECT_EQ(s.backoff(kDir), 1) << "0 of 3000 entries taken";
  list_again();
  EXPECT_EQ(s.listings(), 2u) << "listed again within the back-off";
  EXPECT_EQ(d.pages.load(), 6);

  // Another directory whose lookups take one entry in kYield: no back-off.
  constexpr uint64_t kOther = 8;
  FakeDir e;
  e.n = 3000;
  StatAhead t(e.Fn());
  for (int round = 1; round <= 3; ++round) {
    t.Clear();
    Misses(t, kOther, StatAhead::kTrigger);
    t.WaitIdle();
    EXPECT_EQ(t.listings(), static_cast<uint64_t>(round));
    EXPECT_EQ(t.backoff(kOther), 0);
    client::Attr a;
    for (int i = 0; i < 3000 / static_cast<int>(StatAhead::kYield); ++i) {
      ASSERT_TRUE(t.Take(kOther, "f" + std::to_string(i), &a)) << i;
    }
  }
}

}  // namespace
}  // namespace sfs::fuse
