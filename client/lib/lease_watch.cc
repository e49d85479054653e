// LeaseWatch (see lease_watch.h).
#include "client/lib/lease_watch.h"

#include "common/log.h"

namespace sfs::client {

namespace {
constexpr auto kPoll = std::chrono::milliseconds(1000);
constexpr auto kRetry = std::chrono::milliseconds(200);
constexpr auto kUnsupportedRetry = std::chrono::milliseconds(5000);
}  // namespace

LeaseWatch::LeaseWatch(MdsClient* mds, InvalidationFn handler)
    : mds_(mds), handler_(std::move(handler)) {
  thread_ = std::thread([this] { Loop(); });
}

LeaseWatch::~LeaseWatch() { Stop(); }

void LeaseWatch::Stop() {
  uint64_t acked = 0;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stop_ && !thread_.joinable()) return;
    stop_ = true;
    acked = acked_;
    cv_.notify_all();
  }
  if (!thread_.joinable()) return;
  // Supersedes the held poll and gives the leases back: other clients' changes
  // need not wait out this unmounted client's leases.
  (void)mds_->Watch(acked, std::chrono::milliseconds(1), /*leaving=*/true);
  thread_.join();
}

bool LeaseWatch::SleepFor(std::chrono::milliseconds d) {
  std::unique_lock<std::mutex> l(mu_);
  return !cv_.wait_for(l, d, [this] { return stop_; });
}

void LeaseWatch::Loop() {
  uint64_t ack = 0;
  for (;;) {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (stop_) return;
    }
    auto batch = mds_->Watch(ack, kPoll);
    if (!batch.ok()) {
      bool old_mds = batch.status().code() == EPROTO;
      LOG_DEBUG("lease watch: " << batch.status().ToString());
      if (!SleepFor(old_mds ? kUnsupportedRetry : kRetry)) return;
      continue;
    }
    if (!batch->items.empty()) {
      mds_->NoteInvalidation();
      // Attributes first, for every item: dropping them takes no lock in the
      // kernel, whereas a name's invalidation waits for its directory's lock,
      // which a change of our own in that directory may hold while the MDS
      // waits (without us, to break the cycle) for another client. Once an
      // inode's attributes are gone, a path through its stale name asks the
      // MDS and learns ESTALE, then looks the name up again.
      // (A lock recall is an item of its own, passed on as it is.)
      for (const Invalidation& item : batch->items) {
        handler_(Invalidation{item.ino, 0, {}, item.lock_recall});
      }
      for (const Invalidation& item : batch->items) {
        if (item.parent != 0) handler_(item);
      }
    }
    ack = batch->seq;  // sent with the next poll: after every handler returned
    std::lock_guard<std::mutex> l(mu_);
    acked_ = ack;
  }
}

}  // namespace sfs::client
