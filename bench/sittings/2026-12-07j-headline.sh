#!/usr/bin/env bash
# The training-loader headline at the issue's size (issue 18: "N=100,000 for the headline"):
# N files of 4-256 KiB (sfs-bench train --prepare; mean ~110 KiB), 4 loader workers, 3 epochs,
# a new seeded permutation each, the host's page caches dropped before every epoch, beside
# MooseFS 3.0 (2 chunkservers, goal 1) and the VM's ext4 in one sitting. Two parts:
#   train   sfs-bench train through libsfs: no cache, LRU and the order hint with a RAM cache
#           >= the dataset (FULL) and half of it (HALF); MooseFS's mount; ext4 (D/train.jsonl)
#   loader  the real torch DataLoader (bench/train_loader.py): through an sfs-mount without
#           a cache, with -o cache_ram=FULL and the EpochSampler's hint, MooseFS, ext4
#           (D/dataloader.txt)
# One round each (an epoch of 100,000 files takes 30-100 s here). Needs root, python3-torch,
# MooseFS (scripts/bench-peers.sh), ~40 GB free (three copies of the dataset).
#   OUT=D N=100000 bench/sittings/2026-12-07j-headline.sh [train] [loader]
# REUSE=1: the cluster, ext4 and MooseFS data of an earlier run are read again (no prepare);
# TRAIN_MODES / LOADER_MODES: the cases to run (default all).
set -uo pipefail
R=$(cd "$(dirname "$0")/../.." && pwd); B=${BUILD_DIR:-$R/build}; OUT=${OUT:-/tmp/sfs-sitting}
N=${N:-100000}; mkdir -p "$OUT"
BENCH=$B/tools/sfs-bench; MOUNT=$B/client/fuse/sfs-mount
DIR=/tmp/sfs-hl; EXT=/var/tmp/sfs-hl-ext4
# The dataset's size in MiB (105 KiB a file on average, from --prepare's sizes) and the caches.
MIB=$(( N * 105 / 1024 )); FULL=${FULL:-$(( MIB * 12 / 10 ))M}; HALF=$(( MIB / 2 ))M
log() { echo "[$(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)] $*" | tee -a "$OUT/sitting.log"; }
cd "$R"
scripts/cluster.sh down --dir $DIR >/dev/null 2>&1; [ "${REUSE:-0}" = 1 ] || rm -rf $DIR
M=$(scripts/cluster.sh up --oss 2 --dir $DIR 2>/dev/null | tail -1)
trap 'fusermount3 -u $DIR/mnt 2>/dev/null; scripts/cluster.sh down --dir $DIR >/dev/null 2>&1' EXIT
MFS=""
if [ "${REUSE:-0}" = 1 ]; then
  mountpoint -q /tmp/sfs-peers/mnt/moosefs && MFS=/tmp/sfs-peers/mnt/moosefs
else
log "prepare N=$N (FULL=$FULL HALF=$HALF) on StripeFS"
$BENCH train --mds "$M" -o /t -n "$N" --prepare --epochs 1 >/dev/null 2>&1 || { echo prepare; exit 1; }
log "prepare on ext4"
rm -rf $EXT; mkdir -p $EXT/t; $BENCH train -o $EXT/t -n "$N" --prepare --epochs 1 >/dev/null 2>&1
fi
if [ "${MOOSEFS:-1}" = 1 ] && [ "${REUSE:-0}" != 1 ]; then
  log "prepare on MooseFS"
  scripts/bench-peers.sh --peers moosefs --keep --quick --servers 2 >"$OUT/mfs-setup.log" 2>&1
  if mountpoint -q /tmp/sfs-peers/mnt/moosefs; then
    MFS=/tmp/sfs-peers/mnt/moosefs; mkdir -p $MFS/t
    $BENCH train -o $MFS/t -n "$N" --prepare --epochs 1 >/dev/null 2>&1
  fi
fi
mount_sfs() {  # [-o opts]: a new sfs-mount at $DIR/mnt
  fusermount3 -u $DIR/mnt 2>/dev/null; mkdir -p $DIR/mnt
  "$MOUNT" "$M" $DIR/mnt "$@" 2>>"$OUT/mount.log" || { echo "sfs-mount failed"; exit 1; }
}
for part in "${@:-train loader}"; do for p in $part; do
case $p in
train)
  for mode in ${TRAIN_MODES:-nocache lru-full hint-full lru-half hint-half moosefs ext4}; do
    case $mode in
      nocache) args=(--mds $M -o /t) ;;
      lru-full) args=(--mds $M -o /t --cache-ram $FULL) ;;
      hint-full) args=(--mds $M -o /t --cache-ram $FULL --hint) ;;
      lru-half) args=(--mds $M -o /t --cache-ram $HALF) ;;
      hint-half) args=(--mds $M -o /t --cache-ram $HALF --hint) ;;
      moosefs) [ -n "$MFS" ] || continue; args=(-o $MFS/t) ;;
      ext4) args=(-o $EXT/t) ;;
    esac
    log "train $mode"
    j=$($BENCH train "${args[@]}" -n $N --workers 4 --drop-caches --json 2>/dev/null | tail -1)
    echo "{\"mode\": \"$mode\", \"load\": \"$(cut -d' ' -f1 /proc/loadavg)\", \"r\": $j}" | tee -a $OUT/train.jsonl
  done ;;
loader)
  export PYTHONPATH=$B/client/python
  for mode in ${LOADER_MODES:-mount mount-hint moosefs ext4}; do
    case $mode in
      mount) mount_sfs; args=(- /t --mount $DIR/mnt) ;;
      mount-hint) mount_sfs -o cache_ram=$FULL; args=(- /t --mount $DIR/mnt --hint) ;;
      moosefs) [ -n "$MFS" ] || continue; args=(- /t --mount $MFS) ;;
      ext4) args=(- /t --mount $EXT) ;;
    esac
    log "loader $mode"
    /usr/bin/python3 bench/train_loader.py "${args[@]}" -n "$N" --workers 4 --drop-caches 2>/dev/null |
      sed "s/^/$mode: /" | tee -a "$OUT/dataloader.txt"
  done
  fusermount3 -u $DIR/mnt 2>/dev/null ;;
esac
done; done
log done
