// Client: the libsfs API glue. Metadata calls go to MdsClient (one RPC each);
// file data goes through the Striper; this file adds what spans both: the
// truncate path (objects first, then the MDS), O_TRUNC at open, size and
// blocks reports on Flush/Fsync/Close, and the keepalive that keeps our opens
// (and refreshes the OST map) every 5 s and, when the MDS restarted (a new
// boot epoch in any reply), re-opens every open File (docs/durability.md).
//
// Open files: every File this client has open is registered by inode, so that
// a truncate through any path (SetAttr, O_TRUNC) lowers the size the other
// handles remember; otherwise a later Close could report a stale, larger size
// and the MDS (which keeps the maximum) would grow the file back.
//
// Locks: File::mu_ and Impl::files_mu_ are leaves, held for a few field
// updates, never across an RPC. files_mu_ is taken before a File's mu_.
#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <future>
#include <iterator>
#include <optional>
#include <random>
#include <thread>
#include <unordered_map>
#include <utility>

#include "client/lib/cache_io.h"
#include "client/lib/channel_factory.h"
#include "client/lib/client.h"
#include "client/lib/io.h"
#include "client/lib/keepalive.h"
#include "client/lib/lease_watch.h"
#include "client/lib/lock_book.h"
#include "client/lib/mds_client.h"
#include "client/lib/migrate.h"
#include "client/lib/oss_pool.h"
#include "client/lib/hint_resolver.h"
#include "client/lib/prefetcher.h"
#include "client/lib/space_ops.h"
#include "client/lib/write_behind.h"
#include "common/auth/capability.h"
#include "common/layout/stripe.h"
#include "common/mdsop/open_id.h"
#include "common/log.h"
#include "common/rpc/rpc.h"

namespace sfs::client {
namespace {

constexpr auto kPingPeriod = std::chrono::milliseconds(5000);
// Deferred closes waiting beyond this many are sent at once (a few requests' worth).
constexpr size_t kMaxQueuedCloses = 4 * MdsClient::kMaxCarriedCloses;
// A prefetch handle's release waits at most this long for a request to carry it.
constexpr std::chrono::milliseconds kPrefetchCloseDelay{10};
// How long a reader may take to reach an entry the prefetcher handled (its
// window ahead of the readers is a fraction of a second at any pace seen):
// a kept open that lasts past that serves the reader's open.
constexpr std::chrono::milliseconds kReaderLag{1000};
// Sequential read-ahead (read_ahead.h): fills run on a few threads, a
// bounded queue of them (a full queue drops one), windows of at least 4 MiB.
constexpr int kReadAheadThreads = 4;
constexpr size_t kReadAheadQueue = 64;
constexpr uint64_t kMinReadAheadWindow = uint64_t{4} << 20;
constexpr uint64_t kMaxFileSize = static_cast<uint64_t>(LLONG_MAX);

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

uint64_t NewClientId() {
  std::random_device rd;
  uint64_t id = (static_cast<uint64_t>(rd()) << 32) ^ rd() ^
                static_cast<uint64_t>(NowNs());
  return id == 0 ? 1 : id;
}

bool InGroups(const Cred& c, uint32_t gid) {
  return c.gid == gid || std::find(c.groups.begin(), c.groups.end(), gid) != c.groups.end();
}

// Write permission by the mode bits, as the MDS checks it (root may always).
bool MayWrite(const Cred& c, const Attr& a) {
  if (c.uid == 0) return true;
  if (c.uid == a.uid) return (a.mode & S_IWUSR) != 0;
  if (InGroups(c, a.gid)) return (a.mode & S_IWGRP) != 0;
  return (a.mode & S_IWOTH) != 0;
}

}  // namespace

uint64_t File::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return size_;
}

class Client::Impl {
 public:
  Options opts;
  // Declaration order is teardown order reversed: the keepalive stops first,
  // the IoContext goes last (channels must not outlive it).
  std::unique_ptr<rpc::IoContext> io;
  std::unique_ptr<ChannelFactory> channels;  // TCP or RDMA per peer (Options::transport)
  std::unique_ptr<MdsClient> mds;
  std::unique_ptr<LockBook> locks;
  std::unique_ptr<OssPool> pool;
  std::unique_ptr<Striper> striper;
  std::unique_ptr<WriteBehindQueue> wb;  // iff opts.write_behind_bytes > 0
  std::unique_ptr<Keepalive> keepalive;
  std::unique_ptr<LeaseWatch> watch;  // iff leases on and a handler was given
  std::thread close_flusher;          // iff opts.close_delay > 0
  std::unique_ptr<DataCache> cache;   // iff the cache is on (docs/cache.md)
  // The hint's paths -> inodes, as last resolved: ranks cached blocks by
  // their next use in a new hint before the prefetcher reaches them (a stale
  // entry only misranks; what is fetched is always resolved afresh).
  std::mutex memo_mu;
  std::unordered_map<std::string, uint64_t> memo;  // GUARDED_BY(memo_mu)
  // Hint entry pos is path, resolved to ino: remembered, and told to the
  // cache unless SetHint knew it under that inode already.
  void NoteUse(const std::string& path, uint64_t ino, uint64_t pos) {
    {
      std::lock_guard<std::mutex> lock(memo_mu);
      auto [m, inserted] = memo.try_emplace(path, ino);
      if (!inserted && m->second == ino) return;
      m->second = ino;
    }
    cache->AddUse(ino, pos);
  }
  // Held while a hint is handed to the cache, and while a listing tells the
  // cache the positions of that hint's entries (HintResolver::UseFn); the
  // count of hints given (appends not counted).
  std::mutex hint_mu;
  uint64_t hint_gen = 0;                   // GUARDED_BY(hint_mu)
  std::unique_ptr<HintResolver> resolver;  // iff cache: the hint's paths -> attributes
  // Reset first by ~Client: its workers call into everything else.
  std::unique_ptr<Prefetcher> prefetcher;  // iff cache
  // Sequential read-ahead into the cache (read_ahead.h); iff cache and
  // opts.cache_read_ahead > 0. Reset with the prefetcher.
  std::unique_ptr<ReadAhead> read_ahead;
  uint64_t read_ahead_max = 0;  // opts.cache_read_ahead, at most an eighth of the cache
  // After a read of [off, off + n) of f through the cache: queues the
  // read-ahead that reader's pattern asks for (PlanReadAhead).
  void MaybeReadAhead(File& f, uint64_t size, uint64_t off, uint64_t n);

  // Whether the prefetcher's opens of files in directory parent (0: unknown)
  // may answer lookups (HintedName): with the open cache (sfs-mount), by name.
  bool NamesForLookups(uint64_t parent) const {
    return parent != 0 && mds->open_cache_on() &&
           !mds_lacks_open_path.load(std::memory_order_relaxed);
  }
  // The prefetcher's open of the hinted file ino at path, in directory parent (0: unknown).
  Result<std::shared_ptr<File>> OpenHinted(Client& self, const Cred& c, const std::string& path,
                                           uint64_t parent, uint64_t ino);
  // A prefetcher worker's fetch of hint entry pos.
  Prefetcher::Outcome PrefetchOne(Client& self, const Cred& c, const PrefetchItem& it,
                                  uint64_t pos);
  // This client opens ino for writing: its other handles stop using the cache.
  void StopCaching(uint64_t ino) {
    if (!cache) return;
    for (const std::shared_ptr<File>& f : OpenFiles(ino)) f->cacheable_ = false;
  }

  // The write-behind barrier: every write of ino queued before returns first.
  void WaitWrites(uint64_t ino) {
    if (wb) wb->WaitIno(ino);
  }
  void Register(const std::shared_ptr<File>& f);
  void Unregister(const File* f);

  // Who each capability was handed to (the opener's credentials), so that
  // its renewal asks the MDS as them and never gets back a right a chmod
  // took away. An open file's token is held from its open to its close
  // (refs), with the tokens renewed from it (renewed_to, a chain): the table
  // holds what open files use, no more. A token not held here (a layout
  // fetched by Client::GetLayout, a file already closed) renews as root.
  struct CapHolder {
    Cred cred;
    int refs = 0;
    std::string renewed_to;  // the token RenewCap got in its place ("" = none)
  };
  std::mutex cap_mu;
  std::unordered_map<std::string, CapHolder> cap_holders;  // GUARDED_BY(cap_mu)
  void RememberCap(const std::string& token, const Cred& c);
  void ForgetCap(std::string token);
  Result<std::string> RenewCap(uint64_t ino, const std::string& token);
  std::vector<std::shared_ptr<File>> OpenFiles(uint64_t ino);
  // Raises a regular file's size and mtime to what this client's open handles
  // have written but not yet reported (the MDS learns sizes at flush/close), so
  // a getattr never shrinks the kernel's view of a file we are extending. With
  // all_handles, every handle's known size counts (the read clamp: the kernel
  // shows all fds of a mount one i_size); otherwise only unreported writes, so
  // the MDS stays authoritative for truncates and explicit times.
  Attr MergeLocal(Attr a, bool all_handles);
  // Trims/extends the objects to args.size, then sets the size at the MDS.
  Result<Attr> Truncate(const Cred& c, uint64_t ino, const LayoutSpec& l,
                        const SetAttrArgs& args);
  Result<std::shared_ptr<File>> FinishOpen(const Cred& c, int flags, OpenResult r, Attr* attr);
  void Ping();
  // After an MDS restart: opens every open File again (same File objects, new
  // open ids), so orphans survive and the MDS tracks our opens again.
  void ReopenAll();
  // The close flusher's loop: sends deferred closes no request took in time.
  void FlushClosesLoop();
  // Stops the flusher and sends what is queued (a last try).
  void StopDeferredCloses();
  std::atomic<Keepalive*> keepalive_ptr{nullptr};
  // The MDS answered an OpenPathReq EPROTO (it predates the op): OpenPath
  // walks with lookups instead.
  std::atomic<bool> mds_lacks_open_path{false};

