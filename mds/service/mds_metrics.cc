// MdsMetrics: series named from MdsRequest's op oneof, resolved once.
#include "mds/service/mds_metrics.h"

#include <chrono>
#include <string>

#include "proto/mds.pb.h"

namespace sfs::mds {

MdsMetrics::MdsMetrics(metrics::Registry* r) {
  auto& requests = r->AddCounter("sfs_mds_requests_total", "MDS requests by op.", {"op"});
  auto& latency = r->AddHistogram(
      "sfs_mds_request_duration_seconds",
      "MDS request time by op, until the reply (commit and revocation waits included).", {"op"});
  errors_ = &r->AddCounter("sfs_mds_errors_total", "MDS requests that failed, by op and errno.",
                           {"op", "errno"});
  const google::protobuf::OneofDescriptor* oneof =
      proto::MdsRequest::descriptor()->FindOneofByName("op");
  for (int i = 0; i < oneof->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* f = oneof->field(i);
    if (f->number() >= kMaxOp) continue;
    names_[f->number()] = f->name().c_str();
    ops_[f->number()] = {&requests.With({f->name()}), &latency.With({f->name()})};
  }
  names_[0] = "none";
  ops_[0] = {&requests.With({"none"}), &latency.With({"none"})};
  r->AddCollector([this](metrics::Writer& w) { jobs_.Render(w); });
}

void MdsMetrics::Record(int op, int code, uint64_t nanos, std::string_view job) {
  if (op < 0 || op >= kMaxOp || ops_[op].requests == nullptr) op = 0;
  ops_[op].requests->Inc();
  ops_[op].latency->ObserveNanos(nanos);
  if (code != 0) errors_->With({names_[op], metrics::ErrnoLabel(code)}).Inc();
  jobs_.Add(job, 0, 0);
}

rpc::ReplyFn MdsMetrics::Counted(int op, std::string_view job, rpc::ReplyFn done) {
  auto start = std::chrono::steady_clock::now();
  return [this, op, start, job = std::string(job), done = std::move(done)](rpc::Reply reply) {
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                  std::chrono::steady_clock::now() - start)
                  .count();
    Record(op, CodeOf(reply.payload), static_cast<uint64_t>(ns), job);
    done(std::move(reply));
  };
}

// MdsResponse.status is field 1, serialized first; an OK one is empty
// (tag 0x0a, length 0) or absent.
int MdsMetrics::CodeOf(const std::string& payload) {
  if (payload.size() < 2 || static_cast<uint8_t>(payload[0]) != 0x0a || payload[1] == 0) return 0;
  proto::MdsResponse resp;
  if (!resp.ParseFromString(payload)) return EPROTO;
  return resp.status().code();
}

}  // namespace sfs::mds
