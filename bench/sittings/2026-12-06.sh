#!/usr/bin/env bash
# The sitting of 2026-12-06 (docs/benchmarks.md): sections by argument,
#   ec   EC 4+2 against plain -c 6 through the mount with the real IOR (issue 16's
#        write target), rounds alternating; BUILD_DIR= another build (an older main) to compare
#   mfs  the same IOR beside MooseFS 3.0 (Debian) with 6 chunkservers, goal 1 and goal 2,
#        in one sitting (scripts/bench-peers.sh sets MooseFS up in its network namespace)
#   arena  sfs-bench train's cold epoch and half-cache epochs with the client cache, OLD= (a build
#        before the block arena) against this build alternating, with sfs-bench's CPU time
# IOR= the real IOR 4.x binary (built outside the project); OUT= where results go.
# Needs root (drop_caches) and mpirun.
set -uo pipefail
R=$(cd "$(dirname "$0")/../.." && pwd); B=${BUILD_DIR:-$R/build}; OUT=${OUT:-/tmp/sfs-sitting}; mkdir -p $OUT
SFS=$B/tools/sfs
log() { echo "[$(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)] $*"; }
IOR=${IOR:-/work/scratch/ior-inst/bin/ior}
ROUNDS=${ROUNDS:-3}
ior() { mpirun --allow-run-as-root --oversubscribe -np 4 $IOR -a POSIX "$@" 2>&1; }
cd $R
for sec in "$@"; do
case $sec in
arena)
  log arena; OLD=${OLD:?OLD= a build dir before the arena}
  scripts/cluster.sh down --dir /tmp/sar >/dev/null 2>&1; rm -rf /tmp/sar
  M=$(scripts/cluster.sh up --oss 2 --dir /tmp/sar 2>/dev/null | tail -1)
  $B/tools/sfs-bench train --mds $M -o /t -n 4000 --prepare --epochs 1 >/dev/null 2>&1
  for round in $(seq $ROUNDS); do
    for bd in $OLD $B; do
      for mode in none hint1g hint205; do
        case $mode in none) a=(--epochs 1);; hint1g) a=(--epochs 1 --cache-ram 1G --hint);;
          hint205) a=(--epochs 3 --cache-ram 205M --hint);; esac
        j=$( { /usr/bin/time -f "%U %S" nice -n -10 $bd/tools/sfs-bench train --mds $M -o /t -n 4000 \
              --workers 4 --drop-caches "${a[@]}" --json 2>$OUT/arena.err | tail -1; } )
        e=$(echo "$j" | python3 -c 'import json,sys; print(" ".join("%.2f" % e["seconds"] for e in json.load(sys.stdin)["epochs"]))')
        echo "arena round $round $bd $mode epochs $e cpu(user sys) $(tail -1 $OUT/arena.err) load $(cut -d' ' -f1 /proc/loadavg)" | tee -a $OUT/arena.log
      done
    done
  done
  scripts/cluster.sh down --dir /tmp/sar >/dev/null 2>&1 ;;
ec)
  log ec; scripts/cluster.sh down --dir /tmp/sec >/dev/null 2>&1; rm -rf /tmp/sec
  M=$(SFS_OSS_FLAGS="--metrics-listen 127.0.0.1:0" scripts/cluster.sh up --oss 6 --dir /tmp/sec \
      --mount /tmp/sec/mnt 2>/dev/null | tail -1)
  MNT=/tmp/sec/mnt; mkdir -p $MNT/plain $MNT/ec
  $SFS setstripe -c 6 -S 1M $MNT/plain; $SFS setstripe --ec 4+2 -S 1M $MNT/ec
  for round in $(seq $ROUNDS); do
    for t in plain ec; do
      rm -f $MNT/$t/f
      w=$(ior -t 4m -b 64m -e -w -k -o $MNT/$t/f | awk '/^write / {print $2; exit}')
      sync; echo 3 > /proc/sys/vm/drop_caches
      r=$(ior -t 4m -b 64m -r -k -o $MNT/$t/f | awk '/^read / {print $2; exit}')
      echo "ec-sitting $t round $round write $w read $r load $(cut -d' ' -f1 /proc/loadavg)" | tee -a $OUT/ec.log
    done
  done
  # The OSSes' chunk reads during one more EC write (0 when every row goes whole).
  reads() { for p in $(grep -ho 'METRICS [0-9.:]*' /tmp/sec/logs/oss*.out 2>/dev/null | cut -d' ' -f2); do
      curl -s http://$p/metrics | awk '/^sfs_oss_read_bytes_total/ {print $2}'; done | paste -sd+ | bc; }
  rm -f $MNT/ec/f; b=$(reads); ior -t 4m -b 64m -e -w -k -o $MNT/ec/f >/dev/null; a=$(reads)
  echo "ec-sitting ec write: OSS bytes read $((${a:-0} - ${b:-0}))" | tee -a $OUT/ec.log
  # degraded: one OSS of the EC file killed, read again (cold)
  scripts/cluster.sh kill-oss 2 --dir /tmp/sec >/dev/null 2>&1
  for i in 1 2; do
    sync; echo 3 > /proc/sys/vm/drop_caches
    r=$(ior -t 4m -b 64m -r -k -o $MNT/ec/f | awk '/^read / {print $2; exit}')
    echo "ec-sitting ec degraded read $r load $(cut -d' ' -f1 /proc/loadavg)" | tee -a $OUT/ec.log
  done
  scripts/cluster.sh down --dir /tmp/sec >/dev/null 2>&1 ;;
mfs)
  log mfs; scripts/bench-peers.sh --peers moosefs --keep --quick --servers 6 > $OUT/mfs6-setup.log 2>&1
  MF=/tmp/sfs-peers/mnt/moosefs; mountpoint -q $MF || { echo "moosefs not mounted"; continue; }
  nsenter --net=/run/netns/sfs-peers mkdir -p $MF/g1 $MF/g2
  nsenter --net=/run/netns/sfs-peers mfssetgoal -r 1 $MF/g1 >/dev/null
  nsenter --net=/run/netns/sfs-peers mfssetgoal -r 2 $MF/g2 >/dev/null
  scripts/cluster.sh down --dir /tmp/sec >/dev/null 2>&1; rm -rf /tmp/sec
  scripts/cluster.sh up --oss 6 --dir /tmp/sec --mount /tmp/sec/mnt >/dev/null 2>&1
  MNT=/tmp/sec/mnt; mkdir -p $MNT/plain $MNT/ec
  $SFS setstripe -c 6 -S 1M $MNT/plain; $SFS setstripe --ec 4+2 -S 1M $MNT/ec
  for round in $(seq $ROUNDS); do
    for d in $MNT/plain $MNT/ec $MF/g1 $MF/g2; do
      rm -f $d/f
      w=$(ior -t 4m -b 64m -e -w -k -o $d/f | awk '/^write / {print $2; exit}')
      sync; echo 3 > /proc/sys/vm/drop_caches
      r=$(ior -t 4m -b 64m -r -k -o $d/f | awk '/^read / {print $2; exit}')
      echo "mfs-sitting $d round $round write $w read $r load $(cut -d' ' -f1 /proc/loadavg)" | tee -a $OUT/mfs.log
    done
  done
  scripts/cluster.sh down --dir /tmp/sec >/dev/null 2>&1 ;;
*) echo "unknown section $sec" >&2; exit 2 ;;
esac
done
