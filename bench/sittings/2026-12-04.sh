#!/usr/bin/env bash
# The quiet-machine sitting of 2026-12-04 (docs/benchmarks.md): sections by argument,
#   capcost qos kv binding train ior profile restore ec shards loader mfs
# IOR= the real IOR 4.x binary (built outside the project); OUT= where results go.
# Needs root (drop_caches), fio, mpirun, perf; `restore` switches libblas to OpenBLAS
# (Debian libopenblas0-pthread) for its prefill and back.
set -uo pipefail
R=$(cd "$(dirname "$0")/../.." && pwd); B=${BUILD_DIR:-$R/build}; OUT=${OUT:-/tmp/sfs-sitting}; mkdir -p $OUT
BENCH=$B/tools/sfs-bench; SFS=$B/tools/sfs
log() { echo "[$(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)] $*"; }
IOR=${IOR:-/work/scratch/tools/bin/ior}
# plain_and_mirror DIR: a fresh 4-OSS cluster under DIR mounted at DIR/mnt (sets M, MNT),
# with MNT/plain striped -c 4 -S 1M and MNT/mirror the same with -N 2.
plain_and_mirror() {
  scripts/cluster.sh down --dir "$1" >/dev/null 2>&1; rm -rf "$1"
  M=$(scripts/cluster.sh up --oss 4 --dir "$1" --mount "$1/mnt" 2>/dev/null | tail -1)
  MNT=$1/mnt; mkdir -p $MNT/plain $MNT/mirror
  $SFS setstripe -c 4 -S 1M $MNT/plain; $SFS setstripe -c 4 -S 1M -N 2 $MNT/mirror
}
cd $R
for sec in "$@"; do
case $sec in
capcost)
  log capcost; JOBS=1 scripts/bench-capcost.sh build 4 15 2>&1 | tee $OUT/capcost1b.log ;;
qos)
  log qos; scripts/bench-qos.sh build 3 15 2>&1 | tee $OUT/qos.log ;;
kv)
  log kv; scripts/cluster.sh down --dir /tmp/skv >/dev/null 2>&1; rm -rf /tmp/skv
  M=$(SFS_OSS_FLAGS="--kv-capacity 512M" scripts/cluster.sh up --oss 2 --dir /tmp/skv 2>/dev/null | tail -1)
  for i in 1 2 3 4 5 6 7; do
    $BENCH kv --mds $M --blocks 128 --block-size 1M --transport tcp --latency-gets 1000 --json 2>/dev/null | tail -1 | tee -a $OUT/kv.jsonl
  done
  scripts/cluster.sh down --dir /tmp/skv >/dev/null 2>&1 ;;
train)
  log train; scripts/cluster.sh down --dir /tmp/str >/dev/null 2>&1; rm -rf /tmp/str
  M=$(scripts/cluster.sh up --oss 2 --dir /tmp/str 2>/dev/null | tail -1)
  N=${N:-4000}
  $BENCH train --mds $M -o /t -n $N --prepare --epochs 1 >/dev/null 2>&1
  rm -rf /var/tmp/st-ext4; mkdir -p /var/tmp/st-ext4
  $BENCH train -o /var/tmp/st-ext4 -n $N --prepare --epochs 1 >/dev/null 2>&1
  MFS=""
  if [ "${MOOSEFS:-1}" = 1 ]; then
    scripts/bench-peers.sh --peers moosefs --keep --quick --servers 2 >$OUT/mfs-setup.log 2>&1
    if mountpoint -q /tmp/sfs-peers/mnt/moosefs; then
      MFS=/tmp/sfs-peers/mnt/moosefs/train; mkdir -p $MFS
      $BENCH train -o $MFS -n $N --prepare --epochs 1 >/dev/null 2>&1
    fi
  fi
  half=$(( N * 105 * 1024 / 2 / 1024 / 1024 ))M
  for round in 1 2; do
    for mode in nocache lru-full hint-full lru-half hint-half ext4-drop ext4-warm moosefs; do
      case $mode in
        nocache) args=(--mds $M -o /t) ;;
        lru-full) args=(--mds $M -o /t --cache-ram 1G) ;;
        hint-full) args=(--mds $M -o /t --cache-ram 1G --hint) ;;
        lru-half) args=(--mds $M -o /t --cache-ram $half) ;;
        hint-half) args=(--mds $M -o /t --cache-ram $half --hint) ;;
        ext4-drop) args=(-o /var/tmp/st-ext4) ;;
        ext4-warm) args=(-o /var/tmp/st-ext4) ;;
        moosefs) [ -n "$MFS" ] || continue; args=(-o $MFS) ;;
      esac
      drop=(--drop-caches); [ $mode = ext4-warm ] && drop=()
      j=$($BENCH train "${args[@]}" -n $N --workers 4 "${drop[@]}" --json 2>/dev/null | tail -1)
      echo "{\"mode\": \"$mode\", \"round\": $round, \"load\": \"$(cut -d' ' -f1 /proc/loadavg)\", \"r\": $j}" | tee -a $OUT/train.jsonl
    done
  done
  scripts/cluster.sh down --dir /tmp/str >/dev/null 2>&1 ;;
