// DirCursor: stable positions over a directory that changes between pages.
#include "client/fuse/dir_cursor.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace sfs::fuse {
namespace {

// A directory as a sorted set of names; Fetch is libsfs Readdir's contract.
struct FakeDir {
  std::set<std::string> names;
  int calls = 0;
  DirCursor::FetchFn Fetch() {
    return [this](std::string_view after, uint32_t max) -> Result<client::DirPage> {
      ++calls;
      client::DirPage page;
      for (auto it = names.upper_bound(std::string(after)); it != names.end(); ++it) {
        if (page.entries.size() == max) return page;
        page.entries.push_back(client::DirEntry{*it, 100 + page.entries.size(), 8, {}});
      }
      page.eof = true;
      return page;
    };
  }
};

std::string NameAt(DirCursor& c, uint64_t pos, const DirCursor::FetchFn& f) {
  Result<client::DirEntry*> e = c.EntryAt(pos, f);
  if (!e.ok()) return "error";
  return *e == nullptr ? "end" : (*e)->name;
}

TEST(DirCursorTest, ListsEveryNameInOrderAcrossPages) {
  FakeDir d{{"a", "b", "c", "d", "e"}};
  DirCursor c(2);
  auto f = d.Fetch();
  std::string all;
  for (uint64_t pos = 2;; ++pos) {
    std::string n = NameAt(c, pos, f);
    if (n == "end") break;
    all += n;
  }
  EXPECT_EQ(all, "abcde");
  EXPECT_EQ(d.calls, 3);
}

// Each entry carries the stamp of the page that brought it, and a Reset
// forgets them with the entries.
TEST(DirCursorTest, EachEntryHasItsPagesStamp) {
  FakeDir d{{"a", "b", "c", "d", "e"}};
  DirCursor c(2);
  uint64_t page = 0;
  auto inner = d.Fetch();
  DirCursor::FetchFn f = [&](std::string_view after, uint32_t max) {
    c.StampNextPage({{}, ++page, 0, 0});
    return inner(after, max);
  };
  EXPECT_EQ(c.StampOf(2), nullptr);
  for (uint64_t pos = 2; NameAt(c, pos, f) != "end"; ++pos) {}
  const uint64_t want[] = {1, 1, 2, 2, 3};  // a b | c d | e
  for (uint64_t pos = 2; pos < 7; ++pos) {
    ASSERT_NE(c.StampOf(pos), nullptr) << pos;
    EXPECT_EQ(c.StampOf(pos)->epoch, want[pos - 2]) << pos;
  }
  EXPECT_EQ(c.StampOf(0), nullptr);
  c.Reset();
  EXPECT_EQ(c.StampOf(2), nullptr);
}

TEST(DirCursorTest, EarlierPositionsStayPutWhenNamesComeAndGo) {
  FakeDir d{{"b", "d", "f", "h"}};
  DirCursor c(2);
  auto f = d.Fetch();
  EXPECT_EQ(NameAt(c, 3, f), "d");
  d.names.erase("b");
  d.names.insert("a");
  d.names.insert("e");
  EXPECT_EQ(NameAt(c, 2, f), "b");  // seekdir back: same entry as before
  EXPECT_EQ(NameAt(c, 4, f), "e");  // the next page resumes after "d"
  EXPECT_EQ(NameAt(c, 5, f), "f");
}

TEST(DirCursorTest, ResetSeesTheDirectoryAsItIsNow) {
  FakeDir d{{"x"}};
  DirCursor c(8);
  auto f = d.Fetch();
  EXPECT_EQ(NameAt(c, 3, f), "end");
  d.names.insert("w");
  EXPECT_EQ(NameAt(c, 2, f), "x");
  c.Reset();
  EXPECT_EQ(NameAt(c, 2, f), "w");
}

TEST(DirCursorTest, ServerRepeatingAPageEndsTheListing) {
  DirCursor c(2);
  DirCursor::FetchFn same = [](std::string_view, uint32_t) -> Result<client::DirPage> {
    client::DirPage p;
    p.entries.push_back(client::DirEntry{"a", 1, 8, {}});
    return p;
  };
  EXPECT_EQ(NameAt(c, 2, same), "a");
  EXPECT_EQ(NameAt(c, 3, same), "end");
}

TEST(DirCursorTest, FetchErrorIsReturned) {
  DirCursor c(2);
  DirCursor::FetchFn bad = [](std::string_view, uint32_t) -> Result<client::DirPage> {
    return Status(ESTALE, "gone");
  };
  Result<client::DirEntry*> e = c.EntryAt(2, bad);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), ESTALE);
}

}  // namespace
}  // namespace sfs::fuse
