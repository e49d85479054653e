// An MDS open id's layout (mds.proto OpenResp.open_id), which the MDS's open
// table hands out and libsfs reads: bits kOpenIdEpochShift.. are the MDS boot
// epoch it was handed out in, so an id from before a restart is told apart
// and never reused.
#pragma once

#include <cstdint>

namespace sfs::mdsop {

inline constexpr int kOpenIdEpochShift = 40;

// The boot epoch open_id was handed out in.
constexpr uint64_t OpenIdEpoch(uint64_t open_id) { return open_id >> kOpenIdEpochShift; }

}  // namespace sfs::mdsop