  // Append tokens (mds.proto AppendReq.want_token): where this client's next
  // append to an inode goes, without asking the MDS, and until when.
  struct AppendToken {
    uint64_t eof = 0;
    std::chrono::steady_clock::time_point until;
  };
  // Held across a token append (offset taken and queued) and a drop, so a
  // drop's drain sees every append made under the token.
  std::mutex append_mu;
  std::unordered_map<uint64_t, AppendToken> tokens;  // GUARDED_BY(append_mu)
  uint64_t token_drops = 0;  // GUARDED_BY(append_mu): a grant racing a drop is refused

 private:
  std::mutex files_mu_;
  std::unordered_multimap<uint64_t, std::weak_ptr<File>> files_;  // GUARDED_BY(files_mu_)
  bool mds_unreachable_ = false;  // only touched by the keepalive thread
};

void Client::Impl::RememberCap(const std::string& token, const Cred& c) {
  if (token.empty()) return;
  std::lock_guard<std::mutex> lock(cap_mu);
  CapHolder& h = cap_holders[token];
  if (h.refs++ == 0) h.cred = c;
}

void Client::Impl::ForgetCap(std::string token) {
  std::lock_guard<std::mutex> lock(cap_mu);
  while (!token.empty()) {
    auto it = cap_holders.find(token);
    if (it == cap_holders.end() || --it->second.refs > 0) return;
    token = std::move(it->second.renewed_to);
    cap_holders.erase(it);
  }
}

Result<std::string> Client::Impl::RenewCap(uint64_t ino, const std::string& token) {
  Cred c;  // root: a token we do not hold
  {
    std::lock_guard<std::mutex> lock(cap_mu);
    auto it = cap_holders.find(token);
    if (it != cap_holders.end()) c = it->second.cred;
  }
  SFS_ASSIGN_OR_RETURN(LayoutSpec l, mds->GetLayout(c, ino));
  if (l.capability.empty()) return Status(EACCES, "no capability: permission denied");
  std::string previous;
  {
    std::lock_guard<std::mutex> lock(cap_mu);
    auto it = cap_holders.find(token);
    if (it != cap_holders.end() && l.capability != token) {
      // Held as long as the token it stands in for (ForgetCap follows the chain).
      previous = std::exchange(it->second.renewed_to, l.capability);
      CapHolder& h = cap_holders[l.capability];
      if (h.refs++ == 0) h.cred = c;
    }
  }
  ForgetCap(std::move(previous));  // an earlier renewal of the same token
  return l.capability;
}

void Client::Impl::Register(const std::shared_ptr<File>& f) {
  std::lock_guard<std::mutex> lock(files_mu_);
  files_.emplace(f->ino_, f);
}

void Client::Impl::Unregister(const File* f) {
  std::lock_guard<std::mutex> lock(files_mu_);
  auto [begin, end] = files_.equal_range(f->ino_);
  for (auto it = begin; it != end;) {
    std::shared_ptr<File> sp = it->second.lock();
    if (sp == nullptr || sp.get() == f) {
      it = files_.erase(it);
    } else {
      ++it;
    }
  }
}

std::vector<std::shared_ptr<File>> Client::Impl::OpenFiles(uint64_t ino) {
  std::vector<std::shared_ptr<File>> out;
  std::lock_guard<std::mutex> lock(files_mu_);
  auto [begin, end] = files_.equal_range(ino);
  for (auto it = begin; it != end; ++it) {
    if (std::shared_ptr<File> sp = it->second.lock()) out.push_back(std::move(sp));
  }
  return out;
}

Result<Attr> Client::Impl::Truncate(const Cred& c, uint64_t ino, const LayoutSpec& l,
                                    const SetAttrArgs& args) {
  if (!l.objects.empty()) SFS_RETURN_IF_ERROR(striper->Truncate(l, args.size));
  SFS_ASSIGN_OR_RETURN(Attr a, mds->SetAttr(c, ino, args));
  {
    std::lock_guard<std::mutex> lock(append_mu);  // its end of file is gone
    tokens.erase(ino);
    ++token_drops;
  }
  for (const std::shared_ptr<File>& f : OpenFiles(ino)) {
    f->cacheable_ = false;
    std::lock_guard<std::mutex> lock(f->mu_);
    f->size_ = args.size;
    f->dirty_end_ = std::min(f->dirty_end_, args.size);
    f->dense_end_ = std::min(f->dense_end_, args.size);
  }
  // Emptied objects hold no blocks: say so without asking the OSSes.
  if (args.size == 0 && a.blocks != 0) {
    SizeReport r;
    r.has_blocks = true;
    if (mds->SetSize(c, ino, r).ok()) a.blocks = 0;
  }
  return a;
}

Result<std::shared_ptr<File>> Client::Impl::FinishOpen(const Cred& c, int flags, OpenResult r,
                                                       Attr* attr) {
  auto f = std::make_shared<File>();
  f->ino_ = r.attr.ino;
  f->open_id_ = r.open_id;
  f->created_ = r.created;
  f->flags_ = flags;
  f->layout_ = std::move(r.layout);
  f->cred_ = c;
  RememberCap(f->layout_.capability, c);
  f->size_ = r.attr.size;
  if (!r.created && (flags & O_TRUNC) != 0 && S_ISREG(r.attr.mode)) {
    WaitWrites(f->ino_);
    SetAttrArgs args;
    args.valid = kSetSize;
    Result<Attr> t = Truncate(c, f->ino_, f->layout_, args);
    if (!t.ok()) {
      (void)mds->Close(c, f->ino_, f->open_id_, SizeReport{});
      ForgetCap(f->layout_.capability);
      return t.status();
    }
    r.attr = *t;
    f->size_ = 0;
  }
  f->dense_ = f->size_ == 0;
  f->data_version_ = r.attr.data_version;
  const bool write = (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC) != 0;
  if (write) StopCaching(f->ino_);
  f->cacheable_ = cache != nullptr && !write && S_ISREG(r.attr.mode) && r.data_versioned &&
                  !r.write_opens;
  if (mds->open_cache_on() && !write && S_ISREG(r.attr.mode) && r.attr.lease_ms > 0) {
    f->lease_until_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(r.attr.lease_ms);
    f->open_attr_ = r.attr;
    f->write_opens_ = r.write_opens;
    f->data_versioned_ = r.data_versioned;
    f->cache_gen_ = r.cache_gen;
  }
  Register(f);
  if (attr != nullptr) *attr = r.attr;
  return f;
}

void Client::Impl::Ping() {
  auto start = std::chrono::steady_clock::now();
  Status st = mds->Ping(std::min(opts.rpc_timeout, kPingPeriod));
  // While the MDS is away, keep a ping always waiting on the channel (which
  // reconnects within a second), so a restart is noticed, and our files
  // re-opened, at once rather than a period later.
  if (!st.ok() && std::chrono::steady_clock::now() - start >= std::chrono::seconds(1)) {
    if (Keepalive* k = keepalive_ptr.load()) k->Kick();
  }
  if (!st.ok() && !mds_unreachable_) {
    LOG_WARN("keepalive: MDS " << mds->address() << " not answering: " << st.ToString());
  } else if (st.ok() && mds_unreachable_) {
    LOG_INFO("keepalive: MDS " << mds->address() << " answers again");
  }
  mds_unreachable_ = !st.ok();
  if (mds->TakeEpochChange()) ReopenAll();
  // Kept opens at their lease's end, also when no request comes to sweep them.
  mds->ReleaseKeptOpens();
  // Keeps the OST map fresh, so that I/O finds an OSS that came back on a new
  // address without first timing out on the old one.
  if (st.ok()) {
    st = pool->Refresh();
  }
}

