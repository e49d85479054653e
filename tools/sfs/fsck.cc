// `sfs fsck`: check (and repair) a StripeFS file system.
//
// Offline (the MDS stopped): opens the MDS's LevelDB directly and runs the
// checks of tools/fsck/fsck.h against it and the OST directories given; with
// --repair it fixes what it can. Online (--mds HOST:PORT, read-only): walks
// the namespace through libsfs and stats, on its OSS, the object holding each
// regular file's last byte, reporting files whose data object is missing.
// One line per problem on stdout, a summary on stderr. Exit status: 0 clean,
// 1 problems found (repaired or not), 2 usage, 8 operational error (as e2fsck).
#include <getopt.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "client/lib/client.h"
#include "common/rpc/rpc.h"
#include "tools/fsck/fsck.h"
#include "oss.pb.h"
#include "tools/sfs/commands.h"

namespace sfs::tools {
namespace {

constexpr int kExitProblems = 1;
constexpr int kExitUsage = 2;
constexpr int kExitError = 8;

constexpr const char* kFsckUsage =
    "usage: sfs fsck --mds-data DIR [--ost DIR]... [--repair]   offline (MDS stopped)\n"
    "       sfs fsck --mds HOST:PORT                             online, read-only\n"
    "\n"
    "Offline: cross-checks the MDS namespace (dentries, inodes, link counts, orphan and\n"
    "destroy records) and the given OST directories (stray objects, missing objects,\n"
    "crc sidecars without objects, and each object's data against its crc sidecar:\n"
    "one line per corrupt 4 KiB chunk, naming OST, oid and offset). --repair removes\n"
    "dangling dentries, fixes link counts, removes stray objects and links lost inodes\n"
    "into /lost+found; it reports corrupt data but cannot fix it.\n"
    "Online: walks the namespace and reports regular files whose last object is missing.\n"
    "Exit: 0 clean, 1 problems found, 2 usage, 8 operational error.\n";

int Offline(std::string mds_data, const std::vector<std::string>& osts, bool repair) {
  // sfs-mds --data DIR keeps its LevelDB in DIR/meta; the LevelDB dir itself works too.
  if (access((mds_data + "/meta/CURRENT").c_str(), F_OK) == 0) mds_data += "/meta";
  if (access((mds_data + "/CURRENT").c_str(), F_OK) != 0) {
    std::fprintf(stderr, "sfs fsck: %s: not an MDS data directory (no LevelDB CURRENT file)\n",
                 mds_data.c_str());
    return kExitError;
  }
  auto store = mds::OpenLevelDbStore(mds_data);
  if (!store.ok()) {
    std::string msg = store.status().ToString();
    if (msg.find("lock") != std::string::npos || msg.find("LOCK") != std::string::npos) {
      std::fprintf(stderr,
                   "sfs fsck: %s is in use (LevelDB LOCK held): stop sfs-mds first, or check a "
                   "running file system read-only with --mds HOST:PORT\n",
                   mds_data.c_str());
    } else {
      std::fprintf(stderr, "sfs fsck: cannot open %s: %s\n", mds_data.c_str(), msg.c_str());
    }
    return kExitError;
  }
  mds::fsck::Options opts;
  opts.repair = repair;
  opts.ost_dirs = osts;
  auto report = mds::fsck::Check(store->get(), opts);
  if (!report.ok()) {
    std::fprintf(stderr, "sfs fsck: %s\n", report.status().ToString().c_str());
    return kExitError;
  }
  for (const auto& p : report->problems) {
    std::printf("%s%s\n", p.text.c_str(), p.repaired ? " [repaired]" : "");
  }
  std::fprintf(stderr,
               "sfs fsck: %llu inodes, %llu dentries, %llu orphans, %llu queued destroys, %llu "
               "objects (%llu verified against crcs) on %zu OST(s), %llu mirrored files "
               "(%llu degraded): %zu problem(s)%s\n",
               static_cast<unsigned long long>(report->inodes),
               static_cast<unsigned long long>(report->dentries),
               static_cast<unsigned long long>(report->orphans),
               static_cast<unsigned long long>(report->queued_destroys),
               static_cast<unsigned long long>(report->objects),
               static_cast<unsigned long long>(report->objects_verified), osts.size(),
               static_cast<unsigned long long>(report->mirrored_files),
               static_cast<unsigned long long>(report->degraded_files), report->problems.size(),
               repair ? " (repair mode)" : "");
  return report->clean() ? 0 : kExitProblems;
}

// Online mode: one channel per OSS address, a stat per file.
class OnlineChecker {
 public:
  explicit OnlineChecker(client::Client* c) : c_(c), io_(rpc::IoContext::Create(1)) {}

