// sfs-mds: the metadata server daemon. The only place that wires the MDS
// objects together: LevelDB store -> OST registry -> Namespace -> RPC service,
// plus the destroy-queue worker and a housekeeping thread (OST heartbeat
// timeouts, client session expiry, orphan reaping). Runs in the foreground;
// prints "LISTENING host:port" on stdout once serving; SIGTERM/SIGINT stop it
// cleanly (a last metadata commit, then exit 0); bad flags exit 2 with a
// one-line usage. --replay on (the default): a metadata change is answered
// before its commit, with a transno; clients keep what is not committed yet
// and replay it after a restart (replay_ops.cc), so nothing acknowledged is
// lost to a power cut; the commit thread runs every --commit-interval-ms
// (default 1000 then). --replay off: --commit-interval-ms 0 (the default
// then) commits every change before its reply; N > 0 acknowledges first and
// commits every N ms (loses up to N ms on power loss); see
// docs/durability.md. --inline
// off: every request goes through the worker pool (MdsService::set_inline).
// --io-threads N: TCP I/O threads (default 1: inline answers need no other).
#include <signal.h>
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <optional>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>

#include "common/config/config_file.h"
#include "common/config/daemon_notify.h"
#include "common/log.h"
#include "common/metrics/http_server.h"
#include "common/metrics/metrics.h"
#include "common/rpc/listeners.h"
#include "common/rpc/rpc.h"
#include "mds/namespace/destroy_queue.h"
#include "mds/namespace/namespace.h"
#include "mds/namespace/ost_registry.h"
#include "mds/service/mds_service.h"
#include "mds/service/mirror_resyncer.h"
#include "mds/service/oss_destroyer.h"