void Client::Impl::ReopenAll() {
  std::vector<std::shared_ptr<File>> all;
  {
    std::lock_guard<std::mutex> lock(files_mu_);
    for (auto& [ino, w] : files_) {
      if (std::shared_ptr<File> sp = w.lock()) all.push_back(std::move(sp));
    }
  }
  int reopened = 0, failed = 0;
  for (const std::shared_ptr<File>& f : all) {
    uint64_t old_id;
    {
      std::lock_guard<std::mutex> lock(f->mu_);
      old_id = f->open_id_;
    }
    if (mdsop::OpenIdEpoch(old_id) == mds->boot_epoch()) continue;  // opened since the restart
    Result<OpenResult> r = mds->Open(f->cred_, f->ino_, f->flags_ & O_ACCMODE);
    if (!r.ok()) {
      LOG_WARN("re-open of inode " << f->ino_ << " after MDS restart: " << r.status().ToString());
      ++failed;
      continue;
    }
    bool still_open = false;
    {
      std::lock_guard<std::mutex> lock(files_mu_);
      auto [begin, end] = files_.equal_range(f->ino_);
      for (auto it = begin; it != end && !still_open; ++it) still_open = it->second.lock() == f;
      if (still_open) {
        std::lock_guard<std::mutex> flock(f->mu_);
        f->open_id_ = r->open_id;
      }
    }
    // Closed while we re-opened it: release the new open too.
    if (!still_open) (void)mds->Close(f->cred_, f->ino_, r->open_id, SizeReport{});
    ++reopened;
  }
  LOG_INFO("MDS recovery: re-opened " << reopened << " file(s), " << failed << " failed");
  // Within the MDS's grace period, so nobody else got them meanwhile.
  locks->Reclaim();
}

