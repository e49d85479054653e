// sfs-demo: writes a striped file through libsfs, reads it back and checks it.
//
//   sfs-demo HOST:PORT [NAME]
//
// Creates /NAME (default sfs-demo.dat) with 4 stripes of 64 KiB (fewer if
// fewer OSTs are up), writes 8 MiB of a position-dependent pattern, reads it
// back, verifies every byte, and prints the file's layout and the OSTs. A
// quick check of a cluster before any mount exists. Exit 0 iff all is well.
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "client/lib/client.h"

namespace {

using sfs::Status;
using namespace sfs::client;

constexpr uint64_t kFileSize = 8 << 20;
constexpr uint64_t kStripeSize = 64 << 10;
constexpr int kStripeCount = 4;

// Byte i of the file: differs across stripes, rows and objects.
uint8_t PatternByte(uint64_t i) { return static_cast<uint8_t>((i * 2654435761u) >> 13 ^ i >> 16); }

int Fail(const char* what, const Status& st) {
  std::fprintf(stderr, "sfs-demo: %s: %s\n", what, st.ToString().c_str());
  return 1;
}

double MiBps(uint64_t bytes, std::chrono::steady_clock::duration d) {
  double s = std::chrono::duration<double>(d).count();
  return s > 0 ? bytes / s / (1 << 20) : 0;
}

void PrintLayout(const LayoutSpec& l, const std::vector<OstStatus>& osts) {
  std::printf("stripe_size:  %llu\nstripe_count: %zu\nobjects:\n",
              static_cast<unsigned long long>(l.stripe_size), l.objects.size());
  for (size_t i = 0; i < l.objects.size(); ++i) {
    std::string addr = "?";
    for (const OstStatus& o : osts) {
      if (o.index == l.objects[i].ost) addr = o.address;
    }
    std::printf("  - { stripe: %zu, ost: %u, oid: %llu, oss: %s }\n", i, l.objects[i].ost,
                static_cast<unsigned long long>(l.objects[i].oid), addr.c_str());
  }
}

int Run(Client& client, const std::string& name) {
  Cred cred;
  sfs::Result<std::vector<OstStatus>> osts = client.ListOsts();
  if (!osts.ok()) return Fail("list OSTs", osts.status());
  int up = static_cast<int>(std::count_if(osts->begin(), osts->end(),
                                          [](const OstStatus& o) { return o.up; }));
  std::printf("OSTs: %zu known, %d up\n", osts->size(), up);
  LayoutSpec spec;
  spec.stripe_size = kStripeSize;
  spec.stripe_count = std::max(1, std::min(kStripeCount, up));
  Attr attr;
  auto file = client.Create(cred, kRootIno, name, 0644, O_RDWR | O_CREAT | O_TRUNC, &attr, &spec);
  if (!file.ok()) return Fail(("create /" + name).c_str(), file.status());
  std::shared_ptr<File> f = *file;

  std::vector<uint8_t> data(kFileSize);
  for (uint64_t i = 0; i < kFileSize; ++i) data[i] = PatternByte(i);
  auto t0 = std::chrono::steady_clock::now();
  auto w = client.Write(*f, 0, data);
  if (!w.ok()) return Fail("write", w.status());
  Status st = client.Fsync(*f, false);
  if (!st.ok()) return Fail("fsync", st);
  auto t1 = std::chrono::steady_clock::now();

  std::vector<uint8_t> back(kFileSize + 4096, 0xAA);
  auto r = client.Read(*f, 0, back);
  if (!r.ok()) return Fail("read", r.status());
  auto t2 = std::chrono::steady_clock::now();
  if (*r != kFileSize) {
    std::fprintf(stderr, "sfs-demo: read returned %zu bytes, want %llu\n", *r,
                 static_cast<unsigned long long>(kFileSize));
    return 1;
  }
  for (uint64_t i = 0; i < kFileSize; ++i) {
    if (back[i] != data[i]) {
      std::fprintf(stderr, "sfs-demo: byte %llu differs: %u != %u\n",
                   static_cast<unsigned long long>(i), back[i], data[i]);
      return 1;
    }
  }
  st = client.Close(f);
  if (!st.ok()) return Fail("close", st);
  auto a = client.GetAttr(cred, f->ino());
  if (!a.ok()) return Fail("getattr", a.status());

  std::printf("/%s: ino %llu, size %llu, blocks %llu\n", name.c_str(),
              static_cast<unsigned long long>(a->ino), static_cast<unsigned long long>(a->size),
              static_cast<unsigned long long>(a->blocks));
  std::printf("write+fsync %.1f MiB/s, read %.1f MiB/s, verified OK\n", MiBps(kFileSize, t1 - t0),
              MiBps(kFileSize, t2 - t1));
  PrintLayout(f->layout(), *osts);
  if (a->size != kFileSize) {
    std::fprintf(stderr, "sfs-demo: MDS size %llu, want %llu\n",
                 static_cast<unsigned long long>(a->size),
                 static_cast<unsigned long long>(kFileSize));
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: sfs-demo HOST:PORT [NAME]\n");
    return 2;
  }
  Options opts;
  opts.mds_address = argv[1];
  auto client = Client::Connect(opts);
  if (!client.ok()) return Fail("connect", client.status());
  return Run(**client, argc == 3 ? argv[2] : "sfs-demo.dat");
}
