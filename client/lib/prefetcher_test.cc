// Prefetcher (prefetcher.h): the window in front of the reader, and the
// wake-ups a reader's Advance gives the workers.
#include "client/lib/prefetcher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
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
  auto wait_done = [&](uint64_t n) {
    auto deadline = std::chrono::steady_clock::now() + 10s;
    while (p.Progress().second < n && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    return p.Progress().second;
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
  EXPECT_FALSE(p.WaitIdle(50ms));  // it waits for the reader; nothing else asks again
  EXPECT_EQ(calls.load(), 1);
  room = true;
  p.Advance(0);
  EXPECT_TRUE(p.WaitIdle(10s));
  EXPECT_EQ(calls.load(), 2);
}

}  // namespace
}  // namespace sfs::client