void Client::Impl::FlushClosesLoop() {
  bool failing = false;  // log once per streak of failures, as the keepalive does
  while (mds->WaitClosesDue()) {
    Status st = mds->FlushCloses();
    if (!st.ok() && !failing) {
      LOG_WARN("deferred closes: " << st.ToString() << " (kept, sent again later)");
    }
    failing = !st.ok();
    if (failing) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

void Client::Impl::StopDeferredCloses() {
  if (!close_flusher.joinable()) return;
  mds->StopCloses();
  close_flusher.join();
  Status st = mds->FlushCloses(/*final=*/true);
  if (!st.ok()) {
    LOG_WARN("deferred closes not sent (" << mds->queued_closes()
                                          << "): the MDS drops them at its client timeout: "
                                          << st.ToString());
  }
}

// ---- Connect / lifetime ----

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Client::~Client() {
  if (impl_) impl_->prefetcher.reset();  // its workers call into everything else
  if (impl_) impl_->read_ahead.reset();  // so do these
  // One attempt per MDS call from here on: an unmount must not wait out the
  // recovery timeout of an MDS that is gone (the keepalive's re-opens, the
  // final closes).
  if (impl_ && impl_->mds) impl_->mds->BeginShutdown();
  if (impl_ && impl_->mds) impl_->mds->ReleaseKeptOpens(/*all=*/true);  // sent just below
  if (impl_) impl_->StopDeferredCloses();
  if (impl_ && impl_->watch) impl_->watch->Stop();
  if (impl_ && impl_->keepalive) impl_->keepalive->Stop();
  // Last: so that a later MDS recovery does not wait for this client.
  if (impl_ && impl_->mds) impl_->mds->Leave();
}

Result<std::unique_ptr<Client>> Client::Connect(const Options& opts) {
  std::string host;
  uint16_t port = 0;
  Status st = rpc::ParseAddress(opts.mds_address, &host, &port);
  if (!st.ok()) return Status(EINVAL, "bad MDS address '" + opts.mds_address + "'");
  auto impl = std::make_unique<Impl>();
  impl->opts = opts;
  impl->io = rpc::IoContext::Create(std::max(1, opts.io_threads));
  SFS_ASSIGN_OR_RETURN(impl->channels, ChannelFactory::Create(opts.transport, impl->io.get()));
  impl->mds = std::make_unique<MdsClient>(
      impl->channels->Make(opts.mds_address, rpc::kServiceMds).channel, NewClientId(),
      opts.rpc_timeout, opts.recovery_timeout);
  st = impl->mds->Ping(opts.connect_timeout);
  if (!st.ok()) {
    int code = st.code() == ETIMEDOUT ? ETIMEDOUT : ECONNREFUSED;
    return Status(code, "cannot reach MDS at " + opts.mds_address + ": " + st.ToString());
  }
  if (!opts.tenant.empty() || !opts.keyfile.empty()) {  // issue 17: mds_client_tenant.cc
    if (opts.tenant.empty() || opts.keyfile.empty()) {
      return Status(EINVAL, "tenant= and keyfile= go together");
    }
    auto key = auth::LoadKey(opts.keyfile);
    if (!key.ok()) {  // LoadKey names it a cluster key: the same format, another use
      std::string why = key.status().message();
      if (why.rfind("cluster key ", 0) == 0) why = why.substr(12);
      return Status(key.status().code(), "tenant key " + why);
    }
    st = impl->mds->Authenticate(opts.tenant, key->bytes);
    if (!st.ok()) return Status(st.code(), "tenant '" + opts.tenant + "': " + st.message());
    impl->mds->SetKeySource([path = opts.keyfile]() -> Result<std::string> {
      SFS_ASSIGN_OR_RETURN(auth::ClusterKey k, auth::LoadKey(path));
      return k.bytes;
    });
  }
  // One MDS wait of a blocking lock: well inside the RPC deadline.
  impl->locks = std::make_unique<LockBook>(
      impl->mds.get(), std::clamp(opts.rpc_timeout / 2, std::chrono::milliseconds(100),
                                  std::chrono::milliseconds(10000)));
  impl->pool = std::make_unique<OssPool>(impl->channels.get(), impl->mds.get());
  st = impl->pool->Refresh();
  if (!st.ok()) return Status(st.code(), "cannot fetch the OST map: " + st.ToString());
  MdsClient* mds = impl->mds.get();
  impl->striper = std::make_unique<Striper>(impl->pool.get(), mds->client_id(),
                                            [mds] { return mds->NextXid(); }, opts.rpc_timeout);
  // Mirror copy states are the file's, not the caller's: asked as root.
  impl->striper->SetMirrorHooks(MirrorHooks{
      .mark_stale = [mds](uint64_t ino, std::span<const StripeObject> objects) {
        return mds->MirrorState(Cred{}, ino, objects, true);
      },
      .refresh = [mds](uint64_t ino) { return mds->GetLayout(Cred{}, ino); },
      .renew = [impl = impl.get()](uint64_t ino, const std::string& token) {
        return impl->RenewCap(ino, token);
      },
      .row_lock = [mds](uint64_t ino, uint64_t owner, uint64_t start, uint64_t end,
                        bool lock) -> Result<uint64_t> {
        LockArgs a;
        a.ino = ino;
        a.owner = owner;
        a.ec_rows = true;
        a.lock.type = lock ? F_WRLCK : F_UNLCK;
        a.lock.start = start;
        a.lock.end = end;
        a.wait = lock;
        for (;;) {  // the MDS answers EINPROGRESS after each bounded wait
          Result<LockSpec> r = mds->Lock(a, std::chrono::milliseconds(5000));
          if (r.ok()) return r->copy_gen;
          if (r.status().code() != EINPROGRESS) return r.status();
        }
      },
      .cached_lock = [mds](uint64_t ino, uint64_t owner, uint64_t start,
                           uint64_t end) -> Result<MirrorHooks::Grant> {
        LockArgs a;
        a.ino = ino;
        a.owner = owner;
        a.ec_rows = true;
        a.cache = true;
        a.lock.type = F_WRLCK;
        a.lock.start = start;
        a.lock.end = end;
        a.wait = true;
        for (;;) {
          Result<LockSpec> r = mds->Lock(a, std::chrono::milliseconds(5000));
          if (r.ok()) return MirrorHooks::Grant{r->copy_gen, r->cached};
          if (r.status().code() != EINPROGRESS) return r.status();
        }
      },
  });
  if (opts.write_behind_bytes > 0) {
    impl->wb = std::make_unique<WriteBehindQueue>(impl->striper.get(), opts.write_behind_bytes,
                                             std::max(1, opts.write_behind_threads));
  }
  Impl* raw = impl.get();
  // Before the keepalive thread makes the first call that may carry closes.
  // The prefetcher's handles never write: their releases always ride on a
  // later request (its own next open, usually) rather than cost a round
  // trip each, also when other closes are not deferred (close_delay 0).
  const bool cache_on = opts.cache_ram > 0 || !opts.cache_dir.empty();
  const std::chrono::milliseconds defer =
      opts.close_delay.count() > 0 ? opts.close_delay
                                   : cache_on ? kPrefetchCloseDelay : std::chrono::milliseconds(0);
  if (defer.count() > 0) mds->EnableDeferredCloses(defer, kMaxQueuedCloses);
  if (defer.count() > 0 && opts.leases && opts.open_cache > 0)
    mds->EnableOpenCache(opts.open_cache);
  mds->SetEpochListener([raw] {
    raw->striper->ForgetCachedLocks();  // the MDS restarted: they are gone there
    if (Keepalive* k = raw->keepalive_ptr.load()) k->Kick();
  });
  impl->keepalive = std::make_unique<Keepalive>(kPingPeriod, [raw] { raw->Ping(); });
  impl->keepalive_ptr = impl->keepalive.get();
  if (defer.count() > 0) {
    impl->close_flusher = std::thread([raw] { raw->FlushClosesLoop(); });
  }
  if (cache_on) {
    DataCache::Options co;
    co.dir = opts.cache_dir;
    co.disk_bytes = opts.cache_size > 0 ? opts.cache_size : uint64_t{1} << 30;
    co.ram_bytes = opts.cache_ram;
    if (!co.dir.empty()) {
      Result<FsStat> fs = impl->mds->Statfs();
      co.fs_id = fs.ok() ? fs->fs_id : 0;
    }
    impl->cache = DataCache::Open(co);
  }
  auto client = std::unique_ptr<Client>(new Client(std::move(impl)));
  if (raw->cache) {
    Client* self = client.get();
    raw->resolver = std::make_unique<HintResolver>(
        *self, [raw](const std::string& path, uint64_t ino, uint64_t pos, uint64_t gen) {
          std::lock_guard<std::mutex> hint_lock(raw->hint_mu);
          if (gen == raw->hint_gen) raw->NoteUse(path, ino, pos);  // else a new hint came since
        });
    raw->prefetcher = std::make_unique<Prefetcher>(
        opts.prefetch_threads, opts.prefetch_depth,
        [raw, self](const Cred& c, const PrefetchItem& it, uint64_t pos) {
          return raw->PrefetchOne(*self, c, it, pos);
        });
    raw->read_ahead_max = std::min(opts.cache_read_ahead, raw->cache->Stats().capacity / 8);
    if (raw->read_ahead_max >= kMinReadAheadWindow) {  // else off: too small a cache
      raw->read_ahead = std::make_unique<ReadAhead>(
          kReadAheadThreads, kReadAheadQueue,
          [raw](const std::shared_ptr<File>& f, uint64_t size, uint64_t off, uint64_t end) {
            if (!f->cacheable_.load(std::memory_order_relaxed)) return;  // a writer came
            Status st = CacheFill(*raw->cache, *raw->striper, *f, size, off, end);
            if (!st.ok()) LOG_DEBUG("read-ahead of inode " << f->ino_ << ": " << st.ToString());
          });
    }
  }
  return client;
}

void Client::Impl::MaybeReadAhead(File& f, uint64_t size, uint64_t off, uint64_t n) {
  // One stripe row, all of its stripes fetched in parallel: at least 4 MiB.
  const LayoutSpec& l = f.layout_;
  const uint64_t per_row = l.ec_data > 0 ? l.ec_data : std::max<uint32_t>(1, l.Stripes());
  const uint64_t window =
      std::min(read_ahead_max, std::max(l.stripe_size * per_row, kMinReadAheadWindow));
  std::pair<uint64_t, uint64_t> r;
  {
    std::lock_guard<std::mutex> lock(f.mu_);
    r = PlanReadAhead(f.ra_, off, n, size, window);
  }
  if (r.first >= r.second) return;
  for (std::shared_ptr<File>& h : OpenFiles(f.ino_)) {
    if (h.get() != &f) continue;
    read_ahead->Submit(std::move(h), size, r.first, r.second);
    return;
  }
}

uint64_t Client::client_id() const { return impl_->mds->client_id(); }

// ---- Locks (lock_book.h) ----

Status Client::FlushInode(uint64_t ino) {
  // A failed background write stays on its handle, for its close(2).
  impl_->WaitWrites(ino);
  for (const std::shared_ptr<File>& f : impl_->OpenFiles(ino)) SFS_RETURN_IF_ERROR(ReportSize(*f));
  return Status::Ok();
}

Result<LockSpec> Client::TestLock(uint64_t ino, uint64_t owner, bool flock, const LockSpec& want) {
  return impl_->locks->Test(ino, owner, flock, want);
}

Status Client::SetLock(uint64_t ino, uint64_t owner, bool flock, const LockSpec& l, bool wait) {
  // A grant is a coherence point: our handles read to the size the file has
  // now (what the previous holder wrote and reported before its unlock).
  auto granted = [this, ino](uint64_t size) {
    for (const std::shared_ptr<File>& f : impl_->OpenFiles(ino)) {
      f->cacheable_ = false;  // read what the holder before us wrote
      std::lock_guard<std::mutex> lock(f->mu_);
      f->size_ = std::max(size, f->size_dirty_ ? f->dirty_end_ : 0);
    }
  };
  return impl_->locks->Set(ino, owner, flock, l, wait, [this, ino] { return FlushInode(ino); },
                           granted);
}

void Client::CancelLockWait(uint64_t ino, uint64_t owner, bool flock) {
  impl_->locks->Cancel(ino, owner, flock);
}

Status Client::ReleaseLocks(uint64_t ino, uint64_t owner, bool flock) {
  return impl_->locks->Release(ino, owner, flock, [this, ino] { return FlushInode(ino); });
}

void Client::WatchInvalidations(InvalidationFn fn) {
  if (!impl_->opts.leases || impl_->watch) return;
  impl_->watch = std::make_unique<LeaseWatch>(
      impl_->mds.get(), [this, fn = std::move(fn)](const Invalidation& i) {
        if (i.lock_recall) return impl_->striper->RecallCached(i.ino);
        DropAppendToken(i.ino);
        fn(i);
      });
  // Recalls reach the Striper now: mirrored writes may keep their lock.
  impl_->striper->EnableCachedLocks();
}

void Client::DropAppendToken(uint64_t ino) {
  uint64_t end = 0;
  {
    std::lock_guard<std::mutex> lock(impl_->append_mu);
    ++impl_->token_drops;
    auto t = impl_->tokens.find(ino);
    if (t == impl_->tokens.end()) return;
    end = t->second.eof;
    impl_->tokens.erase(t);
  }
  // The end this client appended to, reported here and now: a close's own
  // report may be in flight (its handle no longer counts as unreported),
  // and the other client's append must not start before it.
  impl_->WaitWrites(ino);
  std::vector<std::shared_ptr<File>> files = impl_->OpenFiles(ino);
  if (files.empty()) return;  // every handle closed: each close reported its size
  SizeReport r;
  r.has_size = true;
  r.size = impl_->MergeLocal(Attr{.ino = ino, .mode = S_IFREG, .size = end}, true).size;
  Status st = impl_->mds->SetSize(files.front()->cred_, ino, r);
  if (!st.ok()) LOG_WARN("appends to inode " << ino << " not reported: " << st.ToString());
}

// ---- attributes ----

Result<Attr> Client::Lookup(const Cred& c, uint64_t parent, std::string_view name,
                            uint32_t* absent_lease_ms) {
  SFS_ASSIGN_OR_RETURN(Attr a, impl_->mds->Lookup(c, parent, name, absent_lease_ms));
  if (S_ISREG(a.mode)) impl_->WaitWrites(a.ino);
  return impl_->MergeLocal(std::move(a), false);
}

std::optional<Attr> Client::HintedName(const Cred& c, uint64_t parent, std::string_view name) {
  if (!impl_->resolver || !impl_->mds->open_cache_on()) return std::nullopt;
  std::optional<Attr> a = impl_->resolver->Named(c, parent, name, impl_->mds->lease_gen());
  if (!a) return std::nullopt;
  return WithLocal(std::move(*a));
}

bool Client::HintListed(uint64_t dir) {
  return impl_->resolver && impl_->mds->open_cache_on() && impl_->resolver->Listed(dir);
}

Attr Client::WithLocal(Attr a) {
  if (S_ISREG(a.mode)) impl_->WaitWrites(a.ino);
  return impl_->MergeLocal(std::move(a), false);
}

Attr Client::Impl::MergeLocal(Attr a, bool all_handles) {
  if (!S_ISREG(a.mode)) return a;
  for (const std::shared_ptr<File>& f : OpenFiles(a.ino)) {
    std::lock_guard<std::mutex> lock(f->mu_);
    // Open for writing here: our own size/blocks/mtime reports change the
    // attributes and revoke only other clients' leases, so take none.
    if ((f->flags_ & O_ACCMODE) != O_RDONLY) a.lease_ms = 0;
    if (all_handles) a.size = std::max(a.size, f->size_);
    if (!f->size_dirty_) continue;
    a.size = std::max(a.size, f->dirty_end_);
    a.mtime_ns = std::max(a.mtime_ns, f->mtime_ns_);
  }
  return a;
}

Result<Attr> Client::GetAttr(const Cred& c, uint64_t ino) {
  impl_->WaitWrites(ino);
  SFS_ASSIGN_OR_RETURN(Attr a, impl_->mds->GetAttr(c, ino));
  return impl_->MergeLocal(std::move(a), false);
}

Result<Attr> Client::SetAttr(const Cred& c, uint64_t ino, const SetAttrArgs& args,
                             const File* via) {
  impl_->WaitWrites(ino);  // a truncate or new times land after our pending writes
  if (args.valid & (kSetMtime | kSetMtimeNow | kSetAtime | kSetAtimeNow)) {
    // Report pending writes first: their size report carries a write mtime
    // that would otherwise land after (and undo) the times set here, as
    // cp -a, tar and rsync set them on a file they still have open.
    for (const std::shared_ptr<File>& f : impl_->OpenFiles(ino)) SFS_RETURN_IF_ERROR(Flush(*f));
  }
  if ((args.valid & kSetSize) == 0) return impl_->mds->SetAttr(c, ino, args);
  SFS_ASSIGN_OR_RETURN(Attr cur, impl_->mds->GetAttr(c, ino));
  // Only a regular file has objects; the MDS gives the right errno for the rest.
  if (!S_ISREG(cur.mode)) return impl_->mds->SetAttr(c, ino, args);
  // Check before touching the objects: a refused truncate must not cut data.
  const bool via_writable_fd = via != nullptr && (via->flags_ & O_ACCMODE) != O_RDONLY;
  if (!via_writable_fd && !MayWrite(c, cur)) return Status(EACCES, "truncate: no write permission");
  if (args.size > kMaxFileSize) return Status(EFBIG, "size too large");
  SFS_ASSIGN_OR_RETURN(LayoutSpec l, impl_->mds->GetLayout(c, ino));
  impl_->RememberCap(l.capability, c);
  Result<Attr> out = impl_->Truncate(c, ino, l, args);
  impl_->ForgetCap(l.capability);
  return out;
}

// ---- open files and data ----

Result<std::shared_ptr<File>> Client::Create(const Cred& c, uint64_t parent,
                                             std::string_view name, uint32_t mode, int flags,
                                             Attr* attr, const LayoutSpec* layout) {
  if ((flags & O_CREAT) == 0) {
    // An open by name: never creates (ENOENT if the name is missing).
    SFS_ASSIGN_OR_RETURN(Attr existing, impl_->mds->Lookup(c, parent, name));
    return Open(c, existing.ino, flags, attr);
  }
  SFS_ASSIGN_OR_RETURN(OpenResult r, impl_->mds->Create(c, parent, name, mode, flags, layout));
  return impl_->FinishOpen(c, flags, std::move(r), attr);
}

Result<std::shared_ptr<File>> Client::Open(const Cred& c, uint64_t ino, int flags, Attr* attr) {
  if ((flags & O_ACCMODE) == O_RDONLY && (flags & O_TRUNC) == 0) {
    // A read-only open this client kept past its close, within its lease:
    // what the MDS would answer now (open_cache.h).
    if (std::optional<OpenResult> kept = impl_->mds->TakeKeptOpen(c, ino)) {
      return impl_->FinishOpen(c, flags, std::move(*kept), attr);
    }
  }
  SFS_ASSIGN_OR_RETURN(OpenResult r, impl_->mds->Open(c, ino, flags));
  return impl_->FinishOpen(c, flags, std::move(r), attr);
}

Result<std::shared_ptr<File>> Client::OpenPath(const Cred& c, std::string_view path, int flags,
                                               Attr* attr) {
  if (path.empty() || path[0] != '/') return Status(EINVAL, "not an absolute path");
  if (!impl_->mds_lacks_open_path.load(std::memory_order_relaxed)) {
    std::vector<std::string_view> names;
    for (size_t pos = 0; pos < path.size();) {
      size_t end = std::min(path.find('/', pos), path.size());
      if (end > pos) names.push_back(path.substr(pos, end - pos));
      pos = end + 1;
    }
    Result<OpenResult> r = impl_->mds->OpenPath(c, kRootIno, names, flags);
    if (r.ok()) return impl_->FinishOpen(c, flags, std::move(*r), attr);
    if (r.status().code() != EPROTO) return r.status();
    LOG_INFO("MDS " << impl_->mds->address() << " has no open by path: lookups from now on");
    impl_->mds_lacks_open_path = true;
  }
  SFS_ASSIGN_OR_RETURN(Attr a, ResolvePath(c, path));
  return Open(c, a.ino, flags, attr);
}

Status Client::Close(const std::shared_ptr<File>& f) {
  impl_->WaitWrites(f->ino_);
  SizeReport r;
  Status wb_error;
  bool written = false;
  {
    std::lock_guard<std::mutex> lock(f->mu_);
    written = f->written_;
    wb_error = std::exchange(f->wb_error_, Status::Ok());
    // Writes already reported by a Flush (size, mtime and blocks measured
    // after them) need no second report.
    r.has_size = f->size_dirty_;
    r.size = f->dirty_end_;
    r.mtime_ns = f->size_dirty_ ? f->mtime_ns_ : 0;
    f->size_dirty_ = false;
    f->dirty_end_ = 0;
  }
  if (r.has_size) {
    Result<uint64_t> blocks = BlocksOf(*f);
    r.has_blocks = blocks.ok();
    if (blocks.ok()) r.blocks = *blocks;
  }
  impl_->Unregister(f.get());
  impl_->ForgetCap(f->layout_.capability);
  if (impl_->prefetcher && !f->prefetch_ && (f->flags_ & O_ACCMODE) == O_RDONLY) {
    // A reader is done with it: one use of the hint consumed, the window moves.
    uint64_t pos = impl_->cache->Consume(f->ino_);
    if (pos != CachePolicy::kNever) impl_->prefetcher->Advance(pos);
  }
  uint64_t open_id;
  {
    std::lock_guard<std::mutex> lock(f->mu_);  // a re-open after an MDS restart may change it
    open_id = f->open_id_;
  }
  // Nothing to report: the release may wait for the next request (or the
  // flusher). A handle that wrote keeps its close synchronous, so that the
  // file is no longer "open for write" (migrate) once close(2) is answered.
  const bool may_defer = impl_->opts.close_delay.count() > 0 || f->prefetch_;
  if (f->lease_until_ != std::chrono::steady_clock::time_point{} && !written && !r.has_size &&
      wb_error.ok()) {
    OpenResult kept{.attr = f->open_attr_,
                    .layout = f->layout_,
                    .open_id = open_id,
                    .write_opens = f->write_opens_,
                    .data_versioned = f->data_versioned_,
                    .cache_gen = f->cache_gen_};
    if (impl_->mds->KeepOpen(f->cred_, std::move(kept), f->lease_until_)) return Status::Ok();
  }
  if (may_defer && !written && !r.has_size && wb_error.ok() &&
      impl_->mds->DeferClose(f->ino_, open_id)) {
    return Status::Ok();
  }
  Status st = impl_->mds->Close(f->cred_, f->ino_, open_id, r);
  return wb_error.ok() ? st : wb_error;
}

Status Client::FlushDeferredCloses() { return impl_->mds->FlushCloses(); }

Result<size_t> Client::Read(File& f, uint64_t off, std::span<uint8_t> buf) {
  impl_->WaitWrites(f.ino_);
  uint64_t size = f.size();
  // Another handle of this client may have written further (the kernel lets
  // every fd of a mount see one i_size); only then is the handle table consulted.
  if (off + buf.size() > size) size = impl_->MergeLocal(Attr{.ino = f.ino_, .mode = S_IFREG, .size = size}, true).size;
  if (buf.empty() || off >= size) return size_t{0};
  size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), size - off));
  if (impl_->cache && f.cacheable_.load(std::memory_order_relaxed)) {
    SFS_RETURN_IF_ERROR(CachedRead(*impl_->cache, *impl_->striper, f, size, off, buf.first(n)));
    if (impl_->read_ahead) impl_->MaybeReadAhead(f, size, off, n);
    return n;
  }
  SFS_RETURN_IF_ERROR(impl_->striper->Read(f.layout_, off, buf.first(n)));
  return n;
}

