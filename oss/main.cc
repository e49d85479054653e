// sfs-oss: the object storage server. Wires the pieces together and nothing
// else: opens one ObjectStore per --ost directory, starts the RPC server first
// (so a --listen port of 0 becomes the real port before we register it),
// registers with the MDS in the background, prints `LISTENING host:port` once
// the first registration succeeded, and on SIGTERM/SIGINT stops cleanly.
// A sweeper thread removes object tombstones older than --tombstone-ttl-s
// (default one hour, at least 60 s: the client recovery timeout; see
// docs/formats.md "Tombstones"), at start and then every ttl/8.
//
// Signals are blocked in every thread and taken synchronously with sigwait in
// the main thread, so shutdown runs as ordinary code, not in a handler.
#include <malloc.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <cerrno>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/log.h"
#include "common/metrics/http_server.h"
#include "common/metrics/metrics.h"
#include "common/rpc/listeners.h"
#include "common/config/config_file.h"
#include "common/config/daemon_notify.h"
#include "common/rpc/rpc.h"
#include "oss/kv/kv_store.h"
#include "oss/registrar/advertise.h"
#include "oss/registrar/registrar.h"
#include "oss/service/oss_service.h"
#include "oss/store/fd_cache.h"
#include "oss/store/object_store.h"

namespace sfs::oss {
namespace {

constexpr char kUsage[] =
    "usage: sfs-oss [--config FILE (default /etc/stripefs/oss.conf)] --mds HOST:PORT --ost DIR [--ost DIR ...] --listen HOST:PORT "
    "[--heartbeat-ms N] [--workers N] [--io-threads N] [--checksums=on|off] "
    "[--transport=auto|tcp|rdma] [--tombstone-ttl-s N (>= 60)] [--max-inflight-mib N] "
    "[--inline-read-kib N (0-1024: reads up to N KiB served on the I/O thread; 0 = none)] "
    "[--advertise HOST:PORT (the address registered with the MDS, if not the listening one)] "
    "[--metrics-listen HOST:PORT (serve GET /metrics there; port 0 prints METRICS host:port)] "
    "[--cluster-key FILE (mode 0600: check the MDS's capabilities on every object request)] "
    "[--kv-capacity SIZE (the KV-cache tier: bytes of blocks per OSS, K/M/G/T suffixes; "
    "0 = no tier, the default)] [--kv-tenant-quota SIZE (per tenant per OSS; default: all)]";

// Every flag ParseFlags knows, to tell a bad value from an unknown flag.
constexpr std::string_view kFlagNames =
    " mds ost listen heartbeat-ms workers io-threads checksums transport tombstone-ttl-s "
    "max-inflight-mib inline-read-kib advertise metrics-listen fencing cluster-key kv-capacity "
    "kv-tenant-quota ";

// Read when it exists and no --config names another (common/config/config_file.h).
constexpr char kDefaultConfig[] = "/etc/stripefs/oss.conf";

struct Flags {
  std::string mds;
  std::vector<std::string> osts;
  std::string listen;
  int heartbeat_ms = 1000;
  int workers = 8;
  int io_threads = 2;
  bool checksums = true;  // per-chunk crcs on disk (FileStoreOptions::checksums)
  rpc::TransportMode transport = rpc::TransportMode::kAuto;
  int tombstone_ttl_s = 3600;  // how long a destroyed object answers ESTALE
  int max_inflight_mib = 256;  // memory budget of requests + replies (rpc.h ServerOptions)
  int inline_read_kib = OssService::kDefaultInlineReadMax / 1024;  // OssService::TryHandleInline
  // What clients are told to connect to (a NAT, a proxy); "" = the listening address.
  std::string advertise;
  std::string metrics_listen;  // "" = no metrics endpoint (the default)
  std::string cluster_key;     // "" = no capabilities checked (docs/security.md)
  // The KV-cache tier (docs/kv.md): split evenly over this OSS's OSTs.
  uint64_t kv_capacity = 0;      // 0 = none
  uint64_t kv_tenant_quota = 0;  // 0 = kv_capacity
  // Not in the usage: off only shows what the write fence prevents (fence_test).
  bool fencing = true;
};

bool ParseInt(const std::string& s, int lo, int hi, int* out) {
  char* end = nullptr;
  long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || v < lo || v > hi) return false;
  *out = static_cast<int>(v);
  return true;
}

// "4096", "64K", "1G" (powers of 1024) -> bytes; false on anything else.
bool ParseBytes(const std::string& s, uint64_t* out) {
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (s.empty() || s[0] == '-' || end == s.c_str() || errno != 0) return false;
  int shift = 0;
  switch (*end) {
    case '\0': break;
    case 'K': case 'k': shift = 10; ++end; break;
    case 'M': case 'm': shift = 20; ++end; break;
    case 'G': case 'g': shift = 30; ++end; break;
    case 'T': case 't': shift = 40; ++end; break;
    default: return false;
  }
  if (*end != '\0' || (shift > 0 && v > (~0ull >> shift))) return false;
  *out = static_cast<uint64_t>(v) << shift;
  return true;
}

// Accepts "--flag value" and "--flag=value", from the command line or a
// config file (common/config/config_file.h). Returns "" or what is wrong,
// prefixed with the file and line of a config file's entry.
std::string ParseFlags(const std::vector<config::Arg>& args, Flags* f) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string where = config::Where(args[i]);
    std::string arg = args[i].text, value;
    size_t eq = arg.find('=');
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg.resize(eq);
    } else if (i + 1 < args.size()) {
      value = args[++i].text;
    } else {
      return "missing value for " + arg;
    }
    if (arg == "--mds") f->mds = value;
    else if (arg == "--ost") f->osts.push_back(value);
    else if (arg == "--listen") f->listen = value;
    else if (arg == "--heartbeat-ms" && ParseInt(value, 1, 3600000, &f->heartbeat_ms)) continue;
    else if (arg == "--workers" && ParseInt(value, 1, 1024, &f->workers)) continue;
    else if (arg == "--io-threads" && ParseInt(value, 1, 64, &f->io_threads)) continue;
    else if (arg == "--checksums" && (value == "on" || value == "off"))
      f->checksums = value == "on";
    else if (arg == "--transport" && rpc::ParseTransportMode(value, &f->transport)) continue;
    else if (arg == "--tombstone-ttl-s" && ParseInt(value, 60, 365 * 86400, &f->tombstone_ttl_s))
      continue;
    else if (arg == "--max-inflight-mib" && ParseInt(value, 1, 1 << 20, &f->max_inflight_mib))
      continue;
    else if (arg == "--inline-read-kib" && ParseInt(value, 0, 1024, &f->inline_read_kib)) continue;
    else if (arg == "--advertise") f->advertise = value;
    else if (arg == "--metrics-listen") f->metrics_listen = value;
    else if (arg == "--cluster-key") f->cluster_key = value;
    else if (arg == "--fencing" && (value == "on" || value == "off")) f->fencing = value == "on";
    else if (arg == "--kv-capacity" && ParseBytes(value, &f->kv_capacity)) continue;
    else if (arg == "--kv-tenant-quota" && ParseBytes(value, &f->kv_tenant_quota)) continue;
    else if (arg.starts_with("--") && kFlagNames.find(" " + arg.substr(2) + " ") != std::string::npos)
      return where + "bad value for " + arg;
    else return where + "unknown flag " + arg;
  }
  std::string host;
  uint16_t port = 0;
  if (f->osts.empty()) return "at least one --ost is required";
  if (!rpc::ParseAddress(f->mds, &host, &port).ok()) return "--mds HOST:PORT is required";
  if (!rpc::ParseAddress(f->listen, &host, &port).ok()) return "--listen HOST:PORT is required";
  if (!f->advertise.empty() && !rpc::ParseAddress(f->advertise, &host, &port).ok()) {
    return "bad value for --advertise";
  }
  return "";
}

