// ReplyCache: outcomes of recently applied mutating requests, by
// (client id, xid), so that a request re-sent after a reconnect is applied
// once and answered with the saved outcome. Bounded: inserting beyond
// capacity evicts the oldest entries, whose persisted R keys the caller
// deletes. Not thread-safe: the Namespace guards it with its mutex.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <utility>
#include <vector>

#include "mds_store.pb.h"

namespace sfs::mds {

class ReplyCache {
 public:
  using Key = std::pair<uint64_t, uint64_t>;  // (client, xid)

  explicit ReplyCache(size_t capacity) : capacity_(capacity) {}

  // The saved outcome of (client, xid), or null.
  const proto::ReplyRec* Find(uint64_t client, uint64_t xid) const;
  // Saves an outcome (persisted: it also has an R key); returns the keys of
  // the persisted entries evicted to stay within capacity.
  std::vector<Key> Insert(uint64_t client, uint64_t xid, proto::ReplyRec rec, bool persisted);
  // The seq to give the next record (one more than any inserted).
  uint64_t next_seq() const { return next_seq_; }
  size_t size() const { return map_.size(); }

 private:
  size_t capacity_;
  uint64_t next_seq_ = 1;
  struct Entry {
    proto::ReplyRec rec;
    bool persisted = false;
  };
  std::map<Key, Entry> map_;
  std::deque<Key> order_;  // oldest first
};

}  // namespace sfs::mds
