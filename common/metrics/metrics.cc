// The metric types and the text exposition format. Format reference:
// https://prometheus.io/docs/instrumenting/exposition_formats/ (text 0.0.4):
// "# HELP name text" and "# TYPE name type" once per family, then one
// `name{label="value",...} number` line per sample; a histogram is its
// cumulative name_bucket{le="..."} lines ending with le="+Inf", then name_sum
// and name_count.
#include "common/metrics/metrics.h"

#include <cstdio>

#include "common/status.h"

namespace sfs::metrics {
namespace {

bool ValidName(std::string_view s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
              (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

// HELP text escapes \ and newline; label values also escape ".
void AppendEscaped(std::string* out, std::string_view s, bool quote) {
  for (char c : s) {
    if (c == '\\')
      out->append("\\\\");
    else if (c == '\n')
      out->append("\\n");
    else if (quote && c == '"')
      out->append("\\\"");
    else
      out->push_back(c);
  }
}

std::string FormatDouble(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string FormatBound(uint64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", static_cast<double>(ns) / 1e9);
  return buf;
}

}  // namespace

void Histogram::ObserveNanos(uint64_t ns) {
  size_t i = 0;
  while (i < kBoundsNs.size() && ns > kBoundsNs[i]) ++i;
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  sum_ns_.fetch_add(ns, std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::Read() const {
  Snapshot s;
  for (size_t i = 0; i < buckets_.size(); ++i) {
    s.buckets[i] = buckets_[i].load(std::memory_order_relaxed);
    s.count += s.buckets[i];
  }
  s.sum_ns = sum_ns_.load(std::memory_order_relaxed);
  return s;
}

void Writer::Family(std::string_view name, std::string_view help, std::string_view type) {
  out_.append("# HELP ").append(name).push_back(' ');
  AppendEscaped(&out_, help, /*quote=*/false);
  out_.append("\n# TYPE ").append(name).push_back(' ');
  out_.append(type).push_back('\n');
}

void Writer::Head(std::string_view name, const Labels& labels, std::string_view le) {
  out_.append(name);
  if (labels.empty() && le.empty()) {
    out_.push_back(' ');
    return;
  }
  out_.push_back('{');
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (!first) out_.push_back(',');
    first = false;
    out_.append(k).append("=\"");
    AppendEscaped(&out_, v, /*quote=*/true);
    out_.push_back('"');
  }
  if (!le.empty()) {
    if (!first) out_.push_back(',');
    out_.append("le=\"").append(le).push_back('"');
  }
  out_.append("} ");
}

void Writer::Sample(std::string_view name, const Labels& labels, double value) {
  Head(name, labels);
  out_.append(FormatDouble(value)).push_back('\n');
}

void Writer::Sample(std::string_view name, const Labels& labels, uint64_t value) {
  Head(name, labels);
  out_.append(std::to_string(value)).push_back('\n');
}

void Writer::HistogramSamples(std::string_view name, const Labels& labels,
                              const Histogram::Snapshot& s) {
  std::string n(name);
  uint64_t cumulative = 0;
  for (size_t i = 0; i < s.buckets.size(); ++i) {
    cumulative += s.buckets[i];
    bool inf = i == Histogram::kBoundsNs.size();
    Head(n + "_bucket", labels, inf ? "+Inf" : FormatBound(Histogram::kBoundsNs[i]));
    out_.append(std::to_string(cumulative)).push_back('\n');
  }
  Sample(n + "_sum", labels, static_cast<double>(s.sum_ns) / 1e9);
  Sample(n + "_count", labels, s.count);
}

template <typename M>
Family<M>::Family(std::string name, std::string help, std::vector<std::string> label_names)
    : name_(std::move(name)), help_(std::move(help)), label_names_(std::move(label_names)) {
  SFS_CHECK(ValidName(name_));
  for (const std::string& l : label_names_) SFS_CHECK(ValidName(l) && l != "le");
}

template <typename M>
M& Family<M>::With(const std::vector<std::string>& values) {
  SFS_CHECK(values.size() == label_names_.size());
  std::lock_guard<std::mutex> lock(mu_);
  std::unique_ptr<M>& m = series_[values];
  if (!m) m = std::make_unique<M>();
  return *m;
}

namespace {
const char* TypeName(const Counter*) { return "counter"; }
const char* TypeName(const Gauge*) { return "gauge"; }
const char* TypeName(const Histogram*) { return "histogram"; }
void Emit(Writer& w, const std::string& n, const Labels& l, const Counter& m) {
  w.Sample(n, l, m.Value());
}
void Emit(Writer& w, const std::string& n, const Labels& l, const Gauge& m) {
  w.Sample(n, l, static_cast<double>(m.Value()));
}
void Emit(Writer& w, const std::string& n, const Labels& l, const Histogram& m) {
  w.HistogramSamples(n, l, m.Read());
}
}  // namespace

template <typename M>
void Family<M>::Render(Writer& w) const {
  w.Family(name_, help_, TypeName(static_cast<const M*>(nullptr)));
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [values, m] : series_) {
    Labels labels;
    for (size_t i = 0; i < values.size(); ++i) labels.emplace_back(label_names_[i], values[i]);
    Emit(w, name_, labels, *m);
  }
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

Family<Counter>& Registry::AddCounter(std::string name, std::string help,
                                      std::vector<std::string> labels) {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.emplace_back();
  entries_.back().counter =
      std::make_unique<Family<Counter>>(std::move(name), std::move(help), std::move(labels));
  return *entries_.back().counter;
}

Family<Gauge>& Registry::AddGauge(std::string name, std::string help,
                                  std::vector<std::string> labels) {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.emplace_back();
  entries_.back().gauge =
      std::make_unique<Family<Gauge>>(std::move(name), std::move(help), std::move(labels));
  return *entries_.back().gauge;
}

Family<Histogram>& Registry::AddHistogram(std::string name, std::string help,
                                          std::vector<std::string> labels) {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.emplace_back();
  entries_.back().histogram =
      std::make_unique<Family<Histogram>>(std::move(name), std::move(help), std::move(labels));
  return *entries_.back().histogram;
}

void Registry::AddCollector(std::function<void(Writer& w)> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.emplace_back();
  entries_.back().collector = std::move(fn);
}

std::string Registry::Render() const {
  Writer w;
  std::lock_guard<std::mutex> lock(mu_);
  for (const Entry& e : entries_) {
    if (e.counter)
      e.counter->Render(w);
    else if (e.gauge)
      e.gauge->Render(w);
    else if (e.histogram)
      e.histogram->Render(w);
    else
      e.collector(w);
  }
  return w.Take();
}

std::string ErrnoLabel(int code) { return ErrnoName(code); }

}  // namespace sfs::metrics