binding)
  log binding; scripts/cluster.sh down --dir /tmp/sbd >/dev/null 2>&1; rm -rf /tmp/sbd
  M=$(scripts/cluster.sh up --oss 2 --dir /tmp/sbd --mount /tmp/sbd/mnt 2>/dev/null | tail -1)
  $BENCH train --mds $M -o /t -n 4000 --prepare --epochs 1 >/dev/null 2>&1
  for th in 1 4; do
    PYTHONPATH=build/client/python /usr/bin/python3 bench/binding_vs_fuse.py $M /t /tmp/sbd/mnt -n 4000 --threads $th --rounds 5 2>&1 | grep -v transport | tee $OUT/binding-t$th.log
  done
  scripts/cluster.sh down --dir /tmp/sbd >/dev/null 2>&1 ;;
ior)
  log ior; plain_and_mirror /tmp/sior
  for round in 1 2 3; do
    for t in plain mirror; do
      rm -f $MNT/$t/u $MNT/$t/f
      w=$(mpirun --allow-run-as-root --oversubscribe -np 4 $IOR -a POSIX -t 47008 -b 47008 -s 500 -e -w -o $MNT/$t/u 2>&1 | awk '/^write / {print $2; exit}')
      echo "strided $t round $round $w load $(cut -d' ' -f1 /proc/loadavg)" | tee -a $OUT/ior.log
      w=$(mpirun --allow-run-as-root --oversubscribe -np 4 $IOR -a POSIX -t 1m -b 64m -e -w -o $MNT/$t/f 2>&1 | awk '/^write / {print $2; exit}')
      echo "mib1 $t round $round $w load $(cut -d' ' -f1 /proc/loadavg)" | tee -a $OUT/ior.log
    done
  done
  scripts/cluster.sh down --dir /tmp/sior >/dev/null 2>&1 ;;