// Takes what the hard limit allows (the fd caches are sized from it) and
// returns the soft limit in force (1024 if it cannot be read).
uint64_t RaiseFdLimit() {
  rlimit rl;
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return 1024;
  if (rl.rlim_cur < rl.rlim_max) {
    rlimit raised = rl;
    raised.rlim_cur = rl.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) rl = raised;
  }
  return rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : static_cast<uint64_t>(rl.rlim_cur);
}

using Stores = std::vector<std::unique_ptr<ObjectStore>>;
using KvStores = std::vector<std::unique_ptr<kv::KvStore>>;

// One KvStore per OST (under <ost>/kv), each with its share of the flags'
// bytes; none without --kv-capacity.
Result<KvStores> OpenKvStores(const Flags& flags) {
  KvStores kvs;
  if (flags.kv_capacity == 0) return kvs;
  kv::KvOptions opts;
  opts.capacity = flags.kv_capacity / flags.osts.size();
  opts.tenant_quota = flags.kv_tenant_quota / flags.osts.size();
  for (const std::string& dir : flags.osts) {
    SFS_ASSIGN_OR_RETURN(std::unique_ptr<kv::KvStore> s, kv::KvStore::Open(dir, opts));
    kvs.push_back(std::move(s));
  }
  LOG_INFO("kv tier: " << opts.capacity << " bytes per OST, tenant quota "
                       << (opts.tenant_quota == 0 ? opts.capacity : opts.tenant_quota));
  return kvs;
}

