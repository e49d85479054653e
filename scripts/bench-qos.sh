#!/usr/bin/env bash
# QoS between tenants (issue 17): a noisy tenant (NOISY_JOBS fio tasks of
# 1 MiB sequential writes) and a quiet one (1 fio task of 4 KiB random
# O_DIRECT reads) on the same OSSes, each through its own tenant mount
# (-o tenant=,keyfile=) of a local cluster with a cluster key (1 MDS,
# 2 OSSes on 127.0.0.1; both tenants' directories striped over both OSSes).
# Three modes, alternated ROUNDS times in one sitting:
#   alone  the quiet tenant alone;
#   noqos  with the noisy tenant, no QoS rule;
#   qos    with the noisy tenant, under the rules in QOS_RULES ('|' between
#          rules, each the arguments of `sfs qos set`).
# Prints per run the quiet tenant's read IOPS, MiB/s and p99 completion
# latency (us), the noisy tenant's write MiB/s and the load average; then
# the median of each mode and the quiet tenant's share of its alone figures.
#
#   scripts/bench-qos.sh [BUILD_DIR (build)] [ROUNDS (3)] [RUNTIME_S (20)]
#   env: QOS_RULES, NOISY_JOBS (8), QUIET_SIZE (256M)
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
ROUNDS=${2:-3}
RUNTIME=${3:-20}
NOISY_JOBS=${NOISY_JOBS:-8}
QUIET_SIZE=${QUIET_SIZE:-256M}
QOS_RULES=${QOS_RULES:-"tenant:noisy --write-mibps 20|tenant:quiet --reserve-iops 2000 --weight 8"}
command -v fio >/dev/null || { echo "bench-qos.sh: needs fio (apt-get install fio)" >&2; exit 1; }
WORK=$(mktemp -d /tmp/sfs-bench-qos-XXXXXX)
SFS="$BUILD/tools/sfs/sfs"
[ -x "$SFS" ] || SFS="$BUILD/tools/sfs"
pids=()
cleanup() {
  for m in "$WORK/mq" "$WORK/mn" "$WORK/admin"; do
    mountpoint -q "$m" 2>/dev/null && fusermount3 -u "$m" 2>/dev/null || true
  done
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
}
trap 'cleanup; rm -rf "$WORK"' EXIT

# shellcheck source=scripts/bench-lib.sh
source "$(dirname "$0")/bench-lib.sh"

