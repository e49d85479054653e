// FuseOps, part three: directories. An open directory handle (fi->fh) is a
// DirCursor, the snapshot that gives readdir stable offsets; its pages come
// from libsfs Readdir. "." and ".." are added here (the MDS lists neither),
// with the directory's own inode and its parent's. A listing read whole
// under the directory's lease makes the directory complete (NoteListed).
#include <dirent.h>
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "client/fuse/dir_cursor.h"
#include "client/fuse/fuse_ops.h"

namespace sfs::fuse {
namespace {

DirCursor* CursorOf(const fuse_file_info* fi) { return reinterpret_cast<DirCursor*>(fi->fh); }

}  // namespace

void FuseOps::OnOpendir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  // The directory may have been removed through another mount while its
  // name was cached here: the MDS's ESTALE then makes the kernel walk the
  // path again and open whatever the name means now.
  Result<client::Attr> a = client_->GetAttr(CredOf(req), ino);
  if (!a.ok()) return ReplyStatus(req, a.status());
  auto* cursor = new DirCursor(opts_.readdir_page);
  fi->fh = reinterpret_cast<uint64_t>(cursor);
  if (fuse_reply_open(req, fi) != 0) delete cursor;
}

void FuseOps::OnReleasedir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  delete CursorOf(fi);
  fuse_reply_err(req, 0);
}

void FuseOps::OnFsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, fuse_file_info* fi) {
  ReplyStatus(req, client_->SyncMetadata());
}

void FuseOps::OnReaddir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                        fuse_file_info* fi) {
  DoReaddir(req, ino, size, off, fi, /*plus=*/false);
}

void FuseOps::OnReaddirPlus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                            fuse_file_info* fi) {
  DoReaddir(req, ino, size, off, fi, /*plus=*/true);
}

// Composite: libsfs Readdir for each page the reply needs, and one Lookup of
// ".." per handle for the parent's inode number.
void FuseOps::DoReaddir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                        fuse_file_info* fi, bool plus) {
  std::vector<char> buf(size);
  std::vector<uint64_t> refs;  // inodes handed to the kernel by this reply
  Result<size_t> used = FillDir(req, ino, off, plus, *CursorOf(fi), buf, refs);
  if (!used.ok()) return ReplyStatus(req, used.status());
  // The cursor is unlocked by now: once the kernel has this reply, the
  // directory may be closed and RELEASEDIR free the cursor on another worker.
  if (fuse_reply_buf(req, buf.data(), *used) != 0) {
    for (uint64_t r : refs) nodes_.Forget(r, 1);
  }
}

Result<size_t> FuseOps::FillDir(fuse_req_t req, fuse_ino_t ino, off_t off, bool plus,
                                DirCursor& dir, std::vector<char>& buf,
                                std::vector<uint64_t>& refs) {
  const client::Cred cred = CredOf(req);
  std::lock_guard<std::mutex> lock(dir.mu);
  if (off == 0) dir.Reset();
  if (off <= 1 && dir.parent_ino == 0) {
    if (ino == client::kRootIno) {
      dir.parent_ino = ino;
    } else {
      Result<client::Attr> parent = client_->Lookup(cred, ino, "..");
      // A directory one may read but not search lists its names on a local
      // file system too; its ".." then shows the directory's own number.
      if (!parent.ok() && parent.status().code() != EACCES) return parent.status();
      dir.parent_ino = parent.ok() ? parent->ino : ino;
    }
  }
  DirCursor::FetchFn fetch = [&](std::string_view after, uint32_t max) {
    const OpStart start = Begin();
    const uint64_t names_epoch = dirs_.NamesEpoch();
    dir.StampNextPage({start.sent, start.epoch, names_epoch,
                       local_epoch_.load(std::memory_order_acquire)});
    Result<client::DirPage> page = client_->Readdir(cred, ino, after, max, plus);
    if (opts_.leases) NoteListed(ino, dir, after.empty(), page, start, names_epoch);
    return page;
  };
  size_t used = 0;
  for (uint64_t pos = static_cast<uint64_t>(off);; ++pos) {
    client::DirEntry* entry = nullptr;
    Emit em;
    if (pos == 0) {
      em = Emit{".", ino, DT_DIR};
    } else if (pos == 1) {
      em = Emit{"..", dir.parent_ino, DT_DIR};
    } else {
      Result<client::DirEntry*> e = dir.EntryAt(pos, fetch);
      if (!e.ok() && used == 0) return e.status();
      if (!e.ok() || *e == nullptr) break;
      entry = *e;
      em = Emit{entry->name.c_str(), entry->ino, entry->type};
      if (plus && entry->attr.has_value()) {
        // The page may be older than this reply: the kernel gets what is
        // left of its leases, merged with this mount's unreported writes.
        client::Attr& a = *entry->attr;
        a.lease_ms = ListedLeaseLeft(a, dir.StampOf(pos));
        if (a.lease_ms > 0) a = client_->WithLocal(std::move(a));
        em.attr = &a;
      }
    }
    size_t room = buf.size() - used;
    size_t need = AddDirEntry(req, buf.data() + used, room, em, static_cast<off_t>(pos + 1),
                              plus, refs);
    if (need > room) break;
    used += need;
    // Attributes are only for the reply that first carries the entry.
    if (entry != nullptr) entry->attr.reset();
  }
  return used;
}

