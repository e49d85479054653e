// Background resync of stale mirror copies; see mirror_resyncer.h.
#include "mds/service/mirror_resyncer.h"

#include <sys/stat.h>

#include <algorithm>
#include <future>
#include <vector>

#include "common/ec/ec_geometry.h"
#include "common/ec/rs_codec.h"
#include "common/log.h"
#include "mds.pb.h"
#include "oss.pb.h"

namespace sfs::mds {
namespace {

constexpr uint64_t kChunk = 16 << 20;  // bytes per copy call (the OSS takes 64 MiB)
constexpr std::chrono::milliseconds kTimeout{30000};
// The job id of resync traffic: the OSS QoS class "resync" (oss/service/qos.cc).
constexpr const char* kResyncJobId = "sfs:resync";
// Files rebuilt at once: each keeps K reads (EC) or one copy call in flight,
// so a few files keep every surviving OSS busy.
constexpr int kFileWorkers = 4;

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

MirrorResyncer::MirrorResyncer(Namespace* ns, OstRegistry* osts, rpc::IoContext* io,
                               std::chrono::milliseconds interval,
                               auth::KeyRotator* keys, LockTable* locks)
    : ns_(ns), osts_(osts), io_(io), interval_(interval), keys_(keys), locks_(locks) {
  thread_ = std::thread([this] { Loop(); });
}

MirrorResyncer::~MirrorResyncer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();  // the loop and any worker waiting in Throttle
  thread_.join();
}

void MirrorResyncer::Kick() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    kicked_ = true;
  }
  cv_.notify_all();
}

void MirrorResyncer::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait_for(lock, interval_, [&] { return stop_.load() || kicked_; });
    if (stop_) return;
    kicked_ = false;
    lock.unlock();
    RunOnce();
    lock.lock();
  }
}

void MirrorResyncer::RunOnce() {
  const std::vector<uint64_t> wanted = ns_->ResyncWanted();
  if (wanted.empty()) {
    active_since_ms_.store(0, std::memory_order_relaxed);
    EndPass(/*idle=*/true);
    return;
  }
  if (active_since_ms_.load(std::memory_order_relaxed) == 0) {
    active_since_ms_.store(SteadyMs(), std::memory_order_relaxed);
    active_bytes_.store(0, std::memory_order_relaxed);
  }
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < wanted.size();) {
      if (stop_.load()) return;  // the MDS is stopping: the next start resyncs
      if (ResyncFile(wanted[i])) ns_->ResyncDone(wanted[i]);
    }
  };
  std::vector<std::thread> workers;
  const size_t n = std::min<size_t>(kFileWorkers, wanted.size());
  for (size_t w = 1; w < n; ++w) workers.emplace_back(work);
  work();
  for (std::thread& t : workers) t.join();
  EndPass(/*idle=*/false);
}

void MirrorResyncer::Throttle(uint64_t bytes) {
  bytes_copied_.fetch_add(bytes, std::memory_order_relaxed);
  active_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  active_last_ms_.store(SteadyMs(), std::memory_order_relaxed);
  const double mibps = rate_mibps_.load(std::memory_order_relaxed);
  if (mibps <= 0) return;
  std::chrono::steady_clock::time_point until;
  {
    // A shared schedule: every worker's bytes push the next free slot on.
    std::lock_guard<std::mutex> lock(rate_mu_);
    const auto now = std::chrono::steady_clock::now();
    if (rate_next_ < now) rate_next_ = now;
    rate_next_ += std::chrono::microseconds(
        static_cast<int64_t>(static_cast<double>(bytes) / (mibps * 1048576.0) * 1e6));
    until = rate_next_;
  }
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_until(lock, until, [&] { return stop_.load(); });
}

