// Destroy requests to OSSes over RPC; see oss_destroyer.h.
#include "mds/service/oss_destroyer.h"

#include <algorithm>
#include <map>
#include <utility>

#include "oss.pb.h"

namespace sfs::mds {
namespace {

constexpr std::chrono::milliseconds kTimeout{10000};
// A batch runs its objects one after another on one OSS worker (truncating
// a large object frees its extents): each adds to the deadline.
constexpr std::chrono::milliseconds kPerObject{20};

rpc::CallOptions Options(size_t objects = 1) {
  rpc::CallOptions opts;
  opts.timeout = kTimeout + kPerObject * static_cast<int64_t>(objects);
  return opts;
}

// The reply's status, or why there is none.
Status Outcome(rpc::Channel* ch, const std::shared_ptr<rpc::PendingCall>& call,
               proto::OssResponse* reply) {
  rpc::Response resp;
  Status st = ch->Wait(call, &resp);
  if (st.ok() && !reply->ParseFromString(resp.payload)) st = Status::Errno(EPROTO, "bad reply");
  if (st.ok()) st = Status(reply->status().code(), reply->status().message());
  return st;
}

}  // namespace

struct OssDestroyer::Call {
  rpc::Channel* ch = nullptr;
  std::shared_ptr<rpc::PendingCall> pending;
  std::vector<size_t> idx;  // the items it carries
};

rpc::Channel* OssDestroyer::ChannelFor(const std::string& address) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& ch = channels_[address];
  if (!ch) ch = io_->MakeTcpChannel(address);
  return ch.get();
}

OssDestroyer::Call OssDestroyer::StartBatch(const std::vector<Item>& items,
                                            std::vector<size_t> idx) {
  proto::OssRequest req;
  req.set_ost(items[idx[0]].ost);
  for (size_t i : idx) req.mutable_destroy_batch()->add_oids(items[i].oid);
  if (keys_ != nullptr) req.add_capabilities(auth::ServerToken(keys_->Current(auth::NowUnixMs())));
  Call c;
  c.ch = ChannelFor(items[idx[0]].address);
  c.pending = c.ch->Start(rpc::kServiceOss, req.SerializeAsString(), {}, {}, Options(idx.size()));
  c.idx = std::move(idx);
  return c;
}

void OssDestroyer::FinishBatch(const std::vector<Item>& items, const Call& c,
                               std::vector<Status>* out) {
  proto::OssResponse reply;
  Status st = Outcome(c.ch, c.pending, &reply);
  if (st.code() == EPROTO && reply.status().code() == EPROTO) {
    // An OSS from before destroy_batch ("no known op"): one call per object.
    DestroyEach(items, c.idx, out);
    return;
  }
  if (st.ok() && reply.destroy_status_size() != static_cast<int>(c.idx.size())) {
    st = Status::Errno(EPROTO, "destroy_batch reply without one status per object");
  }
  for (size_t k = 0; k < c.idx.size(); ++k) {
    const Status& s = st.ok() ? Status(reply.destroy_status(static_cast<int>(k)).code(),
                                       reply.destroy_status(static_cast<int>(k)).message())
                              : st;
    (*out)[c.idx[k]] = s;
  }
}

void OssDestroyer::DestroyEach(const std::vector<Item>& items, const std::vector<size_t>& idx,
                               std::vector<Status>* out) {
  std::vector<std::pair<rpc::Channel*, std::shared_ptr<rpc::PendingCall>>> calls;
  for (size_t i : idx) {
    proto::OssRequest req;
    req.set_ost(items[i].ost);
    req.set_oid(items[i].oid);
    req.mutable_destroy();
    if (keys_ != nullptr) req.add_capabilities(auth::ServerToken(keys_->Current(auth::NowUnixMs())));
    rpc::Channel* ch = ChannelFor(items[i].address);
    calls.emplace_back(ch, ch->Start(rpc::kServiceOss, req.SerializeAsString(), {}, {}, Options()));
  }
  for (size_t k = 0; k < idx.size(); ++k) {
    proto::OssResponse reply;
    (*out)[idx[k]] = Outcome(calls[k].first, calls[k].second, &reply);
  }
}

std::vector<Status> OssDestroyer::Destroy(const std::vector<Item>& items) {
  std::map<std::pair<std::string, uint32_t>, std::vector<size_t>> by_ost;
  for (size_t i = 0; i < items.size(); ++i) by_ost[{items[i].address, items[i].ost}].push_back(i);
  std::vector<Call> calls;
  for (auto& [ost, idx] : by_ost) {
    for (size_t b = 0; b < idx.size(); b += kMaxPerCall) {
      size_t e = std::min(idx.size(), b + kMaxPerCall);
      calls.push_back(StartBatch(items, std::vector<size_t>(idx.begin() + b, idx.begin() + e)));
    }
  }
  std::vector<Status> out(items.size());
  for (const Call& c : calls) FinishBatch(items, c, &out);
  return out;
}

}  // namespace sfs::mds
