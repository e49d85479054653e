// Sidecar I/O (format in common/ondisk/chunk_crc.h).
#include "oss/store/crc_sidecar.h"

#include <cerrno>

namespace sfs::oss {

Result<std::vector<CrcEntry>> CrcSidecar::Read(uint64_t first, uint64_t count) const {
  std::vector<uint8_t> raw(count * kCrcEntrySize);
  SFS_ASSIGN_OR_RETURN(uint64_t got, ReadAll(env_, fd_, raw, first * kCrcEntrySize));
  return ondisk::DecodeCrcEntries(std::span(raw).first(got), count);
}

Status CrcSidecar::Write(uint64_t first, std::span<const CrcEntry> entries) const {
  Status st = WriteAll(env_, fd_, ondisk::EncodeCrcEntries(entries), first * kCrcEntrySize);
  if (!st.ok()) return Status::Errno(st.code(), "checksum sidecar: " + st.message());
  return st;
}

Status CrcSidecar::Truncate(uint64_t chunks) const {
  if (env_.Ftruncate(fd_, chunks * kCrcEntrySize) != 0) {
    return Status::FromErrno("ftruncate checksum sidecar");
  }
  return Status::Ok();
}

Status CrcSidecar::Sync() const {
  if (env_.Fdatasync(fd_) != 0) return Status::FromErrno("fdatasync checksum sidecar");
  return Status::Ok();
}

}  // namespace sfs::oss