Result<size_t> Client::Write(File& f, uint64_t off, std::span<const uint8_t> buf) {
  if (buf.empty()) return size_t{0};
  if (off > kMaxFileSize || buf.size() > kMaxFileSize - off) {
    return Status(EFBIG, "write past the largest file size");
  }
  {
    std::lock_guard<std::mutex> lock(f.mu_);
    if (!f.wb_error_.ok()) return f.wb_error_;
  }
  SFS_RETURN_IF_ERROR(impl_->striper->Write(f.layout_, off, buf));
  NoteWritten(f, off, off + buf.size());
  return buf.size();
}

Result<size_t> Client::WriteBehind(const std::shared_ptr<File>& f, uint64_t off,
                                   std::span<const uint8_t> buf, bool* wake_owed) {
  if (wake_owed != nullptr) *wake_owed = false;
  if (!impl_->wb) return Write(*f, off, buf);
  if (buf.empty()) return size_t{0};
  if (off > kMaxFileSize || buf.size() > kMaxFileSize - off) {
    return Status(EFBIG, "write past the largest file size");
  }
  {
    std::lock_guard<std::mutex> lock(f->mu_);
    if (!f->wb_error_.ok()) return f->wb_error_;
  }
  const bool queued = impl_->wb->Submit(f, off, buf, /*defer_wake=*/wake_owed != nullptr);
  if (wake_owed != nullptr) *wake_owed = queued;
  // The size counts the queued write at once, as the kernel's i_size does: a
  // Flush/Close waits for it before reporting.
  NoteWritten(*f, off, off + buf.size());
  return buf.size();
}

