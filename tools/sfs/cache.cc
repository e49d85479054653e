// `sfs prefetch` and `sfs cache warm|status|drop`: the client cache of a
// running mount (docs/cache.md), reached through its control xattrs
// (client/fuse/cache_ctl.h) on the mount's root.
#include <getopt.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "client/lib/cache_text.h"
#include "tools/sfs/commands.h"

namespace sfs::tools {
namespace {

constexpr const char* kPrefetchHelp =
    "usage: sfs prefetch [--append] [--wait] PATH...\n"
    "       sfs prefetch [--append] [--wait] --list FILE\n"
    "\n"
    "Tells the mount's client cache which files will be read next, in this order (an\n"
    "epoch's sample order): it fetches them ahead of the reader, a bounded number of\n"
    "entries ahead (-o prefetch_depth), on many threads over all OSSes, and evicts\n"
    "what is needed farthest in this order first. A new list replaces the last one.\n"
    "Entries that are missing or not readable are skipped and counted.\n"
    "\n"
    "  -l, --list FILE    one entry per line (\"-\" = stdin): PATH, or PATH<TAB>OFFSET<TAB>LENGTH\n"
    "                     for a byte range (LENGTH \"-\" = to the end)\n"
    "  -a, --append       add to the current list instead of replacing it\n"
    "  -w, --wait         return once every entry the look-ahead admits is fetched or\n"
    "                     skipped (the rest waits for a reader: see sfs cache warm)\n"
    "\n"
    "The mount needs -o cache_ram=SIZE and/or -o cache_dir=DIR.\n"
    "examples:\n"
    "  python3 epoch_order.py 2 > order.txt && sfs prefetch --list order.txt\n"
    "  sfs prefetch /mnt/sfs/shards/shard-0007.tar /mnt/sfs/shards/shard-0003.tar\n";

constexpr const char* kCacheHelp =
    "usage: sfs cache warm [--append] PATH... | --list FILE\n"
    "       sfs cache status [--json] [PATH]\n"
    "       sfs cache drop [PATH]\n"
    "\n"
    "The client cache of the mount holding PATH (default: the current directory).\n"
    "  warm     fetch the entries now, as far as the cache holds them (no reader needed),\n"
    "           with a progress line on a terminal\n"
    "  status   hits, misses, hit_rate, bytes held and capacity, evictions, corrupt\n"
    "           blocks dropped, prefetch progress, the cache directory\n"
    "  drop     forget every cached block (RAM and directory) and the current hint\n";

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

// PATH on mount mp (as the user wrote it) -> the path inside the file system,
// or "" if it is not on mp.
std::string InsidePath(const std::string& mp, const std::string& path) {
  std::string abs = path;
  if (abs.empty()) return "";
  if (abs[0] != '/') {
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof(cwd)) == nullptr) return "";
    abs = std::string(cwd) + "/" + abs;
  }
  auto strip = [&](const std::string& p) -> std::string {
    if (mp == "/") return p;
    if (p == mp) return "/";
    if (p.size() > mp.size() && p.compare(0, mp.size(), mp) == 0 && p[mp.size()] == '/') {
      return p.substr(mp.size());
    }
    return "";
  };
  // Lexically first (no syscall per entry for a 100,000-line list), then
  // through symlinks and "..".
  if (abs.find("/.") == std::string::npos) {
    if (std::string in = strip(abs); !in.empty()) return in;
  }
  char real[PATH_MAX];
  if (realpath(abs.c_str(), real) == nullptr) return "";
  return strip(real);
}

Status SetCtl(const std::string& mp, const std::string& name, const std::string& value) {
  if (setxattr(mp.c_str(), name.c_str(), value.data(), value.size(), 0) != 0) {
    int e = errno;
    if (e == EOPNOTSUPP) return Status(e, mp + ": the mount has no client cache (-o cache_ram/cache_dir)");
    return Status(e, mp + ": " + std::strerror(e));
  }
  return Status::Ok();
}

