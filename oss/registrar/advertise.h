// The address an OSS tells the MDS (and through it, clients) to use.
//
// A concrete listen host is used as is. A wildcard one (0.0.0.0 or ::) is not
// reachable as such, so it is replaced by the local IP of the interface that
// routes to the MDS — the address the MDS itself would see us come from.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace sfs::oss {

// "host:port" to register. REQUIRES: mds_address parses as "host:port".
Result<std::string> AdvertiseAddress(const std::string& listen_host, uint16_t bound_port,
                                     const std::string& mds_address);

}  // namespace sfs::oss
