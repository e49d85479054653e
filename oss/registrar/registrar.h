// Registrar: keeps this OSS known to the MDS.
//
// On its own thread it sends RegisterOssReq{address, osts[uuid, space]} until
// the MDS answers OK (retrying with capped exponential backoff), hands the
// assigned OST indices to a callback, then sends a HeartbeatReq with fresh
// statfs numbers every heartbeat interval. If a heartbeat fails in any way (the
// MDS is unreachable, restarted, or answers ENOENT/ESTALE because it forgot
// us), the next contact is a full re-registration, which the MDS treats
// idempotently (known uuids keep their indices; the address is updated).
//
// The data path never waits on this thread: the service only reads the index
// map the callback installs. Each MDS request carries a random per-process
// client id and a fresh xid, so the MDS's de-duplication never confuses two.
//
// With a cluster key (RegistrarOptions::cluster_key; docs/security.md "OSS
// <-> MDS") every registration and heartbeat is preceded by an OssHelloReq
// and carries the MAC of the MDS's nonce, and the MDS's answer is believed
// only with a valid reply MAC. A refusal no retry can cure (the MDS wants a
// key we lack, ours is wrong, the MDS has none, or its answer is not
// sealed with our key) ends the loop and is handed to on_refused. The
// sealed answers carry the MDS's capability signing keys, encrypted
// (key_wrap.h); they are installed in RegistrarOptions::signing_keys.
//
// Thread safety: Start() and Stop() are called from one controlling thread.
// The callback runs on the registrar thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/auth/revocation.h"
#include "common/auth/signing_keys.h"
#include "common/rpc/rpc.h"
#include "mds.pb.h"
#include "oss/service/copy_fence.h"
#include "oss/service/qos.h"
#include "oss/store/object_store.h"

namespace sfs::oss {

struct RegistrarOptions {
  std::string self_address;  // "host:port" clients use to reach this OSS
  std::string metrics_address;  // its GET /metrics "host:port" ("" = none), told to the MDS
  std::chrono::milliseconds heartbeat_interval{1000};
  // The channel keeps retrying the connect until a call's deadline, so this
  // also bounds how long Stop() can wait while the MDS is unreachable.
  std::chrono::milliseconds rpc_timeout{1000};
  std::chrono::milliseconds min_backoff{50};
  std::chrono::milliseconds max_backoff{2000};
  // Receives the QoS table of every heartbeat reply (the MDS sends it whole
  // each time; docs/qos.md). Runs on the registrar thread. Empty = ignored.
  std::function<void(QosRules)> on_qos;
  // The cluster key's 32 bytes ("" = none: the requests go unauthenticated,
  // as an MDS without a key wants them).
  std::string cluster_key;
  // Called once, on the registrar thread, when the MDS refuses this OSS for
  // good (see above); the registrar then stops contacting it. Empty = logged only.
  std::function<void(const Status&)> on_refused;
  // Takes the MDS's revocations from every heartbeat reply (after the last
  // one it holds; all of them, after a Reset, from another MDS run).
  // Null = none asked for.
  auth::RevocationList* revocations = nullptr;
  // With a cluster key: receives the MDS's capability signing keys, opened
  // from every sealed registration and heartbeat answer (key_wrap.h).
  // Null = not asked for.
  auth::KeyRing* signing_keys = nullptr;
  // The stale-copy fence (copy_fence.h): armed by the registrar, filled from
  // every heartbeat reply, told how long each wait or call should take.
  // Null = none.
  CopyFence* copy_fence = nullptr;
};

class Registrar {
 public:
  // Receives the index of stores[i] at indices[i], after every registration.
  using OnRegistered = std::function<void(const std::vector<uint32_t>& indices)>;

  // REQUIRES: stores outlive the registrar; channel leads to the MDS.
  Registrar(RegistrarOptions opts, std::vector<ObjectStore*> stores,
            std::unique_ptr<rpc::Channel> mds, OnRegistered on_registered);
  ~Registrar();  // Stop()s

  void Start();
  // Wakes the thread and joins it; returns within about one rpc_timeout.
  void Stop();

  // Counters, for tests and logs.
  uint64_t registrations() const { return registrations_.load(); }
  uint64_t heartbeats() const { return heartbeats_.load(); }

 private:
  void Run();
  // Sends one registration; on success installs the indices.
  Status Register();
  Status Heartbeat();
  // One round trip to the MDS: transport errors as they come, then the
  // response's own status (EPROTO if it does not parse).
  Status CallMds(const std::string& payload, std::string* response_payload);
  // A keyed OSS's round trip for req (a register or heartbeat): the
  // challenge, then req with its MAC; *resp only if its reply MAC holds.
  Status CallAuthenticated(proto::MdsRequest* req, proto::MdsResponse* resp);
  // Opens the signing keys sealed in an answer to that exchange and installs
  // them (opts_.signing_keys).
  Status InstallKeys(const std::string& oss_nonce, const std::string& nonce,
                     const std::string& sealed);
  // Sleeps for d unless stopped first; returns false iff stopped.
  bool SleepFor(std::chrono::milliseconds d);
  void LogFailure(const char* what, const Status& st);
  // Logs a final refusal and hands it to on_refused.
  void Refused(const char* what, const Status& st);

  const RegistrarOptions opts_;
  const std::vector<ObjectStore*> stores_;
  const std::unique_ptr<rpc::Channel> mds_;
  const OnRegistered on_registered_;
  const uint64_t client_id_;
  uint64_t next_xid_ = 1;                 // registrar thread only
  uint64_t revocations_epoch_ = 0;        // registrar thread only: the MDS run they are from
  std::vector<uint32_t> indices_;         // registrar thread only
  std::chrono::steady_clock::time_point last_failure_log_{};  // registrar thread only

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;  // guarded by mu_
  std::thread thread_;
  std::atomic<uint64_t> registrations_{0};
  std::atomic<uint64_t> heartbeats_{0};
};

}  // namespace sfs::oss
