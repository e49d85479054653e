// Stream framing for the RDMA transport; see rdma_wire.h for the format.
#include "common/net/rdma_wire.h"

#include <cstring>

#include "common/net/endian.h"
#include "common/rpc/bulk_copy_stats.h"

namespace sfs::net::rdma {

void EncodeDesc(const BulkDesc& d, uint8_t* out) {
  Put64(out, d.out_addr);
  Put32(out + 8, d.out_rkey);
  Put32(out + 12, d.out_len);
  Put64(out + 16, d.in_addr);
  Put32(out + 24, d.in_rkey);
  Put32(out + 28, d.in_cap);
}

BulkDesc DecodeDesc(const uint8_t* in) {
  BulkDesc d;
  d.out_addr = Get64(in);
  d.out_rkey = Get32(in + 8);
  d.out_len = Get32(in + 12);
  d.in_addr = Get64(in + 16);
  d.in_rkey = Get32(in + 24);
  d.in_cap = Get32(in + 28);
  return d;
}

std::string EncodeStreamFrame(FrameHeader h, std::string_view payload,
                              std::span<const uint8_t> inline_bulk, const BulkDesc* desc) {
  h.payload_len = static_cast<uint32_t>(payload.size());
  std::string out(kHeaderSize + payload.size() + inline_bulk.size() + (desc ? kDescSize : 0), '\0');
  auto* p = reinterpret_cast<uint8_t*>(out.data());
  EncodeHeader(h, p);
  p += kHeaderSize;
  if (!payload.empty()) std::memcpy(p, payload.data(), payload.size());
  p += payload.size();
  if (!inline_bulk.empty()) std::memcpy(p, inline_bulk.data(), inline_bulk.size());
  rpc::BulkCopyStats::AddCopied(inline_bulk.size());
  p += inline_bulk.size();
  if (desc != nullptr) EncodeDesc(*desc, p);
  return out;
}

Status FrameAssembler::Append(const uint8_t* data, size_t n, std::vector<StreamFrame>* out) {
  if (start_ > 0 && start_ * 2 >= buf_.size()) {
    buf_.erase(buf_.begin(), buf_.begin() + static_cast<std::ptrdiff_t>(start_));
    start_ = 0;
  }
  buf_.insert(buf_.end(), data, data + n);
  for (;;) {
    if (!cur_) {
      if (buf_.size() - start_ < kHeaderSize) return Status::Ok();
      SFS_RETURN_IF_ERROR(ParseHeader());
    }
    if (buf_.size() - start_ < cur_total_) return Status::Ok();
    Extract(&out->emplace_back());
  }
}

Status FrameAssembler::ParseHeader() {
  SFS_ASSIGN_OR_RETURN(FrameHeader h, DecodeHeader(buf_.data() + start_));
  if ((h.flags & ~kKnownFlags) != 0) return Status(EBADMSG, "unknown frame flags");
  bool remote = (h.flags & kFlagBulkRemote) != 0;
  if (remote && h.kind == FrameKind::kRequest && (h.flags & kFlagDesc) == 0) {
    return Status(EBADMSG, "remote bulk without a descriptor");
  }
  cur_ = h;
  cur_total_ = kHeaderSize + size_t{h.payload_len} + (remote ? 0 : h.bulk_len) +
               ((h.flags & kFlagDesc) ? kDescSize : 0);
  return Status::Ok();
}

void FrameAssembler::Extract(StreamFrame* f) {
  const FrameHeader& h = *cur_;
  const uint8_t* p = buf_.data() + start_ + kHeaderSize;
  f->header = h;
  f->payload.assign(reinterpret_cast<const char*>(p), h.payload_len);
  p += h.payload_len;
  size_t inline_len = (h.flags & kFlagBulkRemote) ? 0 : h.bulk_len;
  f->inline_bulk.assign(p, p + inline_len);
  rpc::BulkCopyStats::AddCopied(2 * inline_len);  // this assign, and Feed's append to buf_
  p += inline_len;
  if (h.flags & kFlagDesc) f->desc = DecodeDesc(p);
  start_ += cur_total_;
  cur_.reset();
}

}  // namespace sfs::net::rdma