Result<client::CacheStats> GetCtl(const std::string& mp, const std::string& name) {
  std::string buf(64 * 1024, '\0');
  ssize_t n = getxattr(mp.c_str(), name.c_str(), buf.data(), buf.size());
  if (n < 0) {
    int e = errno;
    if (e == EOPNOTSUPP) return Status(e, mp + ": the mount has no client cache (-o cache_ram/cache_dir)");
    return Status(e, mp + ": " + std::strerror(e));
  }
  buf.resize(static_cast<size_t>(n));
  return client::ParseCacheStats(buf);
}

// Sends items to mp's cache as name (prefetch|warm), in chunks of whole lines.
Status SendHint(const std::string& mp, const std::string& name,
                const std::vector<client::PrefetchItem>& items, bool append) {
  constexpr size_t kChunk = 60000;  // under XATTR_SIZE_MAX
  std::string chunk;
  bool first = true;
  auto flush = [&]() -> Status {
    std::string n = "user.sfs." + name + (append || !first ? ".append" : "");
    first = false;
    Status st = SetCtl(mp, n, chunk);
    chunk.clear();
    return st;
  };
  for (const client::PrefetchItem& it : items) {
    std::string line = client::FormatPrefetchItem(it);
    if (chunk.size() + line.size() > kChunk && !chunk.empty()) SFS_RETURN_IF_ERROR(flush());
    chunk += line;
  }
  if (!chunk.empty() || first) SFS_RETURN_IF_ERROR(flush());
  return Status::Ok();
}

// Waits (1 s per call, inside the mount) until the hint has nothing left to
// do before a reader moves on: every entry the look-ahead admits is fetched
// or skipped, or waits for a reader to make room (a bounded hint longer than
// its window, or than the cache, is never done without a reader). *last:
// the last counters. A progress line on stderr when it is a terminal.
Status WaitHint(const std::string& mp, bool progress, client::CacheStats* last) {
  while (true) {
    SFS_ASSIGN_OR_RETURN(client::CacheStats s, GetCtl(mp, "user.sfs.prefetch.wait"));
    if (progress) {
      std::fprintf(stderr, "\r%llu/%llu entries, %s cached  ",
                   static_cast<unsigned long long>(s.hint_done),
                   static_cast<unsigned long long>(s.hint_length), HumanSize(s.bytes).c_str());
    }
    if (s.hint_done >= s.hint_length || s.hint_done + s.hint_waiting >= s.hint_window) {
      if (progress) std::fputc('\n', stderr);
      *last = s;
      return Status::Ok();
    }
  }
}

struct HintArgs {
  std::string list;
  bool append = false;
  bool wait = false;
  std::vector<std::string> paths;
};

// Reads the entries (paths on the mount, or --list FILE) and the mount they are on.
Status CollectEntries(const HintArgs& a, std::string* mp, std::vector<client::PrefetchItem>* out,
                      size_t* skipped) {
  std::vector<std::pair<std::string, std::string>> raw;  // (path, "\tOFF\tLEN" or "")
  if (!a.list.empty()) {
    std::ifstream file;
    std::istream* in = &std::cin;
    if (a.list != "-") {
      file.open(a.list);
      if (!file) return Status(ENOENT, a.list + ": cannot open");
      in = &file;
    }
    std::string line;
    while (std::getline(*in, line)) {
      line = Trim(line);
      if (line.empty()) continue;
      size_t tab = line.find('\t');
      raw.emplace_back(line.substr(0, tab), tab == std::string::npos ? "" : line.substr(tab));
    }
  }
  for (const std::string& p : a.paths) raw.emplace_back(p, "");
  if (raw.empty()) return Status(EINVAL, "no entries");
  *mp = MountPointOf(raw[0].first);
  if (mp->empty()) return Status(EINVAL, raw[0].first + ": not on a StripeFS mount");
  std::string text;
  for (const auto& [path, range] : raw) {
    std::string in = InsidePath(*mp, path);
    if (in.empty()) {
      ++*skipped;
      continue;
    }
    text += in + range + "\n";
  }
  SFS_ASSIGN_OR_RETURN(*out, client::ParsePrefetchList(text));
  return Status::Ok();
}

