// LockBook (lock_book.h).
#include "client/lib/lock_book.h"

#include <fcntl.h>

#include <cerrno>
#include <optional>

#include "common/log.h"

namespace sfs::client {
namespace {

lock::Range RangeOf(const LockSpec& l) { return {l.start, l.end, l.type}; }

}  // namespace

bool LockBook::MayHold(const Key& k) {
  std::lock_guard<std::mutex> lock(mu_);
  return held_.count(k) != 0;
}

void LockBook::Record(const Key& k, const lock::Range& r, uint32_t pid, bool known) {
  std::lock_guard<std::mutex> lock(mu_);
  Held& h = held_[k];
  if (!known) return;  // keep the key: a release must still ask the MDS
  lock::Apply(&h.ranges, r);
  if (r.type != lock::kUnlock) h.pid = pid;
  if (h.ranges.empty()) held_.erase(k);
}

Result<LockSpec> LockBook::Test(uint64_t ino, uint64_t owner, bool flock, const LockSpec& want) {
  LockArgs a;
  a.ino = ino;
  a.owner = owner;
  a.flock = flock;
  a.lock = want;
  a.test = true;
  return mds_->Lock(a, wait_);
}

Status LockBook::Set(uint64_t ino, uint64_t owner, bool flock, const LockSpec& l, bool wait,
                     const Flush& flush, const Granted& granted) {
  const Key k{ino, flock, owner};
  if (l.type == F_UNLCK) {
    if (!MayHold(k)) return Status::Ok();  // nothing to release, nothing to ask
    if (flush) SFS_RETURN_IF_ERROR(flush());
  }
  LockArgs a;
  a.ino = ino;
  a.owner = owner;
  a.flock = flock;
  a.lock = l;
  a.wait = wait && l.type != F_UNLCK;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (cancelled_.erase(k) != 0 && a.wait) return Status(EINTR, "lock wait interrupted");
    }
    std::optional<uint64_t> size;
    Result<LockSpec> r = mds_->Lock(a, wait_, &size);
    if (r.ok()) {
      Record(k, RangeOf(l), l.pid, /*known=*/true);
      if (size && granted) granted(*size);
      return Status::Ok();
    }
    if (r.status().code() == EINPROGRESS) continue;  // still waiting: ask again
    if (r.status().code() == EIO) Record(k, RangeOf(l), l.pid, /*known=*/false);
    if (r.status().code() == EINTR) {
      std::lock_guard<std::mutex> lock(mu_);
      cancelled_.erase(k);
    }
    return r.status();
  }
}

void LockBook::Cancel(uint64_t ino, uint64_t owner, bool flock) {
  const Key k{ino, flock, owner};
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_.insert(k);
  }
  LockArgs a;
  a.ino = ino;
  a.owner = owner;
  a.flock = flock;
  a.cancel = true;
  Result<LockSpec> r = mds_->Lock(a, wait_);
  if (!r.ok()) LOG_WARN("cancel of a lock wait on inode " << ino << ": " << r.status().ToString());
}

Status LockBook::Release(uint64_t ino, uint64_t owner, bool flock, const Flush& flush) {
  LockSpec all;
  all.type = F_UNLCK;
  Status st = Set(ino, owner, flock, all, /*wait=*/false, flush);
  if (!st.ok() && st.code() != EIO) return st;
  // Whatever the MDS said, the owner holds nothing now: after EIO the MDS
  // drops our locks at its client timeout if it never heard the release.
  std::lock_guard<std::mutex> lock(mu_);
  held_.erase(Key{ino, flock, owner});
  return st;
}

int LockBook::Reclaim() {
  std::map<Key, Held> snapshot;
  {
    std::lock_guard<std::mutex> lock(mu_);
    snapshot = held_;
  }
  int refused = 0, sent = 0;
  for (const auto& [k, h] : snapshot) {
    for (const lock::Range& r : h.ranges) {
      LockArgs a;
      a.ino = k.ino;
      a.owner = k.owner;
      a.flock = k.flock;
      a.lock = {r.type, r.start, r.end, h.pid};
      a.reclaim = true;
      Result<LockSpec> res = mds_->Lock(a, wait_);
      ++sent;
      if (!res.ok()) {
        ++refused;
        LOG_WARN("lock on inode " << k.ino << " [" << r.start << ", " << r.end
                                  << "] not re-asserted after MDS restart: "
                                  << res.status().ToString());
      }
    }
  }
  if (sent > 0) LOG_INFO("MDS recovery: re-asserted " << sent - refused << " lock(s), " << refused << " refused");
  return refused;
}

}  // namespace sfs::client
