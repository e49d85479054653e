#include "client/lib/read_ahead.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>

namespace sfs::client {
namespace {

constexpr uint64_t kMiB = 1 << 20;
using Range = std::pair<uint64_t, uint64_t>;

TEST(PlanReadAheadTest, ASequentialReaderIsAskedAWindowAheadAndTheRestOnceHalfIsUsed) {
  ReadAheadState s;
  const uint64_t size = 100 * kMiB, w = 8 * kMiB;
  EXPECT_EQ(PlanReadAhead(s, 0, kMiB, size, w), (Range{kMiB, 9 * kMiB}));
  // 8 MiB asked for ahead of 1 MiB read; the next reads use it up to half.
  EXPECT_EQ(PlanReadAhead(s, kMiB, kMiB, size, w), (Range{0, 0}));
  EXPECT_EQ(PlanReadAhead(s, 2 * kMiB, kMiB, size, w), (Range{0, 0}));
  EXPECT_EQ(PlanReadAhead(s, 3 * kMiB, kMiB, size, w), (Range{0, 0}));
  EXPECT_EQ(PlanReadAhead(s, 4 * kMiB, kMiB, size, w), (Range{0, 0}));  // half left ahead
  EXPECT_EQ(PlanReadAhead(s, 5 * kMiB, kMiB, size, w), (Range{9 * kMiB, 14 * kMiB}));
}

TEST(PlanReadAheadTest, ASeekStartsOverAndRandomReadsAskForNothingAhead) {
  ReadAheadState s;
  const uint64_t size = 100 * kMiB, w = 8 * kMiB;
  EXPECT_EQ(PlanReadAhead(s, 50 * kMiB, kMiB, size, w), (Range{0, 0}));
  EXPECT_EQ(PlanReadAhead(s, 7 * kMiB, kMiB, size, w), (Range{0, 0}));
  EXPECT_EQ(PlanReadAhead(s, 30 * kMiB, 4096, size, w), (Range{0, 0}));
  // Sequential again from the last read's end: a window from there.
  EXPECT_EQ(PlanReadAhead(s, 30 * kMiB + 4096, 4096, size, w),
            (Range{30 * kMiB + 8192, 38 * kMiB + 8192}));
}

TEST(PlanReadAheadTest, TheWindowStopsAtTheEndOfTheFileAndAZeroWindowIsOff) {
  ReadAheadState s;
  EXPECT_EQ(PlanReadAhead(s, 0, kMiB, 3 * kMiB, 8 * kMiB), (Range{kMiB, 3 * kMiB}));
  EXPECT_EQ(PlanReadAhead(s, kMiB, 2 * kMiB, 3 * kMiB, 8 * kMiB), (Range{0, 0}));
  ReadAheadState whole;
  EXPECT_EQ(PlanReadAhead(whole, 0, 3 * kMiB, 3 * kMiB, 8 * kMiB), (Range{0, 0}));
  ReadAheadState off;
  EXPECT_EQ(PlanReadAhead(off, 0, kMiB, 100 * kMiB, 0), (Range{0, 0}));
}

TEST(ReadAheadTest, FillsRunOnTheThreadsAndAFullQueueDropsInsteadOfWaiting) {
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  int started = 0;
  std::vector<Range> filled;
  {
    ReadAhead ra(1, 2, [&](const std::shared_ptr<File>&, uint64_t, uint64_t off, uint64_t end) {
      std::unique_lock<std::mutex> lock(mu);
      ++started;
      cv.notify_all();
      cv.wait(lock, [&] { return release; });
      filled.emplace_back(off, end);
    });
    EXPECT_TRUE(ra.Submit(nullptr, 10, 0, 1));
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return started == 1; });  // the one thread holds the first
    }
    EXPECT_TRUE(ra.Submit(nullptr, 10, 1, 2));
    EXPECT_TRUE(ra.Submit(nullptr, 10, 2, 3));
    EXPECT_FALSE(ra.Submit(nullptr, 10, 3, 4));  // two queued: the bound
    EXPECT_EQ(ra.submitted_bytes(), 3u);
    {
      std::lock_guard<std::mutex> lock(mu);
      release = true;
    }
    cv.notify_all();
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return started == 3; });
  }  // the destructor joins: every fill started has finished
  EXPECT_EQ(filled, (std::vector<Range>{{0, 1}, {1, 2}, {2, 3}}));
}

}  // namespace
}  // namespace sfs::client
