// O_APPEND at the MDS (mds.proto AppendReq): the range is reserved at the end
// of file in one metadata transaction, and a client that appends alone gets
// an append token so that its next appends need no round trip (issue 14:
// atomic appends across mounts "at no cost to single-writer appends", as
// Lustre's EOF lock is cached by a lone writer).
//
// Recall: when client C appends while D holds the token, D is sent an
// invalidation of the file (LeaseTable::Recall: to D alone, waited for
// whatever else D waits on) before C's append is applied. D's client, on
// that invalidation, drops the token, drains its written-behind appends and
// reports the size (libsfs Client::DropAppendToken) before it acks; so the
// size C's append starts from counts all of D's. A holder that does not
// answer is waited for until its lease (and so its token: the client counts
// it from before its request went out) has run out.
#include <sys/stat.h>

#include "mds.pb.h"
#include "mds/service/mds_service.h"

namespace sfs::mds {

void MdsService::Append(const proto::MdsRequest& r, rpc::ReplyFn done) {
  const uint64_t ino = r.append().ino();
  const uint64_t me = r.client_id();
  const int64_t now = LeaseTable::SteadyMs();
  const int64_t lease_ms = leases_->lease_ms();
  // Held from the token check to the grant, across the append itself: no
  // other append may land between a grant and the end it hands out.
  std::unique_lock<std::mutex> lock(tokens_mu_);
  auto t = tokens_.find(ino);
  if (t != tokens_.end() && t->second.client != me) {
    if (t->second.expires_ms > now) {
      const AppendToken held = t->second;
      last_append_[ino] = {me, now};  // contended: neither gets a token for a while
      ++recalling_[ino];
      lock.unlock();
      leases_->Recall(held.client, LeaseInval{ino}, held.expires_ms,
                      [this, r, ino, holder = held.client, done = std::move(done)]() mutable {
                        {
                          std::lock_guard<std::mutex> l(tokens_mu_);
                          auto it = tokens_.find(ino);
                          if (it != tokens_.end() && it->second.client == holder) tokens_.erase(it);
                          if (--recalling_[ino] <= 0) recalling_.erase(ino);
                        }
                        Append(r, std::move(done));
                      });
      return;
    }
    tokens_.erase(t);
  }
  auto last = last_append_.find(ino);
  const bool contended = (last != last_append_.end() && last->second.client != me &&
                          now - last->second.at_ms < lease_ms) ||
                         recalling_.count(ino) != 0;
  last_append_[ino] = {me, now};
  if (last_append_.size() > 65536) {  // forget old entries now and then
    std::erase_if(last_append_, [&](const auto& e) { return now - e.second.at_ms >= lease_ms; });
  }
  uint64_t tick = leases_->Tick();
  proto::MdsResponse resp;
  uint64_t durable_seq = 0;
  std::vector<LeaseInval> changed = ApplyLocked(r, &resp, &durable_seq);
  GrantLease(r, tick, &resp);
  const uint32_t granted = resp.has_attr() ? resp.attr().lease_ms() : 0;
  if (resp.status().code() == 0 && r.append().want_token() && !contended && granted > 0) {
    tokens_[ino] = {me, now + granted + 500};  // LeaseTable's margin
    resp.set_append_token_ms(granted);
  }
  lock.unlock();
  Reply(r, tick, std::move(resp), std::move(changed), std::move(done), /*granted=*/true,
        durable_seq);
}

}  // namespace sfs::mds
