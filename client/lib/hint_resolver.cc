#include "client/lib/hint_resolver.h"

#include <sys/stat.h>

#include <cerrno>

#include "client/lib/open_cache.h"

namespace sfs::client {

std::pair<std::string, std::string> HintResolver::Split(std::string_view path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string_view::npos) return {"", std::string(path)};
  std::string dir(path.substr(0, slash));
  if (dir.empty()) dir = "/";
  return {std::move(dir), std::string(path.substr(slash + 1))};
}

void HintResolver::Reset(const std::vector<PrefetchItem>& items, bool append, uint64_t base,
                         uint64_t gen) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!append) {
    dirs_.clear();
    listed_inos_.clear();
  }
  gen_ = gen;
  for (size_t i = 0; i < items.size(); ++i) {
    auto [dir, name] = Split(items[i].path);
    if (name.empty()) continue;
    std::shared_ptr<Dir>& d = dirs_[dir];
    if (!d) d = std::make_shared<Dir>();
    ++d->hinted;
    if (on_use_) d->uses.emplace_back(items[i].path, base + i);
  }
}

void HintResolver::TellUses(const std::string& dir, Dir& d) {
  std::vector<std::pair<std::string, uint64_t>> uses;
  uint64_t gen = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // A new hint replaced this one meanwhile: its own directories tell theirs.
    auto it = dirs_.find(dir);
    if (it == dirs_.end() || it->second.get() != &d) return;
    uses.swap(d.uses);
    gen = gen_;
  }
  for (const auto& [path, pos] : uses) {
    auto e = d.entries.find(Split(path).second);
    if (e != d.entries.end() && S_ISREG(e->second.mode)) on_use_(path, e->second.ino, pos, gen);
  }
}

std::shared_ptr<HintResolver::Dir> HintResolver::DirOf(const std::string& dir, uint64_t* hinted,
                                                       bool* uses_pending) {
  std::lock_guard<std::mutex> lock(mu_);
  std::shared_ptr<Dir>& d = dirs_[dir];
  if (!d) d = std::make_shared<Dir>();  // resolved without a Reset naming it
  *hinted = d->hinted;
  *uses_pending = !d->uses.empty();
  return d;
}

uint64_t HintResolver::HintedIn(const Dir& d) {
  std::lock_guard<std::mutex> lock(mu_);
  return d.hinted;
}

bool HintResolver::Listed(uint64_t dir) {
  std::lock_guard<std::mutex> lock(mu_);
  return listed_inos_.count(dir) != 0;
}

void HintResolver::List(const Cred& c, const std::string& dir, Dir& d) {
  std::unordered_map<std::string, Attr> entries;
  std::string after;
  while (true) {
    Result<DirPage> page = client_.Readdir(c, d.ino, after, kPage, /*with_attrs=*/true);
    if (!page.ok()) return;  // unreadable (read permission): lookups instead
    for (DirEntry& e : page->entries) {
      if (e.attr) entries.emplace(e.name, std::move(*e.attr));
    }
    if (page->eof) break;
    if (page->entries.empty()) return;
    // A huge directory of which the hint names a few: give up listing it
    // once it costs more than the lookups would. Asked again at each page:
    // a hint handed over in parts (sfs prefetch --list through a mount, a
    // setxattr each) names more of it meanwhile.
    const uint64_t hinted = HintedIn(d);
    if (entries.size() > 8 * hinted + kPage) {
      d.gave_up_at = hinted;
      return;
    }
    after = page->entries.back().name;
  }
  d.entries = std::move(entries);
  d.listed = true;
  ++listed_dirs_;
  std::lock_guard<std::mutex> lock(mu_);
  // Not if a new hint replaced this one meanwhile (it lists its own).
  auto it = dirs_.find(dir);
  if (it != dirs_.end() && it->second.get() == &d) listed_inos_.insert(d.ino);
}

Result<Attr> HintResolver::Resolve(const Cred& c, const std::string& path, uint64_t* parent) {
  if (parent != nullptr) *parent = 0;
  auto [dir, base] = Split(path);
  if (dir.empty() || base.empty()) return client_.ResolvePath(c, path);
  uint64_t hinted = 0;
  bool uses_pending = false;
  std::shared_ptr<Dir> d = DirOf(dir, &hinted, &uses_pending);
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
        if (parent != nullptr) *parent = d->ino;
        ++lookups_;
        Result<Attr> first = client_.Lookup(c, d->ino, base);
        if (!first.ok() && first.status().code() == EACCES) {
          d->err = first.status();
        } else if (hinted >= kListThreshold) {
          List(c, dir, *d);
          if (d->listed && on_use_) TellUses(dir, *d);
        }
        if (d->err.ok()) return first;
      }
    }
    if (!d->err.ok()) return d->err;
    if (parent != nullptr) *parent = d->ino;
    if (!d->listed && d->gave_up_at > 0 && hinted >= 2 * d->gave_up_at) {
      // The hint has grown to twice what the listing gave up at: try again.
      List(c, dir, *d);
      uses_pending = d->listed;
    }
    if (d->listed) {
      // Parts of the hint appended after the listing: their positions too.
      if (uses_pending && on_use_) TellUses(dir, *d);
      auto e = d->entries.find(base);
      if (e != d->entries.end()) return e->second;
    }
    dir_ino = d->ino;
  }
  ++lookups_;
  return client_.Lookup(c, dir_ino, base);
}

void HintResolver::NoteNamed(const Cred& c, uint64_t parent, const std::string& name, const Attr& a,
                             uint64_t gen, std::chrono::steady_clock::time_point until) {
  std::lock_guard<std::mutex> lock(named_mu_);
  if (named_count_ >= kMaxNamed) {
    named_.clear();
    named_count_ = 0;
  }
  auto [it, added] = named_[parent].insert_or_assign(
      name, Named_{.cred = c, .attr = a, .gen = gen, .until = until});
  if (added) ++named_count_;
}

std::optional<Attr> HintResolver::Named(const Cred& c, uint64_t parent, std::string_view name,
                                        uint64_t gen_now) {
  std::lock_guard<std::mutex> lock(named_mu_);
  auto d = named_.find(parent);
  if (d == named_.end()) return std::nullopt;
  auto e = d->second.find(std::string(name));
  if (e == d->second.end()) return std::nullopt;
  Named_ n = std::move(e->second);
  d->second.erase(e);
  --named_count_;
  if (d->second.empty()) named_.erase(d);
  const auto now = std::chrono::steady_clock::now();
  if (n.gen != gen_now || !OpenCache::SameCred(n.cred, c) || n.until < now + OpenCache::kMinLeft) {
    return std::nullopt;
  }
  n.attr.lease_ms = static_cast<uint32_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(n.until - now).count());
  n.attr.dir_lease_ms = 0;
  n.attr.dir_attr.reset();
  ++named_hits_;
  return std::move(n.attr);
}

}  // namespace sfs::client
