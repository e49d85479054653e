#include "common/auth/capability.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <ctime>

namespace sfs::auth {
namespace {

// Version 2 added the tenant (its KV number, 4 bytes, then a length byte and
// its name, after the fixed header). Version 1 tokens, signed by an MDS before
// it, still verify, as the default tenant's: only a holder of the key can
// have made them. Version 3 adds the mint time (8 bytes of unix ms, after the
// KV number) that revocations compare; older tokens read as minted at 0, so
// any revocation that names them voids them.
constexpr uint8_t kVersion = 3;
constexpr uint8_t kVersionNoIssue = 2;
constexpr uint8_t kVersionNoTenant = 1;
constexpr size_t kMacLen = 32;
constexpr size_t kKeyLen = 32;
// version, key_id, ino, rights, expiry, all_objects, count.
constexpr size_t kHeaderLen = 1 + 4 + 8 + 4 + 8 + 1 + 4;
constexpr size_t kObjectLen = 4 + 8;
constexpr size_t kMaxTenant = 255;

void Put(std::string* out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t Get(std::string_view in, size_t* at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<uint8_t>(in[(*at)++]);
  return v;
}

void Mac(const ClusterKey& key, std::string_view body, uint8_t out[kMacLen]) {
  unsigned int len = kMacLen;
  HMAC(EVP_sha256(), key.bytes.data(), static_cast<int>(key.bytes.size()),
       reinterpret_cast<const unsigned char*>(body.data()), body.size(), out, &len);
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

bool Capability::Covers(uint32_t ost, uint64_t oid) const {
  if (all_objects) return true;
  return std::find(objects.begin(), objects.end(), std::make_pair(ost, oid)) != objects.end();
}

Result<ClusterKey> LoadKey(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno("cluster key " + path);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    Status s = Status::FromErrno("cluster key " + path);
    ::close(fd);
    return s;
  }
  if ((st.st_mode & 077) != 0) {
    ::close(fd);
    return Status::Errno(
        EPERM, "cluster key " + path + " is accessible by group or others (chmod 600 it)");
  }
  std::string raw(256, '\0');
  ssize_t n = ::read(fd, raw.data(), raw.size());
  ::close(fd);
  if (n < 0) return Status::FromErrno("cluster key " + path);
  raw.resize(static_cast<size_t>(n));
  ClusterKey key;
  if (raw.size() == kKeyLen) {
    key.bytes = raw;
    return key;
  }
  std::string hex;
  for (char c : raw) {
    if (!std::isspace(static_cast<unsigned char>(c))) hex.push_back(c);
  }
  if (hex.size() != 2 * kKeyLen) {
    return Status::Errno(EINVAL, "cluster key " + path + ": want 32 raw bytes or 64 hex digits");
  }
  for (size_t i = 0; i < hex.size(); i += 2) {
    int hi = HexDigit(hex[i]), lo = HexDigit(hex[i + 1]);
    if (hi < 0 || lo < 0) return Status::Errno(EINVAL, "cluster key " + path + ": not hex");
    key.bytes.push_back(static_cast<char>(hi * 16 + lo));
  }
  return key;
}

Status GenerateKey(const std::string& path) {
  unsigned char buf[kKeyLen];
  if (RAND_bytes(buf, sizeof buf) != 1) return Status::Errno(EIO, "no random bytes");
  static const char kHex[] = "0123456789abcdef";
  std::string text;
  for (unsigned char b : buf) {
    text.push_back(kHex[b >> 4]);
    text.push_back(kHex[b & 15]);
  }
  text.push_back('\n');
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return Status::FromErrno("create " + path);
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ok = ::fsync(fd) == 0 && ok;
  ::close(fd);
  return ok ? Status::Ok() : Status::FromErrno("write " + path);
}

std::string Sign(const Capability& cap, const ClusterKey& key) {
  std::string out;
  SFS_CHECK(cap.tenant.size() <= kMaxTenant);
  out.reserve(kHeaderLen + 13 + cap.tenant.size() + cap.objects.size() * kObjectLen + kMacLen);
  Put(&out, kVersion, 1);
  Put(&out, key.id, 4);
  Put(&out, cap.ino, 8);
  Put(&out, cap.rights, 4);
  Put(&out, static_cast<uint64_t>(cap.expiry), 8);
  Put(&out, cap.all_objects ? 1 : 0, 1);
  Put(&out, cap.objects.size(), 4);
  Put(&out, cap.kv_tenant, 4);
  Put(&out, static_cast<uint64_t>(cap.issued_ms), 8);
  Put(&out, cap.tenant.size(), 1);
  out.append(cap.tenant);
  for (const auto& [ost, oid] : cap.objects) {
    Put(&out, ost, 4);
    Put(&out, oid, 8);
  }
  uint8_t mac[kMacLen];
  Mac(key, out, mac);
  out.append(reinterpret_cast<const char*>(mac), kMacLen);
  return out;
}

Result<Capability> Verify(std::string_view token, const ClusterKey& key, int64_t now) {
  if (token.size() < kHeaderLen + kMacLen) return Status::Errno(EACCES, "capability too short");
  std::string_view body = token.substr(0, token.size() - kMacLen);
  uint8_t mac[kMacLen];
  Mac(key, body, mac);
  // The MAC first, in constant time: nothing of an unauthenticated token is believed.
  if (CRYPTO_memcmp(mac, token.data() + body.size(), kMacLen) != 0) {
    return Status::Errno(EACCES, "capability MAC mismatch");
  }
  size_t at = 0;
  Capability cap;
  uint64_t version = Get(body, &at, 1);
  if (version != kVersion && version != kVersionNoIssue && version != kVersionNoTenant) {
    return Status::Errno(EACCES, "capability version");
  }
  cap.key_id = static_cast<uint32_t>(Get(body, &at, 4));
  cap.ino = Get(body, &at, 8);
  cap.rights = static_cast<uint32_t>(Get(body, &at, 4));
  cap.expiry = static_cast<int64_t>(Get(body, &at, 8));
  cap.all_objects = Get(body, &at, 1) != 0;
  uint64_t count = Get(body, &at, 4);
  size_t tenant_len = 0;
  // After the header: the KV number, the mint time (version 3), the tenant.
  const size_t extra = version == kVersion ? 13 : version == kVersionNoIssue ? 5 : 0;
  if (extra > 0) {
    if (body.size() < kHeaderLen + extra) return Status::Errno(EACCES, "capability length");
    cap.kv_tenant = static_cast<uint32_t>(Get(body, &at, 4));
    if (version == kVersion) cap.issued_ms = static_cast<int64_t>(Get(body, &at, 8));
    tenant_len = Get(body, &at, 1);
  }
  size_t fixed = kHeaderLen + extra + tenant_len;
  if (count > body.size() || body.size() != fixed + count * kObjectLen) {
    return Status::Errno(EACCES, "capability length");
  }
  cap.tenant.assign(body.substr(at, tenant_len));
  at += tenant_len;
  for (uint64_t i = 0; i < count; ++i) {
    uint32_t ost = static_cast<uint32_t>(Get(body, &at, 4));
    cap.objects.emplace_back(ost, Get(body, &at, 8));
  }
  if (cap.key_id != key.id) return Status::Errno(EACCES, "capability of another key");
  if (now >= cap.expiry) return Status::Errno(EACCES, "capability expired");
  return cap;
}

int64_t NowUnix() { return static_cast<int64_t>(::time(nullptr)); }

int64_t NowUnixMs() {
  struct timespec ts {};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

std::string ServerToken(const ClusterKey& key) {
  Capability cap;
  cap.rights = kRead | kWrite | kAdmin;
  cap.all_objects = true;
  cap.key_id = key.id;
  cap.expiry = NowUnix() + kCapabilityLifetimeSec;
  cap.issued_ms = NowUnixMs();
  return Sign(cap, key);
}

}  // namespace sfs::auth
