// LeaseWatch: the thread that keeps this client's metadata leases honest
// (issue 6; the MDS side is mds/lease/lease_table.h).
//
// It long-polls the MDS with Watch (about 1 s per poll). For each batch of
// invalidations it first tells the MdsClient (so replies in flight get no
// lease: they may have been read before the change), then calls the handler
// for every item in order, and only then acks the batch's seq in its next
// poll: the MDS lets the changing client go on once the handler returned.
// The handler runs on this thread only (sfs-mount: FUSE notify calls, which
// must never run inside a FUSE request handler). A failed poll (MDS down,
// restarting) is retried every 200 ms; an MDS that does not know Watch
// (EPROTO) is asked again every 5 s, and no lease is granted meanwhile.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "client/lib/client.h"
#include "client/lib/mds_client.h"

namespace sfs::client {

class LeaseWatch {
 public:
  // REQUIRES: mds outlives this object.
  LeaseWatch(MdsClient* mds, InvalidationFn handler);
  ~LeaseWatch();  // Stop()
  LeaseWatch(const LeaseWatch&) = delete;
  LeaseWatch& operator=(const LeaseWatch&) = delete;
  // Ends the thread. A poll held by the MDS is cut short: a second, 1 ms poll
  // (acking only what was applied) makes the MDS answer the held one at once,
  // as it answers a superseded poll. Idempotent.
  void Stop();

 private:
  void Loop();
  bool SleepFor(std::chrono::milliseconds d);  // false if stopped meanwhile

  MdsClient* const mds_;
  const InvalidationFn handler_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // GUARDED_BY(mu_)
  uint64_t acked_ = 0;  // GUARDED_BY(mu_): every batch up to this seq was applied
  std::thread thread_;
};

}  // namespace sfs::client
