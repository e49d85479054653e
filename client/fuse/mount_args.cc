// Parsing of sfs-mount's command line with libfuse's option parser, so that
// "-o a,b" lists, escapes and pass-through behave as in every FUSE program.
#include "client/fuse/mount_args.h"

#include <fuse3/fuse_opt.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdlib>
#include <string_view>
#include <set>

#include "common/config/config_file.h"

namespace sfs::fuse {
namespace {

// max_idle_threads not given: keep every worker (see MountArgs).
constexpr unsigned kIdleAsMax = UINT_MAX;

// fuse_opt fills a plain struct by offset.
struct RawArgs {
  double attr_timeout = 1.0;
  double entry_timeout = 1.0;
  double file_attr_timeout = 0.0;
  double file_entry_timeout = 0.0;
  unsigned rpc_timeout_ms = 30000;
  unsigned connect_timeout_ms = 5000;
  unsigned max_threads = 64;
  unsigned max_idle_threads = kIdleAsMax;
  unsigned read_ahead_kb = 4096;
  unsigned max_read_kb = 4096;
  unsigned write_behind_kb = 16384;
  unsigned write_behind_threads = 16;
  unsigned close_delay_ms = 10;
  unsigned open_cache = 8192;
  int splice_write = 0;
  int noleases = 0;
  int nostatahead = 0;
  int nolocks = 0;
  int nowireflags = 0;
  int rdwr_cache = 0;
  char* transport = nullptr;  // "-o transport=auto|tcp|rdma" (malloc'd by fuse_opt)
  char* metrics_listen = nullptr;  // "-o metrics_listen=HOST:PORT" (malloc'd by fuse_opt)
  // The client cache (docs/cache.md), malloc'd by fuse_opt; sizes take K/M/G.
  char* cache_dir = nullptr;
  char* cache_size = nullptr;
  char* cache_ram = nullptr;
  char* cache_read_ahead = nullptr;
  // Tenants (docs/security.md), malloc'd by fuse_opt.
  char* tenant = nullptr;
  char* keyfile = nullptr;
  unsigned prefetch_threads = 16;
  unsigned prefetch_depth = 256;
  // Set by the callback.
  MountArgs* out = nullptr;
  int nonopts = 0;
  std::string error;
};

enum Key { kKeyForeground = 1, kKeyDebug, kKeyHelp };

#define SFS_OPT(templ, field, value) {templ, offsetof(RawArgs, field), value}
const fuse_opt kSpecs[] = {
    SFS_OPT("attr_timeout=%lf", attr_timeout, 0),
    SFS_OPT("entry_timeout=%lf", entry_timeout, 0),
    SFS_OPT("file_attr_timeout=%lf", file_attr_timeout, 0),
    SFS_OPT("file_entry_timeout=%lf", file_entry_timeout, 0),
    SFS_OPT("rpc_timeout_ms=%u", rpc_timeout_ms, 0),
    SFS_OPT("connect_timeout_ms=%u", connect_timeout_ms, 0),
    SFS_OPT("max_threads=%u", max_threads, 0),
    SFS_OPT("max_idle_threads=%u", max_idle_threads, 0),
    SFS_OPT("read_ahead_kb=%u", read_ahead_kb, 0),
    SFS_OPT("max_read_kb=%u", max_read_kb, 0),
    SFS_OPT("write_behind_kb=%u", write_behind_kb, 0),
    SFS_OPT("write_behind_threads=%u", write_behind_threads, 0),
    SFS_OPT("close_delay_ms=%u", close_delay_ms, 0),
    SFS_OPT("open_cache=%u", open_cache, 0),
    SFS_OPT("splice_write", splice_write, 1),
    SFS_OPT("noleases", noleases, 1),
    SFS_OPT("nostatahead", nostatahead, 1),
    SFS_OPT("nolocks", nolocks, 1),
    SFS_OPT("nowireflags", nowireflags, 1),
    SFS_OPT("rdwr_cache", rdwr_cache, 1),
    SFS_OPT("transport=%s", transport, 0),
    SFS_OPT("metrics_listen=%s", metrics_listen, 0),
    SFS_OPT("cache_dir=%s", cache_dir, 0),
    SFS_OPT("cache_size=%s", cache_size, 0),
    SFS_OPT("cache_ram=%s", cache_ram, 0),
    SFS_OPT("cache_read_ahead=%s", cache_read_ahead, 0),
    SFS_OPT("tenant=%s", tenant, 0),
    SFS_OPT("keyfile=%s", keyfile, 0),
    SFS_OPT("prefetch_threads=%u", prefetch_threads, 0),
    SFS_OPT("prefetch_depth=%u", prefetch_depth, 0),
    FUSE_OPT_KEY("-f", kKeyForeground),
    FUSE_OPT_KEY("-d", kKeyDebug),
    FUSE_OPT_KEY("debug", kKeyDebug),
    FUSE_OPT_KEY("-h", kKeyHelp),
    FUSE_OPT_KEY("--help", kKeyHelp),
    FUSE_OPT_END,
};
#undef SFS_OPT

int OnArg(void* data, const char* arg, int key, fuse_args* outargs) {
  auto* raw = static_cast<RawArgs*>(data);
  switch (key) {
    case FUSE_OPT_KEY_NONOPT:
      if (raw->nonopts == 0) {
        raw->out->mds_address = arg;
      } else if (raw->nonopts == 1) {
        raw->out->mountpoint = arg;
      } else {
        raw->error = std::string("unexpected argument '") + arg + "'";
        return -1;
      }
      ++raw->nonopts;
      return 0;
    case kKeyForeground:
      raw->out->foreground = true;
      return 0;
    case kKeyDebug:
      raw->out->debug = raw->out->foreground = true;
      return 1;  // libfuse's own debug tracing
    case kKeyHelp:
      raw->out->help = true;
      return 0;
    default:
      // "-x" is a flag we do not know; a bare word came from inside -o and
      // goes to libfuse, which knows the mount options.
      if (arg[0] == '-') {
        raw->error = std::string("unknown flag '") + arg + "'";
        return -1;
      }
      return 1;
  }
}

Status CheckAddress(std::string_view addr) {
  size_t colon = addr.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == addr.size()) {
    return Status(EINVAL, "MDS address must be HOST:PORT, got '" + std::string(addr) + "'");
  }
  for (char c : addr.substr(colon + 1)) {
    if (c < '0' || c > '9') return Status(EINVAL, "bad port in '" + std::string(addr) + "'");
  }
  return Status::Ok();
}

Status ParseCacheSize(const char* name, const char* text, uint64_t* out) {
  if (text == nullptr) return Status::Ok();
  Result<uint64_t> v = client::ParseSize(text);
  if (!v.ok()) return Status(EINVAL, std::string(name) + ": not a size: '" + text + "'");
  *out = *v;
  return Status::Ok();
}

Status FinishCache(const RawArgs& raw, MountArgs& out) {
  if (raw.tenant != nullptr) out.client.tenant = raw.tenant;
  if (raw.keyfile != nullptr) out.client.keyfile = raw.keyfile;
  if (out.client.tenant.empty() != out.client.keyfile.empty()) {
    return Status(EINVAL, "tenant= and keyfile= go together");
  }
  SFS_RETURN_IF_ERROR(ParseCacheSize("cache_size", raw.cache_size, &out.client.cache_size));
  SFS_RETURN_IF_ERROR(ParseCacheSize("cache_ram", raw.cache_ram, &out.client.cache_ram));
  SFS_RETURN_IF_ERROR(
      ParseCacheSize("cache_read_ahead", raw.cache_read_ahead, &out.client.cache_read_ahead));
  if (raw.cache_dir != nullptr) {
    if (raw.cache_dir[0] != '/') {
      return Status(EINVAL, std::string("cache_dir must be an absolute path, got '") +
                                raw.cache_dir + "'");
    }
    out.client.cache_dir = raw.cache_dir;
  }
  if (raw.cache_size != nullptr && out.client.cache_dir.empty()) {
    return Status(EINVAL, "cache_size needs cache_dir (cache_ram sizes a RAM-only cache)");
  }
  if (raw.prefetch_threads == 0 || raw.prefetch_threads > 256 || raw.prefetch_depth == 0) {
    return Status(EINVAL, "prefetch_threads must be 1..256 and prefetch_depth > 0");
  }
  out.client.prefetch_threads = static_cast<int>(raw.prefetch_threads);
  out.client.prefetch_depth = raw.prefetch_depth;
  return Status::Ok();
}

Status Finish(const RawArgs& raw, MountArgs& out) {
  if (out.help) return Status::Ok();
  if (raw.nonopts < 2) return Status(EINVAL, "need HOST:PORT and MOUNTPOINT");
  SFS_RETURN_IF_ERROR(CheckAddress(out.mds_address));
  if (raw.attr_timeout < 0 || raw.entry_timeout < 0 || raw.file_attr_timeout < 0 ||
      raw.file_entry_timeout < 0) {
    return Status(EINVAL, "cache timeouts must be >= 0");
  }
  if (raw.rpc_timeout_ms == 0 || raw.connect_timeout_ms == 0 || raw.max_threads == 0) {
    return Status(EINVAL, "rpc_timeout_ms, connect_timeout_ms and max_threads must be > 0");
  }
  out.fuse.attr_timeout = raw.attr_timeout;
  out.fuse.entry_timeout = raw.entry_timeout;
  out.fuse.file_attr_timeout = raw.file_attr_timeout;
  out.fuse.file_entry_timeout = raw.file_entry_timeout;
  out.fuse.splice_write = raw.splice_write != 0;
  out.fuse.leases = raw.noleases == 0;
  out.fuse.statahead = raw.nostatahead == 0;
  out.fuse.locks = raw.nolocks == 0;
  out.client.leases = out.fuse.leases;
  out.client.mds_address = out.mds_address;
  out.client.rpc_timeout = std::chrono::milliseconds(raw.rpc_timeout_ms);
  out.client.connect_timeout = std::chrono::milliseconds(raw.connect_timeout_ms);
  if (raw.transport != nullptr) {
    SFS_ASSIGN_OR_RETURN(out.client.transport, client::ParseTransport(raw.transport));
  }
  out.max_threads = raw.max_threads;
  out.max_idle_threads =
      raw.max_idle_threads == kIdleAsMax ? raw.max_threads : raw.max_idle_threads;
  out.read_ahead_kb = raw.read_ahead_kb;
  out.wire_flags = raw.nowireflags == 0;
  out.fuse.rdwr_direct = raw.rdwr_cache == 0;
  out.fuse.max_readahead = raw.read_ahead_kb * 1024;
  // Whole pages, at least the 1 MiB libfuse asks for, at most 64 MiB (the
  // FUSE max_pages field is 16 bits).
  out.max_read_kb = std::clamp(raw.max_read_kb / 4 * 4, 1024u, 65536u - 4u);
  out.fuse.max_read = out.max_read_kb * 1024;
  out.client.write_behind_bytes = uint64_t{raw.write_behind_kb} * 1024;
  out.client.write_behind_threads = static_cast<int>(std::max(1u, raw.write_behind_threads));
  out.client.close_delay = std::chrono::milliseconds(raw.close_delay_ms);
  out.client.open_cache = raw.open_cache;
  if (raw.metrics_listen != nullptr) out.metrics_listen = raw.metrics_listen;
  return FinishCache(raw, out);
}

}  // namespace