int RunHint(const char* cmd, const std::string& ctl, int argc, char** argv, bool warm) {
  HintArgs a;
  static const option kLong[] = {{"list", required_argument, nullptr, 'l'},
                                 {"append", no_argument, nullptr, 'a'},
                                 {"wait", no_argument, nullptr, 'w'},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  optind = 1;
  int opt;
  while ((opt = getopt_long(argc, argv, "l:awh", kLong, nullptr)) != -1) {
    switch (opt) {
      case 'l': a.list = optarg; break;
      case 'a': a.append = true; break;
      case 'w': a.wait = true; break;
      case 'h': std::fputs(warm ? kCacheHelp : kPrefetchHelp, stdout); return 0;
      default: std::fputs(warm ? kCacheHelp : kPrefetchHelp, stderr); return 2;
    }
  }
  for (int i = optind; i < argc; ++i) a.paths.push_back(argv[i]);
  if (a.list.empty() && a.paths.empty()) {
    std::fprintf(stderr, "sfs %s: give PATH... or --list FILE\n", cmd);
    return 2;
  }
  std::string mp;
  std::vector<client::PrefetchItem> items;
  size_t skipped = 0;
  Status st = CollectEntries(a, &mp, &items, &skipped);
  if (!st.ok()) return Fail(cmd, "", st);
  st = SendHint(mp, ctl, items, a.append);
  if (!st.ok()) return Fail(cmd, "", st);
  if (skipped > 0) {
    std::fprintf(stderr, "sfs %s: %zu entr%s not on %s, skipped\n", cmd, skipped,
                 skipped == 1 ? "y" : "ies", mp.c_str());
  }
  client::CacheStats last;
  if (warm || a.wait) {
    st = WaitHint(mp, warm && isatty(STDERR_FILENO), &last);
    if (!st.ok()) return Fail(cmd, "", st);
  }
  const char* entries = items.size() == 1 ? "y" : "ies";
  if (!warm && !a.wait) {
    std::printf("%zu entr%s queued on %s\n", items.size(), entries, mp.c_str());
  } else if (last.hint_done >= last.hint_length) {
    std::printf("%zu entr%s fetched or skipped on %s\n", items.size(), entries, mp.c_str());
  } else {
    std::printf(
        "%zu entr%s queued on %s: %llu of the hint's %llu fetched or skipped, the rest "
        "waits for a reader (look-ahead or cache full)\n",
        items.size(), entries, mp.c_str(), static_cast<unsigned long long>(last.hint_done),
        static_cast<unsigned long long>(last.hint_length));
  }
  return 0;
}

void PrintJson(const client::CacheStats& s) {
  std::string text = client::FormatCacheStats(s), out = "{";
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    size_t colon = line.find(": ");
    std::string key = line.substr(0, colon), value = line.substr(colon + 2);
    if (out.size() > 1) out += ",";
    out += JsonString(key) + ":";
    out += key == "dir" ? JsonString(s.dir) : value;
  }
  std::printf("%s}\n", out.c_str());
}

}  // namespace

int RunPrefetch(int argc, char** argv) { return RunHint("prefetch", "prefetch", argc, argv, false); }

int RunCache(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::fputs(kCacheHelp, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  std::string sub = argv[1];
  if (sub == "warm") return RunHint("cache warm", "warm", argc - 1, argv + 1, true);
  if (sub != "status" && sub != "drop") {
    std::fprintf(stderr, "sfs cache: unknown subcommand '%s' (warm, status, drop)\n", sub.c_str());
    return 2;
  }
  bool json = false;
  std::string path = ".";
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--json" && sub == "status") {
      json = true;
    } else if (!a.empty() && a[0] == '-') {
      std::fputs(kCacheHelp, stderr);
      return 2;
    } else {
      path = a;
    }
  }
  const std::string cmd = "cache " + sub;
  std::string mp = MountPointOf(path);
  if (mp.empty()) return Fail(cmd, path, Status(EINVAL, "not on a StripeFS mount"));
  if (sub == "drop") {
    Status st = SetCtl(mp, "user.sfs.cache.drop", "1");
    return st.ok() ? 0 : Fail(cmd, "", st);
  }
  Result<client::CacheStats> s = GetCtl(mp, "user.sfs.cache.status");
  if (!s.ok()) return Fail(cmd, "", s.status());
  if (json) {
    PrintJson(*s);
  } else {
    std::fputs(client::FormatCacheStats(*s).c_str(), stdout);
  }
  return 0;
}

}  // namespace sfs::tools
