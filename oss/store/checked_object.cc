// CheckedObject: the verified read path and the two-slot mutation protocol
// (contract in checked_object.h).
#include "oss/store/checked_object.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "common/crc32c.h"
#include "common/log.h"
#include "common/rpc/bulk_crc.h"
#include "common/rpc/bulk_copy_stats.h"
#include "oss/store/direct_io.h"

namespace sfs::oss {
namespace {

std::string Hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%08x", v);
  return buf;
}

}  // namespace

Result<uint64_t> CheckedObject::ReadChunk(uint64_t c, std::span<uint8_t> buf) {
  SFS_ASSIGN_OR_RETURN(uint64_t n, ReadAll(env_, data_fd_, buf, c * kCrcChunk));
  std::memset(buf.data() + n, 0, buf.size() - n);
  return n;
}

Status CheckedObject::Verify(uint64_t c, const CrcEntry& e, std::span<const uint8_t> chunk) {
  return VerifyCrc(c, e, ChunkCrc(chunk));
}

Status CheckedObject::VerifyCrc(uint64_t c, const CrcEntry& e, uint32_t crc) {
  if (SlotMatches(e.stable, crc) || SlotMatches(e.pending, crc)) return Status::Ok();
  return Status::Errno(EIO, "checksum mismatch in " + name_ + " at offset " +
                                std::to_string(c * kCrcChunk) + " (chunk of " +
                                std::to_string(kCrcChunk) + " bytes: stored " +
                                Hex32(e.stable) + "/" + Hex32(e.pending) + ", data " +
                                Hex32(crc) + ")");
}

Result<uint64_t> CheckedObject::Read(uint64_t off, std::span<uint8_t> dest,
                                     std::vector<uint32_t>* piece_crcs) {
  if (piece_crcs != nullptr) piece_crcs->clear();
  if (dest.empty()) return uint64_t{0};
  // With off aligned, dest's 4 KiB pieces are the object's chunks.
  std::vector<uint32_t>* pieces = off % kCrcChunk == 0 ? piece_crcs : nullptr;
  if (pieces != nullptr) pieces->resize(rpc::BulkCrcPieces(dest.size()));
  const uint64_t end = off + dest.size();
  const uint64_t first = ChunkOf(off);
  SFS_ASSIGN_OR_RETURN(std::vector<CrcEntry> entries,
                       crc_.Read(first, ChunkOf(end - 1) - first + 1));
  // [run_begin, run_end) is the chunk-aligned part that dest covers whole.
  const uint64_t run_begin = std::min(ChunkCeil(off), end);
  const uint64_t run_end = std::max(ChunkFloor(end), run_begin);
  uint64_t data_end = 0;  // end of the object bytes seen
  std::vector<uint8_t> bounce;
  auto partial = [&](uint64_t a, uint64_t b) -> Status {  // [a, b) within one chunk
    if (a == b) return Status::Ok();
    uint64_t c = ChunkOf(a);
    bounce.resize(kCrcChunk);
    SFS_ASSIGN_OR_RETURN(uint64_t n, ReadChunk(c, bounce));
    if (n > 0) SFS_RETURN_IF_ERROR(Verify(c, entries[c - first], bounce));
    std::memcpy(dest.data() + (a - off), bounce.data() + (a - c * kCrcChunk), b - a);
    rpc::BulkCopyStats::AddCopied(b - a);
    if (n > 0) data_end = std::max(data_end, c * kCrcChunk + n);
    return Status::Ok();
  };
  SFS_RETURN_IF_ERROR(partial(off, run_begin));
  if (run_begin < run_end) {
    std::span<uint8_t> run = dest.subspan(run_begin - off, run_end - run_begin);
    SFS_ASSIGN_OR_RETURN(uint64_t n, ReadMaybeDirect(env_, data_fd_, direct_fd_, run, run_begin));
    std::memset(run.data() + n, 0, run.size() - n);
    for (uint64_t pos = 0; pos < run.size(); pos += kCrcChunk) {
      if (pos >= n) {  // zeros past the end: nothing to verify
        if (pieces != nullptr) (*pieces)[(run_begin - off + pos) / kCrcChunk] = ZeroChunkValue();
        continue;
      }
      uint64_t c = ChunkOf(run_begin + pos);
      uint32_t value = crc32c::Value(run.data() + pos, kCrcChunk);
      if (pieces != nullptr) (*pieces)[(run_begin - off + pos) / kCrcChunk] = value;
      SFS_RETURN_IF_ERROR(VerifyCrc(c, entries[c - first], WholeChunkCrc(value)));
    }
    if (n > 0) data_end = std::max(data_end, run_begin + n);
  }
  SFS_RETURN_IF_ERROR(partial(run_end, end));
  if (pieces != nullptr && run_end < end) {  // the short last piece
    pieces->back() = crc32c::Value(dest.data() + (run_end - off), end - run_end);
  }
  return data_end > off ? std::min(data_end, end) - off : 0;
}

Status CheckedObject::Settle(uint64_t c, CrcEntry* e, std::span<uint8_t> buf, bool must_match) {
  SFS_ASSIGN_OR_RETURN(uint64_t n, ReadChunk(c, buf));
  if (n == 0) {  // wholly past the end: zeros, whatever a crash left in the entry
    *e = CrcEntry{};
    return Status::Ok();
  }
  uint32_t crc = ChunkCrc(buf);
  if (SlotMatches(e->stable, crc)) {
    e->pending = e->stable;
  } else if (SlotMatches(e->pending, crc)) {
    e->stable = e->pending;
  } else if (must_match) {
    return Verify(c, *e, buf);
  }
  return Status::Ok();
}

