// WriteFence: the per-client epoch check of mutating OSS requests (write_fence.h).
#include "oss/service/write_fence.h"

#include "common/log.h"

namespace sfs::oss {

WriteFence::WriteFence(bool enabled) : enabled_(enabled) {
  pthread_rwlockattr_t attr;
  pthread_rwlockattr_init(&attr);
  // glibc's default lets readers overtake a waiting writer for ever; a raise
  // must not wait behind an endless stream of other clients' writes.
  pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
  for (Stripe& s : stripes_) pthread_rwlock_init(&s.lock, &attr);
  pthread_rwlockattr_destroy(&attr);
}

WriteFence::~WriteFence() {
  for (Stripe& s : stripes_) pthread_rwlock_destroy(&s.lock);
}

WriteFence::Stripe& WriteFence::StripeOf(uint64_t client) {
  // Client ids are random, but mix anyway: a tool may pick small ones.
  uint64_t h = client * 0x9E3779B97F4A7C15ull;
  return stripes_[(h >> 32) % kStripes];
}

uint64_t WriteFence::HighestLocked(const Stripe& s, uint64_t client) {
  auto it = s.highest.find(client);
  return it == s.highest.end() ? 1 : it->second;
}

Result<WriteFence::Admission> WriteFence::Admit(uint64_t client, uint64_t epoch) {
  if (!enabled_ || epoch == 0) return Admission();
  Stripe& s = StripeOf(client);
  for (;;) {
    pthread_rwlock_rdlock(&s.lock);
    const uint64_t high = HighestLocked(s, client);
    if (epoch == high) return Admission(&s.lock);
    pthread_rwlock_unlock(&s.lock);
    if (epoch < high) {
      return Status::Errno(ESTALE, "fenced: client " + std::to_string(client) + " epoch " +
                                       std::to_string(epoch) + " is older than " +
                                       std::to_string(high));
    }
    // The exclusive lock waits until every admitted request of the stripe has
    // applied: those of the older epoch are done before this one starts.
    pthread_rwlock_wrlock(&s.lock);
    uint64_t& slot = s.highest[client];
    if (slot < epoch) slot = epoch;
    pthread_rwlock_unlock(&s.lock);
    LOG_DEBUG("client " << client << " fence epoch raised to " << epoch);
    // Checked again under the shared lock: a still newer epoch may have come
    // in between, and then this request is as stale as any other.
  }
}

uint64_t WriteFence::Highest(uint64_t client) {
  Stripe& s = StripeOf(client);
  pthread_rwlock_rdlock(&s.lock);
  const uint64_t high = HighestLocked(s, client);
  pthread_rwlock_unlock(&s.lock);
  return high;
}

}  // namespace sfs::oss
