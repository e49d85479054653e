// StatAhead (stat_ahead.h): the listing worker and the entry cache.
#include "client/fuse/stat_ahead.h"

#include <sys/stat.h>

#include <algorithm>
#include <utility>

namespace sfs::fuse {

StatAhead::StatAhead(ListFn list) : list_(std::move(list)), worker_([this] { Run(); }) {}

StatAhead::~StatAhead() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

void StatAhead::NoteMiss(uint64_t dir, const client::Cred& cred) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (dir != counting_dir_) {
      counting_dir_ = dir;
      misses_ = 0;
    }
    if (++misses_ < kTrigger || busy_ || !jobs_.empty()) return;
    auto it = listed_.find(dir);
    if (it != listed_.end()) {
      const Listed& l = it->second;
      const auto since = Clock::now() - l.at;
      if (l.backoff > 0 ? since < kRelistAfter * (1 << l.backoff)
                        : l.epoch == epoch_ && since < kRelistAfter) {
        return;
      }
    }
    misses_ = 0;
    jobs_.push_back(Job{dir, cred});
  }
  cv_.notify_all();
}

bool StatAhead::Take(uint64_t dir, std::string_view name, client::Attr* out) {
  std::lock_guard<std::mutex> l(mu_);
  auto d = dirs_.find(dir);
  if (d == dirs_.end()) return false;
  auto e = d->second.find(std::string(name));
  if (e == d->second.end()) return false;
  const auto now = Clock::now();
  bool live = e->second.expires > now;
  if (S_ISDIR(e->second.attr.mode)) dir_names_.erase(e->second.attr.ino);
  if (live) {
    *out = std::move(e->second.attr);
    out->lease_ms = static_cast<uint32_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(e->second.expires - now).count());
    live = out->lease_ms > 0;
  }
  d->second.erase(e);
  --entries_;
  if (d->second.empty()) dirs_.erase(d);
  if (live) {
    ++hits_;
    auto l = listed_.find(dir);
    if (l != listed_.end()) ++l->second.hits;
  }
  return live;
}

void StatAhead::EraseLocked(uint64_t dir, std::string_view name) {
  auto d = dirs_.find(dir);
  if (d == dirs_.end()) return;
  auto e = d->second.find(std::string(name));
  if (e == d->second.end()) return;
  if (S_ISDIR(e->second.attr.mode)) dir_names_.erase(e->second.attr.ino);
  d->second.erase(e);
  --entries_;
  if (d->second.empty()) dirs_.erase(d);
}

void StatAhead::Seen(uint64_t dir, std::string_view name, const client::Attr& a) {
  std::lock_guard<std::mutex> l(mu_);
  if (seen_.size() >= kSeen) seen_.pop_front();
  seen_.push_back(SeenName{dir, std::string(name), S_ISREG(a.mode) && a.nlink == 1});
}

bool StatAhead::Unlinking(uint64_t dir, std::string_view name) {
  std::lock_guard<std::mutex> l(mu_);
  bool one_link_file = false;
  for (auto it = seen_.rbegin(); it != seen_.rend(); ++it) {
    if (it->dir == dir && it->name == name) {
      one_link_file = it->one_link_file;
      break;
    }
  }
  if (!one_link_file) return false;
  EraseLocked(dir, name);
  // The directory's mtime and ctime change: its own entry goes.
  auto up = dir_names_.find(dir);
  if (up != dir_names_.end()) {
    const auto [parent, dname] = up->second;
    EraseLocked(parent, dname);
  }
  if (gone_.size() >= 1024) return false;  // a storm of unlinks: the caller clears
  gone_.push_back(Gone{dir, std::string(name)});
  return true;
}

void StatAhead::Unlinked(uint64_t dir, std::string_view name) {
  std::lock_guard<std::mutex> l(mu_);
  const auto now = Clock::now();
  for (Gone& g : gone_) {
    if (g.dir == dir && g.name == name && g.done == Clock::time_point::max()) {
      g.done = now;
      break;
    }
  }
}

