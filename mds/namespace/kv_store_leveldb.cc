// The LevelDB implementation of KvStore: the only file of the MDS that
// includes LevelDB. Sync() writes an empty batch with sync=true: LevelDB
// appends it to the same log after every earlier record and fsyncs the log,
// and it batches concurrent sync writers into one fsync (group commit).
#include <leveldb/db.h>
#include <leveldb/filter_policy.h>
#include <leveldb/write_batch.h>

#include "mds/namespace/kv_store.h"

namespace sfs::mds {
namespace {

Status FromLevelDb(const leveldb::Status& s, std::string_view what) {
  if (s.ok()) return Status::Ok();
  int code = s.IsNotFound() ? ENOENT : EIO;
  return Status::Errno(code, std::string(what) + ": " + s.ToString());
}

leveldb::Slice ToSlice(std::string_view s) { return leveldb::Slice(s.data(), s.size()); }

class LevelDbStore : public KvStore {
 public:
  LevelDbStore(std::unique_ptr<leveldb::DB> db, const leveldb::FilterPolicy* filter)
      : db_(std::move(db)), filter_(filter) {}
  ~LevelDbStore() override {
    db_.reset();
    delete filter_;
  }

  Result<std::string> Get(std::string_view key) override {
    std::string value;
    leveldb::Status s = db_->Get(leveldb::ReadOptions(), ToSlice(key), &value);
    if (s.IsNotFound()) return Status::Errno(ENOENT);
    if (!s.ok()) return FromLevelDb(s, "leveldb get");
    return value;
  }

  Status Write(const KvBatch& batch, bool sync) override {
    leveldb::WriteBatch wb;
    for (const KvBatch::Op& op : batch.ops()) {
      if (op.is_delete) {
        wb.Delete(op.key);
      } else {
        wb.Put(op.key, op.value);
      }
    }
    leveldb::WriteOptions wo;
    wo.sync = sync;
    return FromLevelDb(db_->Write(wo, &wb), "leveldb write");
  }

  Status Sync() override {
    leveldb::WriteBatch empty;
    leveldb::WriteOptions wo;
    wo.sync = true;
    return FromLevelDb(db_->Write(wo, &empty), "leveldb sync");
  }

  Status Scan(std::string_view start, std::string_view end, const ScanFn& fn) override {
    std::unique_ptr<leveldb::Iterator> it(db_->NewIterator(leveldb::ReadOptions()));
    for (it->Seek(ToSlice(start)); it->Valid(); it->Next()) {
      leveldb::Slice k = it->key();
      std::string_view key(k.data(), k.size());
      if (!end.empty() && key >= end) break;
      leveldb::Slice v = it->value();
      if (!fn(key, std::string_view(v.data(), v.size()))) break;
    }
    return FromLevelDb(it->status(), "leveldb scan");
  }

 private:
  std::unique_ptr<leveldb::DB> db_;
  const leveldb::FilterPolicy* filter_;
};

}  // namespace

Result<std::unique_ptr<KvStore>> OpenLevelDbStore(const std::string& dir) {
  leveldb::Options options;
  options.create_if_missing = true;
  options.filter_policy = leveldb::NewBloomFilterPolicy(10);
  options.write_buffer_size = 16 << 20;
  leveldb::DB* raw = nullptr;
  leveldb::Status s = leveldb::DB::Open(options, dir, &raw);
  if (!s.ok()) {
    delete options.filter_policy;
    return FromLevelDb(s, "open " + dir);
  }
  return std::unique_ptr<KvStore>(
      new LevelDbStore(std::unique_ptr<leveldb::DB>(raw), options.filter_policy));
}

}  // namespace sfs::mds
