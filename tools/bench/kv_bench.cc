// sfs-bench kv (kv_bench.h).
#include "tools/bench/kv_bench.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "client/lib/kv.h"

namespace sfs::bench {
namespace {

constexpr const char* kUsage =
    "usage: sfs-bench kv --mds HOST:PORT [--block-size BYTES (default 1M)] [--blocks N "
    "(default 256)]\n"
    "                    [--inflight N (default 64)] [--latency-gets N (default 200)] "
    "[--transport auto|tcp|rdma] [--no-busy-poll] [--json]\n"
    "       sfs-bench kv --mds HOST:PORT --tokens N [--restore-script PATH] [--transport T] [--json]\n"
    "Puts N blocks (namespace bench-kv, one group per 8 blocks), reads them back into one\n"
    "buffer each (verified), then gets single blocks one at a time for latency. The OSSes\n"
    "need --kv-capacity of at least N x block size (split over them).\n"
    "With --tokens: restore against recompute of an N-token context (bench/kv_restore.py,\n"
    "PyTorch on the CPU, run with $PYTHON or /usr/bin/python3): prefill_seconds, restore_seconds\n"
    "(median of three restores, each in a new process, pooled destination), logits_match,\n"
    "transport_gbps (median of five raw multi_gets in the same run) and transport_fraction\n"
    "(the restore's rate over it). The OSSes need --kv-capacity of 32 KiB x N + min(32 KiB x\n"
    "N, 512 MiB). The script: --restore-script, else $SFS_KV_RESTORE, else\n"
    "bench/kv_restore.py of the source tree this binary was built in.\n";

double Since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Args {
  std::string mds;
  uint64_t block_size = 1 << 20;
  int blocks = 256, inflight = 64, latency_gets = 200;
  std::string transport = "auto";
  bool json = false;
  bool busy_poll = true;  // KvOptions::busy_poll
  int tokens = 0;         // > 0: the restore benchmark (bench/kv_restore.py)
  std::string restore_script;
};

bool Parse(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    std::string f = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (f == "--json") { a->json = true; continue; }
    if (f == "--no-busy-poll") { a->busy_poll = false; continue; }
    if ((v = next()) == nullptr) return false;
    if (f == "--mds") a->mds = v;
    else if (f == "--block-size") {
      Result<uint64_t> n = client::ParseSize(v);
      if (!n.ok() || *n == 0) return false;
      a->block_size = *n;
    } else if (f == "--blocks") a->blocks = std::atoi(v);
    else if (f == "--inflight") a->inflight = std::atoi(v);
    else if (f == "--latency-gets") a->latency_gets = std::atoi(v);
    else if (f == "--transport") a->transport = v;
    else if (f == "--tokens") a->tokens = std::atoi(v);
    else if (f == "--restore-script") a->restore_script = v;
    else return false;
  }
  return !a->mds.empty() && a->blocks > 0 && a->inflight > 0 && a->latency_gets >= 0 &&
         a->tokens >= 0;
}

int Fail(const std::string& what, const Status& st) {
  std::fprintf(stderr, "sfs-bench kv: %s: %s\n", what.c_str(), st.ToString().c_str());
  return 1;
}

// Single-quoted for sh -c.
std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The restore benchmark: bench/kv_restore.py for one context, its JSON line
// passed through (or its table line without --json).
int RunRestore(const Args& a) {
  std::string script = a.restore_script;
  if (script.empty() && std::getenv("SFS_KV_RESTORE") != nullptr) script = std::getenv("SFS_KV_RESTORE");
  std::filesystem::path exe_dir = std::filesystem::read_symlink("/proc/self/exe").parent_path();
  if (script.empty()) script = (exe_dir / "../../bench/kv_restore.py").lexically_normal().string();
  if (!std::filesystem::exists(script)) {
    std::fprintf(stderr, "sfs-bench kv: %s not found (--restore-script)\n", script.c_str());
    return 2;
  }
  std::string env;
  std::filesystem::path binding = exe_dir / "../client/python";  // a build tree's stripefs
  if (std::getenv("PYTHONPATH") == nullptr && std::filesystem::exists(binding / "stripefs")) {
    env = "PYTHONPATH=" + Quote(binding.lexically_normal().string()) + " ";
  }
  // Debian's python3 (numpy, torch) unless $PYTHON names another.
  std::string python = std::getenv("PYTHON") != nullptr ? std::getenv("PYTHON")
                       : std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3"
                                                                     : "python3";
  std::string cmd = env + Quote(python) + " " + Quote(script) + " " + Quote(a.mds) + " --tokens " +
                    std::to_string(a.tokens) + " --pooled --transport " +
                    Quote(a.transport == "auto" ? "tcp" : a.transport) + (a.json ? " --json" : "");
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return Fail(python, Status(errno, "popen"));
  std::string out;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof(buf), p)) out.append(buf, n);
  int rc = ::pclose(p);
  std::fputs(out.c_str(), stdout);
  if (rc != 0) {
    std::fprintf(stderr, "sfs-bench kv: %s failed (status %d)\n", script.c_str(), rc);
    return 1;
  }
  return 0;
}

}  // namespace

