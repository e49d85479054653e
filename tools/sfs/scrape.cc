// Parsing the exposition (the subset our daemons write, which is also what
// any Prometheus client writes: no timestamps needed) and summing it.
#include "tools/sfs/scrape.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <sstream>

#include "common/metrics/http_server.h"
#include "tools/sfs/target.h"

namespace sfs::tools {
namespace {

// Parses `{k="v",...}` at text[*pos]; advances *pos past the '}'.
bool ParseLabels(std::string_view text, size_t* pos, MetricSample* s) {
  size_t i = *pos + 1;  // past '{'
  while (i < text.size() && text[i] != '}') {
    size_t eq = text.find('=', i);
    if (eq == std::string_view::npos || eq + 1 >= text.size() || text[eq + 1] != '"') return false;
    std::string key(text.substr(i, eq - i)), value;
    size_t j = eq + 2;
    for (; j < text.size() && text[j] != '"'; ++j) {
      if (text[j] == '\\' && j + 1 < text.size()) {
        ++j;
        value.push_back(text[j] == 'n' ? '\n' : text[j]);
      } else {
        value.push_back(text[j]);
      }
    }
    if (j >= text.size()) return false;
    s->labels.emplace_back(std::move(key), std::move(value));
    i = j + 1;
    if (i < text.size() && text[i] == ',') ++i;
  }
  if (i >= text.size()) return false;
  *pos = i + 1;
  return true;
}

std::string Strip(std::string_view name, std::string_view prefix) {
  return std::string(name.substr(prefix.size()));
}

}  // namespace

std::string MetricSample::Label(std::string_view key) const {
  for (const auto& [k, v] : labels) {
    if (k == key) return v;
  }
  return {};
}

Result<std::vector<MetricSample>> ParseExposition(std::string_view text) {
  std::vector<MetricSample> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (line.empty() || line[0] == '#') continue;
    MetricSample s;
    size_t i = line.find_first_of("{ ");
    if (i == std::string_view::npos || i == 0) {
      return Status::Errno(EPROTO, "bad exposition line: " + std::string(line));
    }
    s.name = std::string(line.substr(0, i));
    if (line[i] == '{' && !ParseLabels(line, &i, &s)) {
      return Status::Errno(EPROTO, "bad labels: " + std::string(line));
    }
    std::string value(line.substr(i));
    char* stop = nullptr;
    s.value = std::strtod(value.c_str(), &stop);
    if (stop == value.c_str()) return Status::Errno(EPROTO, "bad value: " + std::string(line));
    out.push_back(std::move(s));
  }
  return out;
}

OpFigures EndpointStats::Total() const {
  OpFigures t;
  for (const auto& [op, f] : ops) {
    t.requests += f.requests;
    t.latency_sum += f.latency_sum;
    t.latency_count += f.latency_count;
  }
  return t;
}

EndpointStats Summarize(const std::string& address, const std::vector<MetricSample>& samples) {
  EndpointStats e;
  e.address = address;
  e.kind = "unknown";
  for (const MetricSample& s : samples) {
    for (const char* kind : {"mds", "oss", "fuse"}) {
      std::string p = std::string("sfs_") + kind + "_";
      if (s.name.rfind(p, 0) != 0) continue;
      e.kind = std::string(kind) == "fuse" ? "client" : kind;
      std::string n = Strip(s.name, p);
      std::string op = s.Label("op");
      if (n == "requests_total")
        e.ops[op].requests += s.value;
      else if (n == "request_duration_seconds_sum")
        e.ops[op].latency_sum += s.value;
      else if (n == "request_duration_seconds_count")
        e.ops[op].latency_count += s.value;
      else if (n == "read_bytes_total")
        e.read_bytes += s.value;
      else if (n == "write_bytes_total")
        e.write_bytes += s.value;
      else if (n == "errors_total")
        e.errors[op + " " + s.Label("errno")] += s.value;
      else if (n == "job_ops_total")
        e.jobs[s.Label("job")].ops += s.value;
      else if (n == "job_read_bytes_total")
        e.jobs[s.Label("job")].read_bytes += s.value;
      else if (n == "job_write_bytes_total")
        e.jobs[s.Label("job")].write_bytes += s.value;
    }
  }
  return e;
}

EndpointStats Scrape(const std::string& address) {
  Result<std::string> body = metrics::HttpGet(address, "/metrics");
  if (!body.ok()) {
    EndpointStats e;
    e.address = address;
    e.kind = "unknown";
    e.status = body.status();
    return e;
  }
  Result<std::vector<MetricSample>> samples = ParseExposition(*body);
  if (!samples.ok()) {
    EndpointStats e;
    e.address = address;
    e.kind = "unknown";
    e.status = samples.status();
    return e;
  }
  return Summarize(address, *samples);
}

Result<std::vector<std::string>> DiscoverEndpoints(const std::string& mds) {
  GlobalOptions g;
  g.mds = mds;
  SFS_ASSIGN_OR_RETURN(std::unique_ptr<Target> t, Target::Open(g, "/"));
  std::string mds_metrics;
  SFS_ASSIGN_OR_RETURN(std::vector<client::OstStatus> osts, t->client().ListOsts(&mds_metrics));
  std::vector<std::string> out;
  if (!mds_metrics.empty()) out.push_back(mds_metrics);
  for (const client::OstStatus& o : osts) {
    if (!o.metrics_address.empty() &&
        std::find(out.begin(), out.end(), o.metrics_address) == out.end()) {
      out.push_back(o.metrics_address);
    }
  }
  if (out.empty()) {
    return Status::Errno(ENOENT, "the MDS knows no metrics endpoint (start the daemons with "
                                 "--metrics-listen)");
  }
  return out;
}

std::string StatsJson(const std::vector<EndpointStats>& all) {
  std::ostringstream os;
  os.precision(17);
  os << "{\"endpoints\":[";
  for (size_t i = 0; i < all.size(); ++i) {
    const EndpointStats& e = all[i];
    os << (i ? "," : "") << "{\"address\":" << JsonString(e.address)
       << ",\"kind\":" << JsonString(e.kind) << ",\"ok\":" << (e.status.ok() ? "true" : "false");
    if (!e.status.ok()) {
      os << ",\"error\":" << JsonString(e.status.ToString()) << "}";
      continue;
    }
    OpFigures t = e.Total();
    os << ",\"requests\":" << t.requests << ",\"latency_seconds_sum\":" << t.latency_sum
       << ",\"latency_count\":" << t.latency_count << ",\"read_bytes\":" << e.read_bytes
       << ",\"write_bytes\":" << e.write_bytes << ",\"ops\":{";
    bool first = true;
    for (const auto& [op, f] : e.ops) {
      os << (first ? "" : ",") << JsonString(op) << ":{\"requests\":" << f.requests
         << ",\"latency_seconds_sum\":" << f.latency_sum << ",\"latency_count\":" << f.latency_count
         << "}";
      first = false;
    }
    os << "},\"errors\":{";
    first = true;
    for (const auto& [key, n] : e.errors) {
      os << (first ? "" : ",") << JsonString(key) << ":" << n;
      first = false;
    }
    os << "},\"jobs\":{";
    first = true;
    for (const auto& [job, f] : e.jobs) {
      os << (first ? "" : ",") << JsonString(job) << ":{\"ops\":" << f.ops
         << ",\"read_bytes\":" << f.read_bytes << ",\"write_bytes\":" << f.write_bytes << "}";
      first = false;
    }
    os << "}}";
  }
  os << "]}\n";
  return os.str();
}

}  // namespace sfs::tools