Result<MountArgs> ParseMountArgs(int argc, const char* const* argv) {
  MountArgs out;
  RawArgs raw;
  raw.out = &out;
  fuse_args args = FUSE_ARGS_INIT(argc, const_cast<char**>(argv));
  if (fuse_opt_parse(&args, &raw, kSpecs, OnArg) != 0) {
    fuse_opt_free_args(&args);
    return Status(EINVAL, raw.error.empty() ? "bad options" : raw.error);
  }
  Status st = Finish(raw, out);
  std::free(raw.transport);
  std::free(raw.metrics_listen);
  std::free(raw.cache_dir);
  std::free(raw.cache_size);
  std::free(raw.cache_ram);
  std::free(raw.cache_read_ahead);
  std::free(raw.tenant);
  std::free(raw.keyfile);
  if (st.ok()) {
    out.fuse_argv.push_back(argc > 0 ? argv[0] : "sfs-mount");
    out.fuse_argv.push_back("-o");
    out.fuse_argv.push_back("default_permissions,fsname=" + out.mds_address + ",subtype=sfs");
    for (int i = 1; i < args.argc; ++i) out.fuse_argv.push_back(args.argv[i]);
  }
  fuse_opt_free_args(&args);
  if (!st.ok()) return st;
  return out;
}

