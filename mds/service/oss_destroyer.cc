// Destroy requests to OSSes over RPC; see oss_destroyer.h.
#include "mds/service/oss_destroyer.h"

#include "oss.pb.h"

namespace sfs::mds {

rpc::Channel* OssDestroyer::ChannelFor(const std::string& address) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& ch = channels_[address];
  if (!ch) ch = io_->MakeTcpChannel(address);
  return ch.get();
}

std::vector<Status> OssDestroyer::Destroy(const std::vector<Item>& items) {
  rpc::CallOptions opts;
  opts.timeout = std::chrono::milliseconds(10000);
  std::vector<std::pair<rpc::Channel*, std::shared_ptr<rpc::PendingCall>>> calls;
  for (const Item& item : items) {
    proto::OssRequest req;
    req.set_ost(item.ost);
    req.set_oid(item.oid);
    req.mutable_destroy();
    rpc::Channel* ch = ChannelFor(item.address);
    calls.emplace_back(ch, ch->Start(rpc::kServiceOss, req.SerializeAsString(), {}, {}, opts));
  }
  std::vector<Status> out;
  for (auto& [ch, call] : calls) {
    rpc::Response resp;
    Status st = ch->Wait(call, &resp);
    proto::OssResponse reply;
    if (st.ok() && !reply.ParseFromString(resp.payload)) st = Status::Errno(EPROTO, "bad reply");
    if (st.ok()) st = Status(reply.status().code(), reply.status().message());
    out.push_back(std::move(st));
  }
  return out;
}

}  // namespace sfs::mds
