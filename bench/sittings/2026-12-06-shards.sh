#!/usr/bin/env bash
# The shards sitting of 2026-12-06 (docs/benchmarks.md, Training loader, "Shards"):
# issue 18's shard target. Two 4-OSS clusters side by side, one per build (OLD= the
# build to compare against, default /work/main/build; BUILD_DIR= the new one), each
# mounted with its own sfs-mount and holding the same 64 shards of 128 MiB in a
# directory striped -c -1 -S 4M, beside the same files on the VM's ext4. Then ROUNDS
# rounds (default 3) of old, new, ext4, each pass read whole by 4 fio jobs of NF
# shards (default 16) with 4 MiB reads, caches dropped before each pass. Per pass:
# MiB/s, and the CPU seconds per GiB of the cluster's sfs-mount and its 4 sfs-oss
# (/proc/PID/stat), and the load average. Needs root (drop_caches) and fio.
set -uo pipefail
R=$(cd "$(dirname "$0")/../.." && pwd); NEW=${BUILD_DIR:-$R/build}; OLD=${OLD:-/work/main/build}
OUT=${OUT:-/tmp/sfs-sitting}; NF=${NF:-16}; ROUNDS=${ROUNDS:-3}; mkdir -p $OUT
W=${WORK:-/tmp/sfs-shards}; EXT4=${EXT4:-/var/tmp/sfs-shards-ext4}
log() { echo "[$(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)] $*"; }
fio_shards() {  # fio_shards DIR rw [extra fio args]
  local d=$1 rw=$2; shift 2
  fio --name=prep --directory=$d --nrfiles=$NF --filesize=128m --numjobs=4 --rw=$rw --bs=4m "$@"
}
ticks() {  # ticks PIDFILE... -> utime + stime of those processes, in clock ticks
  local s=0 f p t
  for f in "$@"; do p=$(cat $f); t=($(cut -d' ' -f14,15 /proc/$p/stat)); s=$((s + t[0] + t[1])); done
  echo $s
}
cd $R
for which in old new; do
  b=$OLD; [ $which = new ] && b=$NEW
  scripts/cluster.sh down --dir $W/$which >/dev/null 2>&1; rm -rf $W/$which
  BUILD_DIR=$b scripts/cluster.sh up --oss 4 --dir $W/$which --mount $W/$which/mnt >/dev/null 2>&1
  pgrep -f "sfs-mount .* $W/$which/mnt" >$W/$which/pids/mount.pid
  mkdir -p $W/$which/mnt/shards; $b/tools/sfs setstripe -c -1 -S 4M $W/$which/mnt/shards
  fio_shards $W/$which/mnt/shards write --end_fsync=1 >/dev/null 2>&1
done
rm -rf $EXT4; mkdir -p $EXT4; fio_shards $EXT4 write --end_fsync=1 >/dev/null 2>&1
log "shards: $((NF * 4)) x 128 MiB, old $OLD ($(git -C $OLD/.. rev-parse --short HEAD 2>/dev/null)), new $NEW ($(git rev-parse --short HEAD))"
for round in $(seq $ROUNDS); do
  for which in old new ext4; do
    d=$EXT4; [ $which != ext4 ] && d=$W/$which/mnt/shards
    sync; echo 3 >/proc/sys/vm/drop_caches
    m0=0; o0=0; [ $which != ext4 ] && { m0=$(ticks $W/$which/pids/mount.pid); o0=$(ticks $W/$which/pids/oss*.pid); }
    j=$(fio_shards $d read --file_service_type=sequential --group_reporting --output-format=json 2>/dev/null)
    m1=0; o1=0; [ $which != ext4 ] && { m1=$(ticks $W/$which/pids/mount.pid); o1=$(ticks $W/$which/pids/oss*.pid); }
    echo "$j" | python3 -c '
import json, sys
r = json.load(sys.stdin)["jobs"][0]["read"]; gib = r["io_bytes"] / 2**30
print("shards %s round %s %.0f MiB/s mount %.2f oss %.2f cpu-s/GiB load %s" % (sys.argv[1], sys.argv[2],
      r["bw"] / 1024, int(sys.argv[3]) / 100 / gib, int(sys.argv[4]) / 100 / gib, sys.argv[5]))' \
      $which $round $((m1 - m0)) $((o1 - o0)) "$(cut -d' ' -f1 /proc/loadavg)" | tee -a $OUT/shards-ab.log
  done
done
for which in old new; do scripts/cluster.sh down --dir $W/$which >/dev/null 2>&1; done
rm -rf $W $EXT4
