// Bounded (client, xid) -> outcome map for replayed requests (see reply_cache.h).
#include "mds/namespace/reply_cache.h"

namespace sfs::mds {

const proto::ReplyRec* ReplyCache::Find(uint64_t client, uint64_t xid) const {
  auto it = map_.find({client, xid});
  return it == map_.end() ? nullptr : &it->second.rec;
}

std::vector<ReplyCache::Key> ReplyCache::Insert(uint64_t client, uint64_t xid,
                                                proto::ReplyRec rec, bool persisted) {
  next_seq_ = std::max(next_seq_, rec.seq() + 1);
  Key key{client, xid};
  if (map_.insert_or_assign(key, Entry{std::move(rec), persisted}).second) order_.push_back(key);
  std::vector<Key> evicted;
  while (map_.size() > capacity_ && !order_.empty()) {
    auto it = map_.find(order_.front());
    if (it != map_.end() && it->second.persisted) evicted.push_back(order_.front());
    if (it != map_.end()) map_.erase(it);
    order_.pop_front();
  }
  return evicted;
}

}  // namespace sfs::mds
