// Server-side copies: a local loop over the store and a windowed pull from a
// peer OSS (contract in copy_op.h).
#include "oss/service/copy_op.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <vector>

#include "oss.pb.h"

namespace sfs::oss {
namespace {

// Bytes a local copy moves per store call.
constexpr uint64_t kLocalPiece = 1 << 20;
// Pull reads in flight at once (1 MiB at kPullPiece).
constexpr size_t kPullWindow = 16;
constexpr std::chrono::milliseconds kPullTimeout{30000};

constexpr uint64_t kBlock = 4096;

bool AllZero(std::span<const uint8_t> b) {
  return std::all_of(b.begin(), b.end(), [](uint8_t c) { return c == 0; });
}

// Lands one piece read from the source (zeros past the bytes that exist, by
// the read's contract) at object offset off: the blocks of it that are all
// zeros and whole in the destination are punched, the rest written, so a
// hole (or a run of zeros) in the source is a hole in the copy.
Status Land(ObjectStore& dst, uint64_t oid, uint64_t off, std::span<const uint8_t> piece) {
  uint64_t run = 0;  // start of the run of the kind in hand (piece offsets)
  bool run_zero = false;
  auto flush = [&](uint64_t end) -> Status {
    if (end == run) return Status::Ok();
    if (run_zero) return dst.Punch(oid, off + run, end - run);
    return dst.Write(oid, off + run, piece.subspan(run, end - run), false);
  };
  for (uint64_t at = 0; at < piece.size();) {
    const uint64_t next =
        std::min<uint64_t>((off + at) / kBlock * kBlock + kBlock - off, piece.size());
    const bool whole = (off + at) % kBlock == 0 && next - at == kBlock;
    const bool zero = whole && AllZero(piece.subspan(at, next - at));
    if (at == 0) run_zero = zero;
    if (zero != run_zero) {
      SFS_RETURN_IF_ERROR(flush(at));
      run = at;
      run_zero = zero;
    }
    at = next;
  }
  return flush(piece.size());
}

Status LocalCopy(const CopySource& src, ObjectStore& dst, uint64_t dst_oid, uint64_t dst_off,
                 uint64_t len) {
  std::vector<uint8_t> buf(std::min(len, kLocalPiece));
  for (uint64_t done = 0; done < len;) {
    const uint64_t n = std::min<uint64_t>(len - done, buf.size());
    std::span<uint8_t> piece(buf.data(), n);
    SFS_RETURN_IF_ERROR(src.local->Read(src.oid, src.offset + done, piece).status());
    SFS_RETURN_IF_ERROR(Land(dst, dst_oid, dst_off + done, piece));
    done += n;
  }
  return Status::Ok();
}

struct PullRead {
  uint64_t at = 0;  // offset in the copy
  std::vector<uint8_t> buf;
  std::shared_ptr<rpc::PendingCall> call;
};

std::shared_ptr<rpc::PendingCall> StartRead(const CopySource& src, PullRead& r) {
  proto::OssRequest req;
  req.set_ost(src.ost);
  req.set_oid(src.oid);
  req.mutable_read()->set_offset(src.offset + r.at);
  req.mutable_read()->set_length(r.buf.size());
  if (!src.capability.empty()) req.add_capabilities(src.capability);
  rpc::CallOptions opts;
  opts.timeout = kPullTimeout;
  return src.remote->Start(rpc::kServiceOss, req.SerializeAsString(), {}, r.buf, opts);
}

// The bytes that exist in a pulled piece, or its error (the source OSS's
// status as it is: ESTALE for a destroyed object, EIO and so on).
Result<uint64_t> FinishRead(rpc::Channel& ch, PullRead& r) {
  rpc::Response resp;
  Status st = ch.Wait(r.call, &resp);
  r.call.reset();
  if (!st.ok()) return Status(EIO, "pull from " + ch.address() + ": " + st.ToString());
  proto::OssResponse out;
  if (!out.ParseFromString(resp.payload))
    return Status(EIO, "unparsable reply from " + ch.address());
  if (out.status().code() != 0) return Status(out.status().code(), out.status().message());
  if (resp.bulk_len < r.buf.size()) {
    std::memset(r.buf.data() + resp.bulk_len, 0, r.buf.size() - resp.bulk_len);
  }
  return std::min<uint64_t>(out.read_size(), r.buf.size());
}

// Keeps kPullWindow reads in flight and lands them in order. On an error the
// reads still in flight are waited for (their buffers must outlive them).
Status PullCopy(const CopySource& src, ObjectStore& dst, uint64_t dst_oid, uint64_t dst_off,
                uint64_t len) {
  std::deque<PullRead> window;
  uint64_t next = 0;
  Status result;
  while (result.ok() && (next < len || !window.empty())) {
    while (result.ok() && next < len && window.size() < kPullWindow) {
      PullRead& r = window.emplace_back();
      r.at = next;
      r.buf.resize(std::min(len - next, kPullPiece));
      r.call = StartRead(src, r);
      next += r.buf.size();
    }
    PullRead& r = window.front();
    Result<uint64_t> got = FinishRead(*src.remote, r);
    result = got.ok() ? Land(dst, dst_oid, dst_off + r.at, r.buf) : got.status();
    window.pop_front();
  }
  for (PullRead& r : window) {
    rpc::Response ignored;
    (void)src.remote->Wait(r.call, &ignored);
  }
  return result;
}

}  // namespace

rpc::Channel* PeerChannels::Get(const std::string& address) {
  std::lock_guard<std::mutex> lock(mu_);
  std::unique_ptr<rpc::Channel>& ch = channels_[address];
  if (ch == nullptr) ch = io_->MakeTcpChannel(address, /*lanes=*/4);
  return ch.get();
}

Status CopyRange(const CopySource& src, ObjectStore& dst, uint64_t dst_oid, uint64_t dst_off,
                 uint64_t len) {
  if (len == 0) return Status::Ok();
  if (src.local != nullptr) return LocalCopy(src, dst, dst_oid, dst_off, len);
  return PullCopy(src, dst, dst_oid, dst_off, len);
}

}  // namespace sfs::oss
