#!/usr/bin/env bash
# The RDMA efficiency figure of docs/benchmarks.md (issue 7): ib_write_bw and
# StripeFS's striped RDMA bandwidth (scripts/rdma-bench.sh) in ONE VM run, so
# both see the same emulated machine. Runs inside the soft-RoCE VM:
#   ../shared/rdma-vm/run bash scripts/rdma-efficiency.sh BUILD_DIR [SIZE] [NP]
# Prints ib_write_bw's result (1 MiB messages, the transfer size StripeFS uses)
# before and after the StripeFS runs; the ratio is StripeFS MiB/s over it.
set -euo pipefail
build=${1:?usage: rdma-efficiency.sh BUILD_DIR [SIZE] [NP]}
dev=${RDMA_VM_DEVICE:?run this inside ../shared/rdma-vm/run}
iters=${IB_ITERS:-300}

ib_bw() {  # one ib_write_bw server + client pair on this node
  echo "== ib_write_bw -d $dev -x 1 -s 1048576 -n $iters [$RDMA_VM_ADDR]"
  ib_write_bw -d "$dev" -x 1 -s 1048576 -n "$iters" >/tmp/ib_srv.out 2>&1 &
  local srv=$!
  sleep 1
  ib_write_bw -d "$dev" -x 1 -s 1048576 -n "$iters" "$RDMA_VM_ADDR" 2>&1 |
    grep -E "#bytes|^ *1048576" || true
  wait "$srv" || true
}

ib_bw
SFS_BENCH_TRANSPORTS="rdma rdma" bash "$(dirname "$0")/rdma-bench.sh" "$build" "${2:-64M}" "${3:-1}"
ib_bw
