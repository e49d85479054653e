// KvStore: the ordered key-value store under the metadata server.
//
// Keys and values are byte strings ordered bytewise. A KvBatch is applied
// atomically: after a crash either all of its operations are visible or none.
// Write(batch, sync=false) makes the batch visible to readers at once but not
// yet durable; Sync() makes every earlier Write durable (concurrent Sync calls
// are group-committed by the implementation). Thread-safe: any number of
// threads may call any method; callers order conflicting writes themselves.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace sfs::mds {

// Operations to apply as one atomic unit, in order.
class KvBatch {
 public:
  struct Op {
    bool is_delete = false;
    std::string key;
    std::string value;
  };
  void Put(std::string key, std::string value) {
    ops_.push_back({false, std::move(key), std::move(value)});
  }
  void Delete(std::string key) { ops_.push_back({true, std::move(key), {}}); }
  bool empty() const { return ops_.empty(); }
  size_t size() const { return ops_.size(); }
  const std::vector<Op>& ops() const { return ops_; }

 private:
  std::vector<Op> ops_;
};

class KvStore {
 public:
  // Called per key in order; return false to stop the scan.
  using ScanFn = std::function<bool(std::string_view key, std::string_view value)>;

  virtual ~KvStore() = default;
  // The value of key; ENOENT iff the key is absent.
  virtual Result<std::string> Get(std::string_view key) = 0;
  // Applies batch atomically. With sync, returns only once it is durable.
  virtual Status Write(const KvBatch& batch, bool sync) = 0;
  // Makes every Write that returned before this call durable.
  virtual Status Sync() = 0;
  // Visits keys in [start, end) in order (end empty = no upper bound).
  virtual Status Scan(std::string_view start, std::string_view end, const ScanFn& fn) = 0;
};

// Opens (creating if missing) a LevelDB database in directory `dir`.
Result<std::unique_ptr<KvStore>> OpenLevelDbStore(const std::string& dir);

}  // namespace sfs::mds
