// Throughput of the Reed–Solomon codec on this machine (not a test):
//   build/common/ec_bench [--chunk BYTES] [--seconds S]
// For 4+2 and 8+2, prints encode GB/s (data bytes in per second) and
// reconstruct GB/s (bytes rebuilt per second, with M data chunks lost).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

#include "common/ec/rs_codec.h"

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

int Run(int k, int m, size_t chunk, double seconds) {
  auto codec = sfs::ec::RsCodec::Create(k, m);
  if (!codec.ok()) {
    std::fprintf(stderr, "ec_bench: %s\n", codec.status().ToString().c_str());
    return 1;
  }
  std::vector<std::vector<uint8_t>> bufs(k + m, std::vector<uint8_t>(chunk));
  std::mt19937_64 rng(1);
  for (int i = 0; i < k; ++i)
    for (auto& b : bufs[i]) b = static_cast<uint8_t>(rng());
  std::vector<std::span<const uint8_t>> data(bufs.begin(), bufs.begin() + k);
  std::vector<std::span<uint8_t>> parity(bufs.begin() + k, bufs.end());
  std::vector<std::span<uint8_t>> all(bufs.begin(), bufs.end());

  uint64_t iters = 0;
  auto t0 = Clock::now();
  do {
    if (!(*codec)->Encode(data, parity).ok()) return 1;
    ++iters;
  } while (Seconds(t0) < seconds);
  double enc = double(iters) * k * chunk / Seconds(t0) / 1e9;

  std::vector<int> erased;
  for (int i = 0; i < m; ++i) erased.push_back(i);  // the worst case: data chunks lost
  iters = 0;
  t0 = Clock::now();
  do {
    if (!(*codec)->Reconstruct(all, erased).ok()) return 1;
    ++iters;
  } while (Seconds(t0) < seconds);
  double rec = double(iters) * m * chunk / Seconds(t0) / 1e9;
  // Reconstruct reads K chunks to rebuild M; also report the rate over the K read.
  double rec_in = rec * k / m;
  std::printf("%d+%d chunk %zu B: encode %.2f GB/s (data in), reconstruct %d lost: %.2f GB/s "
              "rebuilt (%.2f GB/s read)\n",
              k, m, chunk, enc, m, rec, rec_in);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  size_t chunk = 1 << 20;
  double seconds = 1.0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--chunk" && i + 1 < argc) {
      chunk = std::strtoull(argv[++i], nullptr, 0);
    } else if (a == "--seconds" && i + 1 < argc) {
      seconds = std::strtod(argv[++i], nullptr);
    } else {
      std::fprintf(stderr, "usage: ec_bench [--chunk BYTES] [--seconds S]\n");
      return 2;
    }
  }
  if (chunk == 0) {
    std::fprintf(stderr, "ec_bench: --chunk must be > 0\n");
    return 2;
  }
  int rc = Run(4, 2, chunk, seconds);
  return rc ? rc : Run(8, 2, chunk, seconds);
}
