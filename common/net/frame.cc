// Frame codec. Explicit little-endian byte packing, so the layout does not
// depend on struct padding or host byte order.
#include "common/net/frame.h"

#include <cstring>

#include "common/crc32c.h"
#include "common/net/endian.h"

namespace sfs::net {

void EncodeHeader(const FrameHeader& h, uint8_t* out) {
  std::memset(out, 0, kHeaderSize);
  Put32(out + 0, kFrameMagic);
  out[4] = kFrameVersion;
  out[5] = static_cast<uint8_t>(h.kind);
  Put16(out + 6, h.service);
  Put32(out + 8, h.flags);
  Put64(out + 12, h.request_id);
  Put32(out + 20, h.payload_len);
  Put32(out + 24, h.bulk_len);
  Put32(out + 28, h.body_crc);
  Put32(out + 36, crc32c::Value(out, 36));
}

uint32_t BodyCrc(std::span<const uint8_t> payload, std::span<const uint8_t> bulk) {
  uint32_t c = crc32c::Value(payload.data(), payload.size());
  return crc32c::Extend(c, bulk.data(), bulk.size());
}

Result<FrameHeader> DecodeHeader(const uint8_t* in) {
  if (Get32(in) != kFrameMagic) return Status(EBADMSG, "bad frame magic");
  if (Get32(in + 36) != crc32c::Value(in, 36)) return Status(EBADMSG, "bad header crc");
  if (in[4] != kFrameVersion) return Status(EBADMSG, "unsupported frame version " + std::to_string(in[4]));
  FrameHeader h;
  if (in[5] != 1 && in[5] != 2) return Status(EBADMSG, "bad frame kind");
  h.kind = static_cast<FrameKind>(in[5]);
  h.service = Get16(in + 6);
  h.flags = Get32(in + 8);
  h.request_id = Get64(in + 12);
  h.payload_len = Get32(in + 20);
  h.bulk_len = Get32(in + 24);
  h.body_crc = Get32(in + 28);
  if (h.payload_len > kMaxPayload) return Status(EMSGSIZE, "payload too large: " + std::to_string(h.payload_len));
  if (h.bulk_len > kMaxBulk) return Status(EMSGSIZE, "bulk too large: " + std::to_string(h.bulk_len));
  return h;
}

Status VerifyBody(const FrameHeader& h, std::span<const uint8_t> payload,
                  std::span<const uint8_t> bulk) {
  return VerifyBodyCrc(h, payload.size(), bulk.size(), BodyCrc(payload, bulk));
}

Status VerifyBodyCrc(const FrameHeader& h, size_t payload_len, size_t bulk_len, uint32_t crc) {
  if (payload_len != h.payload_len || bulk_len != h.bulk_len) {
    return Status(EBADMSG, "body length mismatch");
  }
  if (crc != h.body_crc) return Status(EBADMSG, "body crc mismatch");
  return Status::Ok();
}

std::vector<uint8_t> EncodeFrame(FrameHeader h, std::span<const uint8_t> payload,
                                 std::span<const uint8_t> bulk) {
  h.payload_len = static_cast<uint32_t>(payload.size());
  h.bulk_len = static_cast<uint32_t>(bulk.size());
  h.body_crc = BodyCrc(payload, bulk);
  std::vector<uint8_t> out(kHeaderSize + payload.size() + bulk.size());
  EncodeHeader(h, out.data());
  if (!payload.empty()) std::memcpy(out.data() + kHeaderSize, payload.data(), payload.size());
  if (!bulk.empty()) std::memcpy(out.data() + kHeaderSize + payload.size(), bulk.data(), bulk.size());
  return out;
}

Result<Frame> DecodeFrame(std::span<const uint8_t> bytes) {
  if (bytes.size() < kHeaderSize) return Status(EBADMSG, "truncated header");
  SFS_ASSIGN_OR_RETURN(FrameHeader h, DecodeHeader(bytes.data()));
  size_t need = kHeaderSize + size_t{h.payload_len} + h.bulk_len;
  if (bytes.size() != need) return Status(EBADMSG, "frame length mismatch");
  auto payload = bytes.subspan(kHeaderSize, h.payload_len);
  auto bulk = bytes.subspan(kHeaderSize + h.payload_len, h.bulk_len);
  SFS_RETURN_IF_ERROR(VerifyBody(h, payload, bulk));
  Frame f;
  f.header = h;
  f.payload.assign(reinterpret_cast<const char*>(payload.data()), payload.size());
  f.bulk.assign(bulk.begin(), bulk.end());
  return f;
}

}  // namespace sfs::net
