// RPC over a transport: the only networking API the services and libsfs see.
//
// A Server receives request frames and hands each to a Handler on a worker
// thread; a Channel is a client's connection to one server address, with many
// calls in flight, per-call deadlines, reconnect with backoff and re-send of
// in-flight calls after a reconnect (servers de-duplicate mutating requests by
// the (client id, xid) their payload carries).
//
// Transports: Server and Channel are interfaces. TCP (Boost.Asio, C++20
// coroutines) is in common/net/tcp_server.cc and tcp_channel.cc; an RDMA transport implements
// the same two interfaces, so handlers and callers do not change. No Asio or
// protobuf type appears in this header.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/rpc/bulk_pool.h"
#include "common/status.h"

namespace sfs::rpc {

enum ServiceId : uint16_t { kServiceMds = 1, kServiceOss = 2 };

// A request as a handler sees it. Bulk has been crc-verified.
struct Request {
  uint16_t service = 0;
  std::string payload;         // serialized protobuf
  std::vector<uint8_t> bulk;   // raw bulk bytes (file data), unless in pooled_bulk
  std::string peer;            // "host:port" of the caller
  // Only for a handler whose UsesBulkPool() is true, and only on servers that
  // have a pool (TCP): the bulk arrived in pooled_bulk (4 KiB-aligned; `bulk`
  // stays empty), and `pool` may give the reply's bulk (valid during the call).
  BulkBuffer pooled_bulk;
  BulkPool* pool = nullptr;
  // With pooled_bulk: the crc32c of each 4 KiB piece of it (bulk_crc.h),
  // computed while checking the frame's crc, for a handler that keeps
  // per-chunk crcs of its own.
  std::vector<uint32_t> bulk_piece_crcs;
  // The server can send a reply's bulk from a file (Reply::file_bulk): TCP.
  bool file_bulk_ok = false;

  // The request's bulk, wherever it arrived.
  std::span<const uint8_t> bulk_bytes() const {
    if (!pooled_bulk.empty()) return pooled_bulk.span();
    return bulk;
  }
};

// A range of an open file that a reply sends as its bulk straight from the
// page cache (sendfile(2): no copy into a buffer of ours, none into the
// socket). Owns fd, closed with the last reference, unless `owner` is set:
// then fd is owner's, kept open by holding owner (an OSS's cached object
// file). crc is the crc32c of the range as the handler vouches for it (e.g.
// stored when it was written); the frame's crc is folded from it, so the
// bytes are never read by us, and bytes that no longer match it fail the
// client's frame check (EBADMSG), never arrive as good ones: a range that
// changes while it is sent (a racing write) is caught there, and one that
// ends early (a racing truncate) is sent padded with zeros to the frame's
// length, which the check catches too.
struct FileBulk {
  FileBulk(int fd, uint64_t offset, uint32_t length, uint32_t crc,
           std::shared_ptr<const void> owner = nullptr)
      : fd(fd), offset(offset), length(length), crc(crc), owner(std::move(owner)) {}
  ~FileBulk();
  FileBulk(const FileBulk&) = delete;
  FileBulk& operator=(const FileBulk&) = delete;
  const int fd;
  const uint64_t offset;
  const uint32_t length;
  const uint32_t crc;
  const std::shared_ptr<const void> owner;
};

// What a handler returns. bulk is sent as raw bytes after the payload;
// pooled_bulk, when not empty, is sent instead (set it only from
// Request::pool: servers without a pool send `bulk` alone).
struct Reply {
  std::string payload;
  std::vector<uint8_t> bulk;
  BulkBuffer pooled_bulk;
  // Optional, with pooled_bulk: the crc32c of each of its 4 KiB pieces
  // (bulk_crc.h); when there is one per piece, the server folds the frame's
  // crc from them instead of reading the bulk again. REQUIRES: they match it.
  std::vector<uint32_t> bulk_piece_crcs;
  // Optional, with pooled_bulk, instead of bulk_piece_crcs: the crc32c of the
  // whole bulk as the handler vouches for it (the OSS folds it from its stored
  // chunk crcs, without reading the bytes); the server folds the frame's crc
  // from it. A wrong value makes the client's frame check fail.
  std::optional<uint32_t> bulk_value;
  // Optional, only when Request::file_bulk_ok: sent as the bulk instead of
  // bulk and pooled_bulk (which must then be empty).
  std::shared_ptr<const FileBulk> file_bulk;
};

// Sends the reply of one call. Call it at most once, from any thread, at any
// time: after the connection closed or Server::Stop() it does nothing.
// Dropping it unanswered leaves the caller to its deadline.
using ReplyFn = std::function<void(Reply)>;

// Implemented by a service. Handle() runs on a worker thread and may block;
// it is called concurrently for different requests. It must always fill
// reply->payload (errors go inside the payload's status).
//
// HandleAsync() is what the servers call. A handler that answers some
// requests later (a long poll, a call waiting for other clients) overrides
// it, keeps `done` and returns at once, so a held call occupies no worker.
// `req` is valid only during the call. The default runs Handle().
class Handler {
 public:
  virtual ~Handler() = default;
  virtual void Handle(Request& req, Reply* reply) = 0;
  virtual void HandleAsync(Request& req, ReplyFn done) {
    Reply reply;
    Handle(req, &reply);
    done(std::move(reply));
  }
  // At most how many bytes of reply bulk this request will produce, from its
  // payload alone. The server counts them against its memory budget from
  // admission until the reply is written. Runs on an I/O thread before the
  // request's bulk is read: keep it cheap. Default: none.
  virtual uint64_t ReplyBulkHint(std::string_view /*payload*/) { return 0; }
  // Runs on the TCP server's I/O thread once a request is fully read. A
  // handler that can answer this request without blocking (no disk wait, no
  // long lock) takes `done` and answers here, sparing the two thread
  // hand-offs of the worker pool; it returns false (leaving `done` alone) to
  // have the request run by HandleAsync on a worker. Default: false.
  virtual bool TryHandleInline(Request& /*req*/, ReplyFn& /*done*/) { return false; }
  // True if this handler reads request bulk with Request::bulk_bytes() and
  // may fill Reply::pooled_bulk (common/rpc/bulk_pool.h). Default: false.
  virtual bool UsesBulkPool() const { return false; }
};

struct ServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;          // 0 = pick a free port
  int io_threads = 1;
  int worker_threads = 4;
  // Memory budget (common/rpc/admission.h): bytes of requests and their
  // replies in flight, from admission (before a request's bulk is read) until
  // the reply is written. Over budget a connection's reads pause. A single
  // request larger than a budget is served when nothing else of it is in flight.
  uint64_t max_inflight_bytes = 256ull << 20;           // the whole server
  uint64_t max_inflight_bytes_per_conn = 64ull << 20;   // each connection
};