void MirrorResyncer::FillStatus(proto::RebuildStatusResp* out) const {
  for (uint32_t i : osts_->LostOsts()) out->add_lost_osts(i);
  const std::vector<uint64_t> wanted = ns_->ResyncWanted();
  out->set_files_pending(wanted.size());
  uint64_t objects = 0, bytes = 0;
  for (uint64_t ino : wanted) {
    proto::GetLayoutResp got;
    auto attr = ns_->GetAttr(ino);
    if (!attr.ok() || !ns_->GetLayout(ino, &got).ok()) continue;
    const proto::Layout& l = got.layout();
    for (int i = 0; i < l.objects_size(); ++i) {
      if (l.objects(i).state() == proto::OBJECT_OK) continue;
      ++objects;
      if (l.ec_data() != 0) {
        ec::Geometry g{l.stripe_size(), l.ec_data(), l.ec_parity()};
        bytes += ec::ObjectSize(g, static_cast<uint32_t>(i), attr->size());
      } else if (l.stripe_count() > 0) {
        // RAID-0 share of the file, an estimate (holes count).
        bytes += attr->size() / static_cast<uint64_t>(l.stripe_count());
      }
    }
  }
  out->set_objects_pending(objects);
  out->set_bytes_pending(bytes);
  out->set_objects_done(copies_resynced());
  out->set_bytes_done(bytes_copied());
  out->set_failures(copy_failures());
  FillPauses(out);
  const int64_t since = active_since_ms_.load(std::memory_order_relaxed);
  // Over the time bytes were moving, not the idle time after the last of them.
  const int64_t ms = active_last_ms_.load(std::memory_order_relaxed) - since;
  if (since != 0 && ms > 0) {
    out->set_bytes_per_s(static_cast<double>(active_bytes_.load(std::memory_order_relaxed)) *
                         1000.0 / static_cast<double>(ms));
  }
}

rpc::Channel* MirrorResyncer::ChannelTo(const std::string& address) {
  std::lock_guard<std::mutex> lock(channels_mu_);
  auto& c = channels_[address];
  if (!c) c = io_->MakeTcpChannel(address, kFileWorkers);
  return c.get();
}

Status MirrorResyncer::CallOss(const std::string& address, const proto::OssRequest& req,
                               proto::OssResponse* reply) {
  rpc::Channel* ch = ChannelTo(address);
  rpc::Response resp;
  rpc::CallOptions opts;
  opts.timeout = kTimeout;
  // An OSS that is gone fails the call at once (the next pass tries again),
  // so neither a pass nor the MDS's stop waits out the timeout on it.
  opts.fail_fast = true;
  SFS_RETURN_IF_ERROR(ch->Call(rpc::kServiceOss, Payload(req), {}, {}, &resp, opts));
  if (!reply->ParseFromString(resp.payload)) return Status::Errno(EPROTO, "bad OSS reply");
  return Status(reply->status().code(), reply->status().message());
}

std::string MirrorResyncer::Payload(const proto::OssRequest& req) const {
  std::string payload = req.SerializeAsString();
  {
    // Appended as field 6 (job_id): the OSSes' QoS puts resync traffic in a
    // class of its own, "resync" (docs/qos.md).
    proto::OssRequest job;
    job.set_job_id(kResyncJobId);
    payload += job.SerializeAsString();
  }
  if (keys_ != nullptr) {
    // Appended as field 7 (capabilities): a serialized message may be extended so.
    proto::OssRequest tokened;
    tokened.add_capabilities(auth::ServerToken(keys_->Current(auth::NowUnixMs())));
    payload += tokened.SerializeAsString();
  }
  return payload;
}

Status MirrorResyncer::CopyObject(const proto::StripeObject& src, const std::string& src_addr,
                                  const proto::StripeObject& dst, const std::string& dst_addr) {
  proto::OssRequest req;
  proto::OssResponse reply;
  req.set_ost(src.ost());
  req.set_oid(src.oid());
  req.mutable_stat();
  SFS_RETURN_IF_ERROR(CallOss(src_addr, req, &reply));
  const uint64_t size = reply.stat().size();
  req.Clear();
  req.set_ost(dst.ost());
  req.set_oid(dst.oid());
  req.mutable_truncate()->set_size(size);
  SFS_RETURN_IF_ERROR(CallOss(dst_addr, req, &reply));
  for (uint64_t off = 0; off < size; off += kChunk) {
    req.Clear();
    req.set_ost(dst.ost());
    req.set_oid(dst.oid());
    proto::ObjCopyReq* copy = req.mutable_copy();
    copy->set_src_ost(src.ost());
    copy->set_src_oid(src.oid());
    copy->set_src_offset(off);
    copy->set_offset(off);
    copy->set_length(std::min(kChunk, size - off));
    copy->set_src_address(src_addr);
    SFS_RETURN_IF_ERROR(CallOss(dst_addr, req, &reply));
    Throttle(copy->length());
    if (locks_ != nullptr) locks_->Touch(kLockClient);  // a held range lock is not expired
  }
  req.Clear();
  req.set_ost(dst.ost());
  req.set_oid(dst.oid());
  req.mutable_sync();
  return CallOss(dst_addr, req, &reply);
}

