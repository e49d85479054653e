#!/usr/bin/env bash
# Issue 19's restore against the raw rate after MultiGet took a thread per OSS
# (docs/benchmarks.md, "KV-cache tier"): bench/kv_restore.py on one 2-OSS loopback
# cluster, the Python module of the build before (OLDPY=, a directory holding its
# stripefs/) and this one's alternating ROUNDS times (SIDES="old new"), for each of
# TOKENS, RESTORES restores each (default 3).
# BUILD= the build dir (default build). OUT= where results go.
set -euo pipefail
R=$(cd "$(dirname "$0")/../.." && pwd); OUT=${OUT:-/tmp/sfs-sitting}; mkdir -p $OUT
B=$(cd "${BUILD:-$R/build}" && pwd); ROUNDS=${ROUNDS:-2}; TOKENS=${TOKENS:-4096}
SIDES=${SIDES:-old new}; RESTORES=${RESTORES:-3}
[[ " $SIDES " != *" old "* ]] || : "${OLDPY:?OLDPY= a directory holding the old build stripefs/}"
cd $R
d=/tmp/skv7b
scripts/cluster.sh down --dir $d >/dev/null 2>&1 || true; rm -rf $d; mkdir -p $d
M=$(SFS_OSS_FLAGS="--kv-capacity 2G" scripts/cluster.sh up --oss 2 --dir $d --build $B \
    2>/dev/null | tail -1)
trap 'scripts/cluster.sh down --dir $d >/dev/null 2>&1 || true' EXIT
for r in $(seq $ROUNDS); do
  for side in $SIDES; do
    py=$B/client/python; [ $side = old ] && py=$OLDPY
    echo "side=$side round=$r load=$(cut -d' ' -f1 /proc/loadavg) $(date -u +%T)" | tee -a $OUT/kv7b.log
    PYTHONPATH=$py /usr/bin/python3 bench/kv_restore.py $M --tokens $TOKENS --pooled --json \
      --partial-at 0 --restores $RESTORES --namespace kv-$side-$r 2>/dev/null | tee -a $OUT/kv7b.log
  done
done
