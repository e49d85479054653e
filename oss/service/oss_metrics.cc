// OssMetrics: the families, named from OssRequest's op oneof (so a new op is
// counted under its proto name without an edit here).
#include "oss/service/oss_metrics.h"

#include <functional>
#include <map>
#include <string>

#include "oss/service/qos.h"
#include "oss/store/object_store.h"
#include "proto/oss.pb.h"

namespace sfs::oss {

OssMetrics::OssMetrics(metrics::Registry* r) : registry_(r) {
  auto& requests = r->AddCounter("sfs_oss_requests_total", "OSS requests by op.", {"op"});
  auto& latency = r->AddHistogram("sfs_oss_request_duration_seconds",
                                  "OSS request handling time by op (disk included).", {"op"});
  errors_ = &r->AddCounter("sfs_oss_errors_total", "OSS requests that failed, by op and errno.",
                           {"op", "errno"});
  read_bytes_ = &r->AddCounter("sfs_oss_read_bytes_total", "Bytes of object data read.").With({});
  write_bytes_ =
      &r->AddCounter("sfs_oss_write_bytes_total", "Bytes of object data written.").With({});
  inflight_requests_ =
      &r->AddGauge("sfs_oss_inflight_requests", "Requests being handled now.").With({});
  inflight_bytes_ =
      &r->AddGauge("sfs_oss_inflight_bytes", "Bytes of data held by requests being handled now.")
           .With({});
  const google::protobuf::OneofDescriptor* oneof =
      proto::OssRequest::descriptor()->FindOneofByName("op");
  for (int i = 0; i < oneof->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* f = oneof->field(i);
    if (f->number() >= kMaxOp) continue;
    names_[f->number()] = f->name().c_str();  // the descriptor lives as long as the program
    ops_[f->number()] = {&requests.With({f->name()}), &latency.With({f->name()})};
  }
  names_[0] = "none";
  ops_[0] = {&requests.With({"none"}), &latency.With({"none"})};
  r->AddCollector([this](metrics::Writer& w) { jobs_.Render(w); });
}

void OssMetrics::Record(int op, int code, uint64_t nanos, uint64_t read_bytes, uint64_t write_bytes,
                        std::string_view job) {
  if (op < 0 || op >= kMaxOp || ops_[op].requests == nullptr) op = 0;
  ops_[op].requests->Inc();
  ops_[op].latency->ObserveNanos(nanos);
  if (read_bytes != 0) read_bytes_->Inc(read_bytes);
  if (write_bytes != 0) write_bytes_->Inc(write_bytes);
  if (code != 0) errors_->With({names_[op], metrics::ErrnoLabel(code)}).Inc();
  jobs_.Add(job, read_bytes, write_bytes);
}

void OssMetrics::AddQos(const QosScheduler* qos) {
  registry_->AddCollector([qos](metrics::Writer& w) {
    std::map<std::string, QosClassStats> st = qos->stats();
    w.Family("sfs_oss_qos_rules", "QoS rules in force on this OSS (0: QoS off).", "gauge");
    w.Sample("sfs_oss_qos_rules", {}, static_cast<uint64_t>(qos->rules().size()));
    w.Family("sfs_oss_qos_queued", "Requests waiting in the QoS queue.", "gauge");
    w.Sample("sfs_oss_qos_queued", {}, static_cast<uint64_t>(qos->queued()));
    struct Col {
      const char* name;
      const char* help;
      std::function<double(const QosClassStats&)> value;
    };
    const Col cols[] = {
        {"sfs_oss_qos_dispatched_total", "Requests the QoS scheduler ran, by class.",
         [](const QosClassStats& s) { return static_cast<double>(s.dispatched); }},
        {"sfs_oss_qos_delayed_total", "Requests that waited in the QoS queue (> 1 ms), by class.",
         [](const QosClassStats& s) { return static_cast<double>(s.delayed); }},
        {"sfs_oss_qos_wait_seconds_total", "Time requests waited in the QoS queue, by class.",
         [](const QosClassStats& s) { return s.wait_seconds; }},
        {"sfs_oss_qos_read_bytes_total", "Bytes read by requests the QoS scheduler ran, by class.",
         [](const QosClassStats& s) { return static_cast<double>(s.read_bytes); }},
        {"sfs_oss_qos_write_bytes_total", "Bytes written by requests the QoS scheduler ran, by class.",
         [](const QosClassStats& s) { return static_cast<double>(s.write_bytes); }},
    };
    for (const Col& c : cols) {
      w.Family(c.name, c.help, "counter");
      for (const auto& [cls, s] : st) w.Sample(c.name, {{"class", cls}}, c.value(s));
    }
  });
}

void OssMetrics::AddTargets(std::function<std::unordered_map<uint32_t, ObjectStore*>()> targets) {
  registry_->AddCollector([targets = std::move(targets)](metrics::Writer& w) {
    std::unordered_map<uint32_t, ObjectStore*> now = targets();
    struct Row {
      std::string ost;
      std::string uuid;
      Result<OstSpace> space;
    };
    std::vector<Row> rows;
    for (const auto& [index, store] : now) {
      rows.push_back({std::to_string(index), store->uuid(), store->Statfs()});
    }
    w.Family("sfs_ost_up", "1 if the OST is served and its statfs works, else 0.", "gauge");
    for (const Row& r : rows) {
      w.Sample("sfs_ost_up", {{"ost", r.ost}, {"uuid", r.uuid}}, r.space.ok() ? 1.0 : 0.0);
    }
    struct Col {
      const char* name;
      const char* help;
      uint64_t OstSpace::*field;
    };
    const Col cols[] = {
        {"sfs_ost_size_bytes", "Size of the OST's file system.", &OstSpace::total_bytes},
        {"sfs_ost_free_bytes", "Free bytes on the OST's file system.", &OstSpace::free_bytes},
        {"sfs_ost_avail_bytes", "Bytes available to new objects.", &OstSpace::avail_bytes},
        {"sfs_ost_used_bytes", "Bytes in use (size - free).", nullptr},
    };
    for (const Col& c : cols) {
      w.Family(c.name, c.help, "gauge");
      for (const Row& r : rows) {
        if (!r.space.ok()) continue;
        uint64_t v =
            c.field != nullptr ? (*r.space).*c.field : r.space->total_bytes - r.space->free_bytes;
        w.Sample(c.name, {{"ost", r.ost}}, static_cast<double>(v));
      }
    }
  });
}

}  // namespace sfs::oss