namespace sfs::mds {
namespace {

// Read when it exists and no --config names another (common/config/config_file.h).
constexpr const char* kDefaultConfig = "/etc/stripefs/mds.conf";

constexpr const char* kUsage =
    "usage: sfs-mds [--config FILE (default /etc/stripefs/mds.conf)] --data DIR --listen HOST:PORT [--client-timeout-ms N] [--ost-timeout-ms N] "
    "[--replay on|off (default on)] [--recovery-window-ms N (default 5000)] "
    "[--commit-interval-ms N (default 1000 with replay; without, 0 = commit before every reply)] [--lease-ms N (0 = no metadata leases)] [--inline on|off] "
    "[--io-threads N] [--transport=auto|tcp|rdma] [--max-inflight-mib N] [--lock-grace-ms N] [--rebuild-mibps N] [--scrub-call-ms N] "
    "[--metrics-listen HOST:PORT (serve GET /metrics there; port 0 prints METRICS host:port)] "
    "[--cap-key-period-s N (default 900: how long one capability signing key signs, with --cluster-key)] "
    "[--cluster-key FILE (mode 0600: sign capabilities the OSSes check)]";

struct Flags {
  std::string data;
  std::string listen;
  int64_t client_timeout_ms = 30000;
  int64_t ost_timeout_ms = 5000;
  int64_t commit_interval_ms = -1;  // -1: the mode's default
  bool replay = true;               // MdsService::set_replay
  int64_t recovery_window_ms = 5000;
  rpc::TransportMode transport = rpc::TransportMode::kAuto;
  int64_t lease_ms = 5000;  // metadata leases (mds/lease/lease_table.h)
  bool inline_handlers = true;  // answer on the I/O thread (MdsService::set_inline)
  int64_t max_inflight_mib = 256;  // memory budget of requests + replies (rpc.h ServerOptions)
  // TCP I/O threads. One: inline answers and their replies stay on one thread
  // (a second one is woken for every completion asio posts: futex hand-offs).
  int64_t io_threads = 1;
  // After a restart, how long only re-asserted locks are granted
  // (mds/lock/lock_table.h); clients reconnect within about a second.
  int64_t lock_grace_ms = 6000;
  double rebuild_mibps = 0;  // rebuild/resync write rate bound, 0 = none
  int64_t scrub_call_ms = 2000;  // how long one ScrubReq reads before it answers "more"
  std::string metrics_listen;  // "" = no metrics endpoint (the default)
  std::string cluster_key;     // "" = no capabilities (docs/security.md)
  // Not in the usage: shortened only by tests of renewal (capability_test).
  int64_t capability_lifetime_s = auth::kCapabilityLifetimeSec;
  // How long one capability signing key signs (common/auth/signing_keys.h).
  int64_t cap_key_period_s = auth::kDefaultKeyPeriodSec;
};

[[noreturn]] void UsageError(const std::string& why) {
  std::cerr << "sfs-mds: " << why << "\n" << kUsage << std::endl;
  std::exit(2);
}

// `where`: the config file's "FILE:LINE: " of the argument, "" for the command line.
int64_t ParseMs(const std::string& where, const std::string& flag, const char* v,
                bool zero_ok = false) {
  char* end = nullptr;
  errno = 0;
  long long n = std::strtoll(v, &end, 10);
  if (end == v || *end != '\0' || errno != 0 || n < 0 || (n == 0 && !zero_ok)) {
    UsageError(where + "bad value for " + flag);
  }
  return n;
}

Flags ParseFlags(const std::vector<config::Arg>& args) {
  Flags f;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string where = config::Where(args[i]);
    std::string a = args[i].text;
    if (a == "--help" || a == "-h") {
      std::cout << kUsage << std::endl;
      std::exit(0);
    }
    std::string value;  // "--flag=value" as well as "--flag value"
    if (size_t eq = a.find('='); eq != std::string::npos) {
      value = a.substr(eq + 1);
      a.resize(eq);
    } else if (i + 1 < args.size()) {
      value = args[++i].text;
    } else {
      UsageError(where + "missing value for " + a);
    }
    const char* v = value.c_str();
    if (a == "--data") {
      f.data = v;
    } else if (a == "--listen") {
      f.listen = v;
    } else if (a == "--client-timeout-ms") {
      f.client_timeout_ms = ParseMs(where, a, v);
    } else if (a == "--ost-timeout-ms") {
      f.ost_timeout_ms = ParseMs(where, a, v);
    } else if (a == "--commit-interval-ms") {
      f.commit_interval_ms = ParseMs(where, a, v, /*zero_ok=*/true);
    } else if (a == "--lease-ms") {
      f.lease_ms = std::strcmp(v, "0") == 0 ? 0 : ParseMs(where, a, v);
    } else if (a == "--max-inflight-mib") {
      f.max_inflight_mib = ParseMs(where, a, v);  // a positive integer, like the ms flags
      if (f.max_inflight_mib > (1 << 20)) UsageError(where + "bad value for " + a);
    } else if (a == "--io-threads") {
      f.io_threads = ParseMs(where, a, v);  // a positive integer
      if (f.io_threads > 64) UsageError(where + "bad value for " + a);
    } else if (a == "--scrub-call-ms") {
      f.scrub_call_ms = ParseMs(where, a, v);
    } else if (a == "--rebuild-mibps") {
      f.rebuild_mibps = static_cast<double>(ParseMs(where, a, v, /*zero_ok=*/true));  // MiB/s
    } else if (a == "--lock-grace-ms") {
      f.lock_grace_ms = ParseMs(where, a, v, /*zero_ok=*/true);
    } else if (a == "--replay") {
      if (value != "on" && value != "off") UsageError(where + "bad value for --replay (on|off)");
      f.replay = value == "on";
    } else if (a == "--recovery-window-ms") {
      f.recovery_window_ms = ParseMs(where, a, v);
    } else if (a == "--inline") {
      if (value != "on" && value != "off") UsageError(where + "bad value for --inline (on|off)");
      f.inline_handlers = value == "on";
    } else if (a == "--metrics-listen") {
      f.metrics_listen = value;
    } else if (a == "--cluster-key") {
      f.cluster_key = value;
    } else if (a == "--cap-key-period-s") {
      f.cap_key_period_s = ParseMs(where, a, v);  // a positive integer
    } else if (a == "--capability-lifetime-s") {
      f.capability_lifetime_s = ParseMs(where, a, v);  // a positive integer
    } else if (a == "--transport") {
      if (!rpc::ParseTransportMode(v, &f.transport)) UsageError(where + "bad value for --transport");
    } else {
      UsageError(where + "unknown flag " + a);
    }
  }
  if (f.data.empty() || f.listen.empty()) UsageError("--data and --listen are required");
  return f;
}

// Periodic work: OST heartbeat timeouts, client expiry, orphans.
class Housekeeper {
 public:
  Housekeeper(Namespace* ns, OstRegistry* osts, int64_t ost_timeout_ms)
      : ns_(ns), osts_(osts), ost_timeout_ms_(ost_timeout_ms) {
    thread_ = std::thread([this] { Loop(); });
  }
  ~Housekeeper() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, std::chrono::milliseconds(250), [&] { return stop_; })) {
      lock.unlock();
      int64_t now = NowMs();
      osts_->CheckTimeouts(now, ost_timeout_ms_);
      ns_->Housekeep(now);
      lock.lock();
    }
  }
  Namespace* ns_;
  OstRegistry* osts_;
  int64_t ost_timeout_ms_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

