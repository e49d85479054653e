// Background resync of stale mirror copies; see mirror_resyncer.h.
#include "mds/service/mirror_resyncer.h"

#include <sys/stat.h>

#include <algorithm>
#include <vector>

#include "common/log.h"
#include "oss.pb.h"

namespace sfs::mds {
namespace {

constexpr uint64_t kChunk = 16 << 20;  // bytes per copy call (the OSS takes 64 MiB)
constexpr std::chrono::milliseconds kTimeout{30000};
// The job id of resync traffic: the OSS QoS class "resync" (oss/service/qos.cc).
constexpr const char* kResyncJobId = "sfs:resync";

}  // namespace

MirrorResyncer::MirrorResyncer(Namespace* ns, OstRegistry* osts, rpc::IoContext* io,
                               std::chrono::milliseconds interval,
                               std::optional<auth::ClusterKey> key)
    : ns_(ns), osts_(osts), io_(io), interval_(interval), key_(std::move(key)) {
  thread_ = std::thread([this] { Loop(); });
}

MirrorResyncer::~MirrorResyncer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

void MirrorResyncer::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, interval_, [&] { return stop_.load(); })) {
    lock.unlock();
    RunOnce();
    lock.lock();
  }
}

void MirrorResyncer::RunOnce() {
  for (uint64_t ino : ns_->ResyncWanted()) {
    if (stop_.load()) return;  // the MDS is stopping: the next start resyncs
    if (ResyncFile(ino)) ns_->ResyncDone(ino);
  }
}

Status MirrorResyncer::CallOss(const std::string& address, const proto::OssRequest& req,
                               proto::OssResponse* reply) {
  rpc::Channel* ch;
  {
    std::lock_guard<std::mutex> lock(channels_mu_);
    auto& c = channels_[address];
    if (!c) c = io_->MakeTcpChannel(address);
    ch = c.get();
  }
  rpc::Response resp;
  rpc::CallOptions opts;
  opts.timeout = kTimeout;
  // An OSS that is gone fails the call at once (the next pass tries again),
  // so neither a pass nor the MDS's stop waits out the timeout on it.
  opts.fail_fast = true;
  std::string payload = req.SerializeAsString();
  {
    // Appended as field 6 (job_id): the OSSes' QoS puts resync traffic in a
    // class of its own, "resync" (docs/qos.md).
    proto::OssRequest job;
    job.set_job_id(kResyncJobId);
    payload += job.SerializeAsString();
  }
  if (key_.has_value()) {
    // Appended as field 7 (capabilities): a serialized message may be extended so.
    proto::OssRequest tokened;
    tokened.add_capabilities(auth::ServerToken(*key_));
    payload += tokened.SerializeAsString();
  }
  SFS_RETURN_IF_ERROR(ch->Call(rpc::kServiceOss, payload, {}, {}, &resp, opts));
  if (!reply->ParseFromString(resp.payload)) return Status::Errno(EPROTO, "bad OSS reply");
  return Status(reply->status().code(), reply->status().message());
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
    bytes_copied_.fetch_add(copy->length(), std::memory_order_relaxed);
  }
  req.Clear();
  req.set_ost(dst.ost());
  req.set_oid(dst.oid());
  req.mutable_sync();
  return CallOss(dst_addr, req, &reply);
}

bool MirrorResyncer::ResyncFile(uint64_t ino) {
  auto attr = ns_->GetAttr(ino);
  if (!attr.ok()) return true;  // gone: nothing to resync
  if (!S_ISREG(attr->mode())) return true;
  if (ns_->WriteOpenCount(ino) > 0) return false;  // a writer: after it closes
  proto::GetLayoutResp got;
  if (!ns_->GetLayout(ino, &got).ok()) return true;
  const proto::Layout& l = got.layout();
  if (l.mirror_count() < 2 || l.stripe_count() <= 0) return true;
  const int stripes = l.stripe_count();
  proto::MirrorStateReq done;
  done.set_ino(ino);
  done.set_state(proto::OBJECT_OK);
  done.set_if_idle(true);
  done.set_size(attr->size());
  done.set_mtime_ns(attr->mtime_ns());
  int left = 0;
  for (int i = 0; i < l.objects_size(); ++i) {
    const proto::StripeObject& dst = l.objects(i);
    if (dst.state() != proto::OBJECT_STALE) continue;
    ++left;
    auto dst_addr = osts_->UpAddress(dst.ost());
    if (!dst_addr) continue;  // its OSS is still away
    for (int j = i % stripes; j < l.objects_size(); j += stripes) {
      const proto::StripeObject& src = l.objects(j);
      if (src.state() != proto::OBJECT_OK) continue;
      auto src_addr = osts_->UpAddress(src.ost());
      if (!src_addr) continue;
      Status st = CopyObject(src, *src_addr, dst, *dst_addr);
      if (st.ok()) {
        *done.add_objects() = dst;
        break;
      }
      copy_failures_.fetch_add(1, std::memory_order_relaxed);
      LOG_WARN("resync of inode " << ino << " copy " << dst.mirror() << " (OST " << dst.ost()
                                  << " object " << dst.oid() << ") from OST " << src.ost()
                                  << ": " << st.ToString());
    }
  }
  if (done.objects_size() == 0) return left == 0;
  proto::GetLayoutResp after;
  Status st = ns_->MirrorState(OpCtx{}, done, &after);
  if (!st.ok()) {
    LOG_INFO("resync of inode " << ino << " not recorded: " << st.ToString() << "; trying again");
    return false;
  }
  copies_resynced_.fetch_add(done.objects_size(), std::memory_order_relaxed);
  LOG_INFO("resynced " << done.objects_size() << " stale cop"
                       << (done.objects_size() == 1 ? "y" : "ies") << " of inode " << ino);
  return done.objects_size() == left;
}

}  // namespace sfs::mds
