#!/usr/bin/env bash
# What metrics cost (issue 20): 4 KiB random reads through a FUSE mount of a
# local cluster (1 MDS, 4 OSSes on 127.0.0.1), with every daemon's metrics
# on (--metrics-listen / -o metrics_listen, SFS_JOBID set so jobstats run)
# and off, alternating, ROUNDS times each, in one sitting; cold reads
# (--drop-caches before the read phase). Prints each run's
# read ops/s and the median of each mode.
#
#   scripts/bench-metrics.sh [BUILD_DIR (build)] [ROUNDS (3)] [BLOCK (32M)]
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
ROUNDS=${2:-3}
BLOCK=${3:-32M}
WORK=$(mktemp -d /tmp/sfs-bench-metrics-XXXXXX)
pids=()
cleanup() {
  mountpoint -q "$WORK/mnt" 2>/dev/null && fusermount3 -u "$WORK/mnt" 2>/dev/null || true
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
}
trap 'cleanup; rm -rf "$WORK"' EXIT

# shellcheck source=scripts/bench-lib.sh
source "$(dirname "$0")/bench-lib.sh"  # wait_line

# CPU ticks (user + system) used so far by the daemons and the mount of this run.
cpu_ticks() {
  local t=0 p
  for p in "${pids[@]}"; do
    t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat")))
  done
  echo "$t"
}

run() {  # run on|off: prints the read phase's ops/s and CPU us per read
  local mode=$1 m_mds=() m_oss=() m_mnt=()
  if [ "$mode" = on ]; then
    m_mds=(--metrics-listen 127.0.0.1:0); m_oss=(--metrics-listen 127.0.0.1:0)
    m_mnt=(-o metrics_listen=127.0.0.1:0)
  fi
  rm -rf "$WORK/c"; mkdir -p "$WORK/c/mds" "$WORK/mnt"
  "$BUILD/mds/sfs-mds" --data "$WORK/c/mds" --listen 127.0.0.1:0 "${m_mds[@]}" \
    >"$WORK/c/mds.out" 2>"$WORK/c/mds.log" & pids+=($!)
  local mds; mds=$(wait_line "$WORK/c/mds.out" LISTENING)
  for i in 0 1 2 3; do
    mkdir -p "$WORK/c/ost$i"
    "$BUILD/oss/sfs-oss" --mds "$mds" --ost "$WORK/c/ost$i" --listen 127.0.0.1:0 "${m_oss[@]}" \
      >"$WORK/c/oss$i.out" 2>"$WORK/c/oss$i.log" & pids+=($!)
    wait_line "$WORK/c/oss$i.out" LISTENING >/dev/null
  done
  "$BUILD/client/fuse/sfs-mount" "$mds" "$WORK/mnt" -f -o allow_other "${m_mnt[@]}" \
    >"$WORK/c/mount.log" 2>&1 & pids+=($!)
  local deadline=$((SECONDS + 30))
  until mountpoint -q "$WORK/mnt"; do
    [ $SECONDS -lt $deadline ] || { echo "mount failed" >&2; cat "$WORK/c/mount.log" >&2; exit 1; }
    sleep 0.05  # polls a condition, with a deadline
  done
  local ior=("$BUILD/tools/sfs-bench" ior -a POSIX -F -np 4 -b "$BLOCK" -o "$WORK/mnt/ior")
  SFS_JOBID=bench "${ior[@]}" -t 1M -w -e -k >/dev/null
  local cpu0; cpu0=$(cpu_ticks)
  local ops; ops=$(SFS_JOBID=bench "${ior[@]}" -t 4K -z -r -k --drop-caches --json | python3 -c '
import json, sys
r = json.load(sys.stdin)
p = [p for p in r["phases"] if p["phase"] == "read"][0]
print("%.0f %d" % (p["ops_per_s"]["mean"], sum(i["ops"] for i in p["iterations"])))')
  local cpu1; cpu1=$(cpu_ticks)
  # ops/s, and the servers' and the mount's CPU (user + system) per read in us
  echo "$ops $cpu0 $cpu1" | awk -v hz="$(getconf CLK_TCK)" \
    '{printf "%s %.1f\n", $1, ($4 - $3) * 1e6 / hz / $2}'
  cleanup
}

declare -A all=([on]="" [off]="") cpu=([on]="" [off]="")
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for r in $(seq "$ROUNDS"); do
  for mode in on off; do
    read -r v c < <(run "$mode")
    echo "round $r metrics=$mode: $v read ops/s, $c us CPU per read (servers + mount)"
    all[$mode]+="$v "
    cpu[$mode]+="$c "
  done
done
for mode in on off; do
  echo "median metrics=$mode: $(echo "${all[$mode]}" | median) ops/s, $(echo "${cpu[$mode]}" | median) us CPU per read"
done
