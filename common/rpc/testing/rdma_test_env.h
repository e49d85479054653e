// Where the RDMA test programs (rdma_test, rdma_cluster_test, bulk_copy_test)
// find their address, and the one line they print when they cannot run: they
// need a verbs device and the host's RDMA address ($SFS_RDMA_ADDR, or
// $RDMA_VM_ADDR as set by ../shared/rdma-vm/run).
#pragma once

#include <cstdio>
#include <cstdlib>

#include "common/net/rdma_transport.h"

namespace sfs::rpc::test_support {

// The address to test on, or nullptr after printing why `test` cannot run.
inline const char* RdmaTestAddress(const char* test) {
  const char* addr = std::getenv("SFS_RDMA_ADDR");
  if (addr == nullptr) addr = std::getenv("RDMA_VM_ADDR");
  bool dev = RdmaDeviceAvailable();
  if (dev && addr != nullptr) return addr;
  std::fprintf(stderr,
               "%s: %s. It needs an RDMA device; run it inside the soft-RoCE VM:\n"
               "  ../shared/rdma-vm/run meson test -C BUILD --setup rdma --suite rdma\n",
               test, !dev ? "no RDMA device" : "neither SFS_RDMA_ADDR nor RDMA_VM_ADDR is set");
  return nullptr;
}

}  // namespace sfs::rpc::test_support
