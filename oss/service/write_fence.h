// WriteFence: keeps a client's late writes from landing after its newer ones
// (issue 15; docs/protocol.md "Write fencing").
//
// Every mutating OSS request of a fencing client carries the client's fence
// epoch for this OSS (OssRequest.fence_epoch, 1 at first). The client raises
// it past a call's epoch when that call ended without a reply (timed out,
// its connection lost): the call may still be in the network and land late.
// The fence remembers, per client id, the highest epoch seen and refuses a
// request with a lower one (ESTALE + fenced): once a request of the raised
// epoch arrived, nothing the client gave up on before can apply.
//
// Check and apply are atomic against a raise: Admit() hands back an
// Admission that holds a shared lock while the request applies its change,
// and a raise takes that lock exclusively. So a request that passed the check
// has finished applying before the request that raised the epoch starts, and
// one that had not passed it is refused.
//
// Cost: epoch 0 (a client that does not fence, the MDS's destroys) takes no
// lock. Otherwise one shared lock of one of kStripes stripes chosen by client
// id (an uncontended reader lock is one atomic operation) and a hash lookup.
// The locks prefer writers, so a raise is never starved by other clients'
// requests on its stripe; while it waits, their new requests on that stripe
// wait for the in-flight ones to finish (raises are rare: one per timeout).
// Memory: only clients that raised past 1 have an entry (16 bytes + a node),
// kept until the OSS exits; a fresh process needs none, since a request
// held in a connection to an earlier process cannot reach this one.
//
// Thread safety: all methods may be called concurrently.
#pragma once

#include <pthread.h>

#include <array>
#include <cstdint>
#include <unordered_map>

#include "common/status.h"

namespace sfs::oss {

class WriteFence {
 public:
  static constexpr size_t kStripes = 64;

  // Holds the right to apply one admitted request; releases it when destroyed.
  class Admission {
   public:
    Admission() = default;
    explicit Admission(pthread_rwlock_t* lock) : lock_(lock) {}
    Admission(Admission&& o) noexcept : lock_(o.lock_) { o.lock_ = nullptr; }
    Admission& operator=(Admission&&) = delete;
    Admission(const Admission&) = delete;
    ~Admission() {
      if (lock_ != nullptr) pthread_rwlock_unlock(lock_);
    }

   private:
    pthread_rwlock_t* lock_ = nullptr;  // held shared, or null (nothing held)
  };

  // enabled = false admits everything (sfs-oss --fencing=off, a test's negative control).
  explicit WriteFence(bool enabled = true);
  ~WriteFence();
  WriteFence(const WriteFence&) = delete;
  WriteFence& operator=(const WriteFence&) = delete;

  // Admits a mutating request of `client` carrying `epoch` iff epoch is 0 or
  // at least the highest this client sent; a higher one first raises the
  // client's epoch (waiting for the admissions it holds to end).
  // ESTALE if the client has since sent a higher epoch.
  // REQUIRES: the caller holds no Admission of this fence.
  Result<Admission> Admit(uint64_t client, uint64_t epoch);

  // The highest epoch `client` sent (1 if none above 1). For tests and logs.
  uint64_t Highest(uint64_t client);

 private:
  struct alignas(64) Stripe {
    pthread_rwlock_t lock;
    std::unordered_map<uint64_t, uint64_t> highest;  // GUARDED_BY(lock); only values > 1
  };
  Stripe& StripeOf(uint64_t client);
  static uint64_t HighestLocked(const Stripe& s, uint64_t client);  // REQUIRES: s.lock held

  const bool enabled_;
  std::array<Stripe, kStripes> stripes_;
};

}  // namespace sfs::oss
