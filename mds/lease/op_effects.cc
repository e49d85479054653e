// The lease queries over the op table (see op_effects.h).
#include "mds/lease/op_effects.h"

namespace sfs::mds {
namespace {

using proto::MdsRequest;
using proto::MdsResponse;

const OpEffects kNone{};

const OpEffects& EffectsOf(const MdsRequest& r) {
  const OpEffects* e = FindOpEffects(r.op_case());
  return e != nullptr ? *e : kNone;
}

}  // namespace

std::vector<NameRef> NamesOf(const MdsRequest& r) {
  const OpEffects& e = EffectsOf(r);
  return e.names != nullptr ? e.names(r) : std::vector<NameRef>{};
}

std::vector<NameRef> NamesUnbound(const MdsRequest& r) {
  return EffectsOf(r).unbinds ? NamesOf(r) : std::vector<NameRef>{};
}

uint64_t DirOf(const MdsRequest& r) {
  const OpEffects& e = EffectsOf(r);
  return e.lease_dir != nullptr ? e.lease_dir(r) : 0;
}

// A directory's lease covers its attributes (mtime, nlink) and every name in
// it, present or absent, so its holders forget the name (a negative entry
// too) and the directory's attributes.
std::vector<LeaseInval> DirsChanged(const MdsRequest& r, const MdsResponse& resp) {
  const OpEffects& e = EffectsOf(r);
  if (e.names_changed != nullptr && !e.names_changed(resp)) return {};
  std::vector<LeaseInval> out;
  for (auto& [parent, name] : NamesOf(r)) out.push_back({parent, parent, name});
  return out;
}

std::vector<LeaseInval> InodesChangedByReply(const MdsRequest& r, const MdsResponse& resp) {
  const OpEffects& e = EffectsOf(r);
  std::vector<LeaseInval> out;
  if (e.reply_inodes == nullptr) return out;
  for (uint64_t ino : e.reply_inodes(resp)) out.push_back({ino});
  return out;
}

std::vector<LeaseInval> InodesChanged(const MdsRequest& r) {
  const OpEffects& e = EffectsOf(r);
  std::vector<LeaseInval> out;
  if (e.inodes == nullptr) return out;
  for (uint64_t ino : e.inodes(r)) out.push_back({ino});
  return out;
}

bool AckWaitsForCommit(const MdsRequest& r, const MdsResponse& resp) {
  const OpEffects* e = FindOpEffects(r.op_case());
  if (e == nullptr || e->acked_at_once == nullptr) return true;
  return e->acked_at_once_if != nullptr && !e->acked_at_once_if(resp);
}

}  // namespace sfs::mds
