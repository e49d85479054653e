// MigrateFile: the client side of `sfs migrate` (Client::Migrate), kept out
// of client.cc. See Client::Migrate in client.h for the contract.
#pragma once

#include <cstdint>

#include "client/lib/client.h"
#include "client/lib/io.h"
#include "client/lib/mds_client.h"

namespace sfs::client {

Result<LayoutSpec> MigrateFile(MdsClient& mds, Striper& striper, const Cred& c, uint64_t ino,
                               const LayoutSpec& spec);

}  // namespace sfs::client