Result<size_t> Client::Append(const std::shared_ptr<File>& f, std::span<const uint8_t> buf,
                              uint64_t* offset, bool* wake_owed) {
  if (wake_owed != nullptr) *wake_owed = false;
  if (buf.empty()) return size_t{0};
  {
    std::lock_guard<std::mutex> lock(f->mu_);
    if (!f->wb_error_.ok()) return f->wb_error_;
  }
  // Past anything this client wrote but has not reported yet.
  auto mine = [&] {
    return impl_->MergeLocal(Attr{.ino = f->ino_, .mode = S_IFREG, .size = f->size()}, true).size;
  };
  const auto now = std::chrono::steady_clock::now();
  {
    // Under a token: the end this client knows is the true end of file.
    std::lock_guard<std::mutex> lock(impl_->append_mu);
    auto t = impl_->tokens.find(f->ino_);
    if (t != impl_->tokens.end() && now < t->second.until) {
      const uint64_t off = std::max(t->second.eof, mine());
      Result<size_t> n = WriteBehind(f, off, buf, wake_owed);
      if (n.ok()) t->second.eof = off + buf.size();
      if (offset != nullptr) *offset = off;
      return n;
    }
    if (t != impl_->tokens.end()) impl_->tokens.erase(t);
  }
  uint64_t drops;
  {
    std::lock_guard<std::mutex> lock(impl_->append_mu);
    drops = impl_->token_drops;
  }
  uint32_t token_ms = 0;
  SFS_ASSIGN_OR_RETURN(uint64_t off, impl_->mds->Append(f->cred_, f->ino_, buf.size(), mine(),
                                                        NowNs(), /*want_token=*/true,
                                                        &token_ms));
  if (offset != nullptr) *offset = off;
  std::lock_guard<std::mutex> lock(impl_->append_mu);
  Result<size_t> n = WriteBehind(f, off, buf, wake_owed);
  // Counted from before the request went out, less a margin: the MDS counts
  // it from its grant, plus one.
  if (n.ok() && token_ms > 250 && impl_->token_drops == drops) {
    impl_->tokens[f->ino_] = {off + buf.size(), now + std::chrono::milliseconds(token_ms - 250)};
  }
  return n;
}

void Client::WakeWriteBehind() {
  if (impl_->wb) impl_->wb->Wake();
}

void Client::NoteWritten(File& f, uint64_t off, uint64_t end, bool dense) {
  int64_t now = NowNs();
  std::lock_guard<std::mutex> lock(f.mu_);
  if (f.dense_ && dense && off <= f.dense_end_) {
    f.dense_end_ = std::max(f.dense_end_, end);
  } else {
    f.dense_ = false;
  }
  f.size_ = std::max(f.size_, end);
  f.dirty_end_ = std::max(f.dirty_end_, end);
  f.size_dirty_ = true;
  f.written_ = true;
  f.mtime_ns_ = now;
}

Status Client::Flush(File& f) {
  impl_->WaitWrites(f.ino_);
  // A failed background write is reported once, here; the size report still
  // goes (the kernel's i_size already counts the write).
  Status wb_error = TakeWriteError(f);
  Status st = ReportSize(f);
  return wb_error.ok() ? st : wb_error;
}

Status Client::TakeWriteError(File& f) {
  std::lock_guard<std::mutex> lock(f.mu_);
  return std::exchange(f.wb_error_, Status::Ok());
}

Status Client::ReportSize(File& f) {
  SizeReport r;
  {
    std::lock_guard<std::mutex> lock(f.mu_);
    if (!f.size_dirty_) return Status::Ok();
    r.has_size = true;
    r.size = f.dirty_end_;
    r.mtime_ns = f.mtime_ns_;
    f.size_dirty_ = false;
    f.dirty_end_ = 0;
  }
  Result<uint64_t> blocks = BlocksOf(f);
  r.has_blocks = blocks.ok();
  if (blocks.ok()) r.blocks = *blocks;
  Status st = impl_->mds->SetSize(f.cred_, f.ino_, r);
  if (!st.ok()) {
    // Keep the report for the next Flush or the Close.
    std::lock_guard<std::mutex> lock(f.mu_);
    f.size_dirty_ = true;
    f.dirty_end_ = std::max(f.dirty_end_, r.size);
  }
  return st;
}

// A small file written front to back by one handle and closed is the common
// case (mdtest, tar, checkpoints' shards): its blocks are those of its bytes,
// so its close reports them without a stat round trip to every OSS. Counted
// as the OSTs' file systems count (4 KiB blocks, 512-byte units), per object
// and for every copy an object list holds. Another client writing holes into
// the same new file at once may see them uncounted until its own report.
Result<uint64_t> Client::BlocksOf(File& f) {
  uint64_t end = 0;
  bool dense = false;
  {
    std::lock_guard<std::mutex> lock(f.mu_);
    dense = f.dense_;
    end = f.dense_end_;
  }
  const LayoutSpec& l = f.layout_;
  if (!dense || l.IsEc() || l.stripe_size == 0 || l.stripe_count <= 0 || l.objects.empty() ||
      l.objects.size() % static_cast<size_t>(l.stripe_count) != 0 ||
      impl_->OpenFiles(f.ino_).size() != 1) {
    return impl_->striper->Blocks(l);
  }
  const layout::Geometry g{l.stripe_size, static_cast<uint32_t>(l.stripe_count)};
  uint64_t blocks = 0;
  for (uint32_t s = 0; s < g.stripe_count; ++s) {
    blocks += (layout::ObjectSize(g, s, end) + 4095) / 4096 * 8;
  }
  return blocks * (l.objects.size() / static_cast<size_t>(l.stripe_count));
}

Status Client::Fsync(File& f, bool datasync) {
  impl_->WaitWrites(f.ino_);
  Status wb_error = TakeWriteError(f);
  // The MDS half runs beside the OSS syncs: the size report first, so the
  // MDS commit after it covers it (and everything acknowledged before).
  std::future<Status> mds = std::async(std::launch::async, [this, &f] {
    Status st = ReportSize(f);
    return st.ok() ? impl_->mds->Sync() : st;
  });
  Status oss = impl_->striper->Sync(f.layout_);
  Status md = mds.get();
  if (!wb_error.ok()) return wb_error;
  return oss.ok() ? md : oss;
}

Status Client::SyncMetadata() { return impl_->mds->Sync(); }

// ---- space and copies (space_ops.h) ----

Status Client::Fallocate(File& f, int mode, uint64_t off, uint64_t len) {
  const int known[] = {0, FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                       FALLOC_FL_ZERO_RANGE, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE};
  if (std::find(std::begin(known), std::end(known), mode) == std::end(known)) {
    return Status(EOPNOTSUPP, "fallocate mode not supported");
  }
  if (len == 0) return Status(EINVAL, "fallocate of length 0");
  if (off > kMaxFileSize || len > kMaxFileSize - off) return Status(EFBIG, "past the largest file");
  if ((f.flags_ & O_ACCMODE) == O_RDONLY) return Status(EBADF, "not open for writing");
  if (f.layout_.IsEc()) {
    // The objects' bytes are chunks and parity, not the file's: ranges of
    // the file do not map to ranges of one object (posix_fallocate then
    // writes zeros itself).
    return Status(EOPNOTSUPP, "fallocate of an erasure-coded file");
  }
  impl_->WaitWrites(f.ino_);
  SFS_RETURN_IF_ERROR(FallocateObjects(*impl_->striper, f.layout_, mode, off, len));
  // The size report also carries the new blocks (and an mtime, as a write).
  NoteWritten(f, off, (mode & FALLOC_FL_KEEP_SIZE) != 0 ? 0 : off + len, /*dense=*/false);
  return ReportSize(f);
}

