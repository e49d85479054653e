#!/usr/bin/env bash
# The cost of the capability check (issue 17): 4 KiB random O_DIRECT reads
# (fio, psync) through a real sfs-mount of a local cluster (1 MDS, 2 OSSes on
# 127.0.0.1, the file striped over both, 1 MiB stripes) with and without a
# cluster key. With the key every OSS request carries an MDS-signed
# capability that the OSS verifies (docs/security.md); without, none does.
# The two modes alternate ROUNDS times in one sitting (ABBA), each on a fresh
# cluster; the file stays in the OSSes' page cache, so the figure is the
# request path's CPU, where a check would show.
#
#   scripts/bench-capcost.sh [BUILD_DIR (build)] [ROUNDS (3)] [RUNTIME_S (15)]
#   env: JOBS (1: fio tasks), SIZE (256M)
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
ROUNDS=${2:-3}
RUNTIME=${3:-15}
JOBS=${JOBS:-1}
SIZE=${SIZE:-256M}
command -v fio >/dev/null || { echo "bench-capcost.sh: needs fio (apt-get install fio)" >&2; exit 1; }
SFS="$BUILD/tools/sfs/sfs"
[ -x "$SFS" ] || SFS="$BUILD/tools/sfs"
TOP=$(mktemp -d /tmp/sfs-bench-capcost-XXXXXX)
WORK=$TOP
pids=()
cleanup() {
  mountpoint -q "$WORK/m" 2>/dev/null && fusermount3 -u "$WORK/m" 2>/dev/null || true
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
}
trap 'cleanup; rm -rf "$TOP"' EXIT
# shellcheck source=scripts/bench-lib.sh
source "$(dirname "$0")/bench-lib.sh"

# run MODE (keyless|keyed) N: one measurement on a fresh cluster; prints
# "MODE iops p50_us p99_us load1".
run() {
  WORK="$TOP/$1-$2"
  mkdir -p "$WORK/mds" "$WORK/ost0" "$WORK/ost1"
  local key=()
  if [ "$1" = keyed ]; then
    "$SFS" key generate "$WORK/cluster.key" >/dev/null
    key=(--cluster-key "$WORK/cluster.key")
  fi
  "$BUILD/mds/sfs-mds" --data "$WORK/mds" --listen 127.0.0.1:0 "${key[@]}" \
    >"$WORK/mds.out" 2>"$WORK/mds.log" & pids+=($!)
  MDS=$(wait_line "$WORK/mds.out" LISTENING)
  for i in 0 1; do
    "$BUILD/oss/sfs-oss" --mds "$MDS" --ost "$WORK/ost$i" --listen 127.0.0.1:0 "${key[@]}" \
      >"$WORK/oss$i.out" 2>"$WORK/oss$i.log" & pids+=($!)
    wait_line "$WORK/oss$i.out" LISTENING >/dev/null
  done
  mount_fs "$WORK/m"
  "$SFS" setstripe -c -1 -S 1M "$WORK/m" >/dev/null
  fio --name=prep --filename="$WORK/m/f" --rw=write --bs=1M --size="$SIZE" --end_fsync=1 >/dev/null
  fio --name=capcost --filename="$WORK/m/f" --rw=randread --bs=4k --direct=1 --ioengine=psync \
    --size="$SIZE" --numjobs="$JOBS" --group_reporting --time_based --runtime="$RUNTIME" \
    --randrepeat=0 --output-format=json --output="$WORK/fio.json" >/dev/null
  local load; load=$(cut -d' ' -f1 /proc/loadavg)
  python3 - "$WORK/fio.json" "$1" "$load" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["jobs"][0]["read"]
p = r["clat_ns"]["percentile"]
print("%s %.0f %.0f %.0f %s" % (sys.argv[2], r["iops"], p["50.000000"] / 1e3, p["99.000000"] / 1e3, sys.argv[3]))
PY
  cleanup
}

echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $JOBS fio task(s), $SIZE"
echo "# mode iops p50_us p99_us load1"
for ((i = 1; i <= ROUNDS; i++)); do
  # ABBA: each mode goes first in every other round, so an order effect
  # (the previous cluster's teardown, the page cache) does not favour one.
  modes=(keyless keyed); [ $((i % 2)) = 0 ] && modes=(keyed keyless)
  for mode in "${modes[@]}"; do run "$mode" "$i" | tee -a "$TOP/runs"; done
done
python3 - "$TOP/runs" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    f = line.split()
    runs.setdefault(f[0], []).append([float(x) for x in f[1:]])
med = {m: [statistics.median(c) for c in zip(*v)] for m, v in runs.items()}
for m in ("keyless", "keyed"):
    iops, p50, p99, load = med[m]
    print("median %-7s %7.0f IOPS  p50 %5.0f us  p99 %6.0f us  load %.2f" % (m, iops, p50, p99, load))
print("keyed / keyless IOPS: %.3f (cost %.1f%%)" % (med["keyed"][0] / med["keyless"][0],
                                                   (1 - med["keyed"][0] / med["keyless"][0]) * 100))
PY