namespace {

// The -o options libfuse's mount and session code take (lib/mount.c,
// lib/fuse_lowlevel.c of libfuse 3), beside ours: a config key that is
// neither is a mistake to report with its line, not an error libfuse would
// print later without one.
const std::set<std::string, std::less<>>& LibfuseOptions() {
  static const std::set<std::string, std::less<>> names = {
      "allow_other", "allow_root", "auto_unmount", "default_permissions", "blkdev", "blksize",
      "fsname", "subtype", "max_read", "ro", "rw", "suid", "nosuid", "dev", "nodev", "exec",
      "noexec", "async", "sync", "dirsync", "atime", "noatime", "diratime", "nodiratime",
      "relatime", "norelatime", "strictatime", "nostrictatime", "context", "fscontext",
      "defcontext", "rootcontext", "clone_fd", "max_idle_threads"};
  return names;
}

// Our own -o option names, from kSpecs ("name=%u" -> "name").
bool IsOurOption(std::string_view name) {
  for (const fuse_opt& spec : kSpecs) {
    if (spec.templ == nullptr) break;
    std::string_view t = spec.templ;
    if (t.substr(0, t.find('=')) == name) return true;
  }
  return false;
}

}  // namespace

Result<MountArgs> ParseMountArgsWithConfig(int argc, const char* const* argv,
                                           const std::string& default_path) {
  SFS_ASSIGN_OR_RETURN(std::vector<config::Arg> args,
                       config::ExpandArgs(argc, argv, default_path));
  std::vector<std::string> words = {argc > 0 ? argv[0] : "sfs-mount"};
  for (const config::Arg& a : args) {
    if (a.origin.empty()) {
      words.push_back(a.text);
      continue;
    }
    // "--read-ahead-kb=8192" from the file -> the -o option "read_ahead_kb=8192".
    std::string text = a.text.substr(2);
    size_t eq = text.find('=');
    std::string name = text.substr(0, eq), value = text.substr(eq + 1);
    std::replace(name.begin(), name.end(), '-', '_');
    if (!IsOurOption(name) && !LibfuseOptions().contains(name) && name != "debug") {
      return Status(EINVAL, config::Where(a) + "unknown option " + name);
    }
    std::string option = value == "on" ? name : name + "=" + value;
    if (value == "off") continue;
    // Checked alone, so that a bad value is reported with its line.
    const char* alone[] = {"sfs-mount", "h:1", "/m", "-o", option.c_str()};
    if (auto one = ParseMountArgs(5, alone); !one.ok()) {
      return Status(EINVAL, config::Where(a) + one.status().message());
    }
    words.push_back("-o");
    words.push_back(option);
  }
  std::vector<const char*> ptrs;
  for (const std::string& w : words) ptrs.push_back(w.c_str());
  return ParseMountArgs(static_cast<int>(ptrs.size()), ptrs.data());
}

