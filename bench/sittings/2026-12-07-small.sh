#!/usr/bin/env bash
# Small files read whole through the mount with the real mdtest (2026-12-07, docs/benchmarks.md
# "Small files: buffered OSS reads"): 498a8f3 makes sfs-oss read objects under 1 MiB through
# its page cache instead of O_DIRECT. NEW and OLD build dirs (OLD: the same binaries with the
# sfs-oss of 0bb4eea) on fresh 4-OSS clusters, beside MooseFS (scripts/bench-peers.sh --peers
# moosefs --keep --quick --servers 4, mounted at $MF). Per round and system: mdtest creates and
# writes 4 x N files of 64 KiB, every cache on the host is dropped, then reads them all three
# times: cold; again (the client's page cache may serve it); and after dropping only the
# client's page cache of each file (posix_fadvise DONTNEED through the mount), so the reads
# reach the servers with their caches as the first read left them: a second epoch.
# MDTEST= the real mdtest (IOR 4.x, built outside the project). Needs root and mpirun.
set -uo pipefail
R=$(cd "$(dirname "$0")/../.." && pwd); OUT=${OUT:-/tmp/sfs-sitting}; mkdir -p $OUT
NEW=${NEW:-$R/build}; OLD=${OLD:?OLD build dir}; ROUNDS=${ROUNDS:-2}; N=${N:-500}
MDTEST=${MDTEST:-/work/scratch/ior-inst/bin/mdtest}; MF=${MF:-/tmp/sfs-peers/mnt/moosefs}
cd $R
md() { mpirun --allow-run-as-root --oversubscribe -np 4 $MDTEST -F -n $N "$@" 2>&1; }
rate() { awk -v w="$1" '$1 == "File" && $2 == w {print $4; exit}'; }  # max column
run() {  # run NAME DIR: one create+write, drop, two reads; prints the rates
  local d=$2/md-$1-$r
  local c=$(md -C -w 65536 -d $d | rate creation)
  sync; echo 3 > /proc/sys/vm/drop_caches
  local r1=$(md -E -e 65536 -d $d | rate read)
  local r2=$(md -E -e 65536 -d $d | rate read)
  /usr/bin/python3 -c "
import os, sys
for root, _, files in os.walk(sys.argv[1]):
    for f in files:
        fd = os.open(os.path.join(root, f), os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)" $d
  local r3=$(md -E -e 65536 -d $d | rate read)
  echo "$1 r$r load=$(cut -d' ' -f1 /proc/loadavg) create+write=$c read-cold=$r1 read-again=$r2 read-servers-warm=$r3" | tee -a $OUT/small.log
}
for r in $(seq $ROUNDS); do
  for v in new old; do
    B=$NEW; [ $v = old ] && B=$OLD
    scripts/cluster.sh down --dir /tmp/ssm-$v >/dev/null 2>&1; rm -rf /tmp/ssm-$v
    scripts/cluster.sh up --oss 4 --dir /tmp/ssm-$v --mount /tmp/ssm-$v/mnt --build $B >/dev/null 2>&1
    run sfs-$v /tmp/ssm-$v/mnt
    scripts/cluster.sh down --dir /tmp/ssm-$v >/dev/null 2>&1
  done
  run moosefs $MF; rm -rf $MF/md-moosefs-$r
done
