// The object destroy worker; see destroy_queue.h.
#include "mds/namespace/destroy_queue.h"

#include <algorithm>
#include <chrono>

#include "common/log.h"
#include "mds/namespace/keys.h"
#include "mds_store.pb.h"

namespace sfs::mds {
namespace {

constexpr size_t kBatch = 2048;  // records per pass: one commit, one destroy_batch per OST (or two)
constexpr std::chrono::milliseconds kMinBackoff{1000};
constexpr std::chrono::milliseconds kMaxBackoff{30000};

}  // namespace

void DestroyQueue::Start() { thread_ = std::thread([this] { Loop(); }); }

void DestroyQueue::Notify() {
  std::lock_guard<std::mutex> lock(mu_);
  // Already told (the worker lingers, or has yet to look): the pass to come
  // scans after this write. Waking the worker again only costs a hand-off per
  // unlink of a storm.
  if (notified_) return;
  notified_ = true;
  cv_.notify_one();
}

void DestroyQueue::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    cv_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
}

size_t DestroyQueue::RunOnce() {
  std::vector<std::string> keys_seen;
  std::vector<ObjectDestroyer::Item> items;
  size_t pending = 0;
  std::string q(1, keys::kQueue);
  Status st = store_->Scan(q, keys::PrefixEnd(q), [&](std::string_view k, std::string_view v) {
    proto::DestroyRec rec;
    if (!rec.ParseFromArray(v.data(), v.size())) {
      keys_seen.emplace_back(k);  // unreadable: drop it
      items.push_back({});
      return true;
    }
    auto address = osts_->UpAddress(rec.ost());
    if (!address) {
      ++pending;
      return true;
    }
    keys_seen.emplace_back(k);
    items.push_back({*address, rec.ost(), rec.oid()});
    return items.size() < kBatch;
  });
  if (!st.ok()) {
    LOG_WARN("destroy queue scan: " << st.ToString());
    return pending + 1;
  }
  std::vector<ObjectDestroyer::Item> live;
  for (const auto& it : items) {
    if (!it.address.empty()) live.push_back(it);
  }
  // The unlinks that queued these objects may not be committed yet (ops are
  // synced by the commit interval): make them durable before the data goes,
  // or a power cut could bring back a file whose objects are destroyed. A
  // Sync covers every write visible to the scan above.
  if (!live.empty()) {
    Status synced = store_->Sync();
    if (!synced.ok()) {
      LOG_WARN("destroy queue: commit before destroying: " << synced.ToString());
      return pending + items.size();
    }
  }
  std::vector<Status> results = destroyer_->Destroy(live);
  KvBatch done;
  size_t r = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].address.empty()) {
      done.Delete(keys_seen[i]);
      continue;
    }
    const Status& s = results[r++];
    if (s.ok() || s.code() == ENOENT) {
      done.Delete(keys_seen[i]);
    } else {
      ++pending;
      LOG_DEBUG("destroy ost " << items[i].ost << " oid " << items[i].oid << ": " << s.ToString());
    }
  }
  if (!done.empty()) {
    Status w = store_->Write(done, /*sync=*/false);  // a lost delete only repeats a destroy
    if (!w.ok()) LOG_WARN("destroy queue: " << w.ToString());
  }
  full_pass_ = items.size() >= kBatch && !done.empty();
  return pending;
}

void DestroyQueue::Loop() {
  auto backoff = kMinBackoff;
  while (true) {
    size_t pending = RunOnce();
    std::unique_lock<std::mutex> lock(mu_);
    if (stop_) return;
    if (full_pass_) continue;  // a full batch went through: go on at once
    if (pending == 0) {
      backoff = kMinBackoff;
      cv_.wait_for(lock, std::chrono::seconds(60), [&] { return stop_ || notified_; });
    } else {
      cv_.wait_for(lock, backoff, [&] { return stop_ || notified_; });
      backoff = std::min(backoff * 2, kMaxBackoff);
    }
    if (stop_) return;
    // Objects of removed files are garbage: no hurry. Lingering lets one
    // pass (and its fsync) take the removes of a whole storm, as Lustre
    // destroys OST objects only after the MDT transaction committed.
    if (linger_.count() > 0 && cv_.wait_for(lock, linger_, [&] { return stop_; })) return;
    notified_ = false;
  }
}

}  // namespace sfs::mds