std::string MountUsage() {
  return "usage: sfs-mount HOST:PORT MOUNTPOINT [-f] [-d] [--config FILE] [-o opt[,opt...]]\n"
         "  --config FILE           -o options as TOML keys (default /etc/stripefs/client.conf\n"
         "                          when it exists; an -o option given here wins)\n"
         "  -f                      stay in the foreground\n"
         "  -d, -o debug            foreground, trace every FUSE request\n"
         "  -o allow_other          let other users in (root, or user_allow_other)\n"
         "  -o ro                   mount read-only\n"
         "  -o entry_timeout=SECS   with noleases: cache names of directories (default 1)\n"
         "  -o attr_timeout=SECS    with noleases: cache attributes of directories (default 1)\n"
         "  -o file_entry_timeout=SECS, file_attr_timeout=SECS\n"
         "                          the same for files, symlinks, devices (default 0: every\n"
         "                          open and stat sees renames, unlinks and sizes of other\n"
         "                          nodes at once; >0 trades that away for fewer MDS calls)\n"
         "  -o rpc_timeout_ms=N     give up on an MDS/OSS request after N ms (default 30000)\n"
         "  -o connect_timeout_ms=N give up reaching the MDS at mount after N ms (default 5000)\n"
         "  -o max_threads=N        FUSE worker threads at most (default 64)\n"
         "  -o max_idle_threads=N   idle workers kept (default: max_threads, none ends)\n"
         "  -o read_ahead_kb=N      kernel readahead per file, KiB (default 4096; 0 keeps\n"
         "                          the kernel's 128): wide enough to read several stripes at once\n"
         "  -o max_read_kb=N        largest READ the kernel sends, KiB (default 4096, at least\n"
         "                          1024); raises fs.fuse.max_pages_limit to it when root\n"
         "  -o write_behind_kb=N    write-only handles: answer a write once it is copied into a\n"
         "                          window of N KiB of writes in flight to the OSSes (default\n"
         "                          16384); errors show at the next write, fsync or close;\n"
         "                          0 = every write waits for the OSSes\n"
         "  -o write_behind_threads=N  threads sending written-behind data (default 16)\n"
         "  -o close_delay_ms=N     the last close of a handle that wrote nothing is answered\n"
         "                          at once; the MDS hears of it with the next request, or\n"
         "                          after N ms at most (default 10); 0 = a round trip each\n"
         "  -o open_cache=N         keep up to N read-only opens past their close while their\n"
         "                          lease lasts: opening the file again asks no MDS (default\n"
         "                          8192; needs leases and close_delay_ms > 0); 0 = off\n"
         "  -o splice_write         hand read data to the kernel through a pipe\n"
         "  -o noleases             no MDS leases: regular files use file_*_timeout\n"
         "                          (by default they are cached as long as the MDS's lease,\n"
         "                          and changes from other nodes invalidate them first)\n"
         "  -o nolocks              fcntl/flock locks per mount (the kernel's), not cluster-wide\n"
         "  -o nostatahead          no statahead: with leases, a run of lookups in a directory\n"
         "                          otherwise lists it (with attributes) ahead of them\n"
         "  -o cache_dir=DIR        client cache of file data in DIR, kept across mounts\n"
         "                          (docs/cache.md); off by default\n"
         "  -o cache_size=SIZE      bound of cache_dir (K/M/G; default 1G)\n"
         "  -o cache_ram=SIZE       RAM for the cache: the most recent blocks of cache_dir,\n"
         "                          or a RAM-only cache without cache_dir\n"
         "  -o cache_read_ahead=SIZE  a handle read front to back through the cache has\n"
         "                          its next stripe row (at least 4M) fetched ahead, up to\n"
         "                          SIZE and an eighth of the cache (default 64M; 0 = off)\n"
         "  -o tenant=NAME,keyfile=FILE  mount as tenant NAME (docs/security.md): proves the\n"
         "                          key in FILE (mode 0600) to the MDS and shows only the\n"
         "                          tenant's fileset, as /\n"
         "  -o prefetch_threads=N   threads fetching an order hint (sfs prefetch; default 16)\n"
         "  -o prefetch_depth=N     hint entries fetched ahead of the reader (default 256)\n"
         "  -o rdwr_cache           O_RDWR handles use the page cache (default: direct I/O and\n"
         "                          write-behind, as write-only ones, if the kernel allows mmap)\n"
         "  -o nowireflags          send libfuse's replies as they are: no\n"
         "                          FUSE_DIRECT_IO_ALLOW_MMAP, no FOPEN_PARALLEL_DIRECT_WRITES\n"
         "  -o transport=MODE       auto (default: RDMA per server when it answers), tcp, rdma\n"
         "  -o metrics_listen=HOST:PORT  serve GET /metrics (Prometheus) there; port 0 picks one\n"
         "                          and logs `metrics: serving GET /metrics on HOST:PORT`\n"
         "  other -o options go to libfuse (max_read=N, fsname=, ...)\n";
}

}  // namespace sfs::fuse