profile)
  log profile; plain_and_mirror /tmp/sprof
  pids=$(pgrep -d, -f "sfs-oss|sfs-mds|sfs-mount")
  cpu() { for p in ${pids//,/ }; do echo "$(tr -d '\0' </proc/$p/cmdline | cut -c1-40 | sed 's/.*\///') $(awk '{print $14+$15}' /proc/$p/stat)"; done; }
  for t in plain mirror plain mirror; do
    rm -f $MNT/$t/u
    cpu > $OUT/cpu-before
    w=$(mpirun --allow-run-as-root --oversubscribe -np 4 $IOR -a POSIX -t 47008 -b 47008 -s 500 -e -w -o $MNT/$t/u 2>&1 | awk '/^write / {print $2; exit}')
    cpu > $OUT/cpu-after
    echo "== $t $w MiB/s; CPU ticks (1/100 s) per daemon:" | tee -a $OUT/profile.log
    paste $OUT/cpu-before $OUT/cpu-after | awk '{print "  " $1, $4-$2}' | tee -a $OUT/profile.log
  done
  rm -f $MNT/mirror/u
  perf record -e cpu-clock -F 999 -a -g -o $OUT/perf-mirror.data -- mpirun --allow-run-as-root --oversubscribe -np 4 $IOR -a POSIX -t 47008 -b 47008 -s 500 -e -w -o $MNT/mirror/u >/dev/null 2>&1
  perf report -i $OUT/perf-mirror.data --no-children --sort comm,dso --stdio 2>/dev/null | grep -v "^#" | grep -v "^$" | head -40 > $OUT/perf-mirror-comm.txt
  perf report -i $OUT/perf-mirror.data --no-children --sort comm,symbol --stdio -g none 2>/dev/null | grep -v "^#" | grep -v "^$" | head -60 > $OUT/perf-mirror-sym.txt
  scripts/cluster.sh down --dir /tmp/sprof >/dev/null 2>&1 ;;
restore)
  log restore; scripts/cluster.sh down --dir /tmp/srs >/dev/null 2>&1; rm -rf /tmp/srs
  M=$(SFS_OSS_FLAGS="--kv-capacity 1G" scripts/cluster.sh up --oss 2 --dir /tmp/srs 2>/dev/null | tail -1)
  update-alternatives --set libblas.so.3-x86_64-linux-gnu /usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3 >/dev/null
  update-alternatives --set liblapack.so.3-x86_64-linux-gnu /usr/lib/x86_64-linux-gnu/openblas-pthread/liblapack.so.3 >/dev/null
  PYTHONPATH=build/client/python /usr/bin/python3 bench/kv_restore.py $M --tokens ${TOKENS:-4096 8192 16384} --json 2>&1 | grep -v transport | tee $OUT/restore.log
  for i in 1 2 3 4 5; do
    for p in "" --pooled; do
      PYTHONPATH=build/client/python /usr/bin/python3 bench/kv_restore.py $M --child 16384 --out /tmp/srs/l.npy $p 2>&1 | grep -v transport | tail -2 | sed "s/^/child16k$p: /" | tee -a $OUT/restore-children.log
    done
    $BENCH kv --mds $M --blocks 512 --block-size 1M --transport tcp --latency-gets 500 --json 2>/dev/null | tail -1 | tee -a $OUT/restore-transport.jsonl
  done
  update-alternatives --set libblas.so.3-x86_64-linux-gnu /usr/lib/x86_64-linux-gnu/blas/libblas.so.3 >/dev/null
  update-alternatives --set liblapack.so.3-x86_64-linux-gnu /usr/lib/x86_64-linux-gnu/lapack/liblapack.so.3 >/dev/null
  scripts/cluster.sh down --dir /tmp/srs >/dev/null 2>&1 ;;
ec)
  log ec; scripts/cluster.sh down --dir /tmp/sec >/dev/null 2>&1; rm -rf /tmp/sec
  M=$(scripts/cluster.sh up --oss 6 --dir /tmp/sec --mount /tmp/sec/mnt 2>/dev/null | tail -1)
  MNT=/tmp/sec/mnt; mkdir -p $MNT/plain $MNT/ec
  $SFS setstripe -c 6 -S 1M $MNT/plain; $SFS setstripe --ec 4+2 -S 1M $MNT/ec
  for round in 1 2 3; do
    for t in plain ec; do
      rm -f $MNT/$t/f
      w=$(mpirun --allow-run-as-root --oversubscribe -np 4 $IOR -a POSIX -t 4m -b 64m -e -w -k -o $MNT/$t/f 2>&1 | awk '/^write / {print $2; exit}')
      sync; echo 3 > /proc/sys/vm/drop_caches
      r=$(mpirun --allow-run-as-root --oversubscribe -np 4 $IOR -a POSIX -t 4m -b 64m -r -k -o $MNT/$t/f 2>&1 | awk '/^read / {print $2; exit}')
      echo "ec-sitting $t round $round write $w read $r load $(cut -d' ' -f1 /proc/loadavg)" | tee -a $OUT/ec.log
    done
  done
  # degraded: one OSS of the EC file killed, read again (cold)
  scripts/cluster.sh kill-oss 2 --dir /tmp/sec >/dev/null 2>&1
  for i in 1 2; do
    sync; echo 3 > /proc/sys/vm/drop_caches
    r=$(mpirun --allow-run-as-root --oversubscribe -np 4 $IOR -a POSIX -t 4m -b 64m -r -k -o $MNT/ec/f 2>&1 | awk '/^read / {print $2; exit}')
    echo "ec-sitting ec degraded read $r load $(cut -d' ' -f1 /proc/loadavg)" | tee -a $OUT/ec.log
  done
  scripts/cluster.sh down --dir /tmp/sec >/dev/null 2>&1 ;;