// Each store's fd cache gets its share of the descriptors nofile allows: a
// cache smaller than the objects being read reopens files on every pass (a
// training set of 4000 small files on 2 OSSes: ~9 % of OSS time with 1024).
Result<Stores> OpenStores(const std::vector<std::string>& dirs, bool checksums, uint64_t nofile) {
  Stores stores;
  std::set<std::string> uuids;
  FileStoreOptions opts;
  opts.checksums = checksums;
  opts.fd_cache_capacity = FdCacheCapacityFor(nofile, dirs.size());
  LOG_INFO("fd cache: " << opts.fd_cache_capacity << " descriptors per OST (RLIMIT_NOFILE "
                        << nofile << ")");
  for (const std::string& dir : dirs) {
    SFS_ASSIGN_OR_RETURN(std::unique_ptr<ObjectStore> s, OpenFileObjectStore(dir, opts));
    if (!uuids.insert(s->uuid()).second) {
      return Status::Errno(EINVAL, "OST " + dir + " repeats the uuid of another --ost");
    }
    LOG_INFO("OST " << dir << " uuid " << s->uuid());
    stores.push_back(std::move(s));
  }
  return stores;
}

// Expires tombstones older than ttl on every store, now and every ttl/8,
// until destroyed.
class TombstoneSweeper {
 public:
  TombstoneSweeper(std::vector<ObjectStore*> stores, std::chrono::seconds ttl)
      : stores_(std::move(stores)), ttl_(ttl), thread_([this] { Loop(); }) {}
  ~TombstoneSweeper() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      lock.unlock();
      for (ObjectStore* s : stores_) {
        Result<uint64_t> n = s->ExpireTombstones(std::chrono::system_clock::now() - ttl_);
        if (!n.ok()) {
          LOG_WARN("OST " << s->uuid() << ": tombstone sweep: " << n.status().ToString());
        } else if (*n > 0) {
          LOG_INFO("OST " << s->uuid() << ": expired " << *n << " tombstone(s)");
        }
      }
      lock.lock();
      cv_.wait_for(lock, ttl_ / 8, [this] { return stop_; });
    }
  }

  const std::vector<ObjectStore*> stores_;
  const std::chrono::seconds ttl_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // GUARDED_BY(mu_)
  std::thread thread_;  // last: starts after the members above exist
};

int Fail(const Status& st) {
  LOG_ERROR(st.ToString());
  return 1;
}

