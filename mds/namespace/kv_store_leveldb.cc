// The LevelDB implementation of KvStore: the only file of the MDS that
// includes LevelDB.
//
// Sync() is a group commit of our own. LevelDB writes every record of its log
// to the file (write(2)) as it applies it, so an fdatasync of the log file
// makes every earlier Write durable. LevelDB's own sync write (an empty batch
// with sync=true) does not batch in the namespace's pattern: the next op's
// Write(sync=false), issued under the namespace lock, queues behind the
// running fsync in LevelDB's single writer queue, so ops and fsyncs strictly
// alternate (measured: 4 tasks creating files cost exactly one fsync per
// create, as one task does). So Sync() fdatasyncs the current log file
// itself, outside LevelDB's queue: writes go on while it runs, and a Sync
// that arrives during a running fsync waits for it and then joins the next
// one, which covers every caller queued meanwhile. The log file is known
// from LogTrackingEnv, which sees LevelDB create each log; when LevelDB moves
// to a new log it fdatasyncs the old one first, so nothing written there
// is left out by a Sync that then syncs only the new one, and fsyncs the
// directory so that the new log's name is durable before anything in it.
#include <fcntl.h>
#include <leveldb/db.h>
#include <leveldb/env.h>
#include <leveldb/filter_policy.h>
#include <leveldb/write_batch.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>

#include "mds/namespace/kv_store.h"

namespace sfs::mds {
namespace {

Status FromLevelDb(const leveldb::Status& s, std::string_view what) {
  if (s.ok()) return Status::Ok();
  int code = s.IsNotFound() ? ENOENT : EIO;
  return Status::Errno(code, std::string(what) + ": " + s.ToString());
}

leveldb::Slice ToSlice(std::string_view s) { return leveldb::Slice(s.data(), s.size()); }

// An open descriptor of one log file, closed with the last reference.
struct LogFd {
  explicit LogFd(int fd) : fd(fd) {}
  ~LogFd() { ::close(fd); }
  const int fd;
};

// Passes everything to the default Env and keeps a descriptor of the log
// file LevelDB is writing (the last "*.log" it created).
class LogTrackingEnv : public leveldb::EnvWrapper {
 public:
  LogTrackingEnv() : leveldb::EnvWrapper(leveldb::Env::Default()) {}

  leveldb::Status NewWritableFile(const std::string& fname, leveldb::WritableFile** result) override {
    leveldb::Status s = target()->NewWritableFile(fname, result);
    if (s.ok() && IsLog(fname)) Track(fname);
    return s;
  }

  // fdatasync of the current log file. EAGAIN iff no log is known yet.
  Status SyncLog() {
    std::shared_ptr<LogFd> log;
    {
      std::lock_guard<std::mutex> l(mu_);
      log = log_;
    }
    if (log == nullptr) return Status::Errno(EAGAIN, "no log file known");
    if (::fdatasync(log->fd) != 0) return Status::FromErrno("fdatasync leveldb log");
    return Status::Ok();
  }

 private:
  static bool IsLog(const std::string& f) {
    return f.size() > 4 && f.compare(f.size() - 4, 4, ".log") == 0;
  }

  void Track(const std::string& fname) {
    int fd = ::open(fname.c_str(), O_RDONLY | O_CLOEXEC);
    std::shared_ptr<LogFd> next = fd >= 0 ? std::make_shared<LogFd>(fd) : nullptr;
    // The new log's name must survive a power loss too: LevelDB syncs the
    // directory only with a new MANIFEST, and the log may be written (and
    // synced by us) before the MANIFEST names it.
    size_t slash = fname.rfind('/');
    std::string dir = slash == std::string::npos ? "." : fname.substr(0, slash);
    if (int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
      (void)::fsync(dfd);
      ::close(dfd);
    }
    std::shared_ptr<LogFd> old;
    {
      std::lock_guard<std::mutex> l(mu_);
      old = std::move(log_);
      log_ = std::move(next);
    }
    // Records written to the old log before the switch become durable here,
    // since a later Sync() syncs only the new log. (LevelDB calls this while
    // no write is in progress; a rare extra fsync, one per 16 MiB of log.)
    if (old != nullptr) (void)::fdatasync(old->fd);
  }

  std::mutex mu_;
  std::shared_ptr<LogFd> log_;  // GUARDED_BY(mu_); null: use LevelDB's sync write
};

// Group commit over LogTrackingEnv::SyncLog (see the top of the file).
class GroupSync {
 public:
  // Returns once an fsync that started after this call has finished.
  template <typename SyncFn>
  Status Sync(const SyncFn& sync) {
    std::unique_lock<std::mutex> l(mu_);
    const uint64_t ticket = ++requested_;
    while (done_ < ticket) {
      if (ticket <= failed_upto_) return failed_;
      if (syncing_) {
        cv_.wait(l);
        continue;
      }
      syncing_ = true;
      const uint64_t target = requested_;  // every caller that arrived so far
      l.unlock();
      Status st = sync();
      l.lock();
      syncing_ = false;
      if (st.ok()) {
        done_ = target;
      } else {
        failed_upto_ = target;
        failed_ = st;
      }
      cv_.notify_all();
    }
    return Status::Ok();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t requested_ = 0;    // GUARDED_BY(mu_): tickets handed out
  uint64_t done_ = 0;         // GUARDED_BY(mu_): tickets made durable
  uint64_t failed_upto_ = 0;  // GUARDED_BY(mu_): tickets whose fsync failed
  Status failed_;             // GUARDED_BY(mu_)
  bool syncing_ = false;      // GUARDED_BY(mu_)
};

class LevelDbStore : public KvStore {
 public:
  LevelDbStore(std::unique_ptr<leveldb::DB> db, const leveldb::FilterPolicy* filter,
               std::unique_ptr<LogTrackingEnv> env)
      : env_(std::move(env)), db_(std::move(db)), filter_(filter) {}
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
    return group_.Sync([this] {
      Status st = env_->SyncLog();
      if (st.code() != EAGAIN) return st;
      leveldb::WriteBatch empty;  // no log known (cannot happen after Open): LevelDB's way
      leveldb::WriteOptions wo;
      wo.sync = true;
      return FromLevelDb(db_->Write(wo, &empty), "leveldb sync");
    });
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
  std::unique_ptr<LogTrackingEnv> env_;  // outlives db_
  std::unique_ptr<leveldb::DB> db_;
  const leveldb::FilterPolicy* filter_;
  GroupSync group_;
};

}  // namespace

Result<std::unique_ptr<KvStore>> OpenLevelDbStore(const std::string& dir) {
  auto env = std::make_unique<LogTrackingEnv>();
  leveldb::Options options;
  options.env = env.get();
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
      new LevelDbStore(std::unique_ptr<leveldb::DB>(raw), options.filter_policy, std::move(env)));
}

}  // namespace sfs::mds
