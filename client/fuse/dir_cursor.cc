// DirCursor: the per-opendir snapshot that keeps readdir offsets stable.
#include "client/fuse/dir_cursor.h"

#include <algorithm>
#include <iterator>
#include <string>
#include <utility>

namespace sfs::fuse {

void DirCursor::Reset() {
  entries_.clear();
  stamps_.clear();
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

void DirCursor::StampNextPage(const Stamp& s) {
  // Entries are only appended, so the next page's first index is the count.
  if (!stamps_.empty() && stamps_.back().first == entries_.size()) {
    stamps_.back().second = s;  // the last fetch brought nothing
  } else {
    stamps_.emplace_back(entries_.size(), s);
  }
}

const DirCursor::Stamp* DirCursor::StampOf(uint64_t pos) const {
  if (pos < kFirstEntryPos) return nullptr;
  const size_t index = pos - kFirstEntryPos;
  auto it = std::upper_bound(stamps_.begin(), stamps_.end(), index,
                             [](size_t i, const auto& p) { return i < p.first; });
  if (it == stamps_.begin()) return nullptr;
  return &std::prev(it)->second;
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