// Registers, serves until a signal arrives, then stops everything in order.
int Serve(const Flags& flags, Stores& stores, KvStores& kvs, const sigset_t& signals) {
  // Client channels: to the MDS (registrar) and to peer OSSes (copies' pulls).
  std::unique_ptr<rpc::IoContext> io = rpc::IoContext::Create(1);
  PeerChannels peers(io.get());
  OssService service(flags.fencing);
  if (!flags.fencing) LOG_WARN("--fencing=off: late writes may overwrite newer ones");
  service.SetPeers(&peers);
  service.set_inline_read_max(static_cast<uint64_t>(flags.inline_read_kib) * 1024);
  OssService::KvTargets kv_targets;
  for (size_t i = 0; i < kvs.size(); ++i) kv_targets[stores[i].get()] = kvs[i].get();
  service.set_kv(std::move(kv_targets));
  std::string key_bytes;  // for the registrar's handshake with the MDS
  if (!flags.cluster_key.empty()) {
    sfs::Result<sfs::auth::ClusterKey> key = sfs::auth::LoadKey(flags.cluster_key);
    if (!key.ok()) return Fail(key.status());
    key_bytes = key->bytes;
    service.require_capabilities();
    LOG_INFO("cluster key " << flags.cluster_key
                            << ": capabilities checked (under the MDS's rotating signing keys), "
                               "registration authenticated");
  }
  // Metrics (off by default): declared before the server so they outlive it.
  metrics::Registry registry;
  std::unique_ptr<OssMetrics> oss_metrics;
  std::unique_ptr<metrics::MetricsHttpServer> metrics_server;
  if (!flags.metrics_listen.empty()) {
    oss_metrics = std::make_unique<OssMetrics>(&registry);
    oss_metrics->AddTargets([&service] { return service.targets(); });
    service.set_metrics(oss_metrics.get());
    Result<std::unique_ptr<metrics::MetricsHttpServer>> m =
        metrics::ServeMetrics(flags.metrics_listen, &registry);
    if (!m.ok()) return Fail(m.status());
    metrics_server = std::move(*m);
  }
  // QoS (docs/qos.md): off until the MDS's heartbeat replies bring a rule.
  // Stopped before the server, whose buffers queued requests hold.
  QosScheduler qos(flags.workers);
  service.set_qos(&qos);
  if (oss_metrics) oss_metrics->AddQos(&qos);
  rpc::ServerOptions sopts;
  (void)rpc::ParseAddress(flags.listen, &sopts.host, &sopts.port);  // checked by ParseFlags
  sopts.worker_threads = flags.workers;
  sopts.io_threads = flags.io_threads;
  sopts.max_inflight_bytes = static_cast<uint64_t>(flags.max_inflight_mib) << 20;
  Result<rpc::Listeners> server = rpc::Listeners::Start(sopts, &service, flags.transport);
  if (!server.ok()) return Fail(server.status());
  LOG_INFO(server->Summary());
  Result<std::string> self = AdvertiseAddress(sopts.host, server->port(), flags.mds);
  if (!self.ok()) return Fail(self.status());

  std::vector<ObjectStore*> raw;
  for (auto& s : stores) raw.push_back(s.get());
  std::once_flag announced;
  auto on_registered = [&](const std::vector<uint32_t>& indices) {
    OssService::Targets targets;
    for (size_t i = 0; i < raw.size(); ++i) targets[indices[i]] = raw[i];
    service.SetTargets(std::move(targets));
    std::call_once(announced, [&] {
      std::printf("LISTENING %s\n", self->c_str());
      std::fflush(stdout);
      config::NotifyReady("serving on " + *self + ", registered with " + flags.mds);
    });
  };
  RegistrarOptions ropts;
  ropts.self_address = flags.advertise.empty() ? *self : flags.advertise;
  ropts.heartbeat_interval = std::chrono::milliseconds(flags.heartbeat_ms);
  if (metrics_server) ropts.metrics_address = metrics_server->address();
  ropts.on_qos = [&qos](QosRules rules) {
    if (rules == qos.rules()) return;
    LOG_INFO("QoS: " << rules.size() << " rule(s) in force");
    qos.SetRules(std::move(rules));
  };
  ropts.cluster_key = key_bytes;
  if (!key_bytes.empty()) {
    ropts.revocations = service.revocations();
    ropts.signing_keys = service.signing_keys();
  }
  ropts.copy_fence = service.copy_fence();
  // A refusal by the MDS (docs/security.md "OSS <-> MDS") ends the process
  // with its reason: SIGTERM wakes the sigwait below.
  std::mutex refused_mu;
  Status refused;  // GUARDED_BY(refused_mu)
  ropts.on_refused = [&](const Status& st) {
    {
      std::lock_guard lock(refused_mu);
      refused = st;
    }
    ::kill(::getpid(), SIGTERM);
  };
  Registrar registrar(ropts, raw, io->MakeTcpChannel(flags.mds), on_registered);
  LOG_INFO("serving " << raw.size() << " OST(s) on " << *self << " as " << ropts.self_address
                       << ", MDS " << flags.mds);
  registrar.Start();
  TombstoneSweeper sweeper(raw, std::chrono::seconds(flags.tombstone_ttl_s));

  int sig = 0;
  sigwait(&signals, &sig);
  LOG_INFO("signal " << sig << ": stopping");
  config::NotifyStopping();
  registrar.Stop();
  qos.Stop();
  server->Stop();
  metrics_server.reset();  // before the stores its scrapes read
  std::lock_guard lock(refused_mu);
  if (!refused.ok()) {
    std::fprintf(stderr, "sfs-oss: the MDS %s refused this OSS: %s\n", flags.mds.c_str(),
                 refused.message().c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace sfs::oss

int main(int argc, char** argv) {
  using namespace sfs::oss;
  sfs::SetLogTag("oss");
  // One malloc arena, so the RSS follows the bytes the admission budget lets
  // in: with glibc's default (an arena per thread, up to 8 x cores) each
  // worker's arena kept its own peak of 1 MiB bulk buffers, and an OSS with a
  // 256 MiB budget peaked at 350-570 MiB instead of ~265 (overload_memory_test
  // OssBudgetTest). Allocations are one per request and small: no contention
  // was measurable (docs/benchmarks.md). MALLOC_ARENA_MAX set by the operator wins.
  if (std::getenv("MALLOC_ARENA_MAX") == nullptr) mallopt(M_ARENA_MAX, 1);
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::printf("%s\n", kUsage);
      return 0;
    }
  }
  Flags flags;
  auto args = sfs::config::ExpandArgs(argc, argv, kDefaultConfig);
  std::string bad = args.ok() ? ParseFlags(*args, &flags) : args.status().message();
  if (!bad.empty()) {
    std::fprintf(stderr, "sfs-oss: %s\n%s\n", bad.c_str(), kUsage);
    return 2;
  }
  // Block before any thread starts so that every thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  const uint64_t nofile = RaiseFdLimit();
  auto stores = OpenStores(flags.osts, flags.checksums, nofile);
  if (!stores.ok()) return Fail(stores.status());
  auto kvs = OpenKvStores(flags);
  if (!kvs.ok()) return Fail(kvs.status());
  int rc = Serve(flags, *stores, *kvs, signals);
  LOG_INFO("stopped");
  return rc;
}
