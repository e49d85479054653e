// `sfs scrub [PATH]`: has the MDS read back every copy and chunk of the
// files under PATH, check crc32c, copy and parity agreement, and queue bad
// objects for the resyncer, which rewrites them from the good ones
// (docs/redundancy.md "Scrub").
#include <getopt.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstring>

#include "tools/sfs/commands.h"

namespace sfs::tools {
namespace {

constexpr const char* kHelp =
    "usage: sfs scrub [--no-repair] [-v] [--json] [PATH]\n"
    "\n"
    "Reads every mirror copy and EC chunk object of each regular file under PATH\n"
    "(default: the current directory) through its OSS, which checks each 4 KiB\n"
    "chunk's crc32c; compares the copies of every mirror stripe and re-encodes every\n"
    "EC row's parity from its data. Bad objects (rot, disagreement; the first good\n"
    "copy wins a mirror disagreement, the data an EC one) are marked stale so the MDS\n"
    "rewrites them from the others in the background ('sfs rebuild status --wait').\n"
    "Files open for write are skipped (busy). Root only. Exit 0 clean, 1 problems.\n"
    "\n"
    "  --no-repair   only report\n"
    "  -v            print each problem\n"
    "  --json        {\"files\",\"busy\",\"objects\",\"bytes\",\"bad_objects\",\"mismatches\",\"repairs\"}\n";

struct Totals {
  uint64_t files = 0, busy = 0, objects = 0, bytes = 0, bad = 0, mismatches = 0, repairs = 0;
  bool failed = false;
};

Status Walk(Target& t, const std::string& path, const client::Attr& a, bool repair, bool verbose,
            Totals* tot) {
  if (S_ISREG(a.mode)) {
    auto r = t.client().Scrub(t.cred(), a.ino, repair);
    if (!r.ok()) {
      std::fprintf(stderr, "sfs scrub: %s: %s\n", path.c_str(), r.status().ToString().c_str());
      tot->failed = true;
      return Status::Ok();
    }
    ++tot->files;
    tot->busy += r->busy ? 1 : 0;
    tot->objects += r->objects_checked;
    tot->bytes += r->bytes_checked;
    tot->bad += r->bad_objects;
    tot->mismatches += r->mismatched_rows;
    tot->repairs += r->repairs_queued;
    if (verbose) {
      for (const auto& p : r->problems) std::printf("%s: %s\n", path.c_str(), p.c_str());
    }
    return Status::Ok();
  }
  if (!S_ISDIR(a.mode)) return Status::Ok();
  std::string after;
  for (;;) {
    SFS_ASSIGN_OR_RETURN(client::DirPage page, t.client().Readdir(t.cred(), a.ino, after, 1024, true));
    for (const auto& e : page.entries) {
      if (!e.attr) continue;
      SFS_RETURN_IF_ERROR(Walk(t, path + (path.back() == '/' ? "" : "/") + e.name, *e.attr, repair,
                               verbose, tot));
    }
    if (page.eof || page.entries.empty()) return Status::Ok();
    after = page.entries.back().name;
  }
}

}  // namespace

int RunScrub(int argc, char** argv) {
  static const option kLong[] = {{"no-repair", no_argument, nullptr, 'n'},
                                 {"verbose", no_argument, nullptr, 'v'},
                                 {"mds", required_argument, nullptr, 'M'},
                                 {"json", no_argument, nullptr, 'J'},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  GlobalOptions g;
  bool repair = true, verbose = false;
  optind = 1;
  int opt;
  while ((opt = getopt_long(argc, argv, "vh", kLong, nullptr)) != -1) {
    if (opt == 'n') repair = false;
    else if (opt == 'v') verbose = true;
    else if (opt == 'h') { std::fputs(kHelp, stdout); return 0; }
    else if (!ParseGlobal(opt, optarg, &g)) { std::fputs(kHelp, stderr); return 2; }
  }
  if (argc - optind > 1) { std::fputs(kHelp, stderr); return 2; }
  std::string path = optind < argc ? argv[optind] : (g.mds.empty() ? "." : "/");
  auto t = Target::Open(g, path);
  if (!t.ok()) return Fail("scrub", path, t.status());
  auto a = (*t)->Stat(path);
  if (!a.ok()) return Fail("scrub", path, a.status());
  Totals tot;
  Status st = Walk(**t, path, *a, repair, verbose, &tot);
  if (!st.ok()) return Fail("scrub", path, st);
  if (g.json) {
    std::printf("{\"files\":%llu,\"busy\":%llu,\"objects\":%llu,\"bytes\":%llu,\"bad_objects\":%llu,"
                "\"mismatches\":%llu,\"repairs\":%llu}\n",
                (unsigned long long)tot.files, (unsigned long long)tot.busy,
                (unsigned long long)tot.objects, (unsigned long long)tot.bytes,
                (unsigned long long)tot.bad, (unsigned long long)tot.mismatches,
                (unsigned long long)tot.repairs);
  } else {
    std::printf("scrubbed %llu file(s) (%llu busy, skipped), %llu object(s), %s: %llu bad object(s), "
                "%llu mismatch(es), %llu repair(s) queued\n",
                (unsigned long long)tot.files, (unsigned long long)tot.busy,
                (unsigned long long)tot.objects, HumanSize(tot.bytes).c_str(),
                (unsigned long long)tot.bad, (unsigned long long)tot.mismatches,
                (unsigned long long)tot.repairs);
  }
  return tot.failed || tot.bad > 0 || tot.mismatches > 0 ? 1 : 0;
}

}  // namespace sfs::tools
