// Results of a benchmark run: folding the tasks' per-phase timings into
// per-iteration figures, max/min/mean over iterations, and printing them as
// IOR/mdtest-like text tables or as one JSON object (--json).
//
// A phase's time is IOR's: last task's end minus first task's start, so the
// bandwidth is aggregate bytes over the wall time all tasks needed together.
// open/io/close are measured the same way on the stamps between them.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "tools/bench/tasks.h"

namespace sfs::bench {

struct IterResult {
  int iteration = 0;
  uint64_t bytes = 0, ops = 0, errors = 0;
  double open_s = 0, io_s = 0, close_s = 0, total_s = 0;
  double MiBps() const { return total_s > 0 ? bytes / 1048576.0 / total_s : 0; }
  double Rate() const { return total_s > 0 ? ops / total_s : 0; }  // IOPS, or ops/s
};

// One result per iteration that has records of `phase`, in iteration order.
std::vector<IterResult> Aggregate(const std::vector<TaskRecord>& recs, int phase);

struct Summary {
  double max = 0, min = 0, mean = 0, stddev = 0;
};
Summary Summarize(const std::vector<double>& v);

struct PhaseResult {
  std::string key;    // JSON name: "write", "file_create"
  std::string label;  // text name: "write", "File creation"
  std::vector<IterResult> iters;
};

// A run parameter, shown in the header and in the JSON "options".
struct Param {
  std::string key, value;
  bool numeric = false;
};

struct RunReport {
  std::string command;    // "ior" / "mdtest"
  bool bandwidth = true;  // ior: MiB/s and IOPS; mdtest: ops/s only
  std::vector<Param> params;
  std::vector<PhaseResult> phases;
  uint64_t verify_errors = 0;
  int failed_tasks = 0;
  bool interrupted = false;
  bool ok() const { return verify_errors == 0 && failed_tasks == 0 && !interrupted; }
};

void PrintIorText(const RunReport& r, uint64_t block, uint64_t transfer, FILE* out);
void PrintMdtestText(const RunReport& r, FILE* out);
// Both commands: {"command", "options", "phases": [{name, summary, iterations}], status}.
std::string ReportJson(const RunReport& r);

// Minimal JSON emitter: commas and escaping handled; non-finite numbers become null.
class JsonWriter {
 public:
  JsonWriter& Open(char bracket);   // '{' or '['
  JsonWriter& Close(char bracket);  // '}' or ']'
  JsonWriter& Key(const std::string& k);
  JsonWriter& Str(const std::string& s);
  JsonWriter& Num(double v);
  JsonWriter& Int(int64_t v);
  JsonWriter& Bool(bool b);
  const std::string& str() const { return out_; }

 private:
  void Sep();
  std::string out_;
  std::vector<bool> first_;
  bool after_key_ = false;
};

}  // namespace sfs::bench
