// Unit tests of CloseQueue (client/lib/close_queue.h): order, put-back, and
// when the flusher is told to flush. No servers.
#include "client/lib/close_queue.h"

#include <future>
#include <thread>

#include <gtest/gtest.h>

namespace sfs::client {
namespace {

using std::chrono::milliseconds;

std::vector<uint64_t> Ids(const std::vector<DeferredClose>& v) {
  std::vector<uint64_t> out;
  for (const DeferredClose& c : v) out.push_back(c.open_id);
  return out;
}

TEST(CloseQueueTest, TakeGivesTheOldestClosesFirstAndAtMostMax) {
  CloseQueue q(milliseconds(10), 100);
  for (uint64_t id = 1; id <= 5; ++id) q.Add(100 + id, id);
  EXPECT_EQ(Ids(q.Take(3)), (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(q.size(), 2u);
  EXPECT_EQ(Ids(q.Take(10)), (std::vector<uint64_t>{4, 5}));
  EXPECT_TRUE(q.Take(10).empty());
}

TEST(CloseQueueTest, ClosesPutBackComeFirstInTheirOrderWithTheirInodes) {
  CloseQueue q(milliseconds(10), 100);
  q.Add(11, 1);
  q.Add(12, 2);
  q.Add(13, 3);
  std::vector<DeferredClose> taken = q.Take(2);
  q.Add(14, 4);
  q.PutBack(taken);
  std::vector<DeferredClose> all = q.Take(10);
  EXPECT_EQ(Ids(all), (std::vector<uint64_t>{1, 2, 3, 4}));
  EXPECT_EQ(all[0].ino, 11u);
  EXPECT_EQ(all[3].ino, 14u);
}

TEST(CloseQueueTest, AFlushIsDueOnlyOnceTheOldestCloseHasWaitedMaxDelay) {
  CloseQueue q(milliseconds(50), 100);
  auto start = std::chrono::steady_clock::now();
  q.Add(1, 1);
  ASSERT_TRUE(q.WaitDue());
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(50));
  EXPECT_EQ(q.size(), 1u) << "WaitDue only says when; the close is still queued";
}

TEST(CloseQueueTest, AFlushIsDueAtOnceWhenMaxQueuedClosesWait) {
  CloseQueue q(std::chrono::hours(1), 3);
  auto due = std::async(std::launch::async, [&] { return q.WaitDue(); });
  for (uint64_t id = 1; id <= 3; ++id) q.Add(id, id);
  EXPECT_TRUE(due.get());
}

TEST(CloseQueueTest, ACloseQueuedIntoAnIdleQueueWakesTheFlusher) {
  // The flusher sleeps with nothing queued (not ticking): the first close
  // must wake it, or it would never flush.
  CloseQueue q(milliseconds(20), 100);
  auto due = std::async(std::launch::async, [&] { return q.WaitDue(); });
  q.Add(1, 1);
  EXPECT_TRUE(due.get());
}

TEST(CloseQueueTest, StopEndsAWaitingFlusherAndKeepsTheCloses) {
  CloseQueue q(std::chrono::hours(1), 100);
  q.Add(1, 1);
  auto due = std::async(std::launch::async, [&] { return q.WaitDue(); });
  q.Stop();
  EXPECT_FALSE(due.get());
  EXPECT_FALSE(q.WaitDue());
  EXPECT_EQ(q.size(), 1u);
}

}  // namespace
}  // namespace sfs::client
