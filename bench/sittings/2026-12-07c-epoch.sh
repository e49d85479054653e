#!/usr/bin/env bash
# The cold first epoch through the mount, with and without the order hint (issue 18,
# docs/benchmarks.md "Kept opens"): N files of 4-256 KiB (sfs-bench train --prepare) on a
# 2-OSS cluster, read whole by K Python worker processes in a seeded shuffled order
# (worker w takes entries w, w+K, ... as DistributedSampler does), every cache on the host
# dropped first (the mount's own: `sfs cache drop`), on a mount made after the files were
# written and read once (so it holds no open or lease from them). Modes, per build (NEW, and OLD: the
# same without the open cache): nocache (a plain mount), hint (-o cache_ram=1G, and
# `sfs prefetch --list ORDER` handed to the mount just before the readers start). With the
# hint the prefetcher opens each file first; NEW's reader takes that open over (kept under
# its lease), OLD's reader opens it at the MDS again. Needs root.
set -uo pipefail
R=$(cd "$(dirname "$0")/../.." && pwd); OUT=${OUT:-/tmp/sfs-sitting}; mkdir -p $OUT
NEW=${NEW:-$R/build}; OLD=${OLD:?OLD build dir}; ROUNDS=${ROUNDS:-3}; N=${N:-4000}; K=${K:-4}
cd $R
READER=$R/bench/epoch_reader.py
up() {  # up BUILD: a fresh 2-OSS cluster at /tmp/sep
  scripts/cluster.sh down --dir /tmp/sep >/dev/null 2>&1; rm -rf /tmp/sep
  M=$(scripts/cluster.sh up --oss 2 --dir /tmp/sep --build $1 2>/dev/null | tail -1)
  mkdir -p /tmp/sep/mnt
}
mnt() {  # mnt BUILD MOUNT_OPTS: a new mount at /tmp/sep/mnt (nothing kept from an earlier one)
  umount /tmp/sep/mnt 2>/dev/null
  $1/client/fuse/sfs-mount $M /tmp/sep/mnt -o allow_other${2:+,$2} >>/tmp/sep/mount.log 2>&1
  until mountpoint -q /tmp/sep/mnt; do sleep 0.1; done
}
down() { umount /tmp/sep/mnt 2>/dev/null; scripts/cluster.sh down --dir /tmp/sep >/dev/null 2>&1; }
for r in $(seq $ROUNDS); do
  for v in new old; do
    B=$NEW; [ $v = old ] && B=$OLD
    for mode in nocache hint; do
      opts=; [ $mode = hint ] && opts=cache_ram=1G
      up $B; mnt $B
      $B/tools/sfs-bench train -o /tmp/sep/mnt/t -n $N --prepare --epochs 1 >/dev/null 2>&1
      find /tmp/sep/mnt/t -type f | sort > $OUT/epoch-files.txt
      # Cold: a new mount (the opens the prepare's epoch kept end with the old one).
      mnt $B "$opts"
      python3 -c "import random,sys; l=open(sys.argv[1]).read().split(); random.Random(int(sys.argv[2])).shuffle(l); print('\n'.join(l))" \
        $OUT/epoch-files.txt $r > $OUT/epoch-order.txt
      [ $mode = hint ] && $B/tools/sfs cache drop /tmp/sep/mnt >/dev/null
      sync; echo 3 > /proc/sys/vm/drop_caches
      [ $mode = hint ] && $B/tools/sfs prefetch --list $OUT/epoch-order.txt >/dev/null
      res=$(python3 $READER $OUT/epoch-order.txt $K)
      echo "$v $mode r$r files=$(wc -l < $OUT/epoch-files.txt) load=$(cut -d' ' -f1 /proc/loadavg) seconds,bytes=$res" | tee -a $OUT/epoch.log
      down
    done
  done
done
