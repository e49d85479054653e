// The wire frame: a fixed 40-byte little-endian header, a protobuf payload,
// then raw bulk bytes. File data travels only as bulk, so it is never
// serialised or copied into a message.
//
//   off size field
//    0   4   magic 'SFS1' (0x31534653)
//    4   1   version (1)
//    5   1   kind (1 request, 2 response)
//    6   2   service (1 MDS, 2 OSS)
//    8   4   flags (reserved, 0)
//   12   8   request id (matches a response to its request)
//   20   4   payload length  (<= kMaxPayload)
//   24   4   bulk length     (<= kMaxBulk)
//   28   4   crc32c of payload then bulk
//   32   4   reserved (0)
//   36   4   crc32c of header bytes 0..35
//
// A frame that fails any check is rejected; the connection carrying it is closed.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"

namespace sfs::net {

inline constexpr uint32_t kFrameMagic = 0x31534653;
inline constexpr uint8_t kFrameVersion = 1;
inline constexpr size_t kHeaderSize = 40;
inline constexpr uint32_t kMaxPayload = 4u << 20;
inline constexpr uint32_t kMaxBulk = 64u << 20;

enum class FrameKind : uint8_t { kRequest = 1, kResponse = 2 };

struct FrameHeader {
  FrameKind kind = FrameKind::kRequest;
  uint16_t service = 0;
  uint32_t flags = 0;
  uint64_t request_id = 0;
  uint32_t payload_len = 0;
  uint32_t bulk_len = 0;
  uint32_t body_crc = 0;
};

// Fills out[0..kHeaderSize) for h; h.body_crc must already be set.
void EncodeHeader(const FrameHeader& h, uint8_t* out);

// Computes the body crc over payload then bulk.
uint32_t BodyCrc(std::span<const uint8_t> payload, std::span<const uint8_t> bulk);

// Appends a frame's parts (header, payload, bulk) to `out` as Buf{pointer,
// length} for a gathered write, less the first *skip bytes (already written
// by an earlier, partial write); consumes *skip. Returns the bytes appended.
// Buf: iovec or asio::const_buffer.
template <typename Buf>
size_t AppendUnsent(std::initializer_list<std::span<const uint8_t>> parts, size_t* skip,
                    std::vector<Buf>* out) {
  size_t n = 0;
  for (std::span<const uint8_t> part : parts) {
    size_t s = std::min(*skip, part.size());
    *skip -= s;
    if (part.size() == s) continue;
    out->push_back(Buf{const_cast<uint8_t*>(part.data()) + s, part.size() - s});
    n += part.size() - s;
  }
  return n;
}

// Parses and validates a header (magic, version, kind, lengths, header crc).
// EBADMSG on any mismatch, EMSGSIZE when a length exceeds the limits.
Result<FrameHeader> DecodeHeader(const uint8_t* in);

// EBADMSG iff the body does not match h.body_crc.
Status VerifyBody(const FrameHeader& h, std::span<const uint8_t> payload,
                  std::span<const uint8_t> bulk);
// As VerifyBody, for a body whose crc (BodyCrc) the caller has computed as
// its bytes came in: lengths and crc checked against the header.
Status VerifyBodyCrc(const FrameHeader& h, size_t payload_len, size_t bulk_len, uint32_t crc);

// Whole-frame helpers (tests, tools): encode to one buffer; decode from a
// buffer that must hold exactly one frame.
std::vector<uint8_t> EncodeFrame(FrameHeader h, std::span<const uint8_t> payload,
                                 std::span<const uint8_t> bulk);
struct Frame {
  FrameHeader header;
  std::string payload;
  std::vector<uint8_t> bulk;
};
Result<Frame> DecodeFrame(std::span<const uint8_t> bytes);

}  // namespace sfs::net
