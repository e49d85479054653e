// Folding timings into results, and the text and JSON output (see report.h).
#include "tools/bench/report.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>

namespace sfs::bench {
namespace {

struct Span {
  int64_t min_start = INT64_MAX, max_io_start = INT64_MIN, min_io_start = INT64_MAX;
  int64_t max_io_end = INT64_MIN, min_io_end = INT64_MAX, max_end = INT64_MIN;
  IterResult r;
};

double Seconds(int64_t ns) { return ns > 0 ? ns / 1e9 : 0; }

void PrintParams(const RunReport& r, FILE* out) {
  std::fprintf(out, "sfs-bench %s\n", r.command.c_str());
  for (const Param& p : r.params) {
    if (!p.value.empty()) std::fprintf(out, "  %-18s: %s\n", p.key.c_str(), p.value.c_str());
  }
  std::fprintf(out, "\n");
}

void PrintStatus(const RunReport& r, FILE* out) {
  if (r.verify_errors > 0) {
    std::fprintf(out, "\nVERIFY FAILED: %llu errors (see stderr)\n",
                 static_cast<unsigned long long>(r.verify_errors));
  }
  if (r.failed_tasks > 0) std::fprintf(out, "\nFAILED: %d task(s) failed\n", r.failed_tasks);
  if (r.interrupted) std::fprintf(out, "\nINTERRUPTED\n");
}

void SummaryJson(JsonWriter& w, const char* key, const Summary& s) {
  w.Key(key).Open('{');
  w.Key("max").Num(s.max).Key("min").Num(s.min).Key("mean").Num(s.mean).Key("stddev").Num(s.stddev);
  w.Close('}');
}

void IterJson(JsonWriter& w, const IterResult& it, bool bandwidth) {
  w.Open('{').Key("iteration").Int(it.iteration);
  if (!bandwidth) {
    w.Key("ops").Int(static_cast<int64_t>(it.ops)).Key("seconds").Num(it.total_s);
    w.Key("ops_per_s").Num(it.Rate()).Key("errors").Int(static_cast<int64_t>(it.errors));
    w.Close('}');
    return;
  }
  w.Key("bytes").Int(static_cast<int64_t>(it.bytes)).Key("ops").Int(static_cast<int64_t>(it.ops));
  w.Key("bw_mib_s").Num(it.MiBps()).Key("ops_per_s").Num(it.Rate());
  w.Key("open_s").Num(it.open_s).Key("io_s").Num(it.io_s).Key("close_s").Num(it.close_s);
  w.Key("total_s").Num(it.total_s).Key("errors").Int(static_cast<int64_t>(it.errors));
  w.Close('}');
}

template <typename F>
Summary SummarizeBy(const std::vector<IterResult>& iters, F f) {
  std::vector<double> v;
  for (const IterResult& it : iters) v.push_back(f(it));
  return Summarize(v);
}

}  // namespace

std::vector<IterResult> Aggregate(const std::vector<TaskRecord>& recs, int phase) {
  std::map<int, Span> by_iter;
  for (const TaskRecord& t : recs) {
    if (t.phase != phase) continue;
    Span& s = by_iter[t.iteration];
    s.min_start = std::min(s.min_start, t.start_ns);
    s.max_io_start = std::max(s.max_io_start, t.io_start_ns);
    s.min_io_start = std::min(s.min_io_start, t.io_start_ns);
    s.max_io_end = std::max(s.max_io_end, t.io_end_ns);
    s.min_io_end = std::min(s.min_io_end, t.io_end_ns);
    s.max_end = std::max(s.max_end, t.end_ns);
    s.r.bytes += t.bytes;
    s.r.ops += t.ops;
    s.r.errors += t.errors;
  }
  std::vector<IterResult> out;
  for (auto& [iter, s] : by_iter) {
    s.r.iteration = iter;
    s.r.open_s = Seconds(s.max_io_start - s.min_start);
    s.r.io_s = Seconds(s.max_io_end - s.min_io_start);
    s.r.close_s = Seconds(s.max_end - s.min_io_end);
    s.r.total_s = Seconds(s.max_end - s.min_start);
    out.push_back(s.r);
  }
  return out;
}

Summary Summarize(const std::vector<double>& v) {
  Summary s;
  if (v.empty()) return s;
  s.max = *std::max_element(v.begin(), v.end());
  s.min = *std::min_element(v.begin(), v.end());
  double sum = 0, sq = 0;
  for (double x : v) sum += x;
  s.mean = sum / v.size();
  for (double x : v) sq += (x - s.mean) * (x - s.mean);
  s.stddev = std::sqrt(sq / v.size());
  return s;
}

void PrintIorText(const RunReport& r, uint64_t block, uint64_t transfer, FILE* out) {
  PrintParams(r, out);
  std::fprintf(out, "%-8s %11s %11s %11s %10s %9s %9s %9s %9s %5s\n", "access", "bw(MiB/s)", "IOPS",
               "block(KiB)", "xfer(KiB)", "open(s)", "wr/rd(s)", "close(s)", "total(s)", "iter");
  size_t max_iters = 0;
  for (const PhaseResult& p : r.phases) max_iters = std::max(max_iters, p.iters.size());
  for (size_t i = 0; i < max_iters; ++i) {
    for (const PhaseResult& p : r.phases) {
      if (i >= p.iters.size()) continue;
      const IterResult& it = p.iters[i];
      std::fprintf(out, "%-8s %11.2f %11.2f %11llu %10llu %9.4f %9.4f %9.4f %9.4f %5d\n",
                   p.label.c_str(), it.MiBps(), it.Rate(),
                   static_cast<unsigned long long>(block >> 10),
                   static_cast<unsigned long long>(transfer >> 10), it.open_s, it.io_s, it.close_s,
                   it.total_s, it.iteration);
    }
  }
  std::fprintf(out, "\nSummary of all tests:\n%-9s %10s %10s %10s %9s %11s %11s %11s %9s %9s\n",
               "Operation", "Max(MiB)", "Min(MiB)", "Mean(MiB)", "StdDev", "Max(OPs)", "Min(OPs)",
               "Mean(OPs)", "StdDev", "Mean(s)");
  for (const PhaseResult& p : r.phases) {
    Summary bw = SummarizeBy(p.iters, [](const IterResult& it) { return it.MiBps(); });
    Summary ops = SummarizeBy(p.iters, [](const IterResult& it) { return it.Rate(); });
    Summary t = SummarizeBy(p.iters, [](const IterResult& it) { return it.total_s; });
    std::fprintf(out, "%-9s %10.2f %10.2f %10.2f %9.2f %11.2f %11.2f %11.2f %9.2f %9.5f\n",
                 p.label.c_str(), bw.max, bw.min, bw.mean, bw.stddev, ops.max, ops.min, ops.mean,
                 ops.stddev, t.mean);
  }
  PrintStatus(r, out);
}

void PrintMdtestText(const RunReport& r, FILE* out) {
  PrintParams(r, out);
  size_t n = r.phases.empty() ? 0 : r.phases[0].iters.size();
  std::fprintf(out, "SUMMARY rate (ops/s): (of %zu iterations)\n", n);
  std::fprintf(out, "   %-22s %14s %14s %14s %14s\n", "Operation", "Max", "Min", "Mean", "Std Dev");
  std::fprintf(out, "   %-22s %14s %14s %14s %14s\n", "---------", "---", "---", "----", "-------");
  for (const PhaseResult& p : r.phases) {
    Summary s = SummarizeBy(p.iters, [](const IterResult& it) { return it.Rate(); });
    std::fprintf(out, "   %-22s:%14.3f %14.3f %14.3f %14.3f\n", p.label.c_str(), s.max, s.min,
                 s.mean, s.stddev);
  }
  PrintStatus(r, out);
}

std::string ReportJson(const RunReport& r) {
  JsonWriter w;
  w.Open('{').Key("command").Str(r.command).Key("options").Open('{');
  for (const Param& p : r.params) {
    w.Key(p.key);
    if (p.numeric)
      w.Num(std::strtod(p.value.c_str(), nullptr));
    else
      w.Str(p.value);
  }
  w.Close('}').Key("phases").Open('[');
  for (const PhaseResult& p : r.phases) {
    w.Open('{').Key("phase").Str(p.key);
    if (r.bandwidth) {
      SummaryJson(w, "bw_mib_s",
                  SummarizeBy(p.iters, [](const IterResult& it) { return it.MiBps(); }));
    }
    SummaryJson(w, "ops_per_s",
                SummarizeBy(p.iters, [](const IterResult& it) { return it.Rate(); }));
    SummaryJson(w, "total_s",
                SummarizeBy(p.iters, [](const IterResult& it) { return it.total_s; }));
    w.Key("iterations").Open('[');
    for (const IterResult& it : p.iters) IterJson(w, it, r.bandwidth);
    w.Close(']').Close('}');
  }
  w.Close(']').Key("verify_errors").Int(static_cast<int64_t>(r.verify_errors));
  w.Key("failed_tasks").Int(r.failed_tasks).Key("interrupted").Bool(r.interrupted);
  w.Key("ok").Bool(r.ok()).Close('}');
  return w.str();
}

void JsonWriter::Sep() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) out_ += ',';
    first_.back() = false;
  }
}

JsonWriter& JsonWriter::Open(char bracket) {
  Sep();
  out_ += bracket;
  first_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::Close(char bracket) {
  out_ += bracket;
  first_.pop_back();
  return *this;
}

JsonWriter& JsonWriter::Key(const std::string& k) {
  Str(k);
  out_ += ':';
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::Str(const std::string& s) {
  Sep();
  out_ += '"';
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out_ += '\\';
      out_ += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out_ += buf;
    } else {
      out_ += static_cast<char>(c);
    }
  }
  out_ += '"';
  return *this;
}

JsonWriter& JsonWriter::Num(double v) {
  Sep();
  if (!std::isfinite(v)) {
    out_ += "null";
    return *this;
  }
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.10g", v);
  out_ += buf;
  return *this;
}

JsonWriter& JsonWriter::Int(int64_t v) {
  Sep();
  out_ += std::to_string(v);
  return *this;
}

JsonWriter& JsonWriter::Bool(bool b) {
  Sep();
  out_ += b ? "true" : "false";
  return *this;
}

}  // namespace sfs::bench