# rules_on_osses N: until both OSSes have N rules in force (they come with heartbeats).
rules_on_osses() {
  local deadline=$((SECONDS + 30)) sum
  while :; do
    sum=0
    for a in "${OSS_METRICS[@]}"; do
      sum=$((sum + $(curl -s "http://$a/metrics" | awk '$1 == "sfs_oss_qos_rules" {print $2}')))
    done
    [ "$sum" -eq $(($1 * ${#OSS_METRICS[@]})) ] && return
    [ $SECONDS -lt $deadline ] || { echo "OSSes never had $1 rules" >&2; exit 1; }
    sleep 0.1  # polls a condition, with a deadline
  done
}

start_cluster() {
  mkdir -p "$WORK/mds" "$WORK/ost0" "$WORK/ost1"
  "$SFS" key generate "$WORK/cluster.key" >/dev/null
  "$BUILD/mds/sfs-mds" --data "$WORK/mds" --listen 127.0.0.1:0 --cluster-key "$WORK/cluster.key" \
    >"$WORK/mds.out" 2>"$WORK/mds.log" & pids+=($!)
  MDS=$(wait_line "$WORK/mds.out" LISTENING)
  OSS_METRICS=()
  for i in 0 1; do
    "$BUILD/oss/sfs-oss" --mds "$MDS" --ost "$WORK/ost$i" --listen 127.0.0.1:0 \
      --cluster-key "$WORK/cluster.key" --metrics-listen 127.0.0.1:0 \
      >"$WORK/oss$i.out" 2>"$WORK/oss$i.log" & pids+=($!)
    wait_line "$WORK/oss$i.out" LISTENING >/dev/null
    OSS_METRICS+=("$(wait_line "$WORK/oss$i.out" METRICS)")
  done
  mount_fs "$WORK/admin"
  for t in noisy quiet; do
    mkdir "$WORK/admin/$t"
    chmod 777 "$WORK/admin/$t"
    "$SFS" setstripe -c -1 -S 1M "$WORK/admin/$t" >/dev/null
    "$SFS" tenant create "$t" --fileset "/$t" --key-out "$WORK/$t.key" --mds "$MDS" >/dev/null
  done
  mount_fs "$WORK/mn" "tenant=noisy,keyfile=$WORK/noisy.key"
  mount_fs "$WORK/mq" "tenant=quiet,keyfile=$WORK/quiet.key"
  # The quiet tenant's file, and the noisy tenant's files laid out once.
  fio --name=prep --filename="$WORK/mq/q" --rw=write --bs=1M --size="$QUIET_SIZE" \
    --end_fsync=1 >/dev/null
  fio --name=noisy --directory="$WORK/mn" --rw=write --bs=1M --size=64M \
    --numjobs="$NOISY_JOBS" --end_fsync=1 >/dev/null
}

# quiet: "iops MiB/s p99_us" of the quiet tenant's RUNTIME s of random reads.
quiet() {
  fio --name=quiet --filename="$WORK/mq/q" --rw=randread --bs=4k --direct=1 --ioengine=psync \
    --size="$QUIET_SIZE" --time_based --runtime="$RUNTIME" --randrepeat=0 \
    --output-format=json --output="$WORK/quiet.json" >/dev/null
  python3 - "$WORK/quiet.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))["jobs"][0]["read"]
print("%.0f %.1f %.0f" % (r["iops"], r["bw"] / 1024, r["clat_ns"]["percentile"]["99.000000"] / 1e3))
EOF
}

# run MODE: one measurement; prints "MODE iops MiB/s p99_us noisy_MiB/s load1".
run() {
  local mode=$1 noisy_pid="" noisy_mibps=0
  if [ "$mode" = qos ]; then
    local n=0
    IFS='|' read -ra rules <<<"$QOS_RULES"
    for r in "${rules[@]}"; do
      # shellcheck disable=SC2086
      "$SFS" qos set $r --mds "$MDS" >/dev/null
      n=$((n + 1))
    done
    rules_on_osses "$n"
  fi
  if [ "$mode" != alone ]; then
    fio --name=noisy --directory="$WORK/mn" --rw=write --bs=1M --size=64M --direct=1 \
      --numjobs="$NOISY_JOBS" --time_based --runtime=$((RUNTIME + 4)) --group_reporting \
      --output-format=json --output="$WORK/noisy.json" >/dev/null &
    noisy_pid=$!
    sleep 2  # the noisy tenant's writes under way before the quiet one measures
  fi
  local q; q=$(quiet)
  local load; load=$(cut -d' ' -f1 /proc/loadavg)
  if [ -n "$noisy_pid" ]; then
    wait "$noisy_pid"
    noisy_mibps=$(python3 -c 'import json,sys; print("%.0f" % (json.load(open(sys.argv[1]))["jobs"][0]["write"]["bw"] / 1024))' "$WORK/noisy.json")
  fi
  if [ "$mode" = qos ]; then
    IFS='|' read -ra rules <<<"$QOS_RULES"
    for r in "${rules[@]}"; do "$SFS" qos remove "${r%% *}" --mds "$MDS" >/dev/null; done
    rules_on_osses 0
  fi
  echo "$mode $q $noisy_mibps $load"
}

start_cluster
echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); rules: $QOS_RULES"
echo "# mode quiet_iops quiet_MiB/s quiet_p99_us noisy_MiB/s load1"
for ((i = 1; i <= ROUNDS; i++)); do
  for mode in alone noqos qos; do run "$mode" | tee -a "$WORK/runs"; done
done
python3 - "$WORK/runs" <<'EOF'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    f = line.split()
    runs.setdefault(f[0], []).append([float(x) for x in f[1:]])
med = {m: [statistics.median(c) for c in zip(*v)] for m, v in runs.items()}
for m in ("alone", "noqos", "qos"):
    iops, mibps, p99, noisy, load = med[m]
    share = iops / med["alone"][0] * 100
    ratio = p99 / med["alone"][2]
    print("median %-5s quiet %6.0f IOPS %6.1f MiB/s p99 %7.0f us (%3.0f%% of alone, p99 %.2fx)"
          "  noisy %4.0f MiB/s  load %.2f" % (m, iops, mibps, p99, share, ratio, noisy, load))
EOF