Result<uint64_t> Client::Seek(File& f, uint64_t off, int whence) {
  if (whence != SEEK_DATA && whence != SEEK_HOLE) return Status(EINVAL, "whence");
  impl_->WaitWrites(f.ino_);
  SFS_ASSIGN_OR_RETURN(Attr a, impl_->mds->GetAttr(f.cred_, f.ino_));
  const uint64_t size = impl_->MergeLocal(std::move(a), true).size;
  if (off >= size) return Status(ENXIO, "at or past the end of file");
  // Erasure-coded: objects hold chunks and parity, so their holes are not
  // the file's; the whole file counts as data, as lseek(2) allows.
  if (f.layout_.IsEc()) return whence == SEEK_HOLE ? size : off;
  SFS_ASSIGN_OR_RETURN(std::optional<uint64_t> at,
                       SeekObjects(*impl_->striper, f.layout_, off, whence == SEEK_HOLE));
  if (whence == SEEK_HOLE) return at ? std::min(*at, size) : size;
  if (!at || *at >= size) return Status(ENXIO, "no data past the offset");
  return *at;
}

Result<size_t> Client::CopyRange(File& in, uint64_t in_off, File& out, uint64_t out_off,
                                 size_t len) {
  if ((in.flags_ & O_ACCMODE) == O_WRONLY || (out.flags_ & O_ACCMODE) == O_RDONLY) {
    return Status(EBADF, "copy from a write-only or to a read-only handle");
  }
  impl_->WaitWrites(in.ino_);
  impl_->WaitWrites(out.ino_);
  SFS_ASSIGN_OR_RETURN(Attr a, impl_->mds->GetAttr(in.cred_, in.ino_));
  const uint64_t size = impl_->MergeLocal(std::move(a), true).size;
  if (in_off >= size || len == 0) return size_t{0};
  const uint64_t n = std::min<uint64_t>(len, size - in_off);
  if (out_off > kMaxFileSize || n > kMaxFileSize - out_off) {
    return Status(EFBIG, "copy past the largest file");
  }
  if (in.ino_ == out.ino_ && in_off < out_off + n && out_off < in_off + n) {
    return Status(EINVAL, "overlapping copy within one file");
  }
  SFS_RETURN_IF_ERROR(CopyObjects(*impl_->striper, in.layout_, in_off, out.layout_, out_off, n));
  NoteWritten(out, out_off, out_off + n, /*dense=*/false);
  SFS_RETURN_IF_ERROR(ReportSize(out));
  return static_cast<size_t>(n);
}

// ---- namespace ----

Result<Attr> Client::Mknod(const Cred& c, uint64_t parent, std::string_view name, uint32_t mode,
                           uint64_t rdev) {
  return impl_->mds->Mknod(c, parent, name, mode, rdev);
}

Result<Attr> Client::Mkdir(const Cred& c, uint64_t parent, std::string_view name, uint32_t mode) {
  return impl_->mds->Mkdir(c, parent, name, mode);
}

Status Client::Unlink(const Cred& c, uint64_t parent, std::string_view name, Attr* dir_attr) {
  return impl_->mds->Unlink(c, parent, name, dir_attr);
}

Status Client::Rmdir(const Cred& c, uint64_t parent, std::string_view name, Attr* dir_attr) {
  return impl_->mds->Rmdir(c, parent, name, dir_attr);
}

Status Client::Rename(const Cred& c, uint64_t parent, std::string_view name, uint64_t new_parent,
                      std::string_view new_name, uint32_t flags, Attr* dir_attr) {
  return impl_->mds->Rename(c, parent, name, new_parent, new_name, flags, dir_attr);
}

Result<Attr> Client::Link(const Cred& c, uint64_t ino, uint64_t new_parent,
                          std::string_view new_name) {
  return impl_->mds->Link(c, ino, new_parent, new_name);
}

Result<Attr> Client::Symlink(const Cred& c, uint64_t parent, std::string_view name,
                             std::string_view target) {
  return impl_->mds->Symlink(c, parent, name, target);
}

Result<std::string> Client::Readlink(const Cred& c, uint64_t ino) {
  return impl_->mds->Readlink(c, ino);
}

Result<DirPage> Client::Readdir(const Cred& c, uint64_t ino, std::string_view after,
                                uint32_t max_entries, bool with_attrs) {
  return impl_->mds->Readdir(c, ino, after, max_entries, with_attrs);
}

Result<FsStat> Client::StatFs() { return impl_->mds->Statfs(); }

Result<std::string> Client::GetXattr(const Cred& c, uint64_t ino, std::string_view name) {
  return impl_->mds->GetXattr(c, ino, name);
}

Status Client::SetXattr(const Cred& c, uint64_t ino, std::string_view name,
                        std::string_view value, int flags) {
  return impl_->mds->SetXattr(c, ino, name, value, flags);
}

Result<std::vector<std::string>> Client::ListXattr(const Cred& c, uint64_t ino) {
  return impl_->mds->ListXattr(c, ino);
}

Status Client::RemoveXattr(const Cred& c, uint64_t ino, std::string_view name) {
  return impl_->mds->RemoveXattr(c, ino, name);
}

Result<LayoutSpec> Client::GetLayout(const Cred& c, uint64_t ino) {
  return impl_->mds->GetLayout(c, ino);
}

Status Client::SetLayout(const Cred& c, uint64_t ino, const LayoutSpec& spec, bool clear) {
  return impl_->mds->SetLayout(c, ino, spec, clear);
}

Result<std::vector<OstStatus>> Client::ListOsts(std::string* mds_metrics) {
  SFS_ASSIGN_OR_RETURN(std::vector<OstStatus> osts, impl_->mds->GetOstMap(mds_metrics));
  for (OstStatus& o : osts) o.transport = impl_->pool->TransportOf(o.address);
  return osts;
}

Result<uint64_t> Client::OstLost(const Cred& c, uint32_t index) {
  return impl_->mds->OstLost(c, index);
}

Result<RebuildStatus> Client::GetRebuildStatus() { return impl_->mds->GetRebuildStatus(); }

Result<ScrubResult> Client::Scrub(const Cred& c, uint64_t ino, bool repair) {
  return impl_->mds->Scrub(c, ino, repair);
}

Result<std::vector<PoolInfo>> Client::ListPools(std::string_view name) {
  return impl_->mds->Pool(nullptr, PoolOp::kList, name, {});
}

Status Client::PoolCreate(const Cred& c, std::string_view name) {
  return impl_->mds->Pool(&c, PoolOp::kCreate, name, {}).status();
}

Status Client::PoolAdd(const Cred& c, std::string_view name, const std::vector<uint32_t>& osts) {
  return impl_->mds->Pool(&c, PoolOp::kAdd, name, osts).status();
}

Status Client::PoolRemove(const Cred& c, std::string_view name,
                          const std::vector<uint32_t>& osts) {
  return impl_->mds->Pool(&c, PoolOp::kRemove, name, osts).status();
}

Status Client::PoolDestroy(const Cred& c, std::string_view name) {
  return impl_->mds->Pool(&c, PoolOp::kDestroy, name, {}).status();
}

Result<std::vector<QosRuleInfo>> Client::ListQos(std::string_view name) {
  return impl_->mds->Qos(nullptr, 0, QosRuleInfo{.name = std::string(name)});
}

Status Client::QosSet(const Cred& c, const QosRuleInfo& rule) {
  return impl_->mds->Qos(&c, 1, rule).status();
}

Status Client::TenantAdmin(const Cred& c, const std::string& req, std::string* resp) {
  return impl_->mds->TenantAdmin(c, req, resp);
}

Status Client::CapKeyAdmin(const Cred& c, const std::string& req, std::string* resp) {
  return impl_->mds->CapKeyAdmin(c, req, resp);
}

Result<std::string> Client::KvCapability() { return impl_->mds->KvGrant(); }

Status Client::QosRemove(const Cred& c, std::string_view name) {
  return impl_->mds->Qos(&c, 2, QosRuleInfo{.name = std::string(name)}).status();
}

Result<LayoutSpec> Client::ResyncMirrors(const Cred& c, uint64_t ino) {
  // The whole file's mirror-range lock, as the MDS's resyncer takes it: it
  // recalls a lock another mount kept past its close (docs/redundancy.md
  // "Cached locks"), so that mount learns the healed copies from its next
  // grant instead of writing past them.
  LockArgs whole;
  whole.ino = ino;
  whole.owner = kResyncLockOwner;
  whole.ec_rows = true;
  whole.lock.type = F_WRLCK;
  whole.lock.start = 0;
  whole.lock.end = UINT64_MAX;
  whole.wait = true;
  bool locked = false;
  for (;;) {
    Result<LockSpec> r = impl_->mds->Lock(whole, std::chrono::milliseconds(5000));
    if (r.ok()) {
      locked = true;
      break;
    }
    if (r.status().code() == ENOLCK) break;  // an MDS without locks: no lock kept either
    if (r.status().code() != EINPROGRESS) return r.status();
  }
  Result<LayoutSpec> out = ResyncMirrorsLocked(c, ino, locked);
  if (locked) {
    whole.lock.type = F_UNLCK;
    whole.wait = false;
    Result<LockSpec> un = impl_->mds->Lock(whole, std::chrono::milliseconds(5000));
    if (!un.ok()) LOG_WARN("inode " << ino << ": releasing the resync's lock: " << un.status().ToString());
  }
  return out;
}

