// In-memory open-file and client-session tracking (see open_table.h).
#include "mds/namespace/open_table.h"

namespace sfs::mds {

void OpenTable::SetEpoch(uint64_t epoch) {
  std::lock_guard<std::mutex> lock(mu_);
  next_id_ = (epoch << mdsop::kOpenIdEpochShift) | 1;
}

bool OpenTable::Contains(uint64_t open_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return opens_.count(open_id) != 0;
}

uint64_t OpenTable::Add(uint64_t client, uint64_t ino, int64_t now_ms, bool write) {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t id = next_id_++;
  opens_[id] = Open{client, ino, write};
  ++per_ino_[ino];
  if (write) ++writers_[ino];
  Client& c = clients_[client];
  c.last_seen_ms = std::max(c.last_seen_ms, now_ms);
  ++c.opens;
  return id;
}

void OpenTable::DropLocked(std::unordered_map<uint64_t, Open>::iterator it) {
  auto pi = per_ino_.find(it->second.ino);
  if (pi != per_ino_.end() && --pi->second <= 0) per_ino_.erase(pi);
  auto wi = it->second.write ? writers_.find(it->second.ino) : writers_.end();
  if (wi != writers_.end() && --wi->second <= 0) writers_.erase(wi);
  auto ci = clients_.find(it->second.client);
  if (ci != clients_.end() && ci->second.opens > 0) --ci->second.opens;
  opens_.erase(it);
}

std::optional<uint64_t> OpenTable::Remove(uint64_t open_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = opens_.find(open_id);
  if (it == opens_.end()) return std::nullopt;
  uint64_t ino = it->second.ino;
  DropLocked(it);
  return ino;
}

int OpenTable::OpenCount(uint64_t ino) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = per_ino_.find(ino);
  return it == per_ino_.end() ? 0 : it->second;
}

int OpenTable::WriteOpenCount(uint64_t ino) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = writers_.find(ino);
  return it == writers_.end() ? 0 : it->second;
}

void OpenTable::Touch(uint64_t client, int64_t now_ms) {
  if (client == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  Client& c = clients_[client];
  c.last_seen_ms = std::max(c.last_seen_ms, now_ms);
}

std::vector<uint64_t> OpenTable::ExpireClients(int64_t now_ms, int64_t timeout_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<uint64_t> inos;
  for (auto ci = clients_.begin(); ci != clients_.end();) {
    if (ci->first == 0 || now_ms - ci->second.last_seen_ms <= timeout_ms) {
      ++ci;
      continue;
    }
    uint64_t client = ci->first;
    for (auto it = opens_.begin(); it != opens_.end();) {
      auto next = std::next(it);
      if (it->second.client == client) {
        inos.push_back(it->second.ino);
        DropLocked(it);
      }
      it = next;
    }
    ci = clients_.erase(ci);
  }
  return inos;
}

size_t OpenTable::Opens() const {
  std::lock_guard<std::mutex> lock(mu_);
  return opens_.size();
}

size_t OpenTable::ClientsWithOpens() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [id, c] : clients_) n += c.opens > 0 ? 1 : 0;
  return n;
}

}  // namespace sfs::mds
