#!/usr/bin/env bash
# Striped libsfs bandwidth over RDMA vs TCP, for docs/benchmarks.md (issue 7).
# Runs inside the soft-RoCE VM:
#   ../shared/rdma-vm/run bash scripts/rdma-bench.sh BUILD_DIR [SIZE] [NP]
# Starts sfs-mds and 3 sfs-oss on $RDMA_VM_ADDR (--transport=auto: both
# listeners), stripes the root over all OSTs (1 MiB stripes), then runs
# `sfs-bench ior -a SFS` with --transport=tcp and --transport=rdma.
set -euo pipefail
build=${1:?usage: rdma-bench.sh BUILD_DIR [SIZE] [NP]}
size=${2:-64M}
np=${3:-1}
host=${RDMA_VM_ADDR:?run this inside ../shared/rdma-vm/run}
tmp=$(mktemp -d /tmp/sfs-rdma-bench.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait || true; }
trap cleanup EXIT

listen() {  # NAME CMD... : starts a daemon, prints its LISTENING address
  local name=$1; shift
  "$@" >"$tmp/$name.out" 2>"$tmp/$name.log" &
  pids+=($!)
  for _ in $(seq 600); do
    if grep -q LISTENING "$tmp/$name.out"; then awk '{print $2}' "$tmp/$name.out"; return; fi
    sleep 0.1
  done
  echo "$name did not start:" >&2; cat "$tmp/$name.log" >&2; exit 1
}

mds=$(listen mds "$build/mds/sfs-mds" --data "$tmp/mds" --listen "$host:0")
for i in 0 1 2; do
  listen "oss$i" "$build/oss/sfs-oss" --mds "$mds" --ost "$tmp/ost$i" --listen "$host:0" \
    --heartbeat-ms 200 >/dev/null
done
grep -h "transport:" "$tmp"/*.log
sleep 1
"$build/tools/sfs" setstripe -c -1 -S 1M --mds "$mds" / 2>/dev/null
"$build/tools/sfs" servers --mds "$mds" 2>/dev/null
for t in ${SFS_BENCH_TRANSPORTS:-tcp rdma tcp rdma}; do
  echo "== transport $t: sfs-bench ior -a SFS --transport $t -np $np -b $size -t 1M -w -r -e"
  "$build/tools/sfs-bench" ior -a SFS --mds "$mds" --transport "$t" -np "$np" -b "$size" -t 1M \
    -w -r -e -o "/bench-$t" 2>&1 | grep -E "^(write|read) |rror|EIO|task" || true
done
