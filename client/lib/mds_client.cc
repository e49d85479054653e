// MdsClient: one MdsRequest per call, and the one place where the wire types
// of mds.proto/common.proto are converted to and from libsfs's structs.
#include "client/lib/mds_client.h"

#include <fcntl.h>

#include <algorithm>
#include <thread>
#include <utility>

#include "client/lib/job_id.h"
#include "client/lib/open_cache.h"
#include "common.pb.h"
#include "common/log.h"
#include "common/mdsop/op_table.h"
#include "mds.pb.h"

namespace sfs::client {
namespace {

// ---- proto <-> struct conversion ----

void ToProto(const Cred& c, proto::Cred* p) {
  p->set_uid(c.uid);
  p->set_gid(c.gid);
  for (uint32_t g : c.groups) p->add_groups(g);
}

Attr FromProto(const proto::Attr& p) {
  Attr a;
  a.ino = p.ino();
  a.mode = p.mode();
  a.uid = p.uid();
  a.gid = p.gid();
  a.nlink = p.nlink();
  a.size = p.size();
  a.blocks = p.blocks();
  a.atime_ns = p.atime_ns();
  a.mtime_ns = p.mtime_ns();
  a.ctime_ns = p.ctime_ns();
  a.rdev = p.rdev();
  a.generation = p.generation();
  a.data_version = p.data_version();
  return a;
}

void ToProto(const LayoutSpec& l, proto::Layout* p) {
  p->set_stripe_size(l.stripe_size);
  p->set_stripe_count(l.stripe_count);
  p->set_start_ost(l.start_ost);
  p->set_pool(l.pool);
  p->set_mirror_count(l.mirror_count);
  p->set_ec_data(l.ec_data);
  p->set_ec_parity(l.ec_parity);
  for (const StripeObject& o : l.objects) {
    proto::StripeObject* po = p->add_objects();
    po->set_ost(o.ost);
    po->set_oid(o.oid);
    po->set_mirror(o.mirror);
    po->set_state(o.stale ? proto::OBJECT_STALE : proto::OBJECT_OK);
  }
}

LayoutSpec FromProto(const proto::Layout& p, bool inherited) {
  LayoutSpec l;
  l.stripe_size = p.stripe_size();
  l.stripe_count = p.stripe_count();
  l.start_ost = p.start_ost();
  l.pool = p.pool();
  l.inherited = inherited;
  l.objects.reserve(p.objects_size());
  l.mirror_count = p.mirror_count();
  l.ec_data = p.ec_data();
  l.ec_parity = p.ec_parity();
  l.capability = p.capability();
  for (const proto::StripeObject& po : p.objects()) {
    l.objects.push_back({po.ost(), po.oid(), po.mirror(), po.state() != proto::OBJECT_OK,
                         po.state() == proto::OBJECT_LOST});
  }
  return l;
}

OstStatus FromProto(const proto::OstInfo& p) {
  OstStatus o;
  o.index = p.index();
  o.uuid = p.uuid();
  o.address = p.address();
  o.up = p.up();
  o.total_bytes = p.total_bytes();
  o.free_bytes = p.free_bytes();
  o.avail_bytes = p.avail_bytes();
  o.last_heartbeat_ms = p.last_heartbeat_ms();
  o.metrics_address = p.metrics_address();
  o.lost = p.lost();
  return o;
}

DirEntry FromProto(const proto::DirEntry& p, bool with_attrs) {
  DirEntry e;
  e.name = p.name();
  e.ino = p.ino();
  e.type = p.type();
  if (with_attrs && p.has_attr()) e.attr = FromProto(p.attr());
  return e;
}

void ToProto(const SetAttrArgs& a, proto::SetAttrReq* p) {
  p->set_valid(a.valid);
  p->set_mode(a.mode);
  p->set_uid(a.uid);
  p->set_gid(a.gid);
  p->set_size(a.size);
  p->set_atime_ns(a.atime_ns);
  p->set_mtime_ns(a.mtime_ns);
  p->set_ctime_ns(a.ctime_ns);
}

bool IsTransportError(int code) {
  switch (code) {
    case ETIMEDOUT: case ENOTCONN: case ECONNREFUSED: case ECONNRESET: case ECONNABORTED:
    case EPIPE: case EPROTO: case EBADMSG: case EHOSTUNREACH: case ENETUNREACH:
    case ECANCELED: case EMSGSIZE:
      return true;
    default:
      return false;
  }
}

}  // namespace

MdsClient::MdsClient(std::unique_ptr<rpc::Channel> channel, uint64_t client_id,
                     std::chrono::milliseconds timeout,
                     std::chrono::milliseconds recovery_timeout)
    : channel_(std::move(channel)),
      client_id_(client_id),
      timeout_(timeout),
      recovery_timeout_(recovery_timeout) {}

MdsClient::~MdsClient() = default;

void MdsClient::NoteEpoch(uint64_t epoch) {
  if (epoch == 0) return;
  uint64_t old = epoch_.load();
  while (old != epoch && !epoch_.compare_exchange_weak(old, epoch)) {
  }
  if (old == epoch) return;
  if (old == 0) {  // first contact: nothing kept from before
    std::lock_guard<std::mutex> l(replay_mu_);
    replayed_epoch_ = std::max(replayed_epoch_, epoch);
    return;
  }
  LOG_INFO("MDS " << address() << " restarted (boot epoch " << old << " -> " << epoch
                  << "): replaying, then re-opening open files");
  // Sessions live in the MDS's memory: a tenant's replays need a new one.
  if (!tenant_.empty() && key_source_) (void)Reauthenticate(auth_gen_.load());
  // Before the listener: files re-opened must exist again first.
  EnsureReplayed(epoch);
  // Kept opens died with the old instance (ReopenAll re-opens only files in use).
  if (open_cache_) (void)open_cache_->Changed();
  epoch_changed_ = true;
  if (on_new_epoch_) on_new_epoch_();
}

size_t MdsClient::kept_requests() const {
  std::lock_guard<std::mutex> l(replay_mu_);
  return kept_.size();
}

void MdsClient::Keep(const proto::MdsRequest& req, const proto::MdsResponse& resp) {
  proto::MdsRequest copy = req;
  copy.clear_closes();  // an open does not outlive a restart: nothing to close then
  proto::ReplayInfo* info = copy.mutable_replay_info();
  info->set_epoch(resp.boot_epoch());
  info->set_transno(resp.transno());
  if (resp.has_open()) {
    info->set_ino(resp.open().attr().ino());
    *info->mutable_layout() = resp.open().layout();
    info->mutable_layout()->clear_capability();
  } else if (resp.has_attr() && (req.has_mkdir() || req.has_mknod() || req.has_symlink())) {
    info->set_ino(resp.attr().attr().ino());
    if (resp.has_replay_layout()) *info->mutable_layout() = resp.replay_layout();
  }
  std::string bytes = copy.SerializeAsString();
  recorded_.store(true, std::memory_order_release);
  std::lock_guard<std::mutex> l(replay_mu_);
  kept_[{resp.boot_epoch(), resp.transno()}] = std::move(bytes);
}

void MdsClient::Prune(uint64_t epoch, uint64_t last_committed) {
  if (last_committed == 0) return;
  std::lock_guard<std::mutex> l(replay_mu_);
  if (kept_.empty()) return;
  kept_.erase(kept_.lower_bound({epoch, 0}), kept_.upper_bound({epoch, last_committed}));
}

void MdsClient::EnsureReplayed(uint64_t epoch) {
  std::vector<std::pair<uint64_t, uint64_t>> keys;
  std::vector<std::string> requests;
  {
    std::unique_lock<std::mutex> l(replay_mu_);
    replay_cv_.wait(l, [&] { return replayed_epoch_ >= epoch || !replaying_; });
    if (replayed_epoch_ >= epoch) return;
    replaying_ = true;
    for (auto it = kept_.begin(); it != kept_.end() && it->first.first < epoch; ++it) {
      keys.push_back(it->first);
      requests.push_back(it->second);
    }
  }
  Status st = SendReplay(requests);
  if (!st.ok()) {
    LOG_WARN("replay of " << requests.size() << " request(s) to MDS " << address() << ": "
                          << st.ToString() << " (kept for its next restart)");
  }
  std::lock_guard<std::mutex> l(replay_mu_);
  if (st.ok()) {
    for (const auto& k : keys) kept_.erase(k);  // the MDS committed them before answering
  }
  replayed_epoch_ = std::max(replayed_epoch_, epoch);
  replaying_ = false;
  replay_cv_.notify_all();
}

Status MdsClient::SendReplay(const std::vector<std::string>& requests) {
  proto::MdsRequest req;
  req.set_client_id(client_id_);
  req.set_xid(NextXid());
  if (!tenant_.empty()) req.set_tenant(tenant_);  // refused as the default's under `require on`
  for (const std::string& r : requests) req.mutable_replay()->add_requests(r);
  const std::string payload = req.SerializeAsString();
  const auto deadline = std::chrono::steady_clock::now() + recovery_timeout_;
  rpc::Response raw;
  for (;;) {
    rpc::CallOptions opts;
    opts.held = true;  // the MDS answers once every client has reported
    opts.timeout = std::max(std::chrono::milliseconds(1),
                            std::chrono::duration_cast<std::chrono::milliseconds>(
                                deadline - std::chrono::steady_clock::now()));
    Status st = channel_->Call(rpc::kServiceMds, payload, {}, {}, &raw, opts);
    if (st.ok()) break;
    if (!IsTransportError(st.code()) || shutting_down_.load(std::memory_order_acquire) ||
        std::chrono::steady_clock::now() + std::chrono::milliseconds(50) >= deadline) {
      return st;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  proto::MdsResponse resp;
  if (!resp.ParseFromString(raw.payload)) return Status(EBADMSG, "unparsable MDS reply");
  if (resp.status().code() == EPROTO && !resp.has_replay()) {
    return Status::Ok();  // an MDS without replay commits before it answers: nothing to send
  }
  if (resp.status().code() != 0) return Status(resp.status().code(), resp.status().message());
  int failed = 0;
  for (int code : resp.replay().codes()) failed += code != 0;
  if (failed > 0) {
    LOG_WARN("MDS " << address() << " could not replay " << failed << " of " << requests.size()
                    << " acknowledged change(s) (conflicts; see its log)");
  } else if (!requests.empty()) {
    LOG_INFO("replayed " << requests.size() << " change(s) to MDS " << address());
  }
  return Status::Ok();
}

void MdsClient::Leave() {
  // Only a client that had a change acknowledged has a record at the MDS.
  if (!recorded_.load(std::memory_order_acquire)) return;
  // Short: an unmount must not hang on an MDS that is gone (which then
  // waits its recovery window for us, at most, after its restart).
  constexpr auto kLeaveTimeout = std::chrono::milliseconds(500);
  proto::MdsRequest req;
  proto::MdsResponse resp;
  if (kept_requests() > 0) {
    req.mutable_sync();
    if (!CallRaw(nullptr, &req, &resp, kLeaveTimeout).ok()) return;
    req.Clear();
    resp.Clear();
  }
  req.mutable_replay()->set_leaving(true);
  (void)CallRaw(nullptr, &req, &resp, kLeaveTimeout);
}

Status MdsClient::CallRaw(const Cred* c, proto::MdsRequest* req, proto::MdsResponse* resp,
                          std::chrono::milliseconds timeout, bool retry) {
  // A kept open is no better than a lease, and this client's own changes
  // revoke none of its leases: a request of its own that changed what the
  // MDS revokes leases for (the op table, common/mdsop/op_table.h) ends
  // every kept open once its reply is in. One the MDS refused changed
  // nothing (mdtest's mkdir of a directory that exists); one with no reply
  // read (boot epoch 0) may have been applied.
  struct EndKeptOpens {
    MdsClient* self;
    const proto::MdsRequest* req;
    const proto::MdsResponse* resp;
    ~EndKeptOpens() {
      if (self->open_cache_ == nullptr) return;
      if (mdsop::ChangesLeased(*req, resp->boot_epoch() != 0 ? resp : nullptr)) {
        self->ReleaseKeptOpens(/*all=*/true);
      }
    }
  } end_kept{this, req, resp};
  req->set_client_id(client_id_);
  req->set_xid(NextXid());
  if (c != nullptr) ToProto(*c, req->mutable_cred());
  if (!CurrentJob().empty()) req->set_job_id(CurrentJob());  // jobstats (job_id.h)
  if (!tenant_.empty()) req->set_tenant(tenant_);  // mds_client_tenant.cc
  std::vector<DeferredClose> taken = AttachCloses(req);
  std::string payload = req->SerializeAsString();
  const auto deadline = std::chrono::steady_clock::now() + recovery_timeout_;
  const uint64_t auth_gen = auth_gen_.load();
  bool reauthed = false;
  rpc::Response raw;
  for (;;) {
    for (;;) {
      rpc::CallOptions opts;
      opts.timeout = timeout;
      // The MDS holds it until it has news (or the lock is free).
      opts.held = req->has_watch() || (req->has_lock() && req->lock().wait());
      if (retry) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        opts.timeout = std::max(std::chrono::milliseconds(1), std::min(timeout, left));
      }
      // The same payload (same xid) every time: the MDS applies it at most once.
      Status st = channel_->Call(rpc::kServiceMds, payload, {}, {}, &raw, opts);
      if (st.ok()) break;
      if (!retry || !IsTransportError(st.code()) ||
          shutting_down_.load(std::memory_order_acquire) ||
          std::chrono::steady_clock::now() + std::chrono::milliseconds(50) >= deadline) {
        SettleCloses(std::move(taken), nullptr);
        return st;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (!resp->ParseFromString(raw.payload)) {
      SettleCloses(std::move(taken), nullptr);
      return Status(EBADMSG, "unparsable MDS reply");
    }
    NoteEpoch(resp->boot_epoch());
    if (resp->tenant_reauth() && retry && !reauthed) {
      // Refused before it was applied (tenant_gate.cc): the same payload
      // again once a new handshake succeeded.
      reauthed = true;
      if (Reauthenticate(auth_gen).ok()) {
        resp->Clear();
        continue;
      }
    }
    if (!resp->recovering() || req->has_replay()) break;
    // The MDS waits for replays (ours too, if NoteEpoch did not send them:
    // another thread saw the new epoch first), then serves this again.
    EnsureReplayed(resp->boot_epoch());
    if (!retry || shutting_down_.load(std::memory_order_acquire) ||
        std::chrono::steady_clock::now() + std::chrono::milliseconds(20) >= deadline) {
      break;
    }
    if (!taken.empty()) {  // nothing was applied: the closes go back to the queue
      SettleCloses(std::move(taken), resp);
      taken.clear();
      req->clear_closes();
      payload = req->SerializeAsString();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    resp->Clear();
  }
  SettleCloses(std::move(taken), resp);
  if (resp->transno() != 0) Keep(*req, *resp);
  Prune(resp->boot_epoch(), resp->last_committed());
  if (resp->status().code() != 0) return Status(resp->status().code(), resp->status().message());
  return Status::Ok();
}

Status MdsClient::Call(const Cred* c, proto::MdsRequest* req, proto::MdsResponse* resp) {
  Status st = CallRaw(c, req, resp, timeout_, /*retry=*/true);
  // Only a transport failure leaves the reply's status unset; an MDS errno passes through.
  if (!st.ok() && resp->status().code() == 0 && IsTransportError(st.code())) {
    return Status(EIO, "MDS " + address() + ": " + st.ToString());
  }
  return st;
}

Result<Attr> MdsClient::CallForAttr(const Cred* c, proto::MdsRequest* req) {
  proto::MdsResponse resp;
  uint64_t invals = invalidations_.load();
  SFS_RETURN_IF_ERROR(Call(c, req, &resp));
  return AttrOf(resp, invals);
}

Result<Attr> MdsClient::AttrOf(const proto::MdsResponse& resp, uint64_t invals) {
  if (!resp.has_attr()) return Status(EIO, "MDS reply without attributes");
  Attr a = FromProto(resp.attr().attr());
  if (invalidations_.load() == invals) {
    a.lease_ms = resp.attr().lease_ms();
    a.dir_lease_ms = resp.parent_lease_ms();
    ExtendKeptOpens(a);
    Attr dir = DirAttrOf(resp, invals);
    if (dir.ino != 0) a.dir_attr = std::make_shared<const Attr>(std::move(dir));
  }
  return a;
}

Attr MdsClient::DirAttrOf(const proto::MdsResponse& resp, uint64_t invals) {
  if (!resp.has_parent_attr() || resp.parent_lease_ms() == 0 ||
      invalidations_.load() != invals) {
    return Attr{};
  }
  Attr a = FromProto(resp.parent_attr());
  a.lease_ms = resp.parent_lease_ms();
  return a;
}

Status MdsClient::CallForDir(const Cred& c, proto::MdsRequest* req, Attr* dir_attr) {
  proto::MdsResponse resp;
  uint64_t invals = invalidations_.load();
  Status st = Call(&c, req, &resp);
  if (dir_attr != nullptr) *dir_attr = st.ok() ? DirAttrOf(resp, invals) : Attr{};
  return st;
}

Result<OpenResult> MdsClient::CallForOpen(const Cred* c, proto::MdsRequest* req) {
  proto::MdsResponse resp;
  uint64_t invals = invalidations_.load();
  const uint64_t cache_gen = open_cache_ ? open_cache_->Gen() : 0;
  SFS_RETURN_IF_ERROR(Call(c, req, &resp));
  if (!resp.has_open()) return Status(EIO, "MDS reply without open result");
  const proto::OpenResp& o = resp.open();
  OpenResult r;
  r.attr = FromProto(o.attr());
  if (invalidations_.load() == invals) {
    r.attr.lease_ms = o.lease_ms();
    r.attr.dir_lease_ms = resp.parent_lease_ms();
    ExtendKeptOpens(r.attr);
    Attr dir = DirAttrOf(resp, invals);
    if (dir.ino != 0) r.attr.dir_attr = std::make_shared<const Attr>(std::move(dir));
  }
  r.layout = FromProto(o.layout(), false);
  r.layout.ino = r.attr.ino;
  r.created = o.created();
  r.open_id = o.open_id();
  r.write_opens = o.write_opens();
  r.data_versioned = o.data_versioned();
  r.cache_gen = cache_gen;
  return r;
}

Status MdsClient::Sync() {
  proto::MdsRequest req;
  proto::MdsResponse resp;
  req.mutable_sync();
  // Re-sent after an MDS restart, it is trivially true: the restarted MDS
  // wrote what it recovered from its log to synced tables.
  Status st = Call(nullptr, &req, &resp);
  // An MDS from before SyncReq synced every op before replying: nothing to do.
  if (resp.status().code() == EPROTO) return Status::Ok();
  return st;
}

Result<MdsClient::WatchBatch> MdsClient::Watch(uint64_t ack_seq, std::chrono::milliseconds wait,
                                               bool leaving) {
  proto::MdsRequest req;
  proto::MdsResponse resp;
  req.mutable_watch()->set_ack_seq(ack_seq);
  req.mutable_watch()->set_leaving(leaving);
  req.mutable_watch()->set_wait_ms(static_cast<uint32_t>(wait.count()));
  // Short: a poll in flight delays the client's shutdown (LeaseWatch::Stop) by this much.
  SFS_RETURN_IF_ERROR(CallRaw(nullptr, &req, &resp, wait + std::chrono::seconds(1)));
  WatchBatch b;
  b.seq = resp.watch().seq();
  for (const proto::Invalidation& i : resp.watch().items()) {
    b.items.push_back(Invalidation{i.ino(), i.parent(), i.name(), i.lock_recall()});
  }
  return b;
}

Status MdsClient::Ping(std::chrono::milliseconds timeout) {
  proto::MdsRequest req;
  proto::MdsResponse resp;
  req.mutable_ping();
  return CallRaw(nullptr, &req, &resp, timeout);
}

Result<Attr> MdsClient::Lookup(const Cred& c, uint64_t parent, std::string_view name,
                               uint32_t* absent_lease_ms) {
  proto::MdsRequest req;
  req.mutable_lookup()->set_parent(parent);
  req.mutable_lookup()->set_name(std::string(name));
  if (absent_lease_ms == nullptr) return CallForAttr(&c, &req);
  *absent_lease_ms = 0;
  proto::MdsResponse resp;
  uint64_t invals = invalidations_.load();
  Status st = Call(&c, &req, &resp);
  if (st.code() == ENOENT && invalidations_.load() == invals) {
    *absent_lease_ms = resp.parent_lease_ms();
  }
  SFS_RETURN_IF_ERROR(st);
  return AttrOf(resp, invals);
}

Result<Attr> MdsClient::GetAttr(const Cred& c, uint64_t ino) {
  proto::MdsRequest req;
  req.mutable_getattr()->set_ino(ino);
  return CallForAttr(&c, &req);
}

Result<Attr> MdsClient::SetAttr(const Cred& c, uint64_t ino, const SetAttrArgs& args) {
  proto::MdsRequest req;
  req.mutable_setattr()->set_ino(ino);
  ToProto(args, req.mutable_setattr());
  return CallForAttr(&c, &req);
}

Result<OpenResult> MdsClient::Create(const Cred& c, uint64_t parent, std::string_view name,
                                     uint32_t mode, int flags, const LayoutSpec* layout) {
  proto::MdsRequest req;
  proto::CreateReq* cr = req.mutable_create();
  cr->set_parent(parent);
  cr->set_name(std::string(name));
  cr->set_mode(mode);
  cr->set_excl((flags & O_EXCL) != 0);
  cr->set_open_flags(static_cast<uint32_t>(flags));
  if (layout != nullptr) ToProto(*layout, cr->mutable_layout());
  return CallForOpen(&c, &req);
}

Result<OpenResult> MdsClient::Open(const Cred& c, uint64_t ino, int flags) {
  proto::MdsRequest req;
  req.mutable_open()->set_ino(ino);
  req.mutable_open()->set_open_flags(static_cast<uint32_t>(flags));
  return CallForOpen(&c, &req);
}

Result<OpenResult> MdsClient::OpenPath(const Cred& c, uint64_t parent,
                                       const std::vector<std::string_view>& names, int flags) {
  proto::MdsRequest req;
  proto::OpenPathReq* o = req.mutable_open_path();
  o->set_parent(parent);
  for (std::string_view n : names) o->add_names(std::string(n));
  o->set_open_flags(static_cast<uint32_t>(flags));
  return CallForOpen(&c, &req);
}

Status MdsClient::Close(const Cred& c, uint64_t ino, uint64_t open_id, const SizeReport& r) {
  proto::MdsRequest req;
  proto::CloseReq* cr = req.mutable_close();
  cr->set_ino(ino);
  cr->set_open_id(open_id);
  cr->set_has_size(r.has_size);
  cr->set_size_hint(r.size);
  cr->set_mtime_ns(r.mtime_ns);
  cr->set_has_blocks(r.has_blocks);
  cr->set_blocks(r.blocks);
  proto::MdsResponse resp;
  return Call(&c, &req, &resp);
}

Result<LockSpec> MdsClient::Lock(const LockArgs& a, std::chrono::milliseconds wait,
                                 std::optional<uint64_t>* size_at_grant) {
  proto::MdsRequest req;
  proto::LockReq* l = req.mutable_lock();
  l->set_ino(a.ino);
  l->set_owner(a.owner);
  l->set_pid(a.lock.pid);
  l->set_type(static_cast<uint32_t>(a.lock.type));
  l->set_start(a.lock.start);
  l->set_end(a.lock.end);
  l->set_flock(a.flock);
  l->set_wait(a.wait);
  l->set_wait_ms(static_cast<uint32_t>(wait.count()));
  l->set_reclaim(a.reclaim);
  l->set_test(a.test);
  l->set_cancel(a.cancel);
  l->set_ec_rows(a.ec_rows);
  l->set_cache(a.cache);
  proto::MdsResponse resp;
  // A wait is held by the MDS: the deadline covers it, and the channel lets
  // other callers read replies meanwhile.
  Status st = a.wait ? CallRaw(nullptr, &req, &resp, wait + timeout_, /*retry=*/true)
                     : Call(nullptr, &req, &resp);
  if (!st.ok() && resp.status().code() == 0 && IsTransportError(st.code())) {
    st = Status(EIO, "MDS " + address() + ": " + st.ToString());
  }
  SFS_RETURN_IF_ERROR(st);
  LockSpec out;
  out.type = static_cast<int>(resp.lock().type());
  out.start = resp.lock().start();
  out.end = resp.lock().end();
  out.pid = resp.lock().pid();
  out.copy_gen = resp.lock().copy_gen();
  out.cached = resp.lock().cached();
  if (size_at_grant != nullptr && resp.lock().has_size()) *size_at_grant = resp.lock().size();
  return out;
}

Result<uint64_t> MdsClient::Append(const Cred& c, uint64_t ino, uint64_t len,
                                   uint64_t min_offset, int64_t mtime_ns, bool want_token,
                                   uint32_t* token_ms) {
  proto::MdsRequest req;
  proto::AppendReq* a = req.mutable_append();
  a->set_ino(ino);
  a->set_len(len);
  a->set_min_offset(min_offset);
  a->set_mtime_ns(mtime_ns);
  a->set_want_token(want_token);
  proto::MdsResponse resp;
  uint64_t invals = invalidations_.load();
  SFS_RETURN_IF_ERROR(Call(&c, &req, &resp));
  SFS_ASSIGN_OR_RETURN(Attr attr, AttrOf(resp, invals));
  if (attr.size < len) return Status(EIO, "MDS append reply below the appended length");
  // AttrOf dropped the lease if an invalidation began meanwhile: then no token.
  if (token_ms != nullptr) *token_ms = attr.lease_ms > 0 ? resp.append_token_ms() : 0;
  return attr.size - len;
}

Status MdsClient::SetSize(const Cred& c, uint64_t ino, const SizeReport& r) {
  proto::MdsRequest req;
  proto::SetSizeReq* sr = req.mutable_set_size();
  sr->set_ino(ino);
  sr->set_size(r.size);
  sr->set_mtime_ns(r.mtime_ns);
  sr->set_has_blocks(r.has_blocks);
  sr->set_blocks(r.blocks);
  proto::MdsResponse resp;
  return Call(&c, &req, &resp);
}

Result<Attr> MdsClient::Mknod(const Cred& c, uint64_t parent, std::string_view name,
                              uint32_t mode, uint64_t rdev) {
  proto::MdsRequest req;
  proto::MknodReq* m = req.mutable_mknod();
  m->set_parent(parent);
  m->set_name(std::string(name));
  m->set_mode(mode);
  m->set_rdev(rdev);
  return CallForAttr(&c, &req);
}

Result<Attr> MdsClient::Mkdir(const Cred& c, uint64_t parent, std::string_view name,
                              uint32_t mode) {
  proto::MdsRequest req;
  req.mutable_mkdir()->set_parent(parent);
  req.mutable_mkdir()->set_name(std::string(name));
  req.mutable_mkdir()->set_mode(mode);
  return CallForAttr(&c, &req);
}

Status MdsClient::Unlink(const Cred& c, uint64_t parent, std::string_view name,
                         Attr* dir_attr) {
  proto::MdsRequest req;
  req.mutable_unlink()->set_parent(parent);
  req.mutable_unlink()->set_name(std::string(name));
  return CallForDir(c, &req, dir_attr);
}

Status MdsClient::Rmdir(const Cred& c, uint64_t parent, std::string_view name, Attr* dir_attr) {
  proto::MdsRequest req;
  req.mutable_rmdir()->set_parent(parent);
  req.mutable_rmdir()->set_name(std::string(name));
  return CallForDir(c, &req, dir_attr);
}

Status MdsClient::Rename(const Cred& c, uint64_t parent, std::string_view name,
                         uint64_t new_parent, std::string_view new_name, uint32_t flags,
                         Attr* dir_attr) {
  proto::MdsRequest req;
  proto::RenameReq* r = req.mutable_rename();
  r->set_parent(parent);
  r->set_name(std::string(name));
  r->set_new_parent(new_parent);
  r->set_new_name(std::string(new_name));
  r->set_flags(flags);
  return CallForDir(c, &req, dir_attr);
}

Result<Attr> MdsClient::Link(const Cred& c, uint64_t ino, uint64_t new_parent,
                             std::string_view new_name) {
  proto::MdsRequest req;
  req.mutable_link()->set_ino(ino);
  req.mutable_link()->set_new_parent(new_parent);
  req.mutable_link()->set_new_name(std::string(new_name));
  return CallForAttr(&c, &req);
}

Result<Attr> MdsClient::Symlink(const Cred& c, uint64_t parent, std::string_view name,
                                std::string_view target) {
  proto::MdsRequest req;
  req.mutable_symlink()->set_parent(parent);
  req.mutable_symlink()->set_name(std::string(name));
  req.mutable_symlink()->set_target(std::string(target));
  return CallForAttr(&c, &req);
}

Result<std::string> MdsClient::Readlink(const Cred& c, uint64_t ino) {
  proto::MdsRequest req;
  req.mutable_readlink()->set_ino(ino);
  proto::MdsResponse resp;
  SFS_RETURN_IF_ERROR(Call(&c, &req, &resp));
  return std::string(resp.readlink().target());
}

Result<DirPage> MdsClient::Readdir(const Cred& c, uint64_t ino, std::string_view after,
                                   uint32_t max_entries, bool with_attrs) {
  proto::MdsRequest req;
  proto::ReaddirReq* r = req.mutable_readdir();
  r->set_ino(ino);
  r->set_after(std::string(after));
  r->set_max_entries(max_entries);
  r->set_with_attrs(with_attrs);
  proto::MdsResponse resp;
  uint64_t invals = invalidations_.load();
  SFS_RETURN_IF_ERROR(Call(&c, &req, &resp));
  DirPage page;
  page.eof = resp.readdir().eof();
  const bool leased = invalidations_.load() == invals;
  if (leased) page.dir_lease_ms = resp.parent_lease_ms();
  page.entries.reserve(resp.readdir().entries_size());
  for (const proto::DirEntry& e : resp.readdir().entries()) {
    page.entries.push_back(FromProto(e, with_attrs));
    if (leased && page.entries.back().attr.has_value()) {
      page.entries.back().attr->lease_ms = e.lease_ms();
      ExtendKeptOpens(*page.entries.back().attr);
    }
  }
  return page;
}

Result<FsStat> MdsClient::Statfs() {
  proto::MdsRequest req;
  req.mutable_statfs();
  proto::MdsResponse resp;
  SFS_RETURN_IF_ERROR(Call(nullptr, &req, &resp));
  const proto::StatfsResp& s = resp.statfs();
  FsStat f;
  f.total_bytes = s.total_bytes();
  f.free_bytes = s.free_bytes();
  f.avail_bytes = s.avail_bytes();
  f.total_inodes = s.total_inodes();
  f.free_inodes = s.free_inodes();
  if (s.bsize() != 0) f.bsize = s.bsize();
  f.degraded_files = s.degraded_files();
  f.fs_id = s.fs_id();
  return f;
}

Result<std::string> MdsClient::GetXattr(const Cred& c, uint64_t ino, std::string_view name) {
  proto::MdsRequest req;
  req.mutable_getxattr()->set_ino(ino);
  req.mutable_getxattr()->set_name(std::string(name));
  proto::MdsResponse resp;
  SFS_RETURN_IF_ERROR(Call(&c, &req, &resp));
  return std::string(resp.getxattr().value());
}

Status MdsClient::SetXattr(const Cred& c, uint64_t ino, std::string_view name,
                           std::string_view value, int flags) {
  proto::MdsRequest req;
  proto::SetXattrReq* x = req.mutable_setxattr();
  x->set_ino(ino);
  x->set_name(std::string(name));
  x->set_value(std::string(value));
  x->set_flags(static_cast<uint32_t>(flags));
  proto::MdsResponse resp;
  return Call(&c, &req, &resp);
}

Result<std::vector<std::string>> MdsClient::ListXattr(const Cred& c, uint64_t ino) {
  proto::MdsRequest req;
  req.mutable_listxattr()->set_ino(ino);
  proto::MdsResponse resp;
  SFS_RETURN_IF_ERROR(Call(&c, &req, &resp));
  const auto& names = resp.listxattr().names();
  return std::vector<std::string>(names.begin(), names.end());
}

Status MdsClient::RemoveXattr(const Cred& c, uint64_t ino, std::string_view name) {
  proto::MdsRequest req;
  req.mutable_removexattr()->set_ino(ino);
  req.mutable_removexattr()->set_name(std::string(name));
  proto::MdsResponse resp;
  return Call(&c, &req, &resp);
}

Result<LayoutSpec> MdsClient::GetLayout(const Cred& c, uint64_t ino) {
  proto::MdsRequest req;
  req.mutable_get_layout()->set_ino(ino);
  proto::MdsResponse resp;
  SFS_RETURN_IF_ERROR(Call(&c, &req, &resp));
  LayoutSpec l = FromProto(resp.get_layout().layout(), resp.get_layout().inherited());
  l.ino = ino;
  return l;
}

Result<LayoutSpec> MdsClient::MirrorState(const Cred& c, uint64_t ino,
                                          std::span<const StripeObject> objects, bool stale,
                                          const Attr* idle) {
  proto::MdsRequest req;
  proto::MirrorStateReq* m = req.mutable_mirror_state();
  m->set_ino(ino);
  if (idle != nullptr) {
    m->set_if_idle(true);
    m->set_size(idle->size);
    m->set_mtime_ns(idle->mtime_ns);
  }
  m->set_state(stale ? proto::OBJECT_STALE : proto::OBJECT_OK);
  for (const StripeObject& o : objects) {
    proto::StripeObject* po = m->add_objects();
    po->set_ost(o.ost);
    po->set_oid(o.oid);
  }
  proto::MdsResponse resp;
  SFS_RETURN_IF_ERROR(Call(&c, &req, &resp));
  LayoutSpec l = FromProto(resp.get_layout().layout(), false);
  l.ino = ino;
  return l;
}

Status MdsClient::SetLayout(const Cred& c, uint64_t ino, const LayoutSpec& spec, bool clear) {
  proto::MdsRequest req;
  req.mutable_set_layout()->set_ino(ino);
  req.mutable_set_layout()->set_clear(clear);
  if (!clear) ToProto(spec, req.mutable_set_layout()->mutable_layout());
  proto::MdsResponse resp;
  return Call(&c, &req, &resp);
}

Result<std::vector<OstStatus>> MdsClient::GetOstMap(std::string* mds_metrics) {
  proto::MdsRequest req;
  req.mutable_get_ost_map();
  proto::MdsResponse resp;
  SFS_RETURN_IF_ERROR(Call(nullptr, &req, &resp));
  std::vector<OstStatus> out;
  out.reserve(resp.get_ost_map().osts_size());
  for (const proto::OstInfo& o : resp.get_ost_map().osts()) out.push_back(FromProto(o));
  if (mds_metrics != nullptr) *mds_metrics = resp.get_ost_map().mds_metrics_address();
  return out;
}

Result<std::vector<PoolInfo>> MdsClient::Pool(const Cred* c, PoolOp op, std::string_view name,
                                              const std::vector<uint32_t>& osts) {
  static constexpr proto::PoolOp kOps[] = {proto::POOL_LIST, proto::POOL_CREATE, proto::POOL_ADD,
                                           proto::POOL_REMOVE, proto::POOL_DESTROY};
  proto::MdsRequest req;
  proto::PoolReq* p = req.mutable_pool();
  p->set_op(kOps[static_cast<int>(op)]);
  p->set_name(std::string(name));
  for (uint32_t o : osts) p->add_osts(o);
  proto::MdsResponse resp;
  SFS_RETURN_IF_ERROR(Call(c, &req, &resp));
  std::vector<PoolInfo> out;
  for (const proto::PoolInfo& info : resp.pool().pools()) {
    out.push_back({info.name(), {info.osts().begin(), info.osts().end()}});
  }
  return out;
}

Result<std::vector<QosRuleInfo>> MdsClient::Qos(const Cred* c, int op, const QosRuleInfo& rule) {
  static constexpr proto::QosOp kOps[] = {proto::QOS_LIST, proto::QOS_SET, proto::QOS_REMOVE};
  proto::MdsRequest req;
  proto::QosReq* q = req.mutable_qos();
  q->set_op(kOps[op]);
  q->set_name(rule.name);
  if (op == 1) {
    proto::QosRule* r = q->mutable_rule();
    r->set_read_mibps(rule.read_mibps);
    r->set_write_mibps(rule.write_mibps);
    r->set_iops(rule.iops);
    r->set_reserve_mibps(rule.reserve_mibps);
    r->set_reserve_iops(rule.reserve_iops);
    r->set_weight(rule.weight);
  }
  proto::MdsResponse resp;
  SFS_RETURN_IF_ERROR(Call(c, &req, &resp));
  std::vector<QosRuleInfo> out;
  for (const proto::QosEntry& e : resp.qos().rules()) {
    const proto::QosRule& r = e.rule();
    out.push_back({e.name(), r.read_mibps(), r.write_mibps(), r.iops(), r.reserve_mibps(),
                   r.reserve_iops(), r.weight() > 0 ? r.weight() : 1.0});
  }
  return out;
}

Result<MigratePlan> MdsClient::MigrateBegin(const Cred& c, uint64_t ino, const LayoutSpec& spec) {
  proto::MdsRequest req;
  req.mutable_migrate_begin()->set_ino(ino);
  ToProto(spec, req.mutable_migrate_begin()->mutable_layout());
  proto::MdsResponse resp;
  SFS_RETURN_IF_ERROR(Call(&c, &req, &resp));
  if (!resp.has_migrate_begin()) return Status(EIO, "MDS reply without migrate plan");
  const proto::MigrateBeginResp& m = resp.migrate_begin();
  return MigratePlan{FromProto(m.attr()), FromProto(m.old_layout(), false),
                     FromProto(m.new_layout(), false)};
}

Status MdsClient::MigrateCommit(const Cred& c, uint64_t ino, const LayoutSpec& new_layout,
                                bool abort, std::optional<uint64_t> blocks) {
  proto::MdsRequest req;
  proto::MigrateCommitReq* m = req.mutable_migrate_commit();
  m->set_ino(ino);
  ToProto(new_layout, m->mutable_new_layout());
  m->set_abort(abort);
  m->set_has_blocks(blocks.has_value());
  m->set_blocks(blocks.value_or(0));
  proto::MdsResponse resp;
  return Call(&c, &req, &resp);
}

}  // namespace sfs::client
