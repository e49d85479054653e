// oss_store_bench: the cost of on-disk checksums at the store level.
//
//   oss_store_bench DIR [MIB]
//
// For checksums off and on, writes MIB MiB (default 256) to 4 objects in
// 1 MiB writes, reads it back in 1 MiB reads, then does 4096 unaligned
// 1000-byte writes (read-modify-write of a chunk's crc) and reads; prints
// MiB/s or op/s per phase. Data stays in the page cache (no sync), so the
// numbers show the CPU and system-call cost, the worst case for the ratio.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "oss/store/object_store.h"

namespace sfs::oss {
namespace {

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

bool Run(const std::string& dir, bool checksums, uint64_t mib) {
  std::filesystem::remove_all(dir);
  FileStoreOptions opts;
  opts.checksums = checksums;
  auto s = OpenFileObjectStore(dir, opts);
  if (!s.ok()) return std::fprintf(stderr, "%s\n", s.status().ToString().c_str()), false;
  ObjectStore& store = **s;
  std::vector<uint8_t> buf(1 << 20);
  std::mt19937 rng(1);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  auto t = std::chrono::steady_clock::now();
  for (uint64_t i = 0; i < mib; ++i) {
    if (!store.Write(1 + i % 4, (i / 4) << 20, buf, false).ok()) return false;
  }
  double write_s = Seconds(t);
  t = std::chrono::steady_clock::now();
  for (uint64_t i = 0; i < mib; ++i) {
    if (!store.Read(1 + i % 4, (i / 4) << 20, buf).ok()) return false;
  }
  double read_s = Seconds(t);
  constexpr int kSmall = 4096;
  t = std::chrono::steady_clock::now();
  for (int i = 0; i < kSmall; ++i) {
    uint64_t off = rng() % ((mib / 4) << 20);
    if (!store.Write(1, off, {buf.data(), 1000}, false).ok()) return false;
  }
  double small_w = Seconds(t);
  t = std::chrono::steady_clock::now();
  for (int i = 0; i < kSmall; ++i) {
    uint64_t off = rng() % ((mib / 4) << 20);
    if (!store.Read(1, off, {buf.data(), 1000}).ok()) return false;
  }
  double small_r = Seconds(t);
  std::printf("checksums=%-3s  write 1MiB: %7.0f MiB/s  read 1MiB: %7.0f MiB/s  "
              "write 1000B unaligned: %7.0f op/s  read 1000B: %7.0f op/s\n",
              checksums ? "on" : "off", mib / write_s, mib / read_s, kSmall / small_w,
              kSmall / small_r);
  std::filesystem::remove_all(dir);
  return true;
}

}  // namespace
}  // namespace sfs::oss

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: oss_store_bench DIR [MIB]\n");
    return 2;
  }
  uint64_t mib = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 256;
  if (mib < 4) mib = 4;
  for (int round = 0; round < 2; ++round) {
    if (!sfs::oss::Run(std::string(argv[1]) + "/ost", false, mib)) return 1;
    if (!sfs::oss::Run(std::string(argv[1]) + "/ost", true, mib)) return 1;
  }
  return 0;
}
