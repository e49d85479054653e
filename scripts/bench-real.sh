#!/usr/bin/env bash
# StripeFS next to MooseFS and the FUSE passthrough ceiling, measured with the real tools:
# IOR 4.x, mdtest and IO500 under Open MPI (issue 14).
#
#   scripts/bench-real.sh [--peers stripefs,moosefs,fuse-passthrough[,local,ceph]] [--quick] [--runs N]
#                         [--dir DIR] [--build BUILD_DIR] [--tools TOOLS_DIR] [--keep]
#                         [--stripe-count N]   (StripeFS: `sfs setstripe -c N` on the mount root;
#                                               default: the file system's, 1 stripe as Lustre)
#
# --tools: where the tools were built: TOOLS_DIR/bin/ior, TOOLS_DIR/bin/mdtest and
# TOOLS_DIR/io500 (an IO500 tree built against that IOR; default /work/scratch/io500).
# This script fetches and builds none of them. A TOOLS_DIR/TOOLS-COMMITS.txt is copied
# into the results and quoted under the table.
#
# Each peer is set up as bench-peers.sh does (scripts/peers/NAME.sh, in a network
# namespace of its own with only `lo`; 4 data servers: StripeFS OSSes, MooseFS
# chunkservers), mounted on DIR/mnt/NAME, a second independent client mount on
# DIR/mnt/NAME.2 for the two-mount row. Every tool runs as
# `mpirun --allow-run-as-root --oversubscribe -np 4 TOOL -a POSIX ...`; before every read
# phase the peer's first client is remounted and the kernel's caches are dropped (`cold`,
# scripts/peers/suite.sh). Steps, per run:
#   fpp_w/fpp_r     ior -F -t 1m -b FPP_B -e -w -k, then -r (cold)
#   rand_w/rand_r   ior -F -z -t 4k -b RAND_B -e -w -k, then -z -r (cold): ops/s
#   shared_w/_r     ior -t 1m -b 1m -s SHARED_SEG -e -w -k, then -r (cold): one N-1 file
#   unal_w/_r       ior -t 47008 -b 47008 -s UNAL_SEG -e -w -k, then -r (cold)
#   two             the same 47008-byte file through two mounts: IOR takes one -o path, so
#                   mpirun starts scripts/peers/rank_mount.sh, which runs IOR with -o
#                   MNT_(rank%2)/two: ranks 0,2 on mount 1, ranks 1,3 on mount 2. One run
#                   -w -W -r -R -C -G 13: written with fsync, checked after the write by
#                   the writer (-W), then each rank reads and checks (-R) its neighbour's
#                   blocks (-C: rank i reads rank i+1's), i.e. what the other mount wrote.
#                   Then, cold, the file's sha256 through each mount must equal that of
#                   the same IOR run (-G 13 makes its data deterministic) on a local dir.
#   md_c/_s/_r/_d   mdtest -F -P -n MD_N -w 3901 -e 3901 -u -N 1, one phase per run
#                   (-C create, cold, -T stat, cold, -E read, -r remove), as IO500 splits them
#   io500           io500 with a small config: stonewall IO5_SW s (20; --quick 3), ior-easy
#                   blocks capped at IO5_EASY_B per rank, ior-hard at IO5_HARD_SEG segments,
#                   mdtest n at IO5_MD_N per rank; its own drop-caches before reads. A run
#                   with a stonewall under 300 s is "[INVALID]" for the IO500 list; the
#                   score is still what its formula gives for these phases.
# A tool that exits non-zero (or an IOR that reports incorrect data) makes its cells
# "FAIL: reason", never a number. Raw outputs: DIR/results/NAME/STEP.rR.{cmd,out,json},
# the IO500 result dirs in DIR/results/NAME/io500.rR.results; the table (medians over
# --runs, StripeFS's ratio to each peer) in DIR/results/table.md. --quick: small sizes,
# a smoke run. Full sizes fit a 2-core 24 GiB box: about 6-8 minutes per peer per run.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PEERS_DIR="$ROOT/scripts/peers"
ALL_PEERS=stripefs,moosefs,fuse-passthrough,local,ceph
PEERS=stripefs,moosefs,fuse-passthrough
DIR=/tmp/sfs-real
NSERVERS=4
QUICK=0
KEEP=0
RUNS=1
BUILD=${BUILD_DIR:-$ROOT/build}
TOOLS=/work/scratch/io500
NETNS=sfs-real
NS_MFS_ADDR=192.0.2.1   # TEST-NET-1, only ever on the namespace's lo
NP=4
MPIRUN=(mpirun --allow-run-as-root --oversubscribe -np $NP)
TWO_SEED=13             # IOR -G: the data signature, so the two-mount file is reproducible