Status MirrorResyncer::RebuildEcObject(const proto::Layout& l, uint64_t size, int target,
                                       uint32_t dst_ost, uint64_t dst_oid,
                                       const std::string& dst_addr) {
  const ec::Geometry g{l.stripe_size(), l.ec_data(), l.ec_parity()};
  SFS_RETURN_IF_ERROR(ec::Validate(g));
  SFS_ASSIGN_OR_RETURN(auto codec, ec::RsCodec::Create(static_cast<int>(g.k), static_cast<int>(g.m)));
  // K good chunk objects whose OSS is up: every row has its K chunks there.
  struct Source {
    int index;
    const proto::StripeObject* obj;
    std::string addr;
    std::vector<uint8_t> buf;
  };
  std::vector<Source> src;
  for (int i = 0; i < l.objects_size() && src.size() < g.k; ++i) {
    if (i == target || l.objects(i).state() != proto::OBJECT_OK) continue;
    auto addr = osts_->UpAddress(l.objects(i).ost());
    if (addr) src.push_back({i, &l.objects(i), *addr, {}});
  }
  if (src.size() < g.k) {
    return Status::Errno(EAGAIN, "only " + std::to_string(src.size()) + " of the " +
                                     std::to_string(g.k) + " chunk objects needed are readable");
  }
  proto::OssRequest req;
  proto::OssResponse reply;
  req.set_ost(dst_ost);
  req.set_oid(dst_oid);
  // Cut to nothing, then to its size: rows rebuilt as zeros are left as holes.
  req.mutable_truncate()->set_size(0);
  SFS_RETURN_IF_ERROR(CallOss(dst_addr, req, &reply));
  req.mutable_truncate()->set_size(ec::ObjectSize(g, static_cast<uint32_t>(target), size));
  SFS_RETURN_IF_ERROR(CallOss(dst_addr, req, &reply));
  const uint64_t rows = ec::RowCount(g, size);
  const uint64_t batch = std::max<uint64_t>(1, kChunk / g.chunk_size);
  std::vector<uint8_t> out;
  for (uint64_t r0 = 0; r0 < rows; r0 += batch) {
    if (stop_.load()) return Status::Errno(ECANCELED, "MDS stopping");
    const uint64_t r1 = std::min(rows, r0 + batch);
    const uint64_t len = (r1 - r0) * g.chunk_size;
    // The K reads of this batch in parallel.
    std::vector<std::shared_ptr<rpc::PendingCall>> calls;
    rpc::CallOptions opts;
    opts.timeout = kTimeout;
    opts.fail_fast = true;
    for (Source& s : src) {
      s.buf.assign(len, 0);  // bytes past an object's end read as zeros
      proto::OssRequest rd;
      rd.set_ost(s.obj->ost());
      rd.set_oid(s.obj->oid());
      rd.mutable_read()->set_offset(r0 * g.chunk_size);
      rd.mutable_read()->set_length(len);
      calls.push_back(ChannelTo(s.addr)->Start(rpc::kServiceOss, Payload(rd), {},
                                               std::span<uint8_t>(s.buf), opts));
    }
    Status failed;
    for (size_t i = 0; i < src.size(); ++i) {
      rpc::Response resp;
      Status st = ChannelTo(src[i].addr)->Wait(calls[i], &resp);
      proto::OssResponse rr;
      if (st.ok() && !rr.ParseFromString(resp.payload)) st = Status::Errno(EPROTO, "bad OSS reply");
      if (st.ok()) st = Status(rr.status().code(), rr.status().message());
      if (!st.ok() && failed.ok()) {
        failed = Status::Errno(st.code(), "reading OST " + std::to_string(src[i].obj->ost()) +
                                              " object " + std::to_string(src[i].obj->oid()) +
                                              ": " + st.message());
      }
    }
    SFS_RETURN_IF_ERROR(failed);
    out.assign(len, 0);
    uint64_t wlen = 0;
    for (uint64_t r = r0; r < r1; ++r) {
      const uint64_t at = (r - r0) * g.chunk_size;
      const uint64_t lr = ec::ChunkLength(g, r, 0, size);  // the row's longest chunk
      std::vector<std::span<uint8_t>> chunks(g.width());
      for (Source& s : src) {
        chunks[ec::ChunkOf(g, r, static_cast<uint32_t>(s.index))] =
            std::span<uint8_t>(s.buf.data() + at, lr);
      }
      const int lost = static_cast<int>(ec::ChunkOf(g, r, static_cast<uint32_t>(target)));
      chunks[lost] = std::span<uint8_t>(out.data() + at, lr);
      SFS_RETURN_IF_ERROR(codec->Reconstruct(chunks, std::span<const int>(&lost, 1)));
      wlen = at + ec::ChunkLength(g, r, static_cast<uint32_t>(lost), size);
    }
    if (std::any_of(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(wlen),
                    [](uint8_t b) { return b != 0; })) {
      proto::OssRequest wr;
      wr.set_ost(dst_ost);
      wr.set_oid(dst_oid);
      wr.mutable_write()->set_offset(r0 * g.chunk_size);
      rpc::Response resp;
      rpc::CallOptions wopts;
      wopts.timeout = kTimeout;
      wopts.fail_fast = true;
      SFS_RETURN_IF_ERROR(ChannelTo(dst_addr)->Call(
          rpc::kServiceOss, Payload(wr), std::span<const uint8_t>(out.data(), wlen), {}, &resp,
          wopts));
      if (!reply.ParseFromString(resp.payload)) return Status::Errno(EPROTO, "bad OSS reply");
      SFS_RETURN_IF_ERROR(Status(reply.status().code(), reply.status().message()));
    }
    Throttle(wlen);
  }
  req.Clear();
  req.set_ost(dst_ost);
  req.set_oid(dst_oid);
  req.mutable_sync();
  return CallOss(dst_addr, req, &reply);
}

