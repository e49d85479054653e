// OpEffects: what each MdsRequest op does to what clients may cache under a
// metadata lease (mds/lease/lease_table.h) — one table, one entry per case of
// MdsRequest's `op` oneof, so the lease rules are written once and a new op
// cannot silently leave other mounts with stale caches: op_effects_test walks
// the oneof through the protobuf descriptor and fails for a case missing here.
//
// An entry says, for a request of its op:
//   - whether it mutates metadata (read-only ops change nothing leased);
//   - the (parent, name) pairs whose binding it may change: the service locks
//     their name stripes, and on success revokes each name on its directory
//     (a directory's lease covers its attributes and its names, absent ones
//     too);
//   - whether those names may lose the inode they point to (unlink, rmdir,
//     rename): the inodes they point to before the op are revoked as well;
//   - the directory whose names the reply may lease (parent_lease_ms);
//   - the inodes whose attributes it changes, revoked on success (also those
//     its reply names: a file's first write open);
//   - for a mutating op that revokes nothing at all, why that is right.
// The MDS's service (mds/service/lease_ops.cc, over mds/lease/op_effects.h)
// orders the steps: stripes, lookups, apply, grant, revoke. libsfs reads the
// same table to know which of its own requests end its kept opens
// (ChangesLeased). This layer only classifies; it reads no namespace and holds
// no state. Thread-safe (the table is constant).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "mds.pb.h"

namespace sfs::mdsop {

using NameRef = std::pair<uint64_t, std::string>;  // (parent directory, name)

struct OpEffects {
  bool mutating = false;
  // The names whose binding the op may change; null: none.
  std::vector<NameRef> (*names)(const proto::MdsRequest&) = nullptr;
  // True iff the names may stop pointing to the inode they point to now.
  bool unbinds = false;
  // Whether a successful reply changed the names after all; null: it did.
  bool (*names_changed)(const proto::MdsResponse&) = nullptr;
  // The directory whose names the reply may lease (0: none); null: none.
  uint64_t (*lease_dir)(const proto::MdsRequest&) = nullptr;
  // The inodes whose attributes the op changes; null: none.
  std::vector<uint64_t> (*inodes)(const proto::MdsRequest&) = nullptr;
  // The inodes a successful reply says the op changed for lease holders
  // (an open's first write open: OpenResp.first_write_open); null: none.
  std::vector<uint64_t> (*reply_inodes)(const proto::MdsResponse&) = nullptr;
  // Set iff the op mutates but has neither names nor inodes: why no lease
  // needs revoking.
  const char* neutral = nullptr;
  // A mutating op's reply waits until its write is durable (commit before
  // reply, mds/namespace/committer.h) unless this says why it need not: it
  // records only what fsync, not the reply, promises (a size report, an
  // open). The commit it starts runs behind the reply.
  const char* acked_at_once = nullptr;
  // With acked_at_once: whether a given reply is acked at once after all;
  // null: always.
  bool (*acked_at_once_if)(const proto::MdsResponse&) = nullptr;
};

// The table's entry for op, or null iff op is not in the table (kOpNotSet,
// or an op the table lacks, which op_effects_test rules out).
const OpEffects* FindOpEffects(proto::MdsRequest::OpCase op);

// Whether r, answered by resp, changed something a mount may cache under a
// lease: what the MDS revokes other mounts' leases for (names, attributes,
// a file's first write open). resp null: no reply was read, so the outcome
// is unknown and every op that may change something counts. A refused
// request (an error status) changed nothing.
bool ChangesLeased(const proto::MdsRequest& r, const proto::MdsResponse* resp);

}  // namespace sfs::mdsop