// The gauges read at scrape time: opens, leases, locks, OSTs, commits and
// whether the restart's grace periods (lease revocations held, only lock
// reclaims granted) still run.
void AddTableCollectors(metrics::Registry* r, Namespace* ns, OstRegistry* osts,
                        LeaseTable* leases, LockTable* locks, int64_t grace_ms) {
  metrics::Histogram& sync =
      r->AddHistogram("sfs_mds_commit_duration_seconds",
                      "Time of each metadata commit (LevelDB sync: an fsync).")
          .With({});
  ns->set_commit_histogram(&sync);
  const int64_t grace_end_ms = NowMs() + std::max<int64_t>(grace_ms, 0);
  r->AddCollector([=](metrics::Writer& w) {
    auto gauge = [&w](const char* name, const char* help, double v) {
      w.Family(name, help, "gauge");
      w.Sample(name, {}, v);
    };
    auto counter = [&w](const char* name, const char* help, uint64_t v) {
      w.Family(name, help, "counter");
      w.Sample(name, {}, v);
    };
    counter("sfs_mds_commits_total", "Metadata commits that synced (fsyncs).",
            ns->committer().commits());
    counter("sfs_mds_commit_failures_total", "Metadata commits whose sync failed.",
            ns->committer().sync_failures());
    gauge("sfs_mds_open_files", "Opens recorded (files open on clients).",
          static_cast<double>(ns->opens().Opens()));
    gauge("sfs_mds_clients_with_open_files", "Clients holding at least one open.",
          static_cast<double>(ns->opens().ClientsWithOpens()));
    gauge("sfs_mds_leases", "Metadata leases held by clients.",
          static_cast<double>(leases->LeaseCount()));
    gauge("sfs_mds_locks", "File lock ranges held.", static_cast<double>(locks->LockCount()));
    gauge("sfs_mds_lock_waiters", "Lock requests waiting.",
          static_cast<double>(locks->WaiterCount()));
    gauge("sfs_mds_recovering",
          "1 while the restart grace period runs (only lock reclaims, revocations held).",
          NowMs() < grace_end_ms ? 1.0 : 0.0);
    std::vector<OstState> snap = osts->Snapshot();
    w.Family("sfs_mds_ost_up", "1 if the MDS counts the OST up (heartbeats arrive).", "gauge");
    for (const OstState& o : snap) {
      w.Sample("sfs_mds_ost_up", {{"ost", std::to_string(o.index)}, {"address", o.address}},
               o.up ? 1.0 : 0.0);
    }
  });
}

