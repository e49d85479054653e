// Prefetcher (prefetcher.h): the window in front of the reader, and the
// wake-ups a reader's Advance gives the workers.
#include "client/lib/prefetcher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace sfs::client {
namespace {

using namespace std::chrono_literals;

std::vector<PrefetchItem> Items(int n) {
  std::vector<PrefetchItem> v;
  for (int i = 0; i < n; ++i) v.push_back({"/d/f" + std::to_string(i), 0, UINT64_MAX});
  return v;
}

// Every entry the window admits after each Advance is fetched (none lost
// because only some workers were woken), and none beyond it.
TEST(PrefetcherTest, EachAdvanceAdmitsExactlyTheWindowAndNoEntryIsLeftBehind) {
  constexpr int kItems = 200;
  constexpr uint64_t kWindow = 3;
  std::mutex mu;
  std::set<uint64_t> fetched;
  Prefetcher p(8, kWindow, [&](const Cred&, const PrefetchItem&, uint64_t pos) {
    std::lock_guard<std::mutex> lock(mu);
    fetched.insert(pos);
    return Prefetcher::Outcome::kDone;
  });
  p.Start(Cred{}, Items(kItems), 0, false);
  // With no reader, idle once the window is fetched (not the whole hint).
  ASSERT_TRUE(p.WaitIdle(10s));
  EXPECT_EQ(p.GetProgress().done, kWindow);
  EXPECT_EQ(p.GetProgress().window, kWindow);
  auto wait_done = [&](uint64_t n) {
    auto deadline = std::chrono::steady_clock::now() + 10s;
    while (p.GetProgress().done < n && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    return p.GetProgress().done;
  };
  ASSERT_EQ(wait_done(kWindow), kWindow);
  for (uint64_t pos = 0; pos < kItems; ++pos) {
    p.Advance(pos);
    const uint64_t want = std::min<uint64_t>(kItems, pos + 1 + kWindow);
    ASSERT_EQ(wait_done(want), want) << "after Advance(" << pos << ")";
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_EQ(fetched.size(), want);
    ASSERT_EQ(*fetched.rbegin(), want - 1) << "fetched past the window";
  }
  EXPECT_TRUE(p.WaitIdle(1s));
}

// An entry that must wait for room (kNotYet) is asked again after a frontier
// move, and only then.
TEST(PrefetcherTest, AnEntryWithoutRoomIsRetriedAfterTheReaderMovesOn) {
  std::atomic<int> calls{0};
  std::atomic<bool> room{false};
  Prefetcher p(4, 8, [&](const Cred&, const PrefetchItem&, uint64_t) {
    ++calls;
    return room.load() ? Prefetcher::Outcome::kDone : Prefetcher::Outcome::kNotYet;
  });
  p.Start(Cred{}, Items(1), 0, false);
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (calls.load() < 1 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  ASSERT_EQ(calls.load(), 1);
  // Nothing is left to do before the reader moves on: idle, with the entry
  // waiting (and not asked again meanwhile).
  EXPECT_TRUE(p.WaitIdle(10s));
  Prefetcher::Progress pr = p.GetProgress();
  EXPECT_EQ(pr.done, 0u);
  EXPECT_EQ(pr.waiting, 1u);
  EXPECT_EQ(pr.window, 1u);
  EXPECT_EQ(calls.load(), 1);
  room = true;
  p.Advance(0);
  EXPECT_TRUE(p.WaitIdle(10s));
  EXPECT_EQ(calls.load(), 2);
}

// Entries the readers passed while the workers were busy (a slow start: the
// listing of a huge directory) are not fetched: the workers go on from the
// frontier, and the passed entries count as done.
TEST(PrefetcherTest, EntriesTheReadersPassedAreSkipped) {
  constexpr int kItems = 100;
  constexpr uint64_t kWindow = 4;
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  std::set<uint64_t> fetched;
  Prefetcher p(kWindow, kWindow, [&](const Cred&, const PrefetchItem&, uint64_t pos) {
    std::unique_lock<std::mutex> lock(mu);
    fetched.insert(pos);
    cv.notify_all();
    cv.wait(lock, [&] { return open; });
    return Prefetcher::Outcome::kDone;
  });
  p.Start(Cred{}, Items(kItems), 0, false);
  {
    // Every worker holds one of the first window's entries.
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 10s, [&] { return fetched.size() == kWindow; }));
  }
  p.Advance(50);  // the readers are at entry 50
  {
    std::lock_guard<std::mutex> lock(mu);
    open = true;
  }
  cv.notify_all();
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (p.GetProgress().done < 51 + kWindow && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  EXPECT_EQ(p.GetProgress().done, 51 + kWindow);
  {
    std::lock_guard<std::mutex> lock(mu);
    std::set<uint64_t> want = {0, 1, 2, 3, 51, 52, 53, 54};
    EXPECT_EQ(fetched, want);
  }
  p.Advance(kItems - 1);  // the readers read the rest themselves
  EXPECT_TRUE(p.WaitIdle(10s));
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(fetched.size(), 2 * kWindow);
}

}  // namespace
}  // namespace sfs::client
