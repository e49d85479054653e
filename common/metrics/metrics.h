// Metrics: counters, gauges and latency histograms with labels, and their
// rendering in the Prometheus text exposition format (version 0.0.4,
// docs/operations.md "Metrics"). What every daemon's GET /metrics serves
// (http_server.h).
//
// Hot path: Counter::Inc, Gauge::Add and Histogram::Observe are one or two
// relaxed atomic adds each, no lock. Finding a series by its label values
// (Family::With) takes the family's mutex and builds a key, so a caller
// resolves the series it uses per request once (an array indexed by op) and
// keeps the reference; series are never removed, so references stay valid for
// the registry's lifetime. Labels whose values are unbounded (jobs) go through
// JobStats (job_stats.h), which bounds them.
//
// Rendering reads the atomics one by one: a scrape racing updates may see a
// histogram's sum from a slightly different instant than its buckets (its
// _count is always the +Inf bucket).
//
// Thread safety: everything here may be used from any thread.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sfs::metrics {

class Counter {
 public:
  void Inc(uint64_t n = 1) { v_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t Value() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> v_{0};
};

class Gauge {
 public:
  void Set(int64_t v) { v_.store(v, std::memory_order_relaxed); }
  void Add(int64_t n) { v_.fetch_add(n, std::memory_order_relaxed); }
  int64_t Value() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> v_{0};
};

// A latency histogram in seconds with fixed buckets from 10 us to 10 s
// (1-2.5-5 steps): wide enough for a cached read and a stuck fsync.
class Histogram {
 public:
  static constexpr std::array<uint64_t, 19> kBoundsNs = {
      10'000,        25'000,        50'000,        100'000,       250'000,
      500'000,       1'000'000,     2'500'000,     5'000'000,     10'000'000,
      25'000'000,    50'000'000,    100'000'000,   250'000'000,   500'000'000,
      1'000'000'000, 2'500'000'000, 5'000'000'000, 10'000'000'000};

  void ObserveNanos(uint64_t ns);

  struct Snapshot {
    std::array<uint64_t, kBoundsNs.size() + 1>
        buckets{};  // per bucket, not cumulative; last = +Inf
    uint64_t count = 0;
    uint64_t sum_ns = 0;
  };
  Snapshot Read() const;

 private:
  std::array<std::atomic<uint64_t>, kBoundsNs.size() + 1> buckets_{};
  std::atomic<uint64_t> sum_ns_{0};
};

using Labels = std::vector<std::pair<std::string, std::string>>;

// Builds one exposition. Family() writes the HELP and TYPE lines, Sample()
// one line; the caller writes a family's samples right after its header.
class Writer {
 public:
  // type: "counter", "gauge", "histogram".
  void Family(std::string_view name, std::string_view help, std::string_view type);
  void Sample(std::string_view name, const Labels& labels, double value);
  void Sample(std::string_view name, const Labels& labels, uint64_t value);
  void HistogramSamples(std::string_view name, const Labels& labels, const Histogram::Snapshot& s);
  std::string Take() { return std::move(out_); }

 private:
  void Head(std::string_view name, const Labels& labels, std::string_view le = {});
  std::string out_;
};

// Metric and label names must match [a-zA-Z_][a-zA-Z0-9_]* (checked: SFS_CHECK).
template <typename M>
class Family {
 public:
  Family(std::string name, std::string help, std::vector<std::string> label_names);
  // The series with these label values, created at first use.
  // REQUIRES: values.size() == the number of label names.
  M& With(const std::vector<std::string>& values);
  const std::string& name() const { return name_; }
  void Render(Writer& w) const;

 private:
  const std::string name_;
  const std::string help_;
  const std::vector<std::string> label_names_;
  mutable std::mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<M>> series_;  // GUARDED_BY(mu_)
};

// Owns the families of one daemon and renders them in registration order.
class Registry {
 public:
  Family<Counter>& AddCounter(std::string name, std::string help,
                              std::vector<std::string> labels = {});
  Family<Gauge>& AddGauge(std::string name, std::string help, std::vector<std::string> labels = {});
  Family<Histogram>& AddHistogram(std::string name, std::string help,
                                  std::vector<std::string> labels = {});
  // Called at every scrape, on the scraping thread, for values computed then
  // (table sizes, OST space): it writes whole families of its own to w.
  // REQUIRES: what fn reads outlives the registry, or fn is never called after
  // it is destroyed (the daemon stops the HTTP server first).
  void AddCollector(std::function<void(Writer& w)> fn);
  std::string Render() const;

 private:
  mutable std::mutex mu_;
  // One of the three family pointers set per entry, or a collector.
  struct Entry {
    std::unique_ptr<Family<Counter>> counter;
    std::unique_ptr<Family<Gauge>> gauge;
    std::unique_ptr<Family<Histogram>> histogram;
    std::function<void(Writer&)> collector;
  };
  std::vector<Entry> entries_;  // GUARDED_BY(mu_)
};

// Label values for errno labels: "ENOENT", as ErrnoName.
std::string ErrnoLabel(int code);

}  // namespace sfs::metrics
