#!/usr/bin/env bash
# Shards read front to back by one reader (issue 18: "sequential read-ahead sized to stripes;
# large files read front to back"; docs/benchmarks.md, "Training loader", read-ahead):
# NS shards of 128 MiB in a directory striped -c -1 -S 1M over 2 OSSes, read by
# bench/seq_reader.py (one Python thread, CHUNK-byte reads) through the binding and through a
# new sfs-mount per case, each without the client cache, with it but no read-ahead
# (cache_read_ahead=0) and with it (the default), beside MooseFS 3.0 (2 chunkservers) and the
# VM's ext4 holding the same bytes. The host's page caches are dropped before every pass.
#   OUT=D NS=8 ROUNDS=3 CHUNK=1M bench/sittings/2026-12-07g-readahead.sh
set -uo pipefail
R=$(cd "$(dirname "$0")/../.." && pwd); B=${BUILD_DIR:-$R/build}; OUT=${OUT:-/tmp/sfs-sitting}
NS=${NS:-8}; ROUNDS=${ROUNDS:-3}; CHUNK=${CHUNK:-1M}; mkdir -p "$OUT"
DIR=/tmp/sfs-ra; EXT=/var/tmp/sfs-ra-ext4; MNT=$DIR/m
log() { echo "[$(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)] $*"; }
cd "$R"
scripts/cluster.sh down --dir $DIR >/dev/null 2>&1; rm -rf $DIR
M=$(scripts/cluster.sh up --oss 2 --dir $DIR --mount $DIR/mnt 2>/dev/null | tail -1)
trap 'fusermount3 -u $MNT 2>/dev/null; fusermount3 -u $DIR/mnt 2>/dev/null; scripts/cluster.sh down --dir $DIR >/dev/null 2>&1' EXIT
rm -rf $EXT; mkdir -p $EXT/shards $DIR/mnt/shards
$B/tools/sfs setstripe -c -1 -S 1M $DIR/mnt/shards
for i in $(seq 0 $((NS - 1))); do
  f=shards/shard-$(printf %04d $i); head -c 128M /dev/urandom >$EXT/$f; cp $EXT/$f $DIR/mnt/$f
done
MFS=""
if [ "${MOOSEFS:-1}" = 1 ]; then
  scripts/bench-peers.sh --peers moosefs --keep --quick --servers 2 >"$OUT/mfs-setup.log" 2>&1
  if mountpoint -q /tmp/sfs-peers/mnt/moosefs; then
    MFS=/tmp/sfs-peers/mnt/moosefs; mkdir -p $MFS/shards; cp $EXT/shards/* $MFS/shards/
  fi
fi
sync
mount_sfs() {  # [-o opts]
  fusermount3 -u $MNT 2>/dev/null; mkdir -p $MNT
  $B/client/fuse/sfs-mount "$M" $MNT "$@" 2>>"$OUT/mount.log" || { echo "sfs-mount failed"; exit 1; }
}
export PYTHONPATH=$B/client/python
for round in $(seq "$ROUNDS"); do
  for mode in binding binding-cache-nora binding-cache mount mount-cache-nora mount-cache moosefs ext4; do
    args=()
    case $mode in
      binding) args=("$M" /shards) ;;
      binding-cache-nora) args=("$M" /shards --cache-ram 2G --read-ahead 0) ;;
      binding-cache) args=("$M" /shards --cache-ram 2G) ;;
      mount) mount_sfs; args=(- /shards --mount $MNT) ;;
      mount-cache-nora) mount_sfs -o cache_ram=2G,cache_read_ahead=0; args=(- /shards --mount $MNT) ;;
      mount-cache) mount_sfs -o cache_ram=2G; args=(- /shards --mount $MNT) ;;
      moosefs) [ -n "$MFS" ] || continue; args=(- /shards --mount $MFS) ;;
      ext4) args=(- /shards --mount $EXT) ;;
    esac
    sync; echo 3 >/proc/sys/vm/drop_caches
    j=$(/usr/bin/python3 bench/seq_reader.py "${args[@]}" -n "$NS" --chunk "$CHUNK" 2>/dev/null)
    echo "{\"mode\": \"$mode\", \"round\": $round, \"load\": \"$(cut -d' ' -f1 /proc/loadavg)\", \"r\": $j}" |
      tee -a "$OUT/readahead.jsonl"
  done
done
