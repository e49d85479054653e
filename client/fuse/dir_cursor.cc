// DirCursor: the per-opendir snapshot that keeps readdir offsets stable.
#include "client/fuse/dir_cursor.h"

#include <string>
#include <utility>

namespace sfs::fuse {

void DirCursor::Reset() {
  entries_.clear();
  eof_ = false;
  lease = Lease{};
}

Status DirCursor::FetchPage(const FetchFn& fetch) {
  std::string after = entries_.empty() ? std::string() : entries_.back().name;
  SFS_ASSIGN_OR_RETURN(client::DirPage page, fetch(after, page_entries_));
  for (client::DirEntry& e : page.entries) {
    // Name order is the resume key; an entry out of order would be returned
    // twice or make the next page skip names, so it is dropped.
    if (!entries_.empty() && e.name <= entries_.back().name) continue;
    entries_.push_back(std::move(e));
  }
  eof_ = page.eof;
  return Status::Ok();
}

Result<client::DirEntry*> DirCursor::EntryAt(uint64_t pos, const FetchFn& fetch) {
  if (pos < kFirstEntryPos) return Status(EINVAL, "not an entry position");
  uint64_t index = pos - kFirstEntryPos;
  while (index >= entries_.size() && !eof_) {
    size_t before = entries_.size();
    SFS_RETURN_IF_ERROR(FetchPage(fetch));
    // A page that brought nothing new ends the listing even without eof, so
    // a server that keeps answering the same page cannot loop us forever.
    if (entries_.size() == before) eof_ = true;
  }
  if (index >= entries_.size()) return static_cast<client::DirEntry*>(nullptr);
  return &entries_[index];
}

}  // namespace sfs::fuse