bool MirrorResyncer::HoldWholeFile(uint64_t ino, bool lock) {
  LockRequest q;
  q.ino = ino | kEcRowSpace;
  q.owner = {kLockClient, ino};
  q.range = {0, lock::kLockEof, lock ? lock::kWrite : lock::kUnlock};
  q.wait = lock;
  q.wait_ms = 10000;
  locks_->Touch(kLockClient);
  std::promise<Status> granted;
  std::future<Status> f = granted.get_future();
  locks_->Set(q, [&granted](Status st) { granted.set_value(st); });
  Status st = f.get();
  if (!st.ok() && lock) LOG_DEBUG("resync of inode " << ino << ": no range lock: " << st.ToString());
  return st.ok();
}

bool MirrorResyncer::ResyncFile(uint64_t ino) {
  auto attr = ns_->GetAttr(ino);
  if (!attr.ok()) return true;  // gone: nothing to resync
  if (!S_ISREG(attr->mode())) return true;
  // A writer: only with the range lock, only a mirrored file's copies in
  // place (EC rows and a rebuild onto a new OST wait for the close).
  const bool writers = ns_->WriteOpenCount(ino) > 0;
  if (writers && locks_ == nullptr) return false;
  proto::GetLayoutResp got;
  if (!ns_->GetLayout(ino, &got).ok()) return true;
  if (writers) {
    const proto::Layout& w = got.layout();
    if (w.ec_data() != 0) return false;
    for (const proto::StripeObject& o : w.objects()) {
      if (o.state() == proto::OBJECT_LOST) return false;
    }
    // Its writers wait from here: every write acknowledged before is on the
    // good copies, none lands while the stale ones are copied, and each
    // learns the copies are ok from its next grant (LockResp.copy_gen).
    if (!HoldWholeFile(ino, true)) return false;
    bool all = ResyncHeld(ino);
    (void)HoldWholeFile(ino, false);
    return all;
  }
  // Closed, but a client may keep a cached range lock (lock_table.h; on a
  // mirrored or an EC file): taking the lock recalls it, so the client
  // learns the new copy or chunk states from its next grant before it
  // writes again.
  if (locks_ != nullptr) {
    if (!HoldWholeFile(ino, true)) return false;
    bool all = ResyncHeld(ino);
    (void)HoldWholeFile(ino, false);
    return all;
  }
  return ResyncHeld(ino);
}

