#!/usr/bin/env bash
# The real PyTorch DataLoader (bench/train_loader.py) over StripeFS, side by side with MooseFS
# and ext4 (issue 18; docs/benchmarks.md, "Training loader"): N files of 4-256 KiB written by
# `sfs-bench train --prepare`, 4 worker processes, batch 32, 3 epochs, the host's page caches
# dropped before every epoch. Cases per round:
#   binding        stripefs.torch.FileDataset, no cache
#   binding-hint   FileDataset, a RAM cache per worker process (512M) + EpochSampler hint
#   mount          stripefs.torch.MountDataset through an sfs-mount without a cache
#   mount-lru      through an sfs-mount with -o cache_ram=1G, stock RandomSampler
#   mount-hint     the same mount options + EpochSampler (the whole order to the mount)
#   moosefs        MountDataset over a MooseFS 3.0 mount (2 chunkservers)
#   ext4           MountDataset over the VM's disk
# Each mount case gets a new mount. Needs root, python3-torch, MooseFS (bench-peers.sh).
#   OUT=D N=4000 ROUNDS=2 bench/sittings/2026-12-07f-dataloader.sh
set -uo pipefail
R=$(cd "$(dirname "$0")/../.." && pwd); B=${BUILD_DIR:-$R/build}; OUT=${OUT:-/tmp/sfs-sitting}
N=${N:-4000}; ROUNDS=${ROUNDS:-2}; mkdir -p "$OUT"
BENCH=$B/tools/sfs-bench; MOUNT=$B/client/fuse/sfs-mount
DIR=/tmp/sfs-dl; EXT=/var/tmp/sfs-dl-ext4
log() { echo "[$(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)] $*"; }
cd "$R"
scripts/cluster.sh down --dir $DIR >/dev/null 2>&1; rm -rf $DIR
M=$(scripts/cluster.sh up --oss 2 --dir $DIR 2>/dev/null | tail -1)
trap 'fusermount3 -u $DIR/mnt 2>/dev/null; scripts/cluster.sh down --dir $DIR >/dev/null 2>&1' EXIT
$BENCH train --mds "$M" -o /t -n "$N" --prepare --epochs 1 >/dev/null 2>&1 || { echo prepare; exit 1; }
rm -rf $EXT; mkdir -p $EXT/t; $BENCH train -o $EXT/t -n "$N" --prepare --epochs 1 >/dev/null 2>&1
MFS=""
if [ "${MOOSEFS:-1}" = 1 ]; then
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
export PYTHONPATH=$B/client/python
TL=(/usr/bin/python3 bench/train_loader.py)
for round in $(seq "$ROUNDS"); do
  for mode in binding binding-hint mount mount-lru mount-hint moosefs ext4; do
    args=()
    case $mode in
      binding) args=("$M" /t) ;;
      binding-hint) args=("$M" /t --cache-ram 512M --hint) ;;
      mount) mount_sfs; args=(- /t --mount $DIR/mnt) ;;
      mount-lru) mount_sfs -o cache_ram=1G; args=(- /t --mount $DIR/mnt) ;;
      mount-hint) mount_sfs -o cache_ram=1G; args=(- /t --mount $DIR/mnt --hint) ;;
      moosefs) [ -n "$MFS" ] || continue; args=(- /t --mount $MFS) ;;
      ext4) args=(- /t --mount $EXT) ;;
    esac
    log "round $round $mode"
    "${TL[@]}" "${args[@]}" -n "$N" --workers 4 --drop-caches 2>/dev/null |
      sed "s/^/$mode r$round: /" | tee -a "$OUT/dataloader.txt"
  done
done
fusermount3 -u $DIR/mnt 2>/dev/null
