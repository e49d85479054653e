#!/usr/bin/env bash
# The training epoch across a network with latency (issue 18: "the hint makes cold epoch 1
# >= 30 % faster than no cache (more parallel fetch)"; docs/benchmarks.md, "Training loader").
# On loopback the cold epoch is CPU-bound and the prefetch has no latency to hide. Here
# sfs-mds and 2 sfs-oss run in one network namespace and sfs-bench train in another, joined
# by a veth pair; as in tests/netfault (this kernel has no sch_netem), iptables hands the
# client's TCP packets, each direction to its own NFQUEUE, to sfs-nfq-delay, which releases
# each after D ms: a round trip of 2*D ms more. DELAYS lists the D to run (0: no delayer).
# N files of 4-256 KiB, 4 workers, 3 epochs, caches dropped before each; modes: no cache,
# LRU with the cache >= the dataset, the hint with cache >= and = half the dataset.
# Needs root, iproute2, iptables, and the build's tests/netfault/sfs-nfq-delay.
#   OUT=D N=2000 ROUNDS=2 DELAYS="0 1" bench/sittings/2026-12-07e-latency.sh
set -uo pipefail
R=$(cd "$(dirname "$0")/../.." && pwd); B=${BUILD_DIR:-$R/build}; OUT=${OUT:-/tmp/sfs-sitting}
N=${N:-2000}; ROUNDS=${ROUNDS:-2}; DELAYS=${DELAYS:-"0 1"}; mkdir -p "$OUT"
BENCH=$B/tools/sfs-bench; NFQ=$B/tests/netfault/sfs-nfq-delay
TAG=$$; SRV=sfs-lat-s$TAG CLI=sfs-lat-c$TAG
SRV_IP=10.232.$((TAG % 250)).1 CLI_IP=10.232.$((TAG % 250)).2
DIR=$(mktemp -d /tmp/sfs-latency.XXXXXX)
cleanup() {
  umount "$DIR/mnt" 2>/dev/null
  for ns in "$CLI" "$SRV"; do ip netns pids "$ns" 2>/dev/null | xargs -r kill 2>/dev/null; done
  wait 2>/dev/null
  ip netns del "$SRV" 2>/dev/null; ip netns del "$CLI" 2>/dev/null; rm -rf "$DIR"
}
trap cleanup EXIT
die() { echo "latency sitting: $*" >&2; exit 1; }
# The network namespace only: `ip netns exec` would also copy every mount of the moment into
# a mount namespace of its own, where a FUSE mount of then would outlive its unmount.
IN_SRV=(nsenter --net="/run/netns/$SRV") IN_CLI=(nsenter --net="/run/netns/$CLI")
ip netns add "$SRV" && ip netns add "$CLI" || die "ip netns add"
ip link add lt$TAG-s netns "$SRV" type veth peer name lt$TAG-c netns "$CLI" || die "veth"
for ns in "$SRV" "$CLI"; do nsenter --net="/run/netns/$ns" ip link set lo up; done
"${IN_SRV[@]}" ip addr add "$SRV_IP/24" dev lt$TAG-s; "${IN_SRV[@]}" ip link set lt$TAG-s up
"${IN_CLI[@]}" ip addr add "$CLI_IP/24" dev lt$TAG-c; "${IN_CLI[@]}" ip link set lt$TAG-c up
start() {  # name argv...: a daemon in the server namespace, up once it prints LISTENING
  local name=$1; shift
  "${IN_SRV[@]}" "$@" >"$DIR/$name.out" 2>"$DIR/$name.log" &
  for _ in $(seq 100); do grep -q LISTENING "$DIR/$name.out" && return 0; sleep 0.1; done
  die "$name did not start: $(tail -2 "$DIR/$name.log")"
}
mkdir -p "$DIR/mds" "$DIR/ost0" "$DIR/ost1"
start mds "$B/mds/sfs-mds" --data "$DIR/mds" --listen "$SRV_IP:0"
M=$(awk '/LISTENING/ {print $2}' "$DIR/mds.out")
start oss0 "$B/oss/sfs-oss" --mds "$M" --ost "$DIR/ost0" --listen "$SRV_IP:0"
start oss1 "$B/oss/sfs-oss" --mds "$M" --ost "$DIR/ost1" --listen "$SRV_IP:0"
cli() { "${IN_CLI[@]}" "$@"; }
cli "$BENCH" train --mds "$M" -o /t -n "$N" --prepare --epochs 1 >/dev/null 2>&1 || die "prepare"
NFQ_PIDS=()
delay_on() {  # D ms each way
  [ "$1" = 0 ] && return 0
  for q in 0 1; do
    rm -f "$DIR/nfq$q.out"
    "${IN_CLI[@]}" "$NFQ" --queue $q --delay-ms "$1" --seed $q >"$DIR/nfq$q.out" 2>"$DIR/nfq$q.log" &
    NFQ_PIDS+=($!)
    for _ in $(seq 100); do grep -q READY "$DIR/nfq$q.out" 2>/dev/null && break; sleep 0.05; done
    grep -q READY "$DIR/nfq$q.out" || die "sfs-nfq-delay: $(cat "$DIR/nfq$q.log")"
  done
  cli iptables -A OUTPUT -o lt$TAG-c -p tcp -j NFQUEUE --queue-num 0 --queue-bypass || die iptables
  cli iptables -A INPUT -i lt$TAG-c -p tcp -j NFQUEUE --queue-num 1 --queue-bypass || die iptables
}
delay_off() {
  cli iptables -F OUTPUT; cli iptables -F INPUT
  [ ${#NFQ_PIDS[@]} -gt 0 ] && kill "${NFQ_PIDS[@]}" 2>/dev/null && wait "${NFQ_PIDS[@]}" 2>/dev/null
  NFQ_PIDS=()
}
half=$(( N * 105 * 1024 / 2 / 1024 / 1024 ))M
# Through sfs-mount (MOUNT=1, the default): the mount runs in the client's namespace, the
# readers are K Python processes reading whole files in a seeded shuffled order (worker w
# takes entries w, w+K, ...), on a new mount each time (nothing kept from an earlier one),
# every cache dropped; mode hint: -o cache_ram=1G and `sfs prefetch --list ORDER` once the
# readers' clock runs (its hand-over is in the epoch's time). Two epochs per mount, the
# second in a new order (and hint).
READER=$R/bench/epoch_reader.py
MNT=$DIR/mnt; mkdir -p "$MNT"
mount_epochs() {  # delay round mode
  umount "$MNT" 2>/dev/null
  local opts=allow_other; [ "$3" = hint ] && opts+=,cache_ram=1G
  "${IN_CLI[@]}" "$B/client/fuse/sfs-mount" "$M" "$MNT" -o "$opts" >>"$DIR/mount.log" 2>&1 ||
    die "sfs-mount: $(tail -2 "$DIR/mount.log")"
  for _ in $(seq 100); do mountpoint -q "$MNT" && break; sleep 0.1; done
  find "$MNT/t" -type f | sort >"$DIR/files.txt"
  umount "$MNT"  # the listing's leases and opens end with that mount
  "${IN_CLI[@]}" "$B/client/fuse/sfs-mount" "$M" "$MNT" -o "$opts" >>"$DIR/mount.log" 2>&1
  for _ in $(seq 100); do mountpoint -q "$MNT" && break; sleep 0.1; done
  local e secs=()
  for e in 1 2; do
    python3 -c "import random,sys; l=open(sys.argv[1]).read().split(); random.Random(int(sys.argv[2])).shuffle(l); print('\n'.join(l))" \
      "$DIR/files.txt" "$2$e" >"$DIR/order.txt"
    [ "$e" = 1 ] && [ "$3" = hint ] && "$B/tools/sfs" cache drop "$MNT" >/dev/null
    sync; echo 3 >/proc/sys/vm/drop_caches
    local hint=(); [ "$3" = hint ] && hint=("$B/tools/sfs" prefetch --list "$DIR/order.txt")
    secs+=("$(python3 "$READER" "$DIR/order.txt" 4 "${hint[@]}" | cut -d' ' -f1)")
  done
  umount "$MNT"
  echo "{\"delay_ms\": $1, \"mount\": \"$3\", \"round\": $2, \"load\": \"$(cut -d' ' -f1 /proc/loadavg)\", \"epoch_seconds\": [${secs[0]}, ${secs[1]}]}" | tee -a "$OUT/latency.jsonl"
}
for d in $DELAYS; do
  delay_on "$d"
  if [ "${MOUNT:-1}" = 1 ]; then
    for round in $(seq "$ROUNDS"); do
      for mode in nocache hint; do mount_epochs "$d" "$round" "$mode"; done
    done
  fi
  for round in $(seq "$ROUNDS"); do
    for mode in nocache lru-full hint-full hint-half; do
      case $mode in
        nocache) args=() ;;
        lru-full) args=(--cache-ram 1G) ;;
        hint-full) args=(--cache-ram 1G --hint) ;;
        hint-half) args=(--cache-ram "$half" --hint) ;;
      esac
      j=$(cli "$BENCH" train --mds "$M" -o /t -n "$N" --workers 4 --drop-caches "${args[@]}" --json 2>/dev/null | tail -1)
      echo "{\"delay_ms\": $d, \"mode\": \"$mode\", \"round\": $round, \"load\": \"$(cut -d' ' -f1 /proc/loadavg)\", \"r\": $j}" | tee -a "$OUT/latency.jsonl"
    done
  done
  delay_off
done
