#!/usr/bin/env bash
# Two epochs through an sfs-mount with the order hint, and the MDS's requests in each
# (docs/benchmarks.md, "The headline at the issue's size"): N files of 4-256 KiB
# (sfs-bench train --prepare) on a fresh 2-OSS cluster whose sfs-mds serves /metrics; a new
# mount (-o cache_ram=1G for MODES=hint); K Python reader processes (bench/epoch_reader.py)
# read a seeded shuffled order, `sfs prefetch --list ORDER` handed over inside the timed
# span; then a second epoch in a new order on the same mount. Every cache on the host is
# dropped before each epoch. B: the build whose sfs-mount, sfs and sfs-bench are used (the
# daemons are always this tree's build/). Prints per epoch: seconds, bytes | MDS request
# deltas. Needs root.
#   B=build MODES="nocache hint" ROUNDS=2 N=4000 OUT=D bench/sittings/2026-12-07k-warm-names.sh
set -uo pipefail
R=$(cd "$(dirname "$0")/../.." && pwd); B=${B:-$R/build}; N=${N:-4000}; K=${K:-4}; OUT=${OUT:-/tmp/sfs-sitting}; mkdir -p $OUT
cd $R
up() { scripts/cluster.sh down --dir /tmp/sep >/dev/null 2>&1; rm -rf /tmp/sep
  M=$(SFS_MDS_FLAGS="--metrics-listen 127.0.0.1:0" scripts/cluster.sh up --oss 2 --dir /tmp/sep --build $R/build 2>/dev/null | tail -1)
  MET=$(grep -ho 'METRICS [0-9.:]*' /tmp/sep/logs/mds* /tmp/sep/mds* 2>/dev/null | head -1 | cut -d' ' -f2); mkdir -p /tmp/sep/mnt; }
mnt() { umount /tmp/sep/mnt 2>/dev/null; $B/client/fuse/sfs-mount $M /tmp/sep/mnt -o allow_other${1:+,$1} >>/tmp/sep/mount.log 2>&1; until mountpoint -q /tmp/sep/mnt; do sleep 0.1; done; }
ops() { curl -s http://$MET/metrics | grep '^sfs_mds_requests_total' | sed 's/sfs_mds_requests_total{op="\(.*\)"} /\1=/' | tr '\n' ' '; }
for r in $(seq ${ROUNDS:-2}); do for mode in ${MODES:-nocache hint}; do
  opts=; [ $mode = hint ] && opts=cache_ram=1G
  up; mnt
  $B/tools/sfs-bench train -o /tmp/sep/mnt/t -n $N --prepare --epochs 1 >/dev/null 2>&1
  find /tmp/sep/mnt/t -type f | sort > $OUT/files.txt
  mnt "$opts"
  python3 -c "import random,sys; l=open(sys.argv[1]).read().split(); random.Random(int(sys.argv[2])).shuffle(l); print('\n'.join(l))" $OUT/files.txt $r > $OUT/order.txt
  sync; echo 3 > /proc/sys/vm/drop_caches
  before=$(ops)
  if [ $mode = hint ]; then res=$(python3 bench/epoch_reader.py $OUT/order.txt $K $B/tools/sfs prefetch --list $OUT/order.txt)
  else res=$(python3 bench/epoch_reader.py $OUT/order.txt $K); fi
  after1=$(ops)
  python3 -c "import random,sys; l=open(sys.argv[1]).read().split(); random.Random(int(sys.argv[2])).shuffle(l); print('\n'.join(l))" $OUT/files.txt $((r+100)) > $OUT/order2.txt
  sync; echo 3 > /proc/sys/vm/drop_caches
  if [ $mode = hint ]; then res2=$(python3 bench/epoch_reader.py $OUT/order2.txt $K $B/tools/sfs prefetch --list $OUT/order2.txt)
  else res2=$(python3 bench/epoch_reader.py $OUT/order2.txt $K); fi
  d() { python3 -c "
import sys
a=dict(x.split('=') for x in sys.argv[1].split()); b=dict(x.split('=') for x in sys.argv[2].split())
print(' '.join(f'{k}={float(b[k])-float(a[k]):g}' for k in ('lookup','open','open_path','getattr','readdir') if k in a))" "$1" "$2"; }
  echo "$(basename $B) $mode r$r e1 $res | $(d "$before" "$after1")"; echo "$(basename $B) $mode r$r e2 $res2 | $(d "$after1" "$(ops)")"
  umount /tmp/sep/mnt; scripts/cluster.sh down --dir /tmp/sep >/dev/null 2>&1
done; done
