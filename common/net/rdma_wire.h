// How RPC frames travel over an RDMA connection (device-free codec).
//
// Control messages are SEND/RECV messages of at most kMsgSize bytes into
// pre-posted receive buffers. Together they carry an ordered byte stream of
// frames (common/net/frame.h); a frame larger than one message continues in
// the next ones, and the sender never interleaves two frames. Each frame is
//
//   header (40) | payload | inline bulk | descriptor (32, iff kFlagDesc)
//
// header.bulk_len is always the full bulk length and header.body_crc always
// covers payload then bulk, wherever the bulk travels, so every byte of file
// data is verified end to end. Flags (header bytes 8..11):
//   kFlagDesc        a BulkDesc trailer follows the inline part.
//   kFlagBulkRemote  the bulk is not inline. In a request: the server pulls it
//                    with RDMA READ from (out_addr, out_rkey, out_len). In a
//                    reply: the server has already RDMA-WRITten it into the
//                    caller's (in_addr, in_rkey, in_cap) (RC ordering makes the
//                    data visible before this SEND completes on the receiver).
//   kFlagBulkBad     reply only, no body: the request's remote bulk did not
//                    match its crc (e.g. a stale client registration); the
//                    client invalidates its registration and re-sends once.
// A reply bulk the caller gave no buffer for travels inline.
//
// Descriptor (little-endian): out_addr u64, out_rkey u32, out_len u32,
// in_addr u64, in_rkey u32, in_cap u32.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/net/frame.h"
#include "common/status.h"

namespace sfs::net::rdma {

inline constexpr uint32_t kFlagDesc = 1u << 0;
inline constexpr uint32_t kFlagBulkRemote = 1u << 1;
inline constexpr uint32_t kFlagBulkBad = 1u << 2;
inline constexpr uint32_t kKnownFlags = kFlagDesc | kFlagBulkRemote | kFlagBulkBad;
inline constexpr size_t kDescSize = 32;

struct BulkDesc {
  uint64_t out_addr = 0;
  uint32_t out_rkey = 0;
  uint32_t out_len = 0;
  uint64_t in_addr = 0;
  uint32_t in_rkey = 0;
  uint32_t in_cap = 0;
};

void EncodeDesc(const BulkDesc& d, uint8_t* out);
BulkDesc DecodeDesc(const uint8_t* in);

// Serialises one frame for the stream. h.flags, h.bulk_len and h.body_crc
// must be set by the caller; payload_len is filled in here. inline_bulk must
// be empty iff kFlagBulkRemote is set or bulk_len is 0; desc iff kFlagDesc.
std::string EncodeStreamFrame(FrameHeader h, std::string_view payload,
                              std::span<const uint8_t> inline_bulk, const BulkDesc* desc);

struct StreamFrame {
  FrameHeader header;
  std::string payload;
  std::vector<uint8_t> inline_bulk;  // empty when the bulk is remote
  std::optional<BulkDesc> desc;
};

// Reassembles frames from the received byte stream. Not thread-safe.
class FrameAssembler {
 public:
  // Adds received bytes and appends every frame they complete to *out.
  // EBADMSG/EMSGSIZE when a header is invalid, carries unknown flags or an
  // inconsistent descriptor; the connection must then close.
  Status Append(const uint8_t* data, size_t n, std::vector<StreamFrame>* out);

 private:
  Status ParseHeader();
  void Extract(StreamFrame* f);
  std::vector<uint8_t> buf_;
  size_t start_ = 0;
  std::optional<FrameHeader> cur_;  // header of the frame at start_, once parsed
  size_t cur_total_ = 0;
};

}  // namespace sfs::net::rdma
