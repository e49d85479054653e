// `sfs getstripe`: show the layout of files and the default layout of
// directories, Lustre-style (YAML-like keys) or as JSON.
#include <dirent.h>
#include <getopt.h>
#include <sys/stat.h>

#include <cstdio>
#include <sstream>

#include "tools/sfs/commands.h"

namespace sfs::tools {
namespace {

constexpr const char* kHelp =
    "usage: sfs getstripe [-v] [-d] [-r] [--json] PATH...\n"
    "\n"
    "Prints stripe_count, stripe_size, stripe_offset and pool; for a file also its\n"
    "objects (OST index and object id); for a directory its default layout, marked\n"
    "'inherited' when it comes from an ancestor (or the file system's root default).\n"
    "\n"
    "  -v, --verbose      also the inode number and the layout source\n"
    "  -d, --directory    show a directory itself, not its entries (the default without -r)\n"
    "  -r, --recursive    walk directories and show every file and directory below\n"
    "      --json         one JSON object per line: {\"path\",\"type\",\"stripe_count\",\n"
    "                     \"stripe_size\",\"stripe_offset\",\"pool\",\"mirror_count\",\"ec_data\",\n"
    "                     \"ec_parity\",\"inherited\",\n"
    "                     \"objects\":[{\"ost\",\"oid\",\"mirror\",\"state\"}]}\n"
    "\n"
    "A mirrored file (mirror_count 2 or 3) lists every copy of every stripe, each with\n"
    "its state: ok, or stale (it missed writes while its OSS was away; 'sfs mirror\n"
    "resync' brings it back). An erasure-coded file (ec: K+M) lists its K+M objects\n"
    "with their states: a stale one missed writes and is rebuilt from the others on read.\n"
    "      --mds HOST:PORT\n"
    "\n"
    "examples:\n"
    "  sfs getstripe /mnt/sfs/ckpt/model.pt\n"
    "  sfs getstripe -r --json /mnt/sfs/datasets | jq .stripe_count\n";

struct Args {
  GlobalOptions g;
  bool verbose = false;
  bool recursive = false;
  std::vector<std::string> paths;
};

void PrintText(const std::string& path, const client::Attr& a, const client::LayoutSpec& l, bool verbose) {
  std::ostringstream os;
  os << path << "\n";
  if (verbose) os << "inode:         " << a.ino << "\n";
  os << "stripe_count:  " << l.stripe_count << "\n";
  os << "stripe_size:   " << l.stripe_size << "\n";
  int32_t offset = l.objects.empty() ? l.start_ost : static_cast<int32_t>(l.objects[0].ost);
  os << "stripe_offset: " << offset << "\n";
  os << "pool:          " << (l.pool.empty() ? "-" : l.pool) << "\n";
  if (l.mirror_count > 1 || (S_ISDIR(a.mode) && l.mirror_count != 0)) {
    os << "mirror_count:  " << l.mirror_count << "\n";
  }
  if (l.IsEc()) os << "ec:            " << l.ec_data << "+" << l.ec_parity << "\n";
  if (S_ISDIR(a.mode)) {
    os << "layout:        " << (l.inherited ? "inherited" : "set on this directory") << "\n";
  } else if (l.IsEc()) {
    // Object i holds data chunk (i - row) mod K+M of each row, parity when
    // that is >= K: every object carries both, so no object is "the parity".
    size_t stale = 0;
    for (const auto& o : l.objects) stale += o.stale ? 1 : 0;
    os << "ec_state:      " << (stale == 0 ? "ok" : std::to_string(stale) + " stale of " +
                                                         std::to_string(l.objects.size()))
       << "\n";
    os << "\tobject\tobdidx\t\t objid\tstate\n";
    for (size_t i = 0; i < l.objects.size(); ++i) {
      const auto& o = l.objects[i];
      char line[96];
      std::snprintf(line, sizeof(line), "\t%6zu\t%6u\t%#14llx\t%s\n", i, o.ost,
                    static_cast<unsigned long long>(o.oid), o.lost ? "lost" : o.stale ? "stale" : "ok");
      os << line;
    }
  } else if (l.Copies() > 1) {
    os << "\tmirror\tstripe\tobdidx\t\t objid\tstate\n";
    for (size_t i = 0; i < l.objects.size(); ++i) {
      const auto& o = l.objects[i];
      char line[96];
      std::snprintf(line, sizeof(line), "\t%6u\t%6zu\t%6u\t%#14llx\t%s\n", o.mirror,
                    i % l.Stripes(), o.ost, static_cast<unsigned long long>(o.oid),
                    o.lost ? "lost" : o.stale ? "stale" : "ok");
      os << line;
    }
  } else {
    os << "\tobdidx\t\t objid\n";
    for (const auto& o : l.objects) {
      char line[64];
      std::snprintf(line, sizeof(line), "\t%6u\t%#14llx\n", o.ost, static_cast<unsigned long long>(o.oid));
      os << line;
    }
  }
  std::fputs(os.str().c_str(), stdout);
}

void PrintJson(const std::string& path, const client::Attr& a, const client::LayoutSpec& l) {
  std::ostringstream os;
  int32_t offset = l.objects.empty() ? l.start_ost : static_cast<int32_t>(l.objects[0].ost);
  os << "{\"path\":" << JsonString(path) << ",\"type\":\"" << (S_ISDIR(a.mode) ? "dir" : "file")
     << "\",\"ino\":" << a.ino << ",\"stripe_count\":" << l.stripe_count
     << ",\"stripe_size\":" << l.stripe_size << ",\"stripe_offset\":" << offset
     << ",\"pool\":" << JsonString(l.pool) << ",\"mirror_count\":" << l.mirror_count
     << ",\"ec_data\":" << l.ec_data << ",\"ec_parity\":" << l.ec_parity
     << ",\"inherited\":" << (l.inherited ? "true" : "false") << ",\"objects\":[";
  for (size_t i = 0; i < l.objects.size(); ++i) {
    os << (i ? "," : "") << "{\"ost\":" << l.objects[i].ost << ",\"oid\":" << l.objects[i].oid
       << ",\"mirror\":" << l.objects[i].mirror << ",\"state\":\""
       << (l.objects[i].lost ? "lost" : l.objects[i].stale ? "stale" : "ok") << "\"}";
  }
  os << "]}\n";
  std::fputs(os.str().c_str(), stdout);
}

Status ShowOne(Target& t, const Args& a, const std::string& path, const client::Attr& attr) {
  if (!S_ISDIR(attr.mode) && !S_ISREG(attr.mode)) return Status::Ok();
  SFS_ASSIGN_OR_RETURN(client::LayoutSpec l, t.client().GetLayout(t.cred(), attr.ino));
  if (a.g.json) {
    PrintJson(path, attr, l);
  } else {
    PrintText(path, attr, l, a.verbose);
  }
  return Status::Ok();
}

Status Walk(Target& t, const Args& a, const std::string& path, const client::Attr& attr) {
  SFS_RETURN_IF_ERROR(ShowOne(t, a, path, attr));
  if (!a.recursive || !S_ISDIR(attr.mode)) return Status::Ok();
  std::string after;
  for (;;) {
    SFS_ASSIGN_OR_RETURN(client::DirPage page, t.client().Readdir(t.cred(), attr.ino, after, 1024, true));
    for (const auto& e : page.entries) {
      if (!e.attr) continue;
      SFS_RETURN_IF_ERROR(Walk(t, a, path + (path.back() == '/' ? "" : "/") + e.name, *e.attr));
    }
    if (page.eof || page.entries.empty()) return Status::Ok();
    after = page.entries.back().name;
  }
}

}  // namespace

int RunGetstripe(int argc, char** argv) {
  static const option kLong[] = {{"verbose", no_argument, nullptr, 'v'}, {"directory", no_argument, nullptr, 'd'},
                                 {"recursive", no_argument, nullptr, 'r'}, {"json", no_argument, nullptr, 'J'},
                                 {"mds", required_argument, nullptr, 'M'}, {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  Args a;
  optind = 1;
  int opt;
  while ((opt = getopt_long(argc, argv, "vdrh", kLong, nullptr)) != -1) {
    if (opt == 'v') a.verbose = true;
    else if (opt == 'd') a.recursive = false;
    else if (opt == 'r') a.recursive = true;
    else if (opt == 'h') { std::fputs(kHelp, stdout); return 0; }
    else if (!ParseGlobal(opt, optarg, &a.g)) { std::fputs(kHelp, stderr); return 2; }
  }
  for (int i = optind; i < argc; ++i) a.paths.push_back(argv[i]);
  if (a.paths.empty()) { std::fputs(kHelp, stderr); return 2; }
  int rc = 0;
  for (const auto& path : a.paths) {
    auto t = Target::Open(a.g, path);
    if (!t.ok()) { rc = Fail("getstripe", path, t.status()); continue; }
    auto attr = (*t)->Stat(path);
    Status st = attr.ok() ? Walk(**t, a, path, *attr) : attr.status();
    if (!st.ok()) rc = Fail("getstripe", path, st);
  }
  return rc;
}

}  // namespace sfs::tools