void CheckedObject::Repair(uint64_t first, uint64_t last) {
  std::vector<uint8_t> buf(kCrcChunk);
  for (uint64_t c = first; c <= last; ++c) {
    Result<std::vector<CrcEntry>> e = crc_.Read(c, 1);
    Result<uint64_t> n = ReadChunk(c, buf);
    if (!e.ok() || !n.ok()) break;
    CrcEntry& entry = (*e)[0];
    if (Settle(c, &entry, buf, /*must_match=*/true).ok()) {
      if (*n == 0) entry = CrcEntry{};
    } else {  // bytes our failed change left half new: what is on disk is the truth now
      entry.stable = entry.pending = ChunkCrc(buf);
    }
    if (!crc_.Write(c, {&entry, 1}).ok()) break;
  }
}

Status CheckedObject::Mutate(uint64_t first, std::vector<CrcEntry>& entries,
                             const std::function<Status()>& change) {
  SFS_RETURN_IF_ERROR(crc_.Write(first, entries));
  Status st = change();
  if (!st.ok()) {
    Repair(first, first + entries.size() - 1);
    return st;
  }
  for (CrcEntry& e : entries) e.stable = e.pending;
  return crc_.Write(first, entries);
}

Status CheckedObject::Write(uint64_t off, std::span<const uint8_t> data,
                            std::span<const uint32_t> piece_crcs) {
  if (data.empty()) return Status::Ok();
  const uint64_t end = off + data.size();
  const uint64_t first = ChunkOf(off);
  // One entry per chunk touched, from chunk `first` on (object_store.h).
  const bool have_pieces = piece_crcs.size() == ChunkOf(end - 1) - first + 1;
  SFS_ASSIGN_OR_RETURN(std::vector<CrcEntry> entries,
                       crc_.Read(first, ChunkOf(end - 1) - first + 1));
  std::vector<uint8_t> buf(kCrcChunk);
  for (size_t i = 0; i < entries.size(); ++i) {
    CrcEntry& e = entries[i];
    const uint64_t cb = (first + i) * kCrcChunk;
    const uint64_t a = std::max(off, cb), b = std::min(end, cb + kCrcChunk);
    if (a == cb && b == cb + kCrcChunk) {  // whole chunk: crc from the incoming bytes
      if (e.stable != e.pending) SFS_RETURN_IF_ERROR(Settle(first + i, &e, buf, false));
      e.pending = have_pieces ? WholeChunkCrc(piece_crcs[i])
                              : ChunkCrc(data.subspan(a - off, kCrcChunk));
      continue;
    }
    SFS_RETURN_IF_ERROR(Settle(first + i, &e, buf, /*must_match=*/true));
    std::memcpy(buf.data() + (a - cb), data.data() + (a - off), b - a);
    rpc::BulkCopyStats::AddCopied(b - a);
    e.pending = ChunkCrc(buf);
  }
  return Mutate(first, entries,
                [&] { return WriteMaybeDirect(env_, data_fd_, direct_fd_, data, off); });
}

Status CheckedObject::Truncate(uint64_t size) {
  struct stat st;
  if (::fstat(data_fd_, &st) != 0) return Status::FromErrno("fstat " + name_);
  const uint64_t old_size = static_cast<uint64_t>(st.st_size);
  const uint64_t c = ChunkOf(size);
  std::vector<CrcEntry> tail;  // the chunk cut in the middle, if any
  if (size < old_size && size % kCrcChunk != 0) {
    SFS_ASSIGN_OR_RETURN(tail, crc_.Read(c, 1));
    std::vector<uint8_t> buf(kCrcChunk);
    SFS_RETURN_IF_ERROR(Settle(c, &tail[0], buf, /*must_match=*/true));
    std::memset(buf.data() + size % kCrcChunk, 0, kCrcChunk - size % kCrcChunk);
    tail[0].pending = ChunkCrc(buf);
    SFS_RETURN_IF_ERROR(crc_.Write(c, tail));
  }
  // Entries go before the data: a crash in between makes only bytes that
  // this truncate was removing fail their check, never leaves stale entries
  // that would later fail zeros past a new end.
  SFS_RETURN_IF_ERROR(crc_.Truncate(ChunksFor(std::min(size, old_size))));
  if (env_.Ftruncate(data_fd_, size) != 0) return Status::FromErrno("ftruncate " + name_);
  if (tail.empty()) return Status::Ok();
  tail[0].stable = tail[0].pending;
  return crc_.Write(c, tail);
}

Status CheckedObject::Punch(uint64_t off, uint64_t len,
                            const std::function<Status()>& punch_data) {
  struct stat st;
  if (::fstat(data_fd_, &st) != 0) return Status::FromErrno("fstat " + name_);
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  const uint64_t end = std::min(off + len, size);
  if (len == 0 || off >= end) return punch_data();
  const uint64_t first = ChunkOf(off);
  SFS_ASSIGN_OR_RETURN(std::vector<CrcEntry> entries,
                       crc_.Read(first, ChunkOf(end - 1) - first + 1));
  std::vector<uint8_t> buf(kCrcChunk);
  for (size_t i = 0; i < entries.size(); ++i) {
    const uint64_t cb = (first + i) * kCrcChunk;
    const uint64_t a = std::max(off, cb), b = std::min(end, cb + kCrcChunk);
    if (a == cb && (b == cb + kCrcChunk || b == size)) {  // nothing of it survives
      entries[i].pending = 0;
      continue;
    }
    SFS_RETURN_IF_ERROR(Settle(first + i, &entries[i], buf, /*must_match=*/true));
    std::memset(buf.data() + (a - cb), 0, b - a);
    entries[i].pending = ChunkCrc(buf);
  }
  return Mutate(first, entries, punch_data);
}

}  // namespace sfs::oss
