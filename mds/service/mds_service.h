// MdsService: the metadata server's RPC handler. It parses an MdsRequest,
// notes the client as alive, calls the Namespace or the OST registry once,
// and packs the MdsResponse. No business rules here: every check lives in
// the domain objects. A payload that does not parse as an MdsRequest, or
// names no op, gets status EPROTO. Thread-safe (stateless beyond pointers).
#pragma once

#include <string>

#include "common/rpc/rpc.h"
#include "mds/namespace/namespace.h"
#include "mds/namespace/ost_registry.h"

namespace sfs::mds {

class MdsService : public rpc::Handler {
 public:
  // REQUIRES: ns and osts outlive the service.
  MdsService(Namespace* ns, OstRegistry* osts) : ns_(ns), osts_(osts) {}

  void Handle(rpc::Request& req, rpc::Reply* reply) override;
  // The serialized MdsResponse for a serialized MdsRequest (what Handle does).
  std::string HandlePayload(const std::string& payload);

 private:
  Namespace* const ns_;
  OstRegistry* const osts_;
};

}  // namespace sfs::mds
