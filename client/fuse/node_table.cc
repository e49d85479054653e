// NodeTable: lookup counts, the close-to-open page-cache basis (and the
// direct writers that void it), the "no security.capability" note and the
// last mode per inode.
#include "client/fuse/node_table.h"

#include <sys/stat.h>

namespace sfs::fuse {

void NodeTable::Ref(uint64_t ino) {
  std::lock_guard<std::mutex> lock(mu_);
  ++nodes_[ino].nlookup;
}

void NodeTable::Forget(uint64_t ino, uint64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(ino);
  if (it == nodes_.end()) return;
  // The kernel never forgets more than it was given; clamp anyway so that a
  // reply we could not deliver (and undid) cannot wrap the count.
  if (it->second.nlookup <= n) {
    nodes_.erase(it);
  } else {
    it->second.nlookup -= n;
  }
}

bool NodeTable::KeepCache(uint64_t ino, int64_t mtime_ns, uint64_t size) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(ino);
  if (it == nodes_.end()) return false;
  Node& n = it->second;
  bool keep = n.cached && n.direct_writers == 0 && n.mtime_ns == mtime_ns && n.size == size;
  n.cached = true;
  n.mtime_ns = mtime_ns;
  n.size = size;
  n.no_caps = false;  // an open asks the MDS afresh
  ++n.xattr_gen;
  return keep;
}

void NodeTable::OpenedForWrite(uint64_t ino, bool direct) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(ino);
  if (it == nodes_.end()) return;
  ++it->second.writers;
  if (direct) ++it->second.direct_writers;
}

void NodeTable::ClosedForWrite(uint64_t ino, bool direct) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(ino);
  if (it == nodes_.end()) return;
  Node& n = it->second;
  if (direct && n.direct_writers > 0) {
    --n.direct_writers;
    n.cached = false;  // its writes did not pass the pages cached here
  }
  if (n.writers > 0 && --n.writers == 0) {
    n.no_caps = false;
    ++n.xattr_gen;
  }
}

void NodeTable::NoteMode(uint64_t ino, uint32_t mode) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(ino);
  if (it != nodes_.end()) it->second.mode = mode;
}

uint32_t NodeTable::SetIdBitsToDrop(uint64_t ino) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(ino);
  if (it == nodes_.end()) return 0;
  const uint32_t mode = it->second.mode;
  uint32_t drop = mode & S_ISUID;
  if ((mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP)) drop |= S_ISGID;
  return drop;
}

bool NodeTable::IsSetIdDrop(uint64_t ino, uint32_t mode) const {
  const uint32_t drop = SetIdBitsToDrop(ino);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(ino);
  return drop != 0 && it != nodes_.end() && (mode & 07777) == (it->second.mode & 07777 & ~drop);
}

bool NodeTable::NoCaps(uint64_t ino) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(ino);
  return it != nodes_.end() && it->second.writers > 0 && it->second.no_caps;
}

uint64_t NodeTable::XattrGeneration(uint64_t ino) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(ino);
  return it == nodes_.end() ? 0 : it->second.xattr_gen;
}

void NodeTable::NoteNoCaps(uint64_t ino, uint64_t gen) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(ino);
  // Only while a writable handle is open (the kernel holds the inode then),
  // and only if no open, last close or xattr change raced with the question.
  if (it != nodes_.end() && it->second.writers > 0 && it->second.xattr_gen == gen) {
    it->second.no_caps = true;
  }
}

void NodeTable::XattrChanged(uint64_t ino) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(ino);
  if (it == nodes_.end()) return;
  it->second.no_caps = false;
  ++it->second.xattr_gen;
}

size_t NodeTable::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return nodes_.size();
}

uint64_t NodeTable::lookups(uint64_t ino) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(ino);
  return it == nodes_.end() ? 0 : it->second.nlookup;
}

}  // namespace sfs::fuse
