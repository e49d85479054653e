// The files of one OST directory that the OSS writes and others read: the
// object files and their crc sidecars, and the OST's uuid. The OSS
// (oss/store), the offline checker (tools/fsck) and the test harness all
// build these paths here, so the layout is spelled once (docs/formats.md):
//   <ost>/ost_uuid                              the OST's uuid (one line)
//   <ost>/objects/<oid % 256, 2 hex>/<oid, 16 hex>       object data
//   <ost>/objects/<oid % 256, 2 hex>/<oid, 16 hex>.crc   its crc sidecar
// Hex digits are lower case. The sidecar's contents are chunk_crc.h's.
// What else the OSS keeps there (tombstones) is the OSS's own business.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sfs::ondisk {

// Object files are spread over this many subdirectories of <ost>/objects.
inline constexpr uint32_t kObjectSubdirs = 256;
// An object's crc sidecar is its file's path plus this.
inline constexpr std::string_view kCrcSuffix = ".crc";

// <ost_dir>/objects
std::string ObjectsDir(std::string_view ost_dir);
// <ost_dir>/objects/<sub as 2 hex digits>. REQUIRES: sub < kObjectSubdirs.
std::string ObjectSubdir(std::string_view ost_dir, uint32_t sub);
// The file name of object oid: 16 hex digits.
std::string ObjectName(uint64_t oid);
// The data file of object oid in ost_dir.
std::string ObjectPath(std::string_view ost_dir, uint64_t oid);
// The crc sidecar of the object whose data file is object_path.
std::string CrcPath(std::string_view object_path);
// True iff name is an object file's name (ObjectName) or its sidecar's
// (ObjectName + kCrcSuffix); then *oid is the object and *crc which one.
bool ParseObjectName(std::string_view name, uint64_t* oid, bool* crc);
// The file holding the OST's uuid.
std::string OstUuidPath(std::string_view ost_dir);

}  // namespace sfs::ondisk
