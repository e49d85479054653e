// Server-side copies between objects (OssRequest.copy, docs/protocol.md
// "Space and copies"): what copy_file_range(2) on a mount turns into, so
// that the file data never travels to the client.
//
// The destination's OSS does the copy. When it also serves the source OST,
// it reads the source object from its own store; otherwise it pulls the
// source range from the source's OSS (PeerChannels) with ordinary reads,
// verified there, several in flight. Either way each piece is written with
// the store's checked Write (fresh chunk crcs for the destination), except
// its 4 KiB blocks of zeros (holes, bytes past the source's end, written
// zeros), which are punched in the destination: holes stay holes, as with
// cp --sparse.
//
// Why not copy_file_range(2) on the OST: with checksums on (the default) the
// source chunks must be verified and the destination's crcs computed, which
// needs the bytes in memory anyway; a kernel copy would save one memcpy per
// byte and could not keep the sidecars right.
//
// Pulls are sent as reads of at most kPullPiece bytes, which an OSS answers
// on its I/O thread (OssService::TryHandleInline) without taking a worker:
// two OSSes copying from each other with every worker busy in a copy then
// still answer each other's reads. (An OSS run with inline reads off can
// deadlock so until the pull's timeout, which fails the copy with EIO.)
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/rpc/rpc.h"
#include "common/status.h"
#include "oss/store/object_store.h"

namespace sfs::oss {

// TCP channels to other OSSes by address, made on first use and kept.
// Thread-safe. REQUIRES: io outlives this object.
class PeerChannels {
 public:
  explicit PeerChannels(rpc::IoContext* io) : io_(io) {}
  rpc::Channel* Get(const std::string& address);

 private:
  rpc::IoContext* const io_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<rpc::Channel>> channels_;  // GUARDED_BY(mu_)
};

// Where a copy's bytes come from: a store of this OSS, or a peer's OST.
struct CopySource {
  ObjectStore* local = nullptr;    // set: read from this store
  rpc::Channel* remote = nullptr;  // else: pull from this OSS
  uint32_t ost = 0;
  uint64_t oid = 0;
  uint64_t offset = 0;
  std::string capability;  // a pull's capability token ("" without a cluster key)
};

// Largest read of a pull (an inline read at the source's default).
inline constexpr uint64_t kPullPiece = 64 * 1024;

// Copies len bytes from src into object dst_oid of dst at dst_off.
// REQUIRES: exactly one of src.local / src.remote; the ranges are valid
// (the service checks). Errors: the store's, the source OSS's status, EIO
// for a peer that cannot be reached.
Status CopyRange(const CopySource& src, ObjectStore& dst, uint64_t dst_oid, uint64_t dst_off,
                 uint64_t len);

}  // namespace sfs::oss