int Run(Flags flags, const sigset_t& stop_signals) {
  std::string host;
  uint16_t port = 0;
  Status st = rpc::ParseAddress(flags.listen, &host, &port);
  if (!st.ok()) UsageError("bad --listen address: " + st.ToString());
  std::error_code ec;
  std::filesystem::create_directories(flags.data, ec);
  if (ec) {
    LOG_ERROR("cannot create " << flags.data << ": " << ec.message());
    return 1;
  }
  auto store = OpenLevelDbStore(flags.data + "/meta");
  if (!store.ok()) {
    LOG_ERROR("opening the metadata store: " << store.status().ToString());
    return 1;
  }
  std::optional<auth::ClusterKey> key;
  if (!flags.cluster_key.empty()) {
    Result<auth::ClusterKey> loaded = auth::LoadKey(flags.cluster_key);
    if (!loaded.ok()) {
      LOG_ERROR(loaded.status().ToString());
      return 1;
    }
    key = std::move(*loaded);
    LOG_INFO("cluster key " << flags.cluster_key << ": layouts carry capabilities, OSSes must prove the key");
  }
  // The capability signing keys: new random ones every run and period; the
  // OSSes get them sealed in their heartbeats' answers (docs/security.md).
  std::unique_ptr<auth::KeyRotator> signing;
  if (key.has_value()) {
    signing = std::make_unique<auth::KeyRotator>(flags.cap_key_period_s * 1000,
                                                 flags.capability_lifetime_s * 1000,
                                                 auth::kForcedRotationPublishMs);
    LOG_INFO("capability signing key " << signing->Current(auth::NowUnixMs()).id << ", rotated every "
                                       << flags.cap_key_period_s << " s");
  }
  OstRegistry osts(store->get());
  NamespaceOptions nopts;
  nopts.client_timeout_ms = flags.client_timeout_ms;
  if (flags.commit_interval_ms < 0) {
    flags.commit_interval_ms = flags.replay ? kReplayCommitIntervalMs : kDefaultCommitIntervalMs;
  }
  if (flags.replay && flags.commit_interval_ms == 0) {
    // Every reply waits for its commit: nothing is left to replay.
    LOG_INFO("--commit-interval-ms 0: every change commits before its reply; replay off");
    flags.replay = false;
  }
  nopts.commit_interval_ms = flags.commit_interval_ms;
  Namespace ns(store->get(), &osts, nopts);
  st = osts.Load(NowMs());
  if (st.ok()) st = ns.Start(NowMs());
  if (!st.ok()) {
    LOG_ERROR("starting: " << st.ToString());
    return 1;
  }
  std::unique_ptr<rpc::IoContext> io = rpc::IoContext::Create(1);
  OssDestroyer destroyer(io.get(), signing.get());
  DestroyQueue queue(store->get(), &osts, &destroyer);
  ns.SetDestroyNotifier([&queue] { queue.Notify(); });
  // Destroys wait a moment so that one commit covers a burst of unlinks.
  queue.SetLinger(std::chrono::milliseconds(flags.commit_interval_ms > 0 ? flags.commit_interval_ms
                                                                         : 1000));
  queue.Start();
  Housekeeper housekeeper(&ns, &osts, flags.ost_timeout_ms);
  // Leases: only if an earlier instance granted some may a client still hold
  // one, so only then do revocations wait out a grace period after start.
  LeaseOptions lopts;
  lopts.lease_ms = flags.lease_ms;
  std::string marker = flags.data + "/leases_granted";
  if (!std::filesystem::exists(marker)) lopts.grace_ms = 0;
  lopts.on_first_grant = [marker] {
    if (std::FILE* f = std::fopen(marker.c_str(), "w")) std::fclose(f);
  };
  LeaseTable leases(lopts);
  leases.StartTimer();
  // Locks: as for leases, a grace period for reclaims only if an earlier
  // instance ever granted one. A client silent for its timeout loses them.
  LockOptions kopts;
  kopts.client_timeout_ms = flags.client_timeout_ms;
  std::string lock_marker = flags.data + "/locks_granted";
  kopts.grace_ms = std::filesystem::exists(lock_marker) ? flags.lock_grace_ms : 0;
  // Replays come before reclaims: clients re-open and re-lock after them.
  const bool recover = flags.replay && !ns.clean_start() && !ns.KnownClients().empty();
  if (recover && kopts.grace_ms > 0) kopts.grace_ms += flags.recovery_window_ms;
  kopts.on_first_grant = [lock_marker] {
    if (std::FILE* f = std::fopen(lock_marker.c_str(), "w")) std::fclose(f);
  };
  LockTable locks(kopts);
  // Cached mirror-range locks go to clients that watch, and are recalled
  // through their watch (mds/lock/lock_table.h "Cached locks").
  locks.SetCacheHooks(CacheHooks{
      .may_cache = [&leases](uint64_t client) { return leases.WatchActive(client); },
      .recall = [&leases, timeout = flags.client_timeout_ms](uint64_t key, LockOwner holder) {
        leases.Recall(holder.client, LeaseInval{key & ~kEcRowSpace, 0, {}, true},
                      LeaseTable::SteadyMs() + timeout, [] {});
      },
  });
  // Stale mirror copies are resynced once their OSS is back (docs/redundancy.md).
  MirrorResyncer resyncer(&ns, &osts, io.get(), std::chrono::milliseconds(1000), signing.get(),
                         &locks);
  resyncer.set_rate_mibps(flags.rebuild_mibps);
  resyncer.set_scrub_call(std::chrono::milliseconds(flags.scrub_call_ms));
  MdsService service(&ns, &osts, &leases);
  if (key.has_value()) service.set_cluster_key(*key, signing.get());
  service.set_rebuild_status([&resyncer](proto::RebuildStatusResp* out) { resyncer.FillStatus(out); });
  service.set_rebuild_kick([&resyncer] { resyncer.Kick(); });
  service.set_scrub([&resyncer](const proto::ScrubReq& req, proto::ScrubResp* out) {
    return resyncer.ScrubFile(req, out);
  });
  service.set_capability_lifetime_s(flags.capability_lifetime_s);
  service.set_locks(&locks);
  // Inline answers never wait for the disk: a reply waiting for its commit is
  // held by the Committer, not by the I/O thread.
  service.set_inline(flags.inline_handlers);
  service.set_replay(flags.replay);
  if (recover) {
    service.BeginRecovery(ns.KnownClients(), std::chrono::milliseconds(flags.recovery_window_ms));
  }
  // Metrics (off by default). Declared after what their collectors read, so
  // the server stops (at scope end) before those go.
  metrics::Registry registry;
  std::unique_ptr<MdsMetrics> mds_metrics;
  std::unique_ptr<metrics::MetricsHttpServer> metrics_server;
  if (!flags.metrics_listen.empty()) {
    mds_metrics = std::make_unique<MdsMetrics>(&registry);
    service.set_metrics(mds_metrics.get());
    AddTableCollectors(&registry, &ns, &osts, &leases, &locks,
                       std::max(lopts.grace_ms < 0 ? lopts.lease_ms + lopts.margin_ms
                                                   : lopts.grace_ms,
                                kopts.grace_ms));
    registry.AddCollector([&ns, &resyncer](metrics::Writer& w) {
      auto one = [&w](const char* name, const char* help, const char* type, double v) {
        w.Family(name, help, type);
        w.Sample(name, {}, v);
      };
      one("sfs_mds_mirror_resync_pending_files",
          "Mirrored files with a stale copy waiting for resync (since this start).", "gauge",
          static_cast<double>(ns.ResyncWanted().size()));
      one("sfs_mds_mirror_resync_copies_total", "Stale mirror copies resynced to ok.", "counter",
          static_cast<double>(resyncer.copies_resynced()));
      one("sfs_mds_mirror_resync_bytes_total", "Bytes copied by mirror resync.", "counter",
          static_cast<double>(resyncer.bytes_copied()));
      one("sfs_mds_mirror_resync_failures_total", "Mirror resync copy attempts that failed.",
          "counter", static_cast<double>(resyncer.copy_failures()));
    });
    auto m = metrics::ServeMetrics(flags.metrics_listen, &registry);
    if (!m.ok()) {
      LOG_ERROR(m.status().ToString());
      return 1;
    }
    metrics_server = std::move(*m);
    service.set_metrics_address(metrics_server->address());
  }
  rpc::ServerOptions sopts;
  sopts.host = host;
  sopts.port = port;
  sopts.io_threads = static_cast<int>(flags.io_threads);
  sopts.worker_threads = 8;
  sopts.max_inflight_bytes = static_cast<uint64_t>(flags.max_inflight_mib) << 20;
  auto server = rpc::Listeners::Start(sopts, &service, flags.transport);
  if (!server.ok()) {
    LOG_ERROR("listening on " << flags.listen << ": " << server.status().ToString());
    return 1;
  }
  LOG_INFO(server->Summary());
  std::printf("LISTENING %s:%u\n", host.c_str(), static_cast<unsigned>(server->port()));
  std::fflush(stdout);
  LOG_INFO("serving on " << host << ":" << server->port());
  config::NotifyReady("serving on " + host + ":" + std::to_string(server->port()));
  int sig = 0;
  sigwait(&stop_signals, &sig);
  LOG_INFO("signal " << sig << ": stopping");
  config::NotifyStopping();
  server->Stop();
  queue.Stop();
  st = ns.StopCommits();
  if (!st.ok()) {
    LOG_ERROR("last metadata commit: " << st.ToString());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace sfs::mds

int main(int argc, char** argv) {
  sfs::SetLogTag("mds");
  // Block the stop signals before any thread starts, so every thread
  // inherits the mask and the main thread alone takes them with sigwait.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  for (int i = 1; i < argc; ++i) {  // before a config file can be wrong
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::cout << sfs::mds::kUsage << std::endl;
      return 0;
    }
  }
  auto args = sfs::config::ExpandArgs(argc, argv, sfs::mds::kDefaultConfig);
  if (!args.ok()) sfs::mds::UsageError(args.status().message());
  sfs::mds::Flags flags = sfs::mds::ParseFlags(*args);
  return sfs::mds::Run(flags, stop_signals);
}
