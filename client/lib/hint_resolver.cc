#include "client/lib/hint_resolver.h"

#include <sys/stat.h>

#include <cerrno>

namespace sfs::client {

std::pair<std::string, std::string> HintResolver::Split(std::string_view path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string_view::npos) return {"", std::string(path)};
  std::string dir(path.substr(0, slash));
  if (dir.empty()) dir = "/";
  return {std::move(dir), std::string(path.substr(slash + 1))};
}

void HintResolver::Reset(const std::vector<PrefetchItem>& items, bool append) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!append) dirs_.clear();
  for (const PrefetchItem& it : items) {
    auto [dir, base] = Split(it.path);
    if (base.empty()) continue;
    std::shared_ptr<Dir>& d = dirs_[dir];
    if (!d) d = std::make_shared<Dir>();
    ++d->hinted;
  }
}

std::shared_ptr<HintResolver::Dir> HintResolver::DirOf(const std::string& dir, uint64_t* hinted) {
  std::lock_guard<std::mutex> lock(mu_);
  std::shared_ptr<Dir>& d = dirs_[dir];
  if (!d) d = std::make_shared<Dir>();  // resolved without a Reset naming it
  *hinted = d->hinted;
  return d;
}

void HintResolver::List(const Cred& c, Dir& d, uint64_t hinted) {
  // A huge directory of which the hint names a few: give up listing it
  // once it costs more than the lookups would.
  const uint64_t cap = 8 * hinted + kPage;
  std::unordered_map<std::string, Attr> entries;
  std::string after;
  while (true) {
    Result<DirPage> page = client_.Readdir(c, d.ino, after, kPage, /*with_attrs=*/true);
    if (!page.ok()) return;  // unreadable (read permission): lookups instead
    for (DirEntry& e : page->entries) {
      if (e.attr) entries.emplace(e.name, std::move(*e.attr));
    }
    if (page->eof) break;
    if (page->entries.empty() || entries.size() > cap) return;
    after = page->entries.back().name;
  }
  d.entries = std::move(entries);
  d.listed = true;
  ++listed_dirs_;
}

Result<Attr> HintResolver::Resolve(const Cred& c, const std::string& path) {
  auto [dir, base] = Split(path);
  if (dir.empty() || base.empty()) return client_.ResolvePath(c, path);
  uint64_t hinted = 0;
  std::shared_ptr<Dir> d = DirOf(dir, &hinted);
  uint64_t dir_ino = 0;
  {
    std::lock_guard<std::mutex> lock(d->mu);
    if (!d->resolved) {
      Result<Attr> a = client_.ResolvePath(c, dir);
      d->resolved = true;
      if (!a.ok()) {
        d->err = a.status();
      } else if (!S_ISDIR(a->mode)) {
        d->err = Status(ENOTDIR, dir + ": not a directory");
      } else {
        // The first entry is looked up: the MDS checks the search
        // permission a lookup needs (a listing checks read permission).
        d->ino = a->ino;
        ++lookups_;
        Result<Attr> first = client_.Lookup(c, d->ino, base);
        if (!first.ok() && first.status().code() == EACCES) {
          d->err = first.status();
        } else if (hinted >= kListThreshold) {
          List(c, *d, hinted);
        }
        if (d->err.ok()) return first;
      }
    }
    if (!d->err.ok()) return d->err;
    if (d->listed) {
      auto e = d->entries.find(base);
      if (e != d->entries.end()) return e->second;
    }
    dir_ino = d->ino;
  }
  ++lookups_;
  return client_.Lookup(c, dir_ino, base);
}

}  // namespace sfs::client