  Status Init() {
    SFS_ASSIGN_OR_RETURN(auto osts, c_->ListOsts());
    for (const auto& o : osts) address_[o.index] = o.address;
    return Status::Ok();
  }
  // Walks dir recursively, printing each problem.
  void Walk(uint64_t dir, const std::string& path) {
    std::string after;
    for (;;) {
      auto page = c_->Readdir(cred_, dir, after, 256, true);
      if (!page.ok()) return Problem(path + ": readdir: " + page.status().ToString());
      for (const auto& e : page->entries) {
        after = e.name;
        std::string child = (path == "/" ? "" : path) + "/" + e.name;
        if (!e.attr) continue;
        if (S_ISDIR(e.attr->mode)) Walk(e.ino, child);
        if (S_ISREG(e.attr->mode)) CheckFile(*e.attr, child);
      }
      if (page->eof || page->entries.empty()) return;
    }
  }
  int problems() const { return problems_; }
  int files() const { return files_; }

 private:
  void Problem(const std::string& text) {
    std::printf("%s\n", text.c_str());
    ++problems_;
  }
  void CheckFile(const client::Attr& a, const std::string& path) {
    ++files_;
    if (a.size == 0) return;
    auto l = c_->GetLayout(cred_, a.ino);
    if (!l.ok()) return Problem(path + ": getstripe: " + l.status().ToString());
    if (l->objects.empty() || l->stripe_size == 0) return;
    const client::StripeObject& o = l->objects[((a.size - 1) / l->stripe_size) % l->Stripes()];
    auto exists = Stat(o.ost, o.oid, l->capability);
    if (!exists.ok()) {
      return Problem(path + ": object " + std::to_string(o.ost) + ":" + std::to_string(o.oid) +
                     ": " + exists.status().ToString());
    }
    if (!*exists) {
      Problem(path + " (inode " + std::to_string(a.ino) + ", size " + std::to_string(a.size) +
              "): object " + std::to_string(o.ost) + ":" + std::to_string(o.oid) +
              " holding its last byte is missing");
    }
  }
  // cap: the layout's capability ("" without a cluster key; docs/protocol.md).
  Result<bool> Stat(uint32_t ost, uint64_t oid, const std::string& cap) {
    auto it = address_.find(ost);
    if (it == address_.end()) return Status(ESTALE, "unknown OST");
    auto& ch = channels_[it->second];
    if (!ch) ch = io_->MakeTcpChannel(it->second);
    proto::OssRequest req;
    req.set_ost(ost);
    req.set_oid(oid);
    req.mutable_stat();
    if (!cap.empty()) req.add_capabilities(cap);
    rpc::Response raw;
    rpc::CallOptions opts;
    opts.timeout = std::chrono::milliseconds(10000);
    SFS_RETURN_IF_ERROR(ch->Call(rpc::kServiceOss, req.SerializeAsString(), {}, {}, &raw, opts));
    proto::OssResponse resp;
    if (!resp.ParseFromString(raw.payload)) return Status(EBADMSG, "unparsable OSS reply");
    if (resp.status().code() != 0) return Status(resp.status().code(), resp.status().message());
    return resp.stat().exists();
  }

  client::Client* c_;
  client::Cred cred_;  // root
  std::unique_ptr<rpc::IoContext> io_;
  std::map<uint32_t, std::string> address_;
  std::map<std::string, std::unique_ptr<rpc::Channel>> channels_;
  int problems_ = 0;
  int files_ = 0;
};

int Online(const std::string& mds) {
  client::Options o;
  o.mds_address = mds;
  o.recovery_timeout = std::chrono::milliseconds(10000);
  auto c = client::Client::Connect(o);
  if (!c.ok()) {
    std::fprintf(stderr, "sfs fsck: %s\n", c.status().ToString().c_str());
    return kExitError;
  }
  OnlineChecker checker(c->get());
  Status st = checker.Init();
  if (!st.ok()) {
    std::fprintf(stderr, "sfs fsck: OST map: %s\n", st.ToString().c_str());
    return kExitError;
  }
  checker.Walk(client::kRootIno, "/");
  std::fprintf(stderr, "sfs fsck: online: %d regular files, %d problem(s)\n", checker.files(),
               checker.problems());
  return checker.problems() == 0 ? 0 : kExitProblems;
}

}  // namespace

int RunFsck(int argc, char** argv) {
  static const option kLong[] = {{"mds-data", required_argument, nullptr, 'd'},
                                 {"ost", required_argument, nullptr, 'o'},
                                 {"repair", no_argument, nullptr, 'r'},
                                 {"mds", required_argument, nullptr, 'm'},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  std::string mds_data, mds;
  std::vector<std::string> osts;
  bool repair = false;
  optind = 1;
  int opt;
  while ((opt = getopt_long(argc, argv, "h", kLong, nullptr)) != -1) {
    switch (opt) {
      case 'd': mds_data = optarg; break;
      case 'o': osts.push_back(optarg); break;
      case 'r': repair = true; break;
      case 'm': mds = optarg; break;
      case 'h': std::fputs(kFsckUsage, stdout); return 0;
      default: std::fputs(kFsckUsage, stderr); return kExitUsage;
    }
  }
  if (optind != argc || mds_data.empty() == mds.empty() || (!mds.empty() && repair)) {
    std::fputs(kFsckUsage, stderr);
    return kExitUsage;
  }
  return mds.empty() ? Offline(mds_data, osts, repair) : Online(mds);
}

}  // namespace sfs::tools
