// Paths inside an OST directory (see ost_dir.h).
#include "common/ondisk/ost_dir.h"

#include <cstdio>

namespace sfs::ondisk {
namespace {

std::string Hex(uint64_t v, int digits) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%0*llx", digits, static_cast<unsigned long long>(v));
  return buf;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

std::string ObjectsDir(std::string_view ost_dir) { return std::string(ost_dir) + "/objects"; }

std::string ObjectSubdir(std::string_view ost_dir, uint32_t sub) {
  return ObjectsDir(ost_dir) + "/" + Hex(sub, 2);
}

std::string ObjectName(uint64_t oid) { return Hex(oid, 16); }

std::string ObjectPath(std::string_view ost_dir, uint64_t oid) {
  return ObjectSubdir(ost_dir, static_cast<uint32_t>(oid % kObjectSubdirs)) + "/" +
         ObjectName(oid);
}

std::string CrcPath(std::string_view object_path) {
  return std::string(object_path) + std::string(kCrcSuffix);
}

bool ParseObjectName(std::string_view name, uint64_t* oid, bool* crc) {
  constexpr size_t kDigits = 16;
  *crc = name.size() == kDigits + kCrcSuffix.size() && name.substr(kDigits) == kCrcSuffix;
  if (name.size() != kDigits && !*crc) return false;
  uint64_t v = 0;
  for (size_t i = 0; i < kDigits; ++i) {
    int d = HexDigit(name[i]);
    if (d < 0) return false;
    v = (v << 4) | static_cast<uint64_t>(d);
  }
  *oid = v;
  return true;
}

std::string OstUuidPath(std::string_view ost_dir) { return std::string(ost_dir) + "/ost_uuid"; }

}  // namespace sfs::ondisk
