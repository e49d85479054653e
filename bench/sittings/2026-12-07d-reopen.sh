#!/usr/bin/env bash
# Small files read again through the mount, by fio (issue 18, docs/benchmarks.md "Kept
# opens"): fio writes 4 jobs x N files of 64 KiB, every cache on the host is dropped, then
# fio reads them all twice (the jobs open each file O_RDONLY, read it whole and close it:
# --openfiles=1 --file_service_type=sequential): cold, and again right after (the client
# may serve the re-opens and the data from what it kept). NEW and OLD (the same without the
# open cache) on fresh 4-OSS clusters, alternating, beside MooseFS (scripts/bench-peers.sh
# --peers moosefs --keep --quick --servers 4, mounted at $MF). Prints files/s. Needs root.
set -uo pipefail
R=$(cd "$(dirname "$0")/../.." && pwd); OUT=${OUT:-/tmp/sfs-sitting}; mkdir -p $OUT
NEW=${NEW:-$R/build}; OLD=${OLD:?OLD build dir}; ROUNDS=${ROUNDS:-3}; N=${N:-1000}
MF=${MF:-/tmp/sfs-peers/mnt/moosefs}
cd $R
f() {  # f DIR RW: one fio pass over the files; prints files/s
  fio --name=sm --directory=$1 --nrfiles=$N --filesize=64k --numjobs=4 --rw=$2 --bs=64k \
      --openfiles=1 --file_service_type=sequential --group_reporting --output-format=json 2>/dev/null |
    python3 -c "import json,sys; j=json.load(sys.stdin)['jobs'][0]; k='read' if sys.argv[1]=='read' else 'write'; print('%.0f' % (4*int(sys.argv[2]) / (j[k]['runtime']/1000.0)))" $2 $N
}
run() {  # run NAME DIR
  mkdir -p $2/ro-$r; local w=$(f $2/ro-$r write)
  sync; echo 3 > /proc/sys/vm/drop_caches
  local r1=$(f $2/ro-$r read); local r2=$(f $2/ro-$r read)
  echo "$1 r$r load=$(cut -d' ' -f1 /proc/loadavg) write=$w read-cold=$r1 read-again=$r2" | tee -a $OUT/reopen.log
}
for r in $(seq $ROUNDS); do
  for v in new old; do
    B=$NEW; [ $v = old ] && B=$OLD
    scripts/cluster.sh down --dir /tmp/sro-$v >/dev/null 2>&1; rm -rf /tmp/sro-$v
    scripts/cluster.sh up --oss 4 --dir /tmp/sro-$v --mount /tmp/sro-$v/mnt --build $B >/dev/null 2>&1
    run sfs-$v /tmp/sro-$v/mnt
    scripts/cluster.sh down --dir /tmp/sro-$v >/dev/null 2>&1
  done
  run moosefs $MF; rm -rf $MF/ro-$r
done
