#!/usr/bin/env bash
# sfs-bench train --shards (issue 18: "64 tar-style shards of 128 MiB read shard-shuffled"):
# NS shards of SIZE in a directory striped -c -1 -S 1M over 2 OSSes, K threads, a new shard
# order each epoch, each shard read front to back in 1 MiB reads, caches dropped before each
# epoch; StripeFS through libsfs without the cache, with it (LRU) and with it and the hint;
# the same through sfs-bench's POSIX backend on MooseFS 3.0 (2 chunkservers) and the VM's ext4.
#   OUT=D NS=16 SIZE=64M EPOCHS=2 ROUNDS=2 bench/sittings/2026-12-07h-shards.sh
set -uo pipefail
R=$(cd "$(dirname "$0")/../.." && pwd); B=${BUILD_DIR:-$R/build}; OUT=${OUT:-/tmp/sfs-sitting}
NS=${NS:-16}; SIZE=${SIZE:-64M}; EPOCHS=${EPOCHS:-2}; ROUNDS=${ROUNDS:-2}; K=${K:-4}
mkdir -p "$OUT"; BENCH=$B/tools/sfs-bench; DIR=/tmp/sfs-shb; EXT=/var/tmp/sfs-shb-ext4
cd "$R"
scripts/cluster.sh down --dir $DIR >/dev/null 2>&1; rm -rf $DIR
M=$(scripts/cluster.sh up --oss 2 --dir $DIR --mount $DIR/mnt 2>/dev/null | tail -1)
trap 'fusermount3 -u $DIR/mnt 2>/dev/null; scripts/cluster.sh down --dir $DIR >/dev/null 2>&1' EXIT
mkdir -p $DIR/mnt/sh; $B/tools/sfs setstripe -c -1 -S 1M $DIR/mnt/sh
SH=(--shards "$NS" --shard-size "$SIZE" --workers "$K" --epochs "$EPOCHS")
$BENCH train --mds "$M" -o /sh "${SH[@]}" --prepare --epochs 1 >/dev/null 2>&1 || { echo prepare; exit 1; }
rm -rf $EXT; $BENCH train -o $EXT "${SH[@]}" --prepare --epochs 1 >/dev/null 2>&1
MFS=""
if [ "${MOOSEFS:-1}" = 1 ]; then
  scripts/bench-peers.sh --peers moosefs --keep --quick --servers 2 >"$OUT/mfs-setup.log" 2>&1
  if mountpoint -q /tmp/sfs-peers/mnt/moosefs; then
    MFS=/tmp/sfs-peers/mnt/moosefs/sh
    $BENCH train -o $MFS "${SH[@]}" --prepare --epochs 1 >/dev/null 2>&1
  fi
fi
for round in $(seq "$ROUNDS"); do
  for mode in nocache lru hint ext4 moosefs; do
    case $mode in
      nocache) args=(--mds "$M" -o /sh) ;;
      lru) args=(--mds "$M" -o /sh --cache-ram 4G) ;;
      hint) args=(--mds "$M" -o /sh --cache-ram 4G --hint) ;;
      ext4) args=(-o $EXT) ;;
      moosefs) [ -n "$MFS" ] || continue; args=(-o $MFS) ;;
    esac
    j=$($BENCH train "${args[@]}" "${SH[@]}" --drop-caches --json 2>/dev/null | tail -1)
    echo "{\"mode\": \"$mode\", \"round\": $round, \"load\": \"$(cut -d' ' -f1 /proc/loadavg)\", \"r\": $j}" |
      tee -a "$OUT/shards.jsonl"
  done
done
if [ -n "$MFS" ]; then
  umount -l /tmp/sfs-peers/mnt/moosefs; pkill -9 mfsmaster; pkill -9 mfschunkserver; pkill -9 mfsmount
  ip netns del sfs-peers 2>/dev/null
fi