log() { printf '[bench-real %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { log "error: $*"; exit 1; }
usage() { sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

parse_opts() {
  while [ $# -gt 0 ]; do
    case "$1" in
      --peers) PEERS=${2:?--peers needs a list}; shift 2 ;;
      --dir) DIR=${2:?--dir needs a path}; shift 2 ;;
      --build) BUILD=${2:?--build needs a path}; shift 2 ;;
      --tools) TOOLS=${2:?--tools needs a path}; shift 2 ;;
      --quick) QUICK=1; shift ;;
      --keep) KEEP=1; shift ;;
      --runs) RUNS=${2:?--runs needs a number}; shift 2 ;;
      --stripe-count) export SFS_STRIPE_COUNT=${2:?--stripe-count needs a number}; shift 2 ;;
      -h|--help) usage ;;
      *) echo "bench-real.sh: unknown option: $1" >&2; usage ;;
    esac
  done
  [[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || die "--runs wants a positive number"
  local p
  for p in ${PEERS//,/ }; do
    [[ ",$ALL_PEERS," == *",$p,"* ]] || die "unknown peer '$p' (known: $ALL_PEERS)"
  done
  [ "$(id -u)" = 0 ] || die "must run as root (packages, mounts, network namespace, drop_caches)"
  mkdir -p "$DIR"
  DIR=$(cd "$DIR" && pwd)
  BUILD=$(cd "$BUILD" 2>/dev/null && pwd) || die "--build $BUILD: no such directory"
  RESULTS="$DIR/results"
}

sizes() {
  if [ $QUICK = 1 ]; then
    FPP_B=16m; RAND_B=2m; SHARED_SEG=8; UNAL_SEG=64; MD_N=100
    IO5_SW=3; IO5_EASY_B=64m; IO5_HARD_SEG=2000; IO5_MD_N=2000
  else
    FPP_B=1g; RAND_B=32m; SHARED_SEG=256; UNAL_SEG=1024; MD_N=1000
    IO5_SW=20; IO5_EASY_B=2048m; IO5_HARD_SEG=50000; IO5_MD_N=200000
  fi
  STEP_TIMEOUT=${STEP_TIMEOUT:-600}
  IO5_TIMEOUT=${IO5_TIMEOUT:-1200}
}

# shellcheck source=peers/common.sh
. "$PEERS_DIR/common.sh"
# shellcheck source=peers/stripefs.sh
. "$PEERS_DIR/stripefs.sh"
# shellcheck source=peers/fuse_passthrough.sh
. "$PEERS_DIR/fuse_passthrough.sh"
# shellcheck source=peers/moosefs.sh
. "$PEERS_DIR/moosefs.sh"
# shellcheck source=peers/local.sh
. "$PEERS_DIR/local.sh"
# shellcheck source=peers/ceph.sh
. "$PEERS_DIR/ceph.sh"
# suite.sh for cold(), fmt_num, fmt_ratio, short and label; its sfs-bench suite is not run.
# shellcheck source=peers/suite.sh
. "$PEERS_DIR/suite.sh"

# --- tools ---------------------------------------------------------------------------

find_tools() {
  IOR=$TOOLS/bin/ior MDTEST=$TOOLS/bin/mdtest IO500=$TOOLS/io500
  [ -x "$IO500" ] || IO500=$TOOLS/bin/io500
  if [ ! -x "$IOR" ] || [ ! -x "$MDTEST" ] || [ ! -x "$IO500" ]; then
    echo "bench-real.sh: need $TOOLS/bin/ior, $TOOLS/bin/mdtest and $TOOLS/io500: build IOR 4.x (github hpc/ior) and IO500 (github IO500/io500, its prepare.sh, with that IOR) against Debian's openmpi, then pass --tools DIR" >&2
    exit 1
  fi
  need_pkgs openmpi-bin
  command -v mpirun >/dev/null || die "mpirun not found (Debian package openmpi-bin)"
  if [[ ",$PEERS," == *",stripefs,"* ]]; then
    local t
    for t in mds/sfs-mds oss/sfs-oss client/fuse/sfs-mount; do
      [ -x "$BUILD/$t" ] || die "$BUILD/$t missing: build StripeFS first (BUILD_DIR=$BUILD scripts/build.sh) or pass --build"
    done
  fi
  [ -f "$TOOLS/TOOLS-COMMITS.txt" ] && cp "$TOOLS/TOOLS-COMMITS.txt" "$RESULTS/tools.txt"
  return 0
}

# --- steps ---------------------------------------------------------------------------

# run_tool NAME KEY CMD...: CMD's output into RESULTS/NAME/KEY$SUFFIX.out and its status
# ("ok" or "FAIL: reason") into .status. Returns non-zero on failure.
run_tool() {
  local name=$1 key=$2 rc=0 t0=$SECONDS base="$RESULTS/$1/$2$SUFFIX" why; shift 2
  if [ "$name" != local ] && ! mountpoint -q "$DIR/mnt/$name"; then
    echo "FAIL: $DIR/mnt/$name not mounted" >"$base.status"; log "$name: $key skipped: not mounted"
    return 1
  fi
  printf '%q ' "$@" >"$base.cmd"; echo >>"$base.cmd"
  timeout -s INT -k 30 "$STEP_TIMEOUT" "$@" >"$base.out" 2>&1 </dev/null || rc=$?
  if [ $rc = 0 ] && grep -q 'Incorrect data on' "$base.out"; then
    why="IOR: $(grep -m1 -o 'Incorrect data on.*' "$base.out")"
  elif [ $rc = 124 ] || [ $rc = 137 ]; then
    why="timed out after ${STEP_TIMEOUT}s"
  elif [ $rc != 0 ]; then
    why="exit $rc: $(grep -m1 -iE 'error|fail|abort' "$base.out" | sed "s|$DIR/mnt/||g" | cut -c1-120 | tr '|' '/')"
  fi
  if [ -n "${why:-}" ]; then
    echo "FAIL: $why" >"$base.status"
    log "$name: $key$SUFFIX FAILED ($why; see $base.out)"
    return 1
  fi
  echo ok >"$base.status"
  log "$name: $key$SUFFIX done in $((SECONDS - t0)) s"
}

# ior NAME KEY ARGS...: IOR -a POSIX with ARGS under mpirun, JSON summary in KEY$SUFFIX.json.
ior() {
  local name=$1 key=$2; shift 2
  run_tool "$name" "$key" "${MPIRUN[@]}" "$IOR" -a POSIX "$@" \
    -O summaryFormat=JSON -O "summaryFile=$RESULTS/$name/$key$SUFFIX.json"
}

# mdtest_phase NAME KEY PHASEFLAG MNT
mdtest_phase() {
  run_tool "$1" "$2" "${MPIRUN[@]}" "$MDTEST" -a POSIX -F -P -n "$MD_N" -w 3901 -e 3901 -u -N 1 \
    -d "$4/md" "$3"
}

# The two-mount file's expected sha256: the same IOR write on a local directory.
two_args() { echo "-t 47008 -b 47008 -s $UNAL_SEG -e -G $TWO_SEED"; }
reference_sum() {
  local d="$DIR/ref"
  rm -rf "$d"; mkdir -p "$d"
  # shellcheck disable=SC2046
  "${MPIRUN[@]}" "$IOR" -a POSIX $(two_args) -w -k -o "$d/two" >"$RESULTS/two_reference.out" 2>&1 ||
    die "IOR on a local directory failed (see $RESULTS/two_reference.out)"
  TWO_REF=$(sha256sum <"$d/two" | cut -d' ' -f1)
  echo "$TWO_REF  $(stat -c %s "$d/two") bytes" >"$RESULTS/two_reference.sha256"
  rm -rf "$d"
}

two_mount() {
  local n=$1 m=$2 base="$RESULTS/$1/two$SUFFIX" s1 s2
  if ! "${n}_mount2" "$m.2" >>"$DIR/logs/$n.setup.log" 2>&1 || ! mountpoint -q "$m.2"; then
    echo "FAIL: second mount failed" >"$base.status"; "${n}_umount2" "$m.2" >/dev/null 2>&1 || true
    return 0
  fi
  rm -f "$m/two"
  # shellcheck disable=SC2046
  if run_tool "$n" two "${MPIRUN[@]}" "$PEERS_DIR/rank_mount.sh" "$m,$m.2" "$IOR" -a POSIX $(two_args) \
      -w -W -r -R -C -k -o "@MNT@/two" \
      -O summaryFormat=JSON -O "summaryFile=$RESULTS/$n/two$SUFFIX.json"; then
    cold "$n" "$m" || true
    s1=$(sha256sum <"$m/two" 2>&1 | cut -d' ' -f1) || true
    s2=$(sha256sum <"$m.2/two" 2>&1 | cut -d' ' -f1) || true
    echo "mount1 $s1 mount2 $s2 reference $TWO_REF" >"$base.sha256"
    if [ "$s1" != "$TWO_REF" ] || [ "$s2" != "$TWO_REF" ]; then
      local which=""
      [ "$s1" != "$TWO_REF" ] && which="mount 1"
      [ "$s2" != "$TWO_REF" ] && which="${which:+$which and }mount 2"
      echo "FAIL: sha256 through $which differs from the reference (IOR's checks passed)" >"$base.status"
      log "$n: two$SUFFIX: $(cat "$base.status")"
    fi
  fi
  rm -f "$m/two" 2>/dev/null || true
  "${n}_umount2" "$m.2" >>"$DIR/logs/$n.setup.log" 2>&1 || log "$n: could not unmount $m.2"
}

io500_run() {
  local n=$1 m=$2 base="$RESULTS/$1/io500$SUFFIX"
  rm -rf "$m/io500" "$base.results"
  # IO500's ini parser takes ';' for a comment: the sync goes into a script of its own.
  printf '#!/bin/sh\nsync\necho 3 >/proc/sys/vm/drop_caches\n' >"$DIR/drop_caches.sh"
  chmod +x "$DIR/drop_caches.sh"
  cat >"$base.ini" <<INI
[global]
datadir = $m/io500
timestamp-datadir = FALSE
resultdir = $base.results
timestamp-resultdir = FALSE
api = POSIX
drop-caches = TRUE
drop-caches-cmd = $DIR/drop_caches.sh
[debug]
stonewall-time = $IO5_SW
[ior-easy]
blockSize = $IO5_EASY_B
[mdtest-easy]
n = $IO5_MD_N
[ior-hard]
segmentCount = $IO5_HARD_SEG
[mdtest-hard]
n = $IO5_MD_N
INI
  STEP_TIMEOUT=$IO5_TIMEOUT run_tool "$n" io500 "${MPIRUN[@]}" "$IO500" "$base.ini" || true
  rm -rf "$m/io500" 2>/dev/null || true
}

# suite_once NAME MNT: one run of every step (SUFFIX=.rR).
suite_once() {
  local n=$1 m=$2
  rm -rf "${m:?}/fpp" "$m/rand" "$m/md" "$m/shared" "$m/unal" 2>/dev/null || true
  mkdir -p "$m/fpp" "$m/rand" "$m/md"
  ior "$n" fpp_w -F -t 1m -b $FPP_B -e -w -k -o "$m/fpp/f" && cold "$n" "$m" &&
    ior "$n" fpp_r -F -t 1m -b $FPP_B -r -k -o "$m/fpp/f" || true
  rm -rf "$m/fpp"
  ior "$n" rand_w -F -z -t 4k -b $RAND_B -e -w -k -o "$m/rand/f" && cold "$n" "$m" &&
    ior "$n" rand_r -F -z -t 4k -b $RAND_B -r -k -o "$m/rand/f" || true
  rm -rf "$m/rand"
  ior "$n" shared_w -t 1m -b 1m -s $SHARED_SEG -e -w -k -o "$m/shared" && cold "$n" "$m" &&
    ior "$n" shared_r -t 1m -b 1m -s $SHARED_SEG -r -k -o "$m/shared" || true
  rm -f "$m/shared"
  ior "$n" unal_w -t 47008 -b 47008 -s $UNAL_SEG -e -w -k -o "$m/unal" && cold "$n" "$m" &&
    ior "$n" unal_r -t 47008 -b 47008 -s $UNAL_SEG -r -k -o "$m/unal" || true
  rm -f "$m/unal"
  two_mount "$n" "$m"
  mdtest_phase "$n" md_c -C "$m" && cold "$n" "$m" && mdtest_phase "$n" md_s -T "$m" &&
    cold "$n" "$m" && mdtest_phase "$n" md_r -E "$m" && mdtest_phase "$n" md_d -r "$m" || true
  rm -rf "$m/md"
  io500_run "$n" "$m"
}

run_peer() {
  local name=$1 mnt="$DIR/mnt/$1" t0=$SECONDS ok=1 r
  rm -rf "${RESULTS:?}/$name"; mkdir -p "$RESULTS/$name"
  unmount_dir "$mnt.2"; unmount_dir "$mnt"; rm -rf "$mnt" "$mnt.2"; mkdir -p "$mnt" "$mnt.2"
  log "=== $name: setting up"
  "${name}_setup" "$mnt" >>"$DIR/logs/$name.setup.log" 2>&1 &
  wait $! || ok=0
  if [ $ok = 1 ] && [ "$name" != local ] && ! mountpoint -q "$mnt"; then
    echo "$mnt is not mounted" >"$DIR/logs/$name.reason"; ok=0
  fi
  if [ $ok = 0 ]; then
    local why; why=$(cat "$DIR/logs/$name.reason" 2>/dev/null || tail -n 1 "$DIR/logs/$name.setup.log")
    log "$name: setup failed: $why (log: $DIR/logs/$name.setup.log)"
    echo "setup failed: $why" >"$RESULTS/$name/status"
    "${name}_teardown" "$mnt" >>"$DIR/logs/$name.setup.log" 2>&1 || true
    return 0
  fi
  echo ok >"$RESULTS/$name/status"
  log "$name: up in $((SECONDS - t0)) s on $mnt"
  for ((r = 1; r <= RUNS; r++)); do
    SUFFIX=".r$r"
    suite_once "$name" "$mnt"
  done
  log "$name: done after $((SECONDS - t0)) s"
  if [ $KEEP = 0 ]; then
    log "$name: tearing down"
    "${name}_teardown" "$mnt" >>"$DIR/logs/$name.setup.log" 2>&1 || log "$name: teardown had errors"
  fi
}

# --- table ---------------------------------------------------------------------------

# key|what|kind|label; kind: bw/ops (IOR JSON summary, operation = what), md (mdtest
# summary line = what), io5 (IO500 score: bw, iops, total), pass (the two-mount check).
REAL_ROWS=(
  "fpp_w|write|bw|IOR file-per-process 1 MiB write, fsync (MiB/s)"
  "fpp_r|read|bw|IOR file-per-process 1 MiB read, cold (MiB/s)"
  "rand_w|write|ops|IOR 4 KiB random write, file per process, fsync (ops/s)"
  "rand_r|read|ops|IOR 4 KiB random read, cold (ops/s)"
  "shared_w|write|bw|IOR shared file N-1 strided 1 MiB write, fsync (MiB/s)"
  "shared_r|read|bw|IOR shared file N-1 strided 1 MiB read, cold (MiB/s)"
  "unal_w|write|bw|IOR shared file strided 47008-byte write, fsync (MiB/s)"
  "unal_r|read|bw|IOR shared file strided 47008-byte read, cold (MiB/s)"
  "two|-|pass|two mounts, strided 47008 B, ranks 0,2 / 1,3: IOR -W, -R -C through the other mount, sha256 on both = reference"
  "two|write|bw|two mounts: write, fsync (MiB/s)"
  "two|read|bw|two mounts: read of the other mount's blocks, verified (MiB/s)"
  "md_c|File creation|md|mdtest file create, 3901 B (ops/s)"
  "md_s|File stat|md|mdtest file stat, cold (ops/s)"
  "md_r|File read|md|mdtest file read, 3901 B, cold (ops/s)"
  "md_d|File removal|md|mdtest file remove (ops/s)"
  "io500|bw|io5|IO500 bandwidth score (GiB/s)"
  "io500|iops|io5|IO500 IOPS score (kIOPS)"
  "io500|total|io5|IO500 total score"
)

# one_value FILEBASE WHAT KIND: the figure of one run, or empty.
one_value() {
  local b=$1 what=$2 kind=$3
  case $kind in
    bw|ops)
      local f=bwMeanMIB; [ "$kind" = ops ] && f=OPsMean
      jq -r --arg op "$what" --arg f "$f" '[.summary[] | select(.operation == $op) | .[$f]][0] // empty' \
        "$b.json" 2>/dev/null || true ;;
    md)
      awk -v what="$what" '/SUMMARY rate/ { on = 1; next } /SUMMARY time/ { on = 0 }
        on && index($0, what) { sub(".*" what, ""); print $3; exit }' "$b.out" 2>/dev/null || true ;;
    io5)
      sed -n 's/^\[SCORE *\] Bandwidth \([0-9.e+-]*\) GiB\/s : IOPS \([0-9.e+-]*\) kiops : TOTAL \([0-9.e+-]*\).*/\1 \2 \3/p' \
        "$b.out" 2>/dev/null | awk -v w="$what" '{ print (w == "bw") ? $1 : (w == "iops") ? $2 : $3 }' ;;
  esac
}