Result<LayoutSpec> Client::ResyncMirrorsLocked(const Cred& c, uint64_t ino, bool locked) {
  // Taken before the copy: without the lock, the MDS marks the copies ok
  // only if nothing wrote the file meanwhile (a write the copy missed would
  // be lost). Under it, writers wait, and learn the resynced copies from
  // their next grant (LockResp.copy_gen), as with the MDS's resyncer.
  SFS_ASSIGN_OR_RETURN(Attr before, impl_->mds->GetAttr(c, ino));
  SFS_ASSIGN_OR_RETURN(LayoutSpec l, impl_->mds->GetLayout(c, ino));
  if (l.Copies() < 2) return Status(EINVAL, "file is not mirrored");
  std::vector<StripeObject> healed;
  Status st = ResyncCopies(*impl_->striper, l, &healed);
  if (!healed.empty()) {
    SFS_ASSIGN_OR_RETURN(l, impl_->mds->MirrorState(c, ino, healed, false, locked ? nullptr : &before));
    impl_->striper->Absorb(l);
  }
  if (!st.ok()) return st;
  return l;
}

Result<LayoutSpec> Client::Migrate(const Cred& c, uint64_t ino, const LayoutSpec& spec) {
  return MigrateFile(*impl_->mds, *impl_->striper, c, ino, spec);
}

Result<Attr> Client::ResolvePath(const Cred& c, std::string_view path) {
  if (path.empty() || path[0] != '/') return Status(EINVAL, "not an absolute path");
  std::optional<Attr> cur;
  uint64_t ino = kRootIno;
  while (!path.empty()) {
    size_t start = path.find_first_not_of('/');
    if (start == std::string_view::npos) break;
    path.remove_prefix(start);
    size_t end = std::min(path.find('/'), path.size());
    SFS_ASSIGN_OR_RETURN(Attr a, impl_->mds->Lookup(c, ino, path.substr(0, end)));
    ino = a.ino;
    cur = a;
    path.remove_prefix(end);
  }
  if (!cur) return impl_->mds->GetAttr(c, kRootIno);
  return *cur;
}

// ---- the client cache's hint (prefetcher.h, docs/cache.md) ----

Prefetcher::Outcome Client::Impl::PrefetchOne(Client& self, const Cred& c,
                                              const PrefetchItem& it, uint64_t pos) {
  auto skip = [&] {
    cache->CountPrefetch(false);
    return Prefetcher::Outcome::kSkipped;
  };
  // One listing per hinted directory, not a lookup per file (hint_resolver.h).
  uint64_t parent = 0;
  Result<Attr> a = resolver->Resolve(c, it.path, &parent);
  if (!a.ok() || !S_ISREG(a->mode)) return skip();
  NoteUse(it.path, a->ino, pos);
  const uint64_t end = it.length >= a->size - std::min(a->size, it.offset)
                           ? a->size
                           : it.offset + it.length;
  // Held already at the version the listing shows: no open, no fetch. (A
  // version changed since is caught by the reader's own open, which then
  // misses; nothing stale is served.) The attributes show the inode's own
  // version, blocks are keyed by the one an open gives out: compared raw,
  // they never matched, and every held file was opened again each epoch.
  if (a->data_version != 0) {
    const uint64_t version = OpenedVersion(a->data_version, mds->boot_epoch());
    const uint64_t missing = MissingBytes(*cache, a->ino, version, a->size, it.offset, end);
    if (missing == 0) {
      // Through a mount the reader's lookup and open would still be two MDS
      // round trips: one open by name here, ahead of it, answers both
      // (HintedName, then the kept open). Elsewhere the reader opens anyway;
      // a warm-up has no reader right behind it. Nor where an open of the
      // file is still kept (a short epoch after the last): the reader's
      // open takes that, and its lookup was answered alongside (statahead,
      // the kernel's entry), so a second open would be work for nothing.
      if (NamesForLookups(parent) && prefetcher->Bounded() &&
          !mds->HoldsKeptOpen(c, a->ino, kReaderLag)) {
        Result<std::shared_ptr<File>> f = OpenHinted(self, c, it.path, parent, a->ino);
        if (f.ok()) {
          (*f)->prefetch_ = true;
          (void)self.Close(*f);
        }
      }
      return Prefetcher::Outcome::kDone;
    }
    // Decided before the open: a worker waiting for room re-asks at every
    // frontier move, and an open each time cost the MDS more than the fetch.
    if (!cache->WorthFetching(pos, missing)) return Prefetcher::Outcome::kNotYet;
  }
  Result<std::shared_ptr<File>> f = OpenHinted(self, c, it.path, parent, a->ino);
  if (!f.ok()) return skip();
  (*f)->prefetch_ = true;
  Prefetcher::Outcome out = Prefetcher::Outcome::kDone;
  const uint64_t size = (*f)->size();
  if (!(*f)->cacheable_) {
    out = skip();
  } else if (!cache->WorthFetching(pos, MissingBytes(*cache, **f, size, it.offset, end))) {
    out = Prefetcher::Outcome::kNotYet;  // the cache holds only what is read sooner
  } else if (!CacheFill(*cache, *striper, **f, size, it.offset, end).ok()) {
    out = skip();
  } else {
    cache->CountPrefetch(true);
  }
  (void)self.Close(*f);
  return out;
}

Result<std::shared_ptr<File>> Client::Impl::OpenHinted(Client& self, const Cred& c,
                                                       const std::string& path, uint64_t parent,
                                                       uint64_t ino) {
  // By name where a LOOKUP may be answered from the open (HintResolver::
  // NoteNamed): the reply then shows what the name points to now, under the
  // file's lease. By inode otherwise (which may take a kept open over).
  if (!NamesForLookups(parent)) return self.Open(c, ino, O_RDONLY, nullptr);
  const std::string base = HintResolver::BaseOf(path);
  Result<OpenResult> r = mds->OpenPath(c, parent, {base}, O_RDONLY);
  if (!r.ok() && r.status().code() == EPROTO) {
    mds_lacks_open_path = true;
    return self.Open(c, ino, O_RDONLY, nullptr);
  }
  if (!r.ok()) return r.status();
  if (S_ISREG(r->attr.mode) && r->attr.lease_ms > 0 && !r->write_opens) {
    resolver->NoteNamed(
        c, parent, base, r->attr, r->cache_gen,
        std::chrono::steady_clock::now() + std::chrono::milliseconds(r->attr.lease_ms));
  }
  return FinishOpen(c, O_RDONLY, std::move(*r), nullptr);
}

Status Client::Prefetch(const Cred& c, std::vector<PrefetchItem> items, uint64_t lookahead,
                        bool append) {
  if (!impl_->prefetcher) return Status(ENOTSUP, "the client cache is off (cache_ram/cache_dir)");
  std::lock_guard<std::mutex> hint_lock(impl_->hint_mu);
  if (!append) ++impl_->hint_gen;
  std::vector<uint64_t> groups(items.size(), 0);
  {
    std::lock_guard<std::mutex> lock(impl_->memo_mu);
    for (size_t i = 0; i < items.size(); ++i) {
      auto m = impl_->memo.find(items[i].path);
      if (m != impl_->memo.end()) groups[i] = m->second;
    }
  }
  const uint64_t base = append ? impl_->prefetcher->GetProgress().length : 0;
  if (append) {
    for (size_t i = 0; i < groups.size(); ++i) {
      if (groups[i] != 0) impl_->cache->AddUse(groups[i], base + i);
    }
  } else {
    impl_->cache->SetHint(groups);
  }
  impl_->resolver->Reset(items, append, base, impl_->hint_gen);
  impl_->prefetcher->Start(c, std::move(items), lookahead, append);
  return Status::Ok();
}

Result<bool> Client::WaitPrefetch(std::chrono::milliseconds timeout) {
  if (!impl_->prefetcher) return Status(ENOTSUP, "the client cache is off (cache_ram/cache_dir)");
  return impl_->prefetcher->WaitIdle(timeout);
}

Result<CacheStats> Client::CacheStatus() {
  if (!impl_->cache) return Status(ENOTSUP, "the client cache is off (cache_ram/cache_dir)");
  CacheStats s = impl_->cache->Stats();
  const Prefetcher::Progress p = impl_->prefetcher->GetProgress();
  s.hint_length = p.length;
  s.hint_done = p.done;
  s.hint_window = p.window;
  s.hint_waiting = p.waiting;
  if (impl_->read_ahead) s.read_ahead_bytes = impl_->read_ahead->submitted_bytes();
  s.hinted_lookups = impl_->resolver->named_hits();
  return s;
}

Status Client::DropCache() {
  if (!impl_->cache) return Status(ENOTSUP, "the client cache is off (cache_ram/cache_dir)");
  impl_->prefetcher->Clear();
  impl_->cache->Drop();
  return Status::Ok();
}

}  // namespace sfs::client
