// NodeTable: what sfs-mount remembers per inode the kernel holds, and why.
//
// libsfs is stateless per inode (every call names its inode and goes to the
// MDS), so the only per-inode state of the FUSE adapter is the page-cache rule
// of close-to-open consistency: at open, the kernel may keep the pages it
// cached for a file iff the file's (mtime, size) at the MDS are exactly those
// seen by the previous open through this mount. Anything written elsewhere
// and closed since has changed them (libsfs reports mtime and size at close),
// so the pages are dropped then and the new data is read.
//
// Handles opened write-only use direct I/O: their writes go to the OSSes
// without passing the page cache, so pages that readers of this mount cached
// before may be stale after them. So no open keeps pages while such a handle
// is open, nor the first open after it is released (OpenedForWrite/
// ClosedForWrite with direct), whatever mtime and size say. Direct writes also skip
// the kernel's file_remove_privs, so sfs-mount does its work (fuse_file_ops.cc)
// from what the table knows: NoCaps below, and the mode last handed to the
// kernel (NoteMode), which is what the kernel would have judged by.
//
// The kernel asks for the xattr security.capability before every write(2)
// and truncate, to learn whether the change must strip it; asking the MDS
// each time costs a round trip per write. So while this mount has an inode
// open for writing, its node remembers that the xattr was absent, from a
// getxattr that found it so, until the next open of the inode through this
// mount, its last writable close here, or any xattr change made through this
// mount. That is the close-to-open rule again: a capability set through
// another mount while a file is open for writing here is seen (and stripped
// by a write) after the next open; with no writer here every getxattr asks
// the MDS.
//
// Lookup count: the kernel counts every reply that hands it an inode (entry,
// create, readdirplus entry) and later sends FORGET with the same total. A
// node lives while its count is positive; a forgotten inode has no pages in
// the kernel either, so dropping its record loses nothing.
//
// Thread-safe: one mutex, held for a map update only.
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace sfs::fuse {

class NodeTable {
 public:
  // The kernel got one more reference to ino (call before the reply; undo
  // with Forget(ino, 1) if the reply could not be delivered).
  void Ref(uint64_t ino);
  // The kernel dropped n references to ino.
  void Forget(uint64_t ino, uint64_t n);

  // At open: true iff pages cached for ino may be kept, i.e. the previous
  // open through this mount saw the same mtime and size. Records them as the
  // new basis either way. False for an inode the kernel holds no reference to.
  bool KeepCache(uint64_t ino, int64_t mtime_ns, uint64_t size);

  // A handle open for writing was opened / released (see above). direct: it
  // writes around the page cache (direct I/O), so KeepCache says false from
  // its open until an open after the last such release.
  void OpenedForWrite(uint64_t ino, bool direct);
  void ClosedForWrite(uint64_t ino, bool direct);
  // The kernel was given mode for ino (entry, attr and open replies).
  void NoteMode(uint64_t ino, uint32_t mode);
  // The set-id bits a write by a writer without CAP_FSETID must drop, by the
  // mode last noted: S_ISUID, and S_ISGID when S_IXGRP is set (as FUSE's
  // kernel side does). 0 for an inode the kernel does not hold.
  uint32_t SetIdBitsToDrop(uint64_t ino) const;
  // True iff setting ino's mode to `mode` does nothing but drop
  // SetIdBitsToDrop(ino) (some bits at least) from the mode last noted: the
  // kernel's set-id drop before a write.
  bool IsSetIdDrop(uint64_t ino, uint32_t mode) const;
  // True iff security.capability of ino is known to be absent (see above).
  bool NoCaps(uint64_t ino) const;
  // Before asking the MDS for security.capability: a token for NoteNoCaps.
  uint64_t XattrGeneration(uint64_t ino) const;
  // The MDS said security.capability is absent, in answer to a question asked
  // at generation gen: remembered unless an open or xattr change came since.
  void NoteNoCaps(uint64_t ino, uint64_t gen);
  // An xattr of ino changes (or may have changed): forget NoCaps.
  void XattrChanged(uint64_t ino);

  // Number of inodes with a positive lookup count (for tests and logs).
  size_t size() const;
  uint64_t lookups(uint64_t ino) const;

 private:
  struct Node {
    uint64_t nlookup = 0;
    bool cached = false;   // an open recorded mtime_ns/size
    int64_t mtime_ns = 0;
    uint64_t size = 0;
    uint32_t writers = 0;     // handles open for writing through this mount
    uint32_t direct_writers = 0;  // of which write around the page cache
    uint32_t mode = 0;            // as last given to the kernel
    bool no_caps = false;     // security.capability known absent (writers > 0)
    uint64_t xattr_gen = 0;   // bumped by opens and xattr changes
  };
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, Node> nodes_;  // GUARDED_BY(mu_)
};

}  // namespace sfs::fuse
