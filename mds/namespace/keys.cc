// Key encoding of the metadata store; the format is described in keys.h.
#include "mds/namespace/keys.h"

namespace sfs::mds::keys {
namespace {

std::string Tagged(char tag, uint64_t id) {
  std::string k(1, tag);
  PutBe64(&k, id);
  return k;
}

std::string TaggedName(char tag, uint64_t id, std::string_view name) {
  std::string k = Tagged(tag, id);
  k.append(name);
  return k;
}

}  // namespace

void PutBe64(std::string* out, uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8) out->push_back(static_cast<char>(v >> shift));
}

uint64_t GetBe64(std::string_view s, size_t pos) {
  uint64_t v = 0;
  for (size_t i = 0; i < 8; ++i) v = (v << 8) | static_cast<uint8_t>(s[pos + i]);
  return v;
}

std::string Inode(uint64_t ino) { return Tagged(kInode, ino); }
std::string Dentry(uint64_t parent, std::string_view name) {
  return TaggedName(kDentry, parent, name);
}
std::string DentryPrefix(uint64_t parent) { return Tagged(kDentry, parent); }
std::string Xattr(uint64_t ino, std::string_view name) { return TaggedName(kXattr, ino, name); }
std::string XattrPrefix(uint64_t ino) { return Tagged(kXattr, ino); }
std::string Super() { return std::string(1, kSuper); }
std::string Queue(uint64_t seq) { return Tagged(kQueue, seq); }
std::string Orphan(uint64_t ino) { return Tagged(kOrphan, ino); }
std::string Resync(uint64_t ino) { return Tagged(kResync, ino); }
std::string Client(uint64_t client) { return Tagged(kClient, client); }
std::string CleanStop() { return std::string(1, kCleanStop); }
std::string Ost(std::string_view uuid) { return std::string(1, kOst).append(uuid); }

std::string Pool(std::string_view name) { return std::string(1, kPool).append(name); }
std::string Qos(std::string_view name) { return std::string(1, kQos).append(name); }
std::string Tenant(std::string_view name) { return std::string(1, kTenant).append(name); }
std::string Migrate(uint64_t ino) { return Tagged(kMigrate, ino); }
std::string StaleLayout(uint64_t ino) { return Tagged(kStaleLayout, ino); }

std::string Reply(uint64_t client, uint64_t xid) {
  std::string k = Tagged(kReply, client);
  PutBe64(&k, xid);
  return k;
}

std::string PrefixEnd(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty() && static_cast<uint8_t>(end.back()) == 0xff) end.pop_back();
  if (!end.empty()) end.back() = static_cast<char>(static_cast<uint8_t>(end.back()) + 1);
  return end;
}

}  // namespace sfs::mds::keys
