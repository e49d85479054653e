#include "common/auth/signing_keys.h"

#include <openssl/rand.h>

#include <algorithm>
#include <cerrno>

namespace sfs::auth {
namespace {

constexpr std::string_view kUnknownKey = "capability of an unknown or retired key";
constexpr size_t kKeyBytes = 32;

}  // namespace

std::string RandomKeyBytes() {
  std::string out(kKeyBytes, '\0');
  SFS_CHECK(RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), kKeyBytes) == 1);
  return out;
}

KeyRotator::KeyRotator(int64_t period_ms, int64_t lifetime_ms, int64_t publish_ms)
    : period_ms_(period_ms), lifetime_ms_(lifetime_ms), publish_ms_(publish_ms) {
  SFS_CHECK(period_ms > 0 && lifetime_ms > 0 && publish_ms > 0);
}

ClusterKey KeyRotator::MakeKeyLocked() {
  if (next_id_ == 0) {
    // Random at start: another MDS run's ids are not ours (see the header).
    std::string seed = RandomKeyBytes();
    for (int i = 0; i < 4; ++i) next_id_ = (next_id_ << 8) | static_cast<uint8_t>(seed[i]);
  }
  if (next_id_ < 2) next_id_ = 2;  // 0: none; 1: the cluster key's id in older tokens
  return ClusterKey{RandomKeyBytes(), next_id_++};
}

void KeyRotator::AdvanceLocked(int64_t now_ms) {
  if (keys_.empty()) {
    keys_.push_back({MakeKeyLocked()});  // current
    keys_.push_back({MakeKeyLocked()});  // next
    switch_ms_ = now_ms + period_ms_;
  }
  if (now_ms >= switch_ms_) {
    // The current key may have signed up to now: its tokens last until
    // now + lifetime. A forced rotation retires it (and all older) at once.
    const size_t current = keys_.size() - 2;
    for (size_t i = 0; i <= current; ++i) {
      int64_t until = forced_ ? now_ms : now_ms + lifetime_ms_;
      keys_[i].retire_ms = std::min(keys_[i].retire_ms, until);
    }
    keys_.push_back({MakeKeyLocked()});
    switch_ms_ = now_ms + period_ms_;
    forced_ = false;
  }
  std::erase_if(keys_, [&](const Entry& e) { return e.retire_ms <= now_ms; });
}

ClusterKey KeyRotator::Current(int64_t now_ms) {
  std::lock_guard lock(mu_);
  AdvanceLocked(now_ms);
  return keys_[keys_.size() - 2].key;
}

std::vector<PublishedKey> KeyRotator::Published(int64_t now_ms) {
  std::lock_guard lock(mu_);
  AdvanceLocked(now_ms);
  std::vector<PublishedKey> out;
  out.reserve(keys_.size());
  for (size_t i = 0; i < keys_.size(); ++i) {
    out.push_back({keys_[i].key, i + 2 == keys_.size()});
  }
  return out;
}

KeyRotator::Rotation KeyRotator::RotateNow(int64_t now_ms) {
  std::lock_guard lock(mu_);
  AdvanceLocked(now_ms);
  keys_.back() = Entry{MakeKeyLocked()};  // the published next key may have leaked too
  switch_ms_ = now_ms + publish_ms_;
  forced_ = true;
  Rotation r{keys_.back().key.id, switch_ms_, {}};
  for (size_t i = 0; i + 1 < keys_.size(); ++i) r.retiring.push_back(keys_[i].key.id);
  return r;
}

void KeyRing::Install(std::vector<PublishedKey> keys) {
  if (keys.size() > kMaxKeys) keys.erase(keys.begin(), keys.end() - kMaxKeys);
  auto set = std::make_shared<const Set>(std::move(keys));
  std::lock_guard lock(mu_);
  set_ = std::move(set);
}

std::optional<ClusterKey> KeyRing::Find(uint32_t id) const {
  std::lock_guard lock(mu_);
  for (const PublishedKey& k : *set_) {
    if (k.key.id == id) return k.key;
  }
  return std::nullopt;
}

bool KeyRing::Has(uint32_t id) const {
  std::lock_guard lock(mu_);
  return std::any_of(set_->begin(), set_->end(), [&](const PublishedKey& k) { return k.key.id == id; });
}

std::optional<ClusterKey> KeyRing::Current() const {
  std::lock_guard lock(mu_);
  for (const PublishedKey& k : *set_) {
    if (k.current) return k.key;
  }
  return std::nullopt;
}

std::vector<uint32_t> KeyRing::ids() const {
  std::lock_guard lock(mu_);
  std::vector<uint32_t> out;
  for (const PublishedKey& k : *set_) out.push_back(k.key.id);
  return out;
}

uint32_t TokenKeyId(std::string_view token) {
  if (token.size() < 5) return 0;
  uint32_t id = 0;
  for (size_t i = 1; i < 5; ++i) id = (id << 8) | static_cast<uint8_t>(token[i]);
  return id;
}

Result<Capability> Verify(std::string_view token, const KeyRing& ring, int64_t now) {
  const uint32_t id = TokenKeyId(token);
  std::optional<ClusterKey> key = ring.Find(id);
  if (!key.has_value()) return UnknownKey(id);
  return Verify(token, *key, now);
}

Status UnknownKey(uint32_t id) {
  return Status::Errno(EACCES, std::string(kUnknownKey) + " (" + std::to_string(id) + ")");
}

bool IsUnknownKey(const Status& st) {
  return st.code() == EACCES && st.message().starts_with(kUnknownKey);
}

}  // namespace sfs::auth
