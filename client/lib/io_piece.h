// The Striper's unit of work, one OSS call (Striper::Piece), and the
// outcome rules io.cc and ec_io.cc share. Internal to libsfs: include only
// from the Striper's own .cc files (it pulls in the RPC layer).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "client/lib/fence_epoch.h"
#include "client/lib/io.h"
#include "common/rpc/rpc.h"

namespace sfs::client {

struct Striper::Piece {
  enum class Op { kRead, kWrite, kTruncate, kStat, kSync, kWriteV, kCustom };
  Op op = Op::kRead;
  uint32_t ost = 0;
  uint64_t oid = 0;
  uint64_t offset = 0;       // read/write: object offset; truncate: new object size
  uint64_t length = 0;       // read/write
  uint64_t file_offset = 0;  // read/write: where in the file (to place the buffer span)
  std::span<const uint8_t> out;
  std::span<uint8_t> in;
  uint64_t xid = 0;  // the same on every retry, so the OSS can de-duplicate
  std::shared_ptr<rpc::PendingCall> call;
  rpc::Channel* channel = nullptr;
  FenceEpoch* fence = nullptr;  // the write fence epoch of channel's OSS (fence_epoch.h)
  uint64_t epoch = 0;           // the fence epoch this call carries (mutating ops)
  bool fenced = false;          // ESTALE + fenced: refused unapplied, send again with the epoch now
  Status status;
  bool transport_error = false;
  bool destroyed = false;     // ESTALE: the OSS destroyed the object (a stale layout)
  bool mirror_copy = false;   // read: one copy of a mirrored file (OssRequest.mirror_copy)
  bool stale_copy = false;    // ESTALE + stale_copy: the MDS has that copy not ok (the fence)
  // EACCES + unknown_key: the OSS does not hold the key the capability names
  // (retired: renewal cures it; newer than its last heartbeat: waiting does).
  bool unknown_key = false;
  uint64_t blocks = 0;        // stat result
  bool oss_verifies = false;  // read: asked again after a bad crc; the OSS checks the bytes
  // kWriteV: the extents (their data back to back in `gathered`, which `out`
  // spans), each with the batch's write pieces it carries and its status.
  struct Extent {
    uint64_t oid = 0;
    uint64_t offset = 0;
    uint64_t length = 0;
    uint64_t skip = 0;  // padding before its data in `gathered`
    std::vector<size_t> members;
    Status status;
  };
  std::vector<Extent> extents;
  std::vector<uint8_t> gathered;
  ObjectCall* custom = nullptr;  // kCustom: the call it runs
  // Capability tokens sent with it, each with its layout's inode; renewed
  // at most once per call (Striper::Renew).
  std::vector<std::pair<uint64_t, std::string>> caps;
  bool renewed = false;
  // Mirrored layouts: the piece's stripe, which copy of it, and the caller's
  // piece it is a copy of (Striper::FanOut).
  uint32_t stripe = 0;
  uint32_t copy = 0;
  size_t group = 0;
  std::chrono::milliseconds timeout{0};  // this call's, if not 0 (a read with copies left)
  bool fail_fast = false;                // another copy can stand in: CallOptions::fail_fast
};

// A copy's (or EC chunk's) failure that another copy or chunk may stand in
// for: its OSS did not answer, does not serve the OST, or failed the I/O. Not
// a destroyed object (a stale layout) nor a refusal of the request itself.
bool CopyFailed(const Striper::Piece& p);

// The first failing piece in order; transport trouble and stale OSTs become
// EIO (io.cc).
Status FirstError(std::span<const Striper::Piece> pieces);

}  // namespace sfs::client