// What the memory budget has seen (for tests and logs).
struct AdmissionStats {
  uint64_t in_flight = 0;  // bytes admitted now
  uint64_t peak = 0;       // most bytes ever admitted at once
  uint64_t waits = 0;      // requests whose admission had to wait
};

class Server {
 public:
  virtual ~Server() = default;
  virtual uint16_t port() const = 0;
  // Stops accepting, closes connections, waits for running handlers. Idempotent.
  virtual void Stop() = 0;
  virtual AdmissionStats admission_stats() const { return {}; }
};

// Starts a TCP server. REQUIRES: handler outlives the server.
Result<std::unique_ptr<Server>> StartTcpServer(const ServerOptions& opts, Handler* handler);

// What a call returns. If the call supplied a bulk_in buffer, the reply's
// bulk was received directly into it and `bulk` stays empty; bulk_len tells
// how many bytes arrived either way.
struct Response {
  std::string payload;
  std::vector<uint8_t> bulk;
  size_t bulk_len = 0;
  // The request went out again on a new connection after the one it had
  // gone out on failed: its first copy may still reach the server, after
  // this reply (libsfs raises its write fence epoch then; fence_epoch.h).
  bool resent = false;
};

struct CallOptions {
  std::chrono::milliseconds timeout{30000};
  // The server may hold this call (a long poll). The TCP channel then lets
  // its caller read others' replies only while no other caller waits.
  bool held = false;
  // Fail the call with ECONNREFUSED as soon as an attempt to connect fails
  // while it waits, instead of waiting (until the timeout) for the server to
  // come back: for a caller with somewhere else to go (another mirror copy).
  // TCP channel only; others ignore it.
  bool fail_fast = false;
  // Wait awake, up to 50 us at a time, for the reply before sleeping in
  // poll: for a call the server answers from memory within microseconds
  // (a KV get), where a sleep and its wake-up cost more than the wait on a
  // virtual machine. Not for every read: several processes waiting awake on
  // few cores take them from the servers (docs/benchmarks.md, "KV-cache
  // tier"). TCP channel only; others ignore it.
  bool spin = false;
};

class PendingCall;  // opaque; owned through shared_ptr

// A connection to one server. Thread-safe. Connects lazily on first use.
class Channel {
 public:
  virtual ~Channel() = default;
  // Starts a call. bulk_out and bulk_in must stay valid until Wait() returns.
  // If bulk_in is non-empty the reply bulk is received into it (a reply bulk
  // larger than bulk_in fails the call with EPROTO).
  virtual std::shared_ptr<PendingCall> Start(uint16_t service, std::string payload,
                                             std::span<const uint8_t> bulk_out,
                                             std::span<uint8_t> bulk_in,
                                             const CallOptions& opts) = 0;
  // Waits for the reply. ETIMEDOUT when the deadline passes (the server may
  // or may not have applied it), ENOTCONN/ECONNREFUSED when it was never reachable.
  virtual Status Wait(const std::shared_ptr<PendingCall>& call, Response* out) = 0;

  Status Call(uint16_t service, std::string payload, std::span<const uint8_t> bulk_out,
              std::span<uint8_t> bulk_in, Response* out, const CallOptions& opts = {}) {
    return Wait(Start(service, std::move(payload), bulk_out, bulk_in, opts), out);
  }
  virtual const std::string& address() const = 0;
};

// Runs the I/O threads that client channels use. One per process is enough.
class IoContext {
 public:
  virtual ~IoContext() = default;
  static std::unique_ptr<IoContext> Create(int threads = 1);
  // A TCP channel to "host:port" over `lanes` connections (each opened on
  // first use): a call takes a lane with no call in flight if there is one,
  // else the least busy, so concurrent callers each read their own socket.
  // Calls on different lanes are not ordered. REQUIRES: this IoContext outlives it.
  virtual std::unique_ptr<Channel> MakeTcpChannel(const std::string& address, int lanes = 1) = 0;
};

// Splits "host:port". EINVAL on a malformed address.
Status ParseAddress(const std::string& address, std::string* host, uint16_t* port);

}  // namespace sfs::rpc
