// LanedChannel: the Channel over several connections ("lanes") to one
// server, each a transport core. REQUIRES of Core: what core_channel.h asks,
// plus static SetLane(PendingCall&, size_t) and LaneOf(const PendingCall&),
// which remember on a call the lane it went to.
//
// A thread with calls in flight on the channel puts its next ones on the
// same lane; otherwise lane i is taken only while lanes 0..i-1 all have calls
// in flight. So a lone caller keeps to lane 0, two concurrent callers each
// lead on their own socket (no follower is woken to read for another, and a
// server that answers small requests on its I/O thread, as sfs-oss does
// reads, serves them in parallel), and a caller waiting for any of its calls
// reads the lane that carries all of them. Spread over lanes, the pieces of
// one striped read deadlocked: the caller waited on one lane while its
// replies on another went unread and held the server's memory budget
// (overload_memory_test).
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/rpc/rpc.h"

namespace sfs::rpc {
namespace laned_internal {

// This thread's calls on one laned channel's lane not yet waited for.
struct ThreadLane {
  const void* chan = nullptr;
  size_t lane = 0;
  int calls = 0;
};
inline thread_local std::array<ThreadLane, 8> t_lanes;

}  // namespace laned_internal

template <typename Core>
class LanedChannel final : public Channel {
 public:
  // make_core() builds one lane's core; called `lanes` times (at least once).
  template <typename MakeCore>
  LanedChannel(int lanes, MakeCore make_core) {
    for (int i = 0; i < std::max(1, lanes); ++i) lanes_.push_back(std::make_unique<Lane>(make_core()));
  }
  ~LanedChannel() override {
    for (auto& l : lanes_) l->core->Shutdown();
  }
  std::shared_ptr<PendingCall> Start(uint16_t service, std::string payload,
                                     std::span<const uint8_t> bulk_out, std::span<uint8_t> bulk_in,
                                     const CallOptions& opts) override {
    laned_internal::ThreadLane* t = ThisThreadsLane();
    const size_t i = t != nullptr && t->calls > 0 ? t->lane : PickLane();
    if (t != nullptr) *t = {this, i, t->calls + 1};
    lanes_[i]->calls.fetch_add(1, std::memory_order_relaxed);
    auto p = lanes_[i]->core->Start(service, std::move(payload), bulk_out, bulk_in, opts);
    Core::SetLane(*p, i);
    return p;
  }
  Status Wait(const std::shared_ptr<PendingCall>& call, Response* out) override {
    const size_t i = Core::LaneOf(*call);
    Lane& l = *lanes_[i];
    Status st = l.core->Wait(call, out);
    l.calls.fetch_sub(1, std::memory_order_relaxed);
    for (auto& t : laned_internal::t_lanes) {  // (a Wait on another thread than the Start finds none)
      if (t.chan == this && t.lane == i && t.calls > 0) {
        --t.calls;
        break;
      }
    }
    return st;
  }
  const std::string& address() const override { return lanes_[0]->core->address(); }

 private:
  struct Lane {
    explicit Lane(std::shared_ptr<Core> c) : core(std::move(c)) {}
    std::shared_ptr<Core> core;
    std::atomic<int> calls{0};  // started and not yet waited for
  };
  // This thread's entry for this channel if it has calls in flight here,
  // else a free entry, else null (then calls are not kept together).
  laned_internal::ThreadLane* ThisThreadsLane() const {
    laned_internal::ThreadLane* free = nullptr;
    for (auto& t : laned_internal::t_lanes) {
      if (t.calls > 0 && t.chan == this && t.lane < lanes_.size()) return &t;
      if (t.calls == 0 && free == nullptr) free = &t;
    }
    return free;
  }
  size_t PickLane() const {
    size_t best = 0;
    int least = INT_MAX;
    for (size_t i = 0; i < lanes_.size(); ++i) {
      int n = lanes_[i]->calls.load(std::memory_order_relaxed);
      if (n == 0) return i;
      if (n < least) least = n, best = i;
    }
    return best;
  }
  std::vector<std::unique_ptr<Lane>> lanes_;
};

}  // namespace sfs::rpc