void StatAhead::Clear() {
  std::lock_guard<std::mutex> l(mu_);
  ++epoch_;
  misses_ = 0;
  seen_.clear();
  if (entries_ == 0) return;
  dirs_.clear();
  dir_names_.clear();
  entries_ = 0;
}

size_t StatAhead::size() const {
  std::lock_guard<std::mutex> l(mu_);
  return entries_;
}

uint64_t StatAhead::listings() const {
  std::lock_guard<std::mutex> l(mu_);
  return listings_;
}

int StatAhead::backoff(uint64_t dir) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = listed_.find(dir);
  return it == listed_.end() ? 0 : it->second.backoff;
}

uint64_t StatAhead::hits() const {
  std::lock_guard<std::mutex> l(mu_);
  return hits_;
}

void StatAhead::WaitIdle() {
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait(l, [&] { return stop_ || (!busy_ && jobs_.empty()); });
}

void StatAhead::Run() {
  std::unique_lock<std::mutex> l(mu_);
  while (true) {
    cv_.wait(l, [&] { return stop_ || !jobs_.empty(); });
    if (stop_) return;
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    busy_ = true;
    ++listings_;
    l.unlock();
    List(job);
    l.lock();
    busy_ = false;
    cv_.notify_all();
  }
}

void StatAhead::List(const Job& job) {
  std::string after;
  uint64_t epoch = 0;
  {
    std::lock_guard<std::mutex> l(mu_);
    epoch = epoch_;
    if (listed_.size() >= 4096) listed_.clear();
    Listed& last = listed_[job.dir];
    // Did the last listing pay? Lookups it answered against entries it kept.
    if (last.kept > 0) {
      last.backoff = last.hits * kYield < last.kept ? std::min(last.backoff + 1, kMaxBackoff) : 0;
    }
    last.kept = last.hits = 0;
  }
  for (int page = 0; page < kMaxPages; ++page) {
    const auto sent = Clock::now();
    Result<client::DirPage> p = list_(job.cred, job.dir, after);
    if (!p.ok() || p->entries.empty()) break;
    after = p->entries.back().name;
    const bool eof = p->eof;
    if (!Fill(job.dir, *p, sent, epoch) || eof) break;
  }
  std::lock_guard<std::mutex> l(mu_);
  Listed& last = listed_[job.dir];
  last.epoch = epoch;
  last.at = Clock::now();
}

bool StatAhead::Fill(uint64_t dir, client::DirPage& page, Clock::time_point sent,
                     uint64_t epoch) {
  if (page.dir_lease_ms == 0) return false;  // no lease on the names: nothing to keep
  std::lock_guard<std::mutex> l(mu_);
  if (stop_ || epoch != epoch_) return false;
  // Unlinks answered before this page was asked for are in it; the rest
  // (in flight, or answered after) may not be.
  std::erase_if(gone_, [&](const Gone& g) { return g.done <= sent; });
  auto& names = dirs_[dir];
  uint64_t kept = 0;
  bool full = false;
  for (client::DirEntry& e : page.entries) {
    if (entries_ >= kMaxEntries) {
      full = true;
      break;
    }
    if (!e.attr.has_value() || e.attr->lease_ms == 0) continue;
    if (!S_ISREG(e.attr->mode) && !S_ISDIR(e.attr->mode)) continue;
    if (std::any_of(gone_.begin(), gone_.end(),
                    [&](const Gone& g) { return g.dir == dir && g.name == e.name; })) {
      continue;
    }
    if (S_ISDIR(e.attr->mode)) dir_names_[e.attr->ino] = {dir, e.name};
    const uint32_t ms = std::min(e.attr->lease_ms, page.dir_lease_ms);
    auto [it, added] = names.try_emplace(std::move(e.name));
    it->second.attr = std::move(*e.attr);
    it->second.expires = sent + std::chrono::milliseconds(ms);
    if (added) ++entries_;
    ++kept;
  }
  if (names.empty()) dirs_.erase(dir);
  auto last = listed_.find(dir);
  if (last != listed_.end()) last->second.kept += kept;
  return !full;
}

}  // namespace sfs::fuse