bool MirrorResyncer::ResyncHeld(uint64_t ino) {
  auto attr = ns_->GetAttr(ino);
  if (!attr.ok()) return true;
  const bool writers = ns_->WriteOpenCount(ino) > 0;
  proto::GetLayoutResp got;
  if (!ns_->GetLayout(ino, &got).ok()) return true;
  const proto::Layout& l = got.layout();
  if ((l.ec_data() == 0 && l.mirror_count() < 2) || l.stripe_count() <= 0) return true;
  proto::MirrorStateReq done;
  done.set_ino(ino);
  done.set_state(proto::OBJECT_OK);
  // Under the range lock no write can land meanwhile; else the file must
  // stay closed and unchanged until the mark.
  done.set_if_idle(!writers);
  done.set_size(attr->size());
  done.set_mtime_ns(attr->mtime_ns());
  int left = 0, replaced = 0;
  for (int i = 0; i < l.objects_size(); ++i) {
    if (l.objects(i).state() == proto::OBJECT_OK) continue;
    ++left;
    if (stop_.load()) break;
    switch (RebuildObject(ino, *attr, l, i)) {
      case Outcome::kSkipped: break;
      case Outcome::kMarkOk: *done.add_objects() = l.objects(i); break;
      case Outcome::kReplaced: ++replaced; break;
      case Outcome::kRetryFile: return false;
    }
  }
  if (done.objects_size() == 0) return left == replaced;
  proto::GetLayoutResp after;
  Status st = ns_->MirrorState(OpCtx{}, done, &after);
  if (!st.ok()) {
    LOG_INFO("resync of inode " << ino << " not recorded: " << st.ToString() << "; trying again");
    return false;
  }
  // Counted as soon as the layout says ok, before the fence lifts' round
  // trips: a status asked after a layout that shows them ok counts them.
  copies_resynced_.fetch_add(done.objects_size(), std::memory_order_relaxed);
  // Their OSSes serve them from now on, not from their next heartbeat.
  std::vector<std::pair<uint32_t, uint64_t>> marked;
  for (const proto::StripeObject& o : done.objects()) marked.emplace_back(o.ost(), o.oid());
  LiftFences(marked);
  LOG_INFO("resynced " << done.objects_size() << " stale object"
                       << (done.objects_size() == 1 ? "" : "s") << " of inode " << ino);
  return done.objects_size() + replaced == left;
}

void MirrorResyncer::LiftFences(const std::vector<std::pair<uint32_t, uint64_t>>& objects) {
  for (const auto& [ost, oid] : objects) {
    auto addr = osts_->UpAddress(ost);
    if (!addr) continue;
    proto::OssRequest lift;
    lift.set_ost(ost);
    lift.mutable_fence_lift()->add_osts(ost);
    lift.mutable_fence_lift()->add_oids(oid);
    proto::OssResponse reply;
    Status ls = CallOss(*addr, lift, &reply);
    if (!ls.ok()) LOG_DEBUG("lifting the fence of OST " << ost << " object " << oid << ": "
                                                        << ls.ToString());
  }
}