int RunKv(int argc, char** argv) {
  Args a;
  if (argc > 1 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (!Parse(argc, argv, &a)) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  if (a.tokens > 0) return RunRestore(a);
  client::kv::KvOptions o;
  o.mds_address = a.mds;
  o.max_inflight = a.inflight;
  o.busy_poll = a.busy_poll;
  Result<client::Transport> t = client::ParseTransport(a.transport);
  if (!t.ok()) return Fail("--transport", t.status());
  o.transport = *t;
  auto kv = client::kv::KvClient::Connect(o);
  if (!kv.ok()) return Fail("connect", kv.status());
  auto ns = (*kv)->Open("bench-kv", a.block_size);
  if (!ns.ok()) return Fail("namespace", ns.status());
  const size_t n = static_cast<size_t>(a.blocks);
  std::vector<std::string> keys(n), groups(n);
  std::vector<std::vector<uint8_t>> data(n, std::vector<uint8_t>(a.block_size));
  std::mt19937_64 rng(42);
  for (size_t i = 0; i < n; ++i) {
    keys[i] = "blk-" + std::to_string(i);
    groups[i] = "grp-" + std::to_string(i / 8);
    for (size_t j = 0; j < a.block_size; j += 4096) data[i][j] = static_cast<uint8_t>(rng());
  }
  std::vector<client::kv::KvNamespace::PutItem> puts;
  for (size_t i = 0; i < n; ++i) puts.push_back({{keys[i], groups[i]}, data[i]});
  auto t0 = std::chrono::steady_clock::now();
  std::vector<Status> put_st = (*ns)->MultiPut(puts);
  const double put_s = Since(t0);
  for (const Status& st : put_st) if (!st.ok()) return Fail("put", st);

  std::vector<std::vector<uint8_t>> back(n, std::vector<uint8_t>(a.block_size));
  std::vector<client::kv::KvNamespace::GetItem> gets;
  for (size_t i = 0; i < n; ++i) gets.push_back({{keys[i], groups[i]}, back[i]});
  t0 = std::chrono::steady_clock::now();
  std::vector<Result<bool>> got = (*ns)->MultiGet(gets);
  const double get_s = Since(t0);
  for (size_t i = 0; i < n; ++i) {
    if (!got[i].ok()) return Fail("get", got[i].status());
    if (!*got[i] || back[i] != data[i]) {
      return Fail("get", Status(EIO, keys[i] + (*got[i] ? ": wrong bytes" : ": a miss (capacity?)")));
    }
  }
  std::vector<double> lat;
  for (int i = 0; i < a.latency_gets; ++i) {
    size_t k = static_cast<size_t>(i) % n;
    auto t1 = std::chrono::steady_clock::now();
    Result<bool> r = (*ns)->GetInto({keys[k], groups[k]}, back[k]);
    lat.push_back(Since(t1) * 1e3);
    if (!r.ok()) return Fail("get", r.status());
  }
  std::sort(lat.begin(), lat.end());
  auto pct = [&](double p) {
    return lat.empty() ? 0.0 : lat[std::min(lat.size() - 1, static_cast<size_t>(p * lat.size()))];
  };
  std::vector<client::kv::BlockId> ids;
  for (size_t i = 0; i < n; ++i) ids.push_back({keys[i], groups[i]});
  t0 = std::chrono::steady_clock::now();
  auto ex = (*ns)->Exists(ids);
  const double exists_s = Since(t0);
  if (!ex.ok()) return Fail("exists", ex.status());
  const double gb = static_cast<double>(n * a.block_size) / 1e9;
  if (a.json) {
    std::printf("{\"block_size\": %llu, \"blocks\": %zu, \"inflight\": %d, \"put_gbps\": %.3f, "
                "\"get_gbps\": %.3f, \"get_p50_ms\": %.3f, \"get_p99_ms\": %.3f, "
                "\"exists_ms\": %.3f}\n",
                static_cast<unsigned long long>(a.block_size), n, a.inflight, gb / put_s,
                gb / get_s, pct(0.5), pct(0.99), exists_s * 1e3);
  } else {
    std::printf("kv: %zu blocks of %llu bytes, %d in flight, over %zu OSTs\n", n,
                static_cast<unsigned long long>(a.block_size), a.inflight, (*kv)->osts().size());
    std::printf("  multi_put  %8.3f GB/s\n  multi_get  %8.3f GB/s\n", gb / put_s, gb / get_s);
    std::printf("  get (one)  p50 %.3f ms  p99 %.3f ms  (%zu gets)\n", pct(0.5), pct(0.99),
                lat.size());
    std::printf("  exists     %.3f ms for %zu keys\n", exists_s * 1e3, n);
  }
  return 0;
}

}  // namespace sfs::bench