// A listing read whole under the directory's lease makes it complete here
// (complete_dirs.h). REQUIRES: dir.mu held.
void FuseOps::NoteListed(uint64_t ino, DirCursor& dir, bool first,
                         const Result<client::DirPage>& page, const OpStart& start,
                         uint64_t names_epoch) {
  DirCursor::Lease& l = dir.lease;
  if (first) {
    l = DirCursor::Lease{true, start.sent, start.sent, 0, 0, start.epoch, names_epoch};
  }
  if (!page.ok() || page->dir_lease_ms == 0) {
    l.whole = false;
    return;
  }
  if (first) l.first_ms = page->dir_lease_ms;
  l.last_sent = start.sent;
  l.last_ms = page->dir_lease_ms;
  if (!l.whole || !page->eof) return;
  l.whole = false;  // reported once
  std::vector<std::string> names;
  names.reserve(dir.entries().size() + page->entries.size());
  for (const client::DirEntry& e : dir.entries()) names.push_back(e.name);
  for (const client::DirEntry& e : page->entries) names.push_back(e.name);
  dirs_.Listed(ino, std::move(names), l.first_sent, l.first_ms, l.last_sent, l.last_ms, l.epoch,
               l.names_epoch);
}

uint32_t FuseOps::ListedLeaseLeft(const client::Attr& a, const DirCursor::Stamp* s) const {
  if (!opts_.leases || a.lease_ms == 0 || s == nullptr) return 0;
  // Every invalidation advances Epoch() before the kernel is told, and every
  // change through this mount one of the other two: unmoved, nothing the
  // entry says has changed since its page was asked for.
  if (dirs_.Epoch() != s->epoch || dirs_.NamesEpoch() != s->names_epoch ||
      local_epoch_.load(std::memory_order_acquire) != s->local_epoch) {
    return 0;
  }
  const auto held = std::chrono::duration_cast<std::chrono::milliseconds>(
      CompleteDirs::Clock::now() - s->sent);
  if (held.count() >= a.lease_ms) return 0;
  return a.lease_ms - static_cast<uint32_t>(held.count());
}

size_t FuseOps::AddDirEntry(fuse_req_t req, char* out, size_t room, const Emit& em, off_t next,
                            bool plus, std::vector<uint64_t>& refs) {
  if (!plus) {
    struct stat st{};
    st.st_ino = em.ino;
    st.st_mode = DTTOIF(em.type);
    return fuse_add_direntry(req, out, room, em.name, &st, next);
  }
  fuse_entry_param e{};
  if (em.attr != nullptr) {
    e = EntryParam(*em.attr);
  } else {
    // No attributes (or "." / ".."): nodeid 0 tells the kernel to take the
    // name only, without creating or counting an inode.
    e.attr.st_ino = em.ino;
    e.attr.st_mode = DTTOIF(em.type);
  }
  size_t need = fuse_add_direntry_plus(req, out, room, em.name, &e, next);
  if (need <= room && e.ino != 0) {
    nodes_.Ref(e.ino);
    nodes_.NoteMode(e.ino, em.attr->mode);
    refs.push_back(e.ino);
  }
  return need;
}

}  // namespace sfs::fuse
