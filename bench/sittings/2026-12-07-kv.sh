#!/usr/bin/env bash
# Issue 19's restore benchmark of 2026-12-07 (docs/benchmarks.md, "KV-cache tier"):
# bench/kv_restore.py on a 2-OSS loopback cluster with a cluster key and two tenants.
# Sections: `restore` (16k with the 75 % partial hit and the second tenant, then 4k and
# 8k; three restores each in a new process, medians against the raw rate of the same
# run) and `zipf` (8 contexts of 1k tokens on a tier sized for 4, 200 Zipf(1) requests).
# BUILD= the build dir (default build). OUT= where results go. A 16k prefill on the
# reference BLAS takes about an hour: the sitting used OpenBLAS (libopenblas0-pthread,
# chosen for libblas.so.3 by update-alternatives).
set -euo pipefail
R=$(cd "$(dirname "$0")/../.." && pwd); OUT=${OUT:-/tmp/sfs-sitting}; mkdir -p $OUT
B=$(cd "${BUILD:-$R/build}" && pwd); export PYTHONPATH=$B/client/python
cd $R
up() {  # up NAME CAPACITY: a fresh keyed cluster with tenants ka and kb; sets M, T
  local d=/tmp/skv7-$1
  scripts/cluster.sh down --dir $d >/dev/null 2>&1 || true; rm -rf $d; mkdir -p $d
  $B/tools/sfs key generate $d/cluster.key >/dev/null
  M=$(SFS_OSS_FLAGS="--kv-capacity $2" scripts/cluster.sh up --oss 2 --dir $d --build $B \
      --cluster-key $d/cluster.key 2>/dev/null | tail -1)
  T=()
  for t in ka kb; do
    /usr/bin/python3 -c "import stripefs,sys; stripefs.connect(sys.argv[1]).mkdir('/$t')" $M
    $B/tools/sfs tenant create $t --fileset /$t --key-out $d/$t.key --mds $M >/dev/null
    T+=(--tenant $t:$d/$t.key)
  done
}
down() { scripts/cluster.sh down --dir /tmp/skv7-$1 >/dev/null 2>&1 || true; }
for sec in "$@"; do
case $sec in
restore)
  up restore 2G
  echo "load=$(cut -d' ' -f1 /proc/loadavg) $(date -u +%T)" | tee -a $OUT/kv7-restore.log
  /usr/bin/python3 bench/kv_restore.py $M --tokens 16384 --pooled --json "${T[@]}" | tee -a $OUT/kv7-restore.log
  echo "load=$(cut -d' ' -f1 /proc/loadavg) $(date -u +%T)" | tee -a $OUT/kv7-restore.log
  /usr/bin/python3 bench/kv_restore.py $M --tokens 4096 8192 --pooled --json --partial-at 0 \
    --namespace kv-restore-small "${T[@]}" | tee -a $OUT/kv7-restore.log
  down restore ;;
zipf)  # 2 x 64M holds 4 contexts of 1k tokens (32 MiB each)
  up zipf 64M
  echo "load=$(cut -d' ' -f1 /proc/loadavg) $(date -u +%T)" | tee -a $OUT/kv7-zipf.log
  /usr/bin/python3 bench/kv_restore.py $M --tokens 1024 --zipf 8 --zipf-capacity 4 \
    --zipf-requests 200 --json "${T[@]:0:2}" | tee -a $OUT/kv7-zipf.log
  down zipf ;;
esac
done
