#!/usr/bin/env bash
# The cache's read-ahead with the real fio (issue 18; docs/benchmarks.md, "Training loader"):
# NS shards of 128 MiB striped -c -1 -S 1M over 2 OSSes, read sequentially with fio through a
# new sfs-mount per case (no cache; -o cache_ram=2G,cache_read_ahead=0; -o cache_ram=2G),
# beside MooseFS 3.0 (2 chunkservers) and the VM's ext4, caches dropped before each pass.
# JOBS fio jobs, each reading NS/JOBS shards one after another with BS reads.
#   OUT=D NS=8 JOBS=1 BS=1m ROUNDS=3 bench/sittings/2026-12-07i-fio-readahead.sh
set -uo pipefail
R=$(cd "$(dirname "$0")/../.." && pwd); B=${BUILD_DIR:-$R/build}; OUT=${OUT:-/tmp/sfs-sitting}
NS=${NS:-8}; JOBS=${JOBS:-1}; BS=${BS:-1m}; ROUNDS=${ROUNDS:-3}; mkdir -p "$OUT"
DIR=/tmp/sfs-fra; EXT=/var/tmp/sfs-fra-ext4; MNT=$DIR/m; NF=$((NS / JOBS))
cd "$R"
fio_on() {  # DIR rw [args]: JOBS jobs of NF files of 128 MiB (the same names everywhere)
  local d=$1 rw=$2; shift 2
  fio --name=shard --directory=$d --nrfiles=$NF --filesize=128m --numjobs=$JOBS --rw=$rw \
      --bs=$BS --file_service_type=sequential --group_reporting "$@"
}
scripts/cluster.sh down --dir $DIR >/dev/null 2>&1; rm -rf $DIR
M=$(scripts/cluster.sh up --oss 2 --dir $DIR --mount $DIR/mnt 2>/dev/null | tail -1)
trap 'fusermount3 -u $MNT 2>/dev/null; fusermount3 -u $DIR/mnt 2>/dev/null; scripts/cluster.sh down --dir $DIR >/dev/null 2>&1' EXIT
mkdir -p $DIR/mnt/sh; $B/tools/sfs setstripe -c -1 -S 1M $DIR/mnt/sh
fio_on $DIR/mnt/sh write --end_fsync=1 >/dev/null 2>&1
rm -rf $EXT; mkdir -p $EXT; fio_on $EXT write --end_fsync=1 >/dev/null 2>&1
MFS=""
if [ "${MOOSEFS:-1}" = 1 ]; then
  scripts/bench-peers.sh --peers moosefs --keep --quick --servers 2 >"$OUT/mfs-setup.log" 2>&1
  if mountpoint -q /tmp/sfs-peers/mnt/moosefs; then
    MFS=/tmp/sfs-peers/mnt/moosefs/sh; mkdir -p $MFS; fio_on $MFS write --end_fsync=1 >/dev/null 2>&1
  fi
fi
mount_sfs() { fusermount3 -u $MNT 2>/dev/null; mkdir -p $MNT; $B/client/fuse/sfs-mount "$M" $MNT "$@" 2>>"$OUT/mount.log"; }
for round in $(seq "$ROUNDS"); do
  for mode in mount mount-cache-nora mount-cache moosefs ext4; do
    case $mode in
      mount) mount_sfs; d=$MNT/sh ;;
      mount-cache-nora) mount_sfs -o cache_ram=2G,cache_read_ahead=0; d=$MNT/sh ;;
      mount-cache) mount_sfs -o cache_ram=2G; d=$MNT/sh ;;
      moosefs) [ -n "$MFS" ] || continue; d=$MFS ;;
      ext4) d=$EXT ;;
    esac
    sync; echo 3 >/proc/sys/vm/drop_caches
    bw=$(fio_on $d read --output-format=json 2>/dev/null |
         python3 -c 'import json,sys; print(round(json.load(sys.stdin)["jobs"][0]["read"]["bw"]/1024))')
    echo "{\"mode\": \"$mode\", \"round\": $round, \"jobs\": $JOBS, \"bs\": \"$BS\", \"mib_s\": $bw, \"load\": \"$(cut -d' ' -f1 /proc/loadavg)\"}" |
      tee -a "$OUT/fio-readahead.jsonl"
  done
done
if [ -n "$MFS" ]; then
  umount -l /tmp/sfs-peers/mnt/moosefs; pkill -9 mfsmaster; pkill -9 mfschunkserver; pkill -9 mfsmount
  ip netns del sfs-peers 2>/dev/null
fi