median() {
  sort -g | awk '{ a[NR] = $1 } END { if (NR) print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

# cell NAME KEY WHAT KIND: sets CELL (what the table shows) and NUM (the median, or empty).
cell() {
  local n=$1 key=$2 what=$3 kind=$4 r s v vals=() fails=0 why=""
  CELL="" NUM=""
  for ((r = 1; r <= RUNS; r++)); do
    s=$(cat "$RESULTS/$n/$key.r$r.status" 2>/dev/null || echo "not run")
    if [ "$s" != ok ]; then fails=$((fails + 1)); [ -z "$why" ] && why=$s; continue; fi
    [ "$kind" = pass ] && continue
    v=$(one_value "$RESULTS/$n/$key.r$r" "$what" "$kind")
    if [ -z "$v" ]; then fails=$((fails + 1)); [ -z "$why" ] && why="FAIL: no figure in the output"; continue; fi
    vals+=("$v")
  done
  if [ "$kind" = pass ]; then
    if [ $fails = 0 ]; then CELL="ok ($RUNS/$RUNS)"; else CELL="$((RUNS - fails))/$RUNS ok; $why"; fi
    return 0
  fi
  if [ $fails -gt 0 ]; then
    [[ "$why" == FAIL* ]] || why="FAIL: $why"
    CELL="$why"; [ $RUNS -gt 1 ] && CELL+=" ($fails of $RUNS runs)"
    return 0
  fi
  NUM=$(printf '%s\n' "${vals[@]}" | median)
  CELL=$(fmt_num "$NUM")
}

print_table() {
  local names=($1) n row key what kind lab line peers=() first=1 sv
  for n in "${names[@]}"; do [ "$n" != stripefs ] && peers+=("$n"); done
  local ratios=0
  [[ " ${names[*]} " == *" stripefs "* ]] && [ "$(cat "$RESULTS/stripefs/status" 2>/dev/null)" = ok ] && ratios=1
  line="| workload (4 MPI ranks, -a POSIX) |"
  for n in "${names[@]}"; do line+=" $(label "$n") |"; done
  [ $ratios = 1 ] && for n in "${peers[@]}"; do line+=" StripeFS ÷ $(short "$n") |"; done
  echo "$line"
  line="|---|"
  for n in "${names[@]}"; do line+="---:|"; done
  [ $ratios = 1 ] && for n in "${peers[@]}"; do line+="---:|"; done
  echo "$line"
  for row in "${REAL_ROWS[@]}"; do
    IFS='|' read -r key what kind lab <<<"$row"
    line="| $lab |"
    declare -A num=()
    for n in "${names[@]}"; do
      if [ "$(cat "$RESULTS/$n/status" 2>/dev/null)" != ok ]; then
        if [ $first = 1 ]; then line+=" $(cat "$RESULTS/$n/status" 2>/dev/null || echo 'not run') |"
        else line+=" – |"; fi
        continue
      fi
      cell "$n" "$key" "$what" "$kind"
      line+=" ${CELL//|//} |"
      num[$n]=$NUM
    done
    if [ $ratios = 1 ]; then
      sv=${num[stripefs]:-}
      for n in "${peers[@]}"; do
        if [ -n "$sv" ] && [ -n "${num[$n]:-}" ]; then line+=" $(fmt_ratio "$sv" "${num[$n]}") |"
        else line+=" – |"; fi
      done
    fi
    unset num
    echo "$line"
    first=0
  done
  echo
  local q=""; [ $QUICK = 1 ] && q=" (--quick)"
  echo "Sizes$q: fpp -b $FPP_B per rank; random -b $RAND_B; shared -s $SHARED_SEG × 1 MiB; strided and two-mount -s $UNAL_SEG × 47008 B; mdtest -n $MD_N per rank; IO500 stonewall $IO5_SW s (INVALID for the list: under 300 s). Medians of $RUNS run(s)."
  if [ -n "${SFS_STRIPE_COUNT:-}" ]; then
    echo "StripeFS layout: sfs setstripe -c $SFS_STRIPE_COUNT on the mount root (1 MiB stripes)."
  else
    echo "StripeFS layout: the file system's default (1 stripe of 1 MiB, as Lustre's)."
  fi
  [ -f "$RESULTS/tools.txt" ] && echo "Tools: $(paste -sd '|' "$RESULTS/tools.txt" | sed 's/|/ · /g')."
  return 0
}

main() {
  parse_opts "$@"
  mkdir -p "$DIR/logs" "$RESULTS" "$DIR/mnt"
  rm -rf "$DIR"/logs/*.reason "${RESULTS:?}"/*
  need_pkgs iproute2 util-linux fuse3 jq
  sizes
  find_tools
  cd "$DIR"   # IO500 and mpirun leave nothing in the caller's directory
  reference_sum
  ns_up
  trap cleanup EXIT
  trap 'exit 130' INT TERM
  local name t0=$SECONDS
  for name in ${PEERS//,/ }; do
    CURRENT_PEER=$name
    run_peer "$name"
    CURRENT_PEER=""
  done
  print_table "${PEERS//,/ }" | tee "$RESULTS/table.md"
  log "all peers in $((SECONDS - t0)) s; table in $RESULTS/table.md, raw outputs in $RESULTS/NAME/, logs in $DIR/logs"
}

main "$@"