shards)
  log shards; scripts/cluster.sh down --dir /tmp/ssh >/dev/null 2>&1; rm -rf /tmp/ssh
  M=$(scripts/cluster.sh up --oss 4 --dir /tmp/ssh --mount /tmp/ssh/mnt 2>/dev/null | tail -1)
  MNT=/tmp/ssh/mnt; mkdir -p $MNT/shards; $SFS setstripe -c -1 -S 4M $MNT/shards
  rm -rf /var/tmp/ssh-ext4; mkdir -p /var/tmp/ssh-ext4
  for d in $MNT/shards /var/tmp/ssh-ext4; do
    fio --name=prep --directory=$d --nrfiles=16 --filesize=128m --numjobs=4 --rw=write --bs=4m --end_fsync=1 >/dev/null 2>&1
  done
  for round in 1 2 3; do
    for d in $MNT/shards /var/tmp/ssh-ext4; do
      sync; echo 3 > /proc/sys/vm/drop_caches
      bw=$(fio --name=prep --directory=$d --nrfiles=16 --filesize=128m --numjobs=4 --rw=read --bs=4m --file_service_type=sequential --group_reporting --output-format=json 2>/dev/null | python3 -c 'import json,sys; print("%.0f" % (json.load(sys.stdin)["jobs"][0]["read"]["bw"]/1024))')
      echo "shards $d round $round $bw MiB/s load $(cut -d' ' -f1 /proc/loadavg)" | tee -a $OUT/shards.log
    done
  done
  rm -rf /var/tmp/ssh-ext4
  scripts/cluster.sh down --dir /tmp/ssh >/dev/null 2>&1 ;;
loader)
  log loader; scripts/cluster.sh down --dir /tmp/sld >/dev/null 2>&1; rm -rf /tmp/sld
  M=$(scripts/cluster.sh up --oss 2 --dir /tmp/sld 2>/dev/null | tail -1)
  $BENCH train --mds $M -o /t -n 4000 --prepare --epochs 1 >/dev/null 2>&1
  for round in 1 2; do
    for mode in nocache cachedir cachedir-hint; do
      rm -rf /tmp/sld/cache
      case $mode in
        nocache) args=() ;;
        cachedir) args=(--cache-ram 512M --cache-dir /tmp/sld/cache) ;;
        cachedir-hint) args=(--cache-ram 512M --cache-dir /tmp/sld/cache --hint) ;;
      esac
      PYTHONPATH=build/client/python /usr/bin/python3 bench/train_loader.py $M /t -n 4000 --workers 4 "${args[@]}" 2>&1 | grep -v transport | sed "s/^/$mode r$round: /" | tee -a $OUT/loader.log
    done
  done
  scripts/cluster.sh down --dir /tmp/sld >/dev/null 2>&1 ;;
mfs)
  log mfs; scripts/bench-peers.sh --peers moosefs --keep --quick --servers 4 > $OUT/mfs4-setup.log 2>&1
  MF=/tmp/sfs-peers/mnt/moosefs; mountpoint -q $MF || { echo "moosefs not mounted"; continue; }
  nsenter --net=/run/netns/sfs-peers mkdir -p $MF/g1 $MF/g2
  nsenter --net=/run/netns/sfs-peers mfssetgoal -r 1 $MF/g1 >/dev/null
  nsenter --net=/run/netns/sfs-peers mfssetgoal -r 2 $MF/g2 >/dev/null
  plain_and_mirror /tmp/smf
  for round in 1 2; do
    for d in $MNT/plain $MNT/mirror $MF/g1 $MF/g2; do
      rm -f $d/u
      w=$(mpirun --allow-run-as-root --oversubscribe -np 4 $IOR -a POSIX -t 47008 -b 47008 -s 500 -e -w -o $d/u 2>&1 | awk '/^write / {print $2; exit}')
      echo "strided $d round $round $w load $(cut -d' ' -f1 /proc/loadavg)" | tee -a $OUT/mfs-ior.log
    done
  done
  scripts/cluster.sh down --dir /tmp/smf >/dev/null 2>&1 ;;
esac
done
log done
