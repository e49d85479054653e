// DestroyQueue: a background thread that destroys the objects of deleted
// files on their OSTs.
//
// The Namespace writes Q<seq> -> DestroyRec keys in the same batch that
// deletes a file (or replaces an empty file's layout), so the queue survives
// restarts. The worker scans the keys in order, sends each object to the OSS
// serving its OST (skipping OSTs that are down) once a KvStore::Sync made the
// records durable (an unlink not yet committed could come back after a power
// cut: its data must still be there), and deletes a key once the OSS answered
// OK or ENOENT. Failures are retried with exponential backoff (1 s doubling
// to 30 s); new work wakes the worker, after the linger (SetLinger) if set.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "mds/namespace/kv_store.h"
#include "mds/namespace/ost_registry.h"

namespace sfs::mds {

// Sends destroy requests. Implemented over RPC by the service layer and by
// fakes in tests.
class ObjectDestroyer {
 public:
  struct Item {
    std::string address;  // OSS serving the OST
    uint32_t ost = 0;
    uint64_t oid = 0;
  };
  virtual ~ObjectDestroyer() = default;
  // Destroys every item (possibly in parallel); one Status per item, in order.
  virtual std::vector<Status> Destroy(const std::vector<Item>& items) = 0;
};

class DestroyQueue {
 public:
  // REQUIRES: all three outlive the queue.
  DestroyQueue(KvStore* store, OstRegistry* osts, ObjectDestroyer* destroyer)
      : store_(store), osts_(osts), destroyer_(destroyer) {}
  ~DestroyQueue() { Stop(); }

  // Before Start: how long the worker waits after being woken, gathering
  // more work (each pass with work starts with an fsync). Default 0.
  void SetLinger(std::chrono::milliseconds linger) { linger_ = linger; }
  void Start();
  // Wakes the worker: new records were committed.
  void Notify();
  // Stops the worker thread (records not yet done stay for the next start). Idempotent.
  void Stop();
  // One pass over the queue (the worker's step; public for tests). Returns
  // the number of records still pending after the pass.
  size_t RunOnce();

 private:
  void Loop();

  KvStore* const store_;
  OstRegistry* const osts_;
  ObjectDestroyer* const destroyer_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;     // GUARDED_BY(mu_)
  bool notified_ = false;  // GUARDED_BY(mu_)
  bool full_pass_ = false;  // the last RunOnce filled a batch; worker thread only
  std::chrono::milliseconds linger_{0};
  std::thread thread_;
};

}  // namespace sfs::mds
