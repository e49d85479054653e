// The MDS's lease queries over the op table (common/mdsop/op_table.h: what
// each MdsRequest op does to what clients may cache under a metadata lease,
// mds/lease/lease_table.h), as the service (mds/service/lease_ops.cc) asks
// them: which names to lock and revoke, which directory a reply leases,
// which inodes to revoke, whether a reply waits for its commit.
#pragma once

#include <cstdint>
#include <vector>

#include "common/mdsop/op_table.h"
#include "mds.pb.h"
#include "mds/lease/lease_table.h"

namespace sfs::mds {

using mdsop::FindOpEffects;
using mdsop::NameRef;
using mdsop::OpEffects;

// The queries the service makes, over the table. An op not in it has no
// names, no leased directory and changes nothing.

// The (parent, name) pairs whose binding r may change.
std::vector<NameRef> NamesOf(const proto::MdsRequest& r);
// The names of NamesOf(r) that may lose the inode they point to now.
std::vector<NameRef> NamesUnbound(const proto::MdsRequest& r);
// The directory whose names a reply to r may lease; 0: none.
uint64_t DirOf(const proto::MdsRequest& r);
// The names r added or removed, given its successful reply resp, each as an
// invalidation of the name on its directory ({parent, parent, name}).
std::vector<LeaseInval> DirsChanged(const proto::MdsRequest& r, const proto::MdsResponse& resp);
// The inodes whose attributes r changes, as attribute-only invalidations.
std::vector<LeaseInval> InodesChanged(const proto::MdsRequest& r);
// The inodes r's successful reply resp says it changed (OpEffects::reply_inodes).
std::vector<LeaseInval> InodesChangedByReply(const proto::MdsRequest& r,
                                             const proto::MdsResponse& resp);
// Whether the reply resp to r must wait until r's write is durable (true for
// an op not in the table).
bool AckWaitsForCommit(const proto::MdsRequest& r, const proto::MdsResponse& resp);

}  // namespace sfs::mds