// Object i of l (not ok): rebuilt in place (stale, its OSS back) or onto a
// new object on another OST (lost), which is then swapped into the layout.
MirrorResyncer::Outcome MirrorResyncer::RebuildObject(uint64_t ino, const proto::Attr& attr,
                                                      const proto::Layout& l, int i) {
  const proto::StripeObject& dst = l.objects(i);
  const bool ec = l.ec_data() != 0;
  const int stripes = l.stripe_count();
  const bool lost = dst.state() == proto::OBJECT_LOST;
  {
    // Sources first: without a good copy up (or K good chunks up) there is
    // nothing to rebuild from yet; no object id, no attempt, no log line.
    size_t readable = 0;
    for (int j = ec ? 0 : i % stripes; j < l.objects_size(); j += ec ? 1 : stripes) {
      if (j != i && l.objects(j).state() == proto::OBJECT_OK &&
          osts_->UpAddress(l.objects(j).ost())) {
        ++readable;
      }
    }
    if (readable < (ec ? l.ec_data() : 1u)) return Outcome::kSkipped;
  }
  const uint64_t needed = NeededBytes(l, attr.size(), i);
  uint32_t dst_ost = dst.ost();
  uint64_t dst_oid = dst.oid();
  if (lost) {
    std::vector<uint32_t> full;
    auto home = NewHome(l, i, needed, &full);
    if (!home) {
      for (uint32_t ost : full) NotePause(ost, needed, false);
      if (full.empty()) {
        LOG_WARN("rebuild of inode " << ino << " object " << i
                                     << ": no OST up that the file does not use; waiting");
      }
      return Outcome::kSkipped;
    }
    auto oid = ns_->NewObjectId();
    if (!oid.ok()) return Outcome::kSkipped;
    dst_ost = *home;
    dst_oid = *oid;
  } else if (WasFull(dst_ost) && !HasRoom(dst_ost, needed)) {
    // Only after an ENOSPC there: in place, the old bytes' room is reused.
    NotePause(dst_ost, needed, false);
    return Outcome::kSkipped;
  }
  auto dst_addr = osts_->UpAddress(dst_ost);
  if (!dst_addr) return Outcome::kSkipped;  // its OSS is still away
  Status st = Status::Errno(EAGAIN, "no good copy readable");
  if (ec) {
    st = RebuildEcObject(l, attr.size(), i, dst_ost, dst_oid, *dst_addr);
  } else {
    proto::StripeObject to = dst;
    to.set_ost(dst_ost);
    to.set_oid(dst_oid);
    for (int j = i % stripes; j < l.objects_size(); j += stripes) {
      const proto::StripeObject& src = l.objects(j);
      if (src.state() != proto::OBJECT_OK) continue;
      auto src_addr = osts_->UpAddress(src.ost());
      if (!src_addr) continue;
      st = CopyObject(src, *src_addr, to, *dst_addr);
      if (st.ok() || st.code() == ENOSPC || st.code() == EDQUOT) break;
    }
  }
  if (!st.ok()) {
    if (lost) DropOrphan(dst_ost, dst_oid, *dst_addr);  // frees what it took of a full OST
    if (st.code() == ENOSPC || st.code() == EDQUOT) {
      NotePause(dst_ost, needed, true);
      return Outcome::kSkipped;
    }
    copy_failures_.fetch_add(1, std::memory_order_relaxed);
    LOG_WARN((lost ? "rebuild" : "resync") << " of inode " << ino << " object " << i << " (OST "
                                           << dst.ost() << " object " << dst.oid() << ") onto OST "
                                           << dst_ost << ": " << st.ToString());
    return Outcome::kSkipped;
  }
  NoteRoom(dst_ost);
  if (!lost) return Outcome::kMarkOk;
  st = ns_->ReplaceObject(ino, dst.ost(), dst.oid(), dst_ost, dst_oid, attr.size(),
                          attr.mtime_ns());
  if (!st.ok()) {
    LOG_INFO("rebuild of inode " << ino << " not recorded: " << st.ToString()
                                 << "; trying again");
    DropOrphan(dst_ost, dst_oid, *dst_addr);  // unreferenced: if it stays, fsck finds it
    return Outcome::kRetryFile;
  }
  copies_resynced_.fetch_add(1, std::memory_order_relaxed);
  LOG_INFO("rebuilt inode " << ino << " object " << i << " from lost OST " << dst.ost()
                            << " onto OST " << dst_ost << " object " << dst_oid);
  return Outcome::kReplaced;
}

}  // namespace sfs::mds
