#!/usr/bin/env bash
# One cold epoch through an sfs-mount per run, the MDS's requests beside it
# (docs/benchmarks.md, "100,000 files through the mount, cold epoch"): N files of 4-256 KiB
# (sfs-bench train --prepare, once) on a 2-OSS cluster whose sfs-mds serves /metrics; per
# run a new mount of build B (-o cache_ram=CACHE and `sfs prefetch --list ORDER` inside the
# timed span for mode hint), every cache on the host dropped, K Python reader processes
# (bench/epoch_reader.py) over one seeded shuffled order. Modes: nocache, hint, hintshm (the
# hint with the cache's blocks in a tmpfs cache_dir and CRAM of RAM tier). RUNS: B:MODE pairs, in turn, ROUNDS
# times. Prints per run: seconds, bytes | MDS lookups, opens, open_path, listing pages. Root.
#   N=100000 RUNS="/old/build:hint build:hint build:nocache" ROUNDS=2 bench/sittings/2026-12-07l-cold-100k.sh
set -uo pipefail
R=$(cd "$(dirname "$0")/../.." && pwd); N=${N:-100000}; K=${K:-4}; OUT=${OUT:-/tmp/sfs-sitting}
CACHE=${CACHE:-$(( N * 126 / 1024 ))M}; D=/tmp/sep; mkdir -p $OUT; cd $R
scripts/cluster.sh down --dir $D >/dev/null 2>&1; rm -rf $D
M=$(SFS_MDS_FLAGS="--metrics-listen 127.0.0.1:0" scripts/cluster.sh up --oss 2 --dir $D --build $R/build 2>/dev/null | tail -1)
MET=$(grep -ho 'METRICS [0-9.:]*' $D/logs/mds* 2>/dev/null | head -1 | cut -d' ' -f2); mkdir -p $D/mnt
mnt() { umount $D/mnt 2>/dev/null; "$1"/client/fuse/sfs-mount $M $D/mnt -o allow_other${2:+,$2} >>$D/mount.log 2>&1
  for i in $(seq 300); do mountpoint -q $D/mnt && break; sleep 0.1; done; mountpoint -q $D/mnt || { echo "mount failed: $D/mount.log" >&2; exit 1; }; }
ops() { curl -s http://$MET/metrics | grep '^sfs_mds_requests_total' | sed 's/sfs_mds_requests_total{op="\(.*\)"} /\1=/' | tr '\n' ' '; }
mnt $R/build; $R/build/tools/sfs-bench train -o $D/mnt/t -n $N --prepare --epochs 1 >/dev/null 2>&1
find $D/mnt/t -type f | sort | python3 -c "import random,sys; l=sys.stdin.read().split(); random.Random(1).shuffle(l); print('\n'.join(l))" > $OUT/order.txt
for r in $(seq ${ROUNDS:-1}); do for run in ${RUNS:-build:hint build:nocache}; do
  b=${run%:*}; mode=${run##*:}; [[ $b = /* ]] || b=$R/$b
  if [ $mode = hint ]; then mnt $b cache_ram=$CACHE; hint=($b/tools/sfs prefetch --list $OUT/order.txt); elif [ $mode = hintshm ]; then rm -rf /dev/shm/sfsc; mnt $b cache_dir=/dev/shm/sfsc,cache_size=$CACHE,cache_ram=${CRAM:-64M}; hint=($b/tools/sfs prefetch --list $OUT/order.txt); else mnt $b; hint=(); fi
  sync; echo 3 > /proc/sys/vm/drop_caches; before=$(ops)
  res=$(python3 bench/epoch_reader.py $OUT/order.txt $K "${hint[@]}")
  echo "$(date +%T) $b $mode r$r $res | $(python3 -c "
import sys
a=dict(x.split('=') for x in sys.argv[1].split()); b=dict(x.split('=') for x in sys.argv[2].split())
print(' '.join(f'{k}={float(b[k])-float(a.get(k,0)):g}' for k in ('lookup','open','open_path','readdir') if k in b))" "$before" "$(ops)") load=$(cut -d' ' -f1 /proc/loadavg)"
done; done
umount $D/mnt; scripts/cluster.sh down --dir $D >/dev/null 2>&1; rm -rf /dev/shm/sfsc
