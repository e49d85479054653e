#!/usr/bin/env bash
# The KV one-get A/B of 2026-12-06 (docs/benchmarks.md, "One get: sendfile from the page
# cache"): OLD and NEW build dirs (each with mds/sfs-mds, oss/sfs-oss, tools/sfs-bench)
# alternate on fresh 2-OSS loopback clusters. Sections: `ab` (the sitting's kv command,
# ROUNDS rounds), `cpu` (perf stat of both OSSes and the client over 3000 single gets).
# Needs perf. OUT= where results go. Run under `nice -n -10` on a shared machine.
set -uo pipefail
R=$(cd "$(dirname "$0")/../.." && pwd); OUT=${OUT:-/tmp/sfs-sitting}; mkdir -p $OUT
OLD=${OLD:?OLD build dir}; NEW=${NEW:?NEW build dir}; ROUNDS=${ROUNDS:-10}
cd $R
up() {  # up NAME BUILD: a fresh cluster; sets M
  scripts/cluster.sh down --dir /tmp/skv-$1 >/dev/null 2>&1; rm -rf /tmp/skv-$1
  M=$(SFS_OSS_FLAGS="--kv-capacity 512M" scripts/cluster.sh up --oss 2 --dir /tmp/skv-$1 --build $2 2>/dev/null | tail -1)
}
down() { scripts/cluster.sh down --dir /tmp/skv-$1 >/dev/null 2>&1; }
for sec in "$@"; do
case $sec in
ab)
  for r in $(seq $ROUNDS); do
    for v in old new; do
      B=$OLD; [ $v = new ] && B=$NEW; up $v $B
      echo "$v r$r load=$(cut -d' ' -f1 /proc/loadavg) $($B/tools/sfs-bench kv --mds $M --blocks 128 \
        --block-size 1M --transport tcp --latency-gets 1000 --json 2>/dev/null | tail -1)" | tee -a $OUT/kv-ab.log
      down $v
    done
  done ;;
par)  # P (default 3) sfs-bench kv processes at once: what waiting awake costs when gets contend
  for r in $(seq $ROUNDS); do
    for v in old new; do
      B=$OLD; [ $v = new ] && B=$NEW; up $v $B
      for i in $(seq ${P:-3}); do
        $B/tools/sfs-bench kv --mds $M --blocks 64 --block-size 1M --transport tcp --latency-gets 500 \
          --json 2>/dev/null | tail -1 > $OUT/kv-par.run$i &
      done
      wait
      echo "$v r$r par=${P:-3} load=$(cut -d' ' -f1 /proc/loadavg) $(cat $OUT/kv-par.run* | tr '\n' ' ')" | tee -a $OUT/kv-par.log
      down $v
    done
  done ;;
cpu)
  for v in old new old new; do
    B=$OLD; [ $v = new ] && B=$NEW; up $v $B
    perf stat -e task-clock,context-switches -p $(pgrep -d, -f "oss/sfs-oss .*/tmp/skv-$v/ost") -o $OUT/kv-cpu-oss.$v.txt --append &
    P=$!; sleep 0.5
    perf stat -e task-clock,context-switches -o $OUT/kv-cpu-cli.$v.txt --append $B/tools/sfs-bench kv --mds $M \
      --blocks 16 --block-size 1M --transport tcp --latency-gets 3000 --json 2>/dev/null | tail -1
    kill -INT $P; wait $P; down $v
  done
  grep -H -E "task-clock|context-sw" $OUT/kv-cpu-*.txt ;;
esac
done
