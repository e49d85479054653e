# The benchmark suite that bench-peers.sh runs on every mount, and the table it prints.
# Sourced by scripts/bench-peers.sh (uses its DIR, RESULTS, QUICK, BUILD, log, ...).
#
# Every workload is sfs-bench -a POSIX with 4 tasks. Before each read phase the peer's
# client is remounted (NAME_remount, where the peer has one: FUSE clients such as
# ceph-fuse keep data caches of their own that drop_caches does not reach) and the
# kernel's caches are dropped. Each step's JSON goes to RESULTS/NAME/STEP.json.
#
# The two-client check (two_mount_check, after the suite): NAME_mount2 mounts a second,
# independent client of the same file system on MNT.2; sfs-bench -o MNT/two,MNT.2/two puts
# even tasks on the first mount and odd tasks on the second, and with -C each task reads
# back (verified) what its neighbour wrote through the other mount, page cache warm.
# TWO_RUNS runs, each in RESULTS/NAME/two_K.{json,err,status}; status is "ok" or
# "FAIL: reason". A failure never stops the script: peers are expected to fail it.
# The four-client check is the same with four independent clients (MNT, MNT.2, MNT.3,
# MNT.4; NAME_mount2 mounts each extra one) and one task per client (issue 6's "shared-file
# strided write with 4 mounts"), in RESULTS/NAME/four_K.*.
#
# CPU time per GiB moved (the CPU_STEPS steps): a peer that defines NAME_pids (lines
# "client PID" / "server PID") has utime+stime of those processes read from /proc/PID/stat
# before and after the step; RESULTS/NAME/KEY.cpu gets "client S", "server S" and "total S",
# the CPU seconds per GiB the step moved (summed over the processes of each role, and over
# all), and KEY.cpu_raw the seconds and bytes behind them. Compare totals across peers: a
# passthrough daemon does in one process what StripeFS splits between client and servers.

NTASKS=4
TWO_RUNS=3
CPU_STEPS=" fpp_w fpp_r "

suite_sizes() {
  if [ $QUICK = 1 ]; then
    FPP_B=16M; RAND_B=4M; SHARED_SEG=8; UNAL_SEG=64; MD_N=100
  else
    FPP_B=256M; RAND_B=32M; SHARED_SEG=64; UNAL_SEG=512; MD_N=1000
  fi
  STEP_TIMEOUT=${STEP_TIMEOUT:-600}
}

# find_bench: sets BENCH to sfs-bench, building it (and the daemons) when missing.
find_bench() {
  local targets="mds/sfs-mds oss/sfs-oss client/fuse/sfs-mount tools/sfs-bench" t missing=0
  for t in $targets; do [ -x "$BUILD/$t" ] || missing=1; done
  if [ $missing = 1 ]; then
    log "building StripeFS into $BUILD (the four binaries this needs)"
    need_pkgs meson ninja-build
    [ -f "$BUILD/build.ninja" ] || meson setup "$BUILD" "$ROOT" --buildtype=release >>"$DIR/logs/build.log"
    # shellcheck disable=SC2086
    ninja -C "$BUILD" -j"${NINJA_JOBS:-2}" $targets >>"$DIR/logs/build.log" 2>&1 ||
      die "build failed; see $DIR/logs/build.log"
  fi
  BENCH="$BUILD/tools/sfs-bench"
}

# cold NAME MNT: remount the peer's client and drop the kernel's caches.
cold() {
  if declare -F "${1}_remount" >/dev/null; then
    "${1}_remount" "$2" >>"$DIR/logs/$1.setup.log" 2>&1 || { log "$1: remount failed"; return 1; }
  fi
  sync
  echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true
}

# cpu_snapshot NAME: "role pid ticks" for each of the peer's processes (utime + stime,
# fields 14 and 15 of /proc/PID/stat; the command name in field 2 may hold spaces).
cpu_snapshot() {
  declare -F "${1}_pids" >/dev/null || return 0
  local role pid stat rest f
  while read -r role pid; do
    stat=$(cat "/proc/$pid/stat" 2>/dev/null) || continue
    rest=${stat##*) }
    # rest starts at field 3 (state): utime and stime are its 12th and 13th words.
    read -r -a f <<<"$rest"
    echo "$role $pid $((f[11] + f[12]))"
  done < <("${1}_pids")
}

# cpu_account NAME KEY BEFORE AFTER PHASE: writes RESULTS/NAME/KEY.cpu from two snapshots and
# the bytes the step's PHASE moved. A process present in only one snapshot is left out.
cpu_account() {
  local name=$1 key=$2 bytes
  bytes=$(jq -r --arg p "$5" '[.phases[] | select(.phase == $p) | .iterations[].bytes] | add // 0' \
    "$RESULTS/$name/$key.json" 2>/dev/null || echo 0)
  LC_ALL=C awk -v bytes="${bytes:-0}" -v hz="$(getconf CLK_TCK)" -v raw="$RESULTS/$name/$key.cpu_raw" '
    NR == FNR { before[$1 " " $2] = $3; next }
    ($1 " " $2) in before { s[$1] += ($3 - before[$1 " " $2]) / hz; n[$1]++ }
    END {
      gib = bytes / 1073741824
      printf "bytes %d\n", bytes > raw
      for (r in s) {
        printf "%s_seconds %.3f %d\n", r, s[r], n[r] > raw
        if (gib > 0) printf "%s %.4f\n", r, s[r] / gib
        all += s[r]
      }
      if (gib > 0 && length(s) > 0) printf "total %.4f\n", all / gib
    }' "$3" "$4" >"$RESULTS/$name/$key.cpu"
}

# step NAME KEY ARGS...: one sfs-bench run, JSON into RESULTS/NAME/KEY.json. A failure is
# noted in RESULTS/NAME/error and the suite goes on with the next step.
step() {
  local name=$1 key=$2 rc=0 t0=$SECONDS; shift 2
  # Never benchmark the directory under a mount that went away.
  if [ "$name" != local ] && ! mountpoint -q "$DIR/mnt/$name"; then
    log "$name: $key skipped: $DIR/mnt/$name is not mounted"
    echo "$key: not mounted" >>"$RESULTS/$name/error"
    return 1
  fi
  echo "$ $BENCH $*" >>"$DIR/logs/$name.suite.log"
  local cpu=0
  [[ "$CPU_STEPS" == *" $key "* ]] && [ -z "${SUFFIX:-}" ] && cpu=1
  [ $cpu = 1 ] && cpu_snapshot "$name" >"$RESULTS/$name/$key.cpu_before"
  timeout -s INT -k 30 "$STEP_TIMEOUT" "$BENCH" "$@" --json \
    >"$RESULTS/$name/$key${SUFFIX:-}.json" 2>>"$DIR/logs/$name.suite.log" || rc=$?
  if [ $cpu = 1 ]; then
    cpu_snapshot "$name" >"$RESULTS/$name/$key.cpu_after"
    local phase="write"; [ "$key" = fpp_r ] && phase="read"
    cpu_account "$name" "$key" "$RESULTS/$name/$key.cpu_before" "$RESULTS/$name/$key.cpu_after" "$phase"
  fi
  if [ $rc != 0 ]; then
    log "$name: $key failed (exit $rc; see $DIR/logs/$name.suite.log)"
    echo "$key: exit $rc" >>"$RESULTS/$name/error"
    return 1
  fi
  log "$name: $key done in $((SECONDS - t0)) s"
}

# run_suite NAME MNT: the one-mount suite RUNS times; run r > 1 writes KEY.rR.json.
run_suite() {
  local r ok=0
  for ((r = 1; r <= RUNS; r++)); do
    SUFFIX=""; [ "$r" -gt 1 ] && SUFFIX=".r$r"
    suite_once "$1" "$2" || ok=1
  done
  SUFFIX=""
  return $ok
}

suite_once() {
  local n=$1 m=$2 ok=0 io=(ior -a POSIX -np $NTASKS)
  mkdir -p "$m/md"
  # File per process, 1 MiB transfers, fsync; read cold.
  step "$n" fpp_w "${io[@]}" -F -b $FPP_B -t 1M -w -e -k -o "$m/fpp" || ok=1
  cold "$n" "$m" || ok=1
  step "$n" fpp_r "${io[@]}" -F -b $FPP_B -t 1M -r --drop-caches -o "$m/fpp" || ok=1
  # 4 KiB random write, fsync at the end (so write-back caches pay for what they hold).
  step "$n" rand_w "${io[@]}" -F -b $RAND_B -t 4K -z -w -e -o "$m/randw" || ok=1
  # 4 KiB random read, cold, of files written with 1 MiB transfers.
  step "$n" rand_prep "${io[@]}" -F -b $RAND_B -t 1M -w -e -k -o "$m/rand" || ok=1
  cold "$n" "$m" || ok=1
  step "$n" rand_r "${io[@]}" -F -b $RAND_B -t 4K -z -r --drop-caches -o "$m/rand" || ok=1
  # Shared file, N-to-1 strided, 1 MiB blocks, verified; read back another task's blocks.
  step "$n" shared_w "${io[@]}" -b 1M -t 1M -s $SHARED_SEG -w -W -e -k -o "$m/shared" || ok=1
  cold "$n" "$m" || ok=1
  step "$n" shared_r "${io[@]}" -b 1M -t 1M -s $SHARED_SEG -r -R -C --drop-caches -o "$m/shared" || ok=1
  # Same with 47008-byte blocks: no block is aligned to a page or a stripe.
  step "$n" unal_w "${io[@]}" -b 47008 -t 47008 -s $UNAL_SEG -w -W -e -k -o "$m/unal" || ok=1
  cold "$n" "$m" || ok=1
  step "$n" unal_r "${io[@]}" -b 47008 -t 47008 -s $UNAL_SEG -r -R -C --drop-caches -o "$m/unal" || ok=1
  # mdtest: files only, a directory per task.
  step "$n" md mdtest -a POSIX -np $NTASKS -n $MD_N -F -u -d "$m/md" || ok=1
  rm -rf "${m:?}/md" "$m"/fpp.* "$m"/rand.* "$m"/randw.* "$m/shared" "$m/unal" 2>/dev/null || true
  return $ok
}

# two_reason K NAME RC [KEY]: one line on why run K failed, from its stderr and JSON.
two_reason() {
  local k=$1 n=$2 rc=$3 key=${4:-two} line bad
  if [ "$rc" = 124 ] || [ "$rc" = 130 ] || [ "$rc" = 137 ]; then
    echo "timed out after ${STEP_TIMEOUT}s"; return
  fi
  line=$(grep -m1 -v 'more verify errors' "$RESULTS/$n/${key}_$k.err" 2>/dev/null |
    sed -e 's/^sfs-bench ior: //' -e "s|$DIR/mnt/||g" | cut -c1-150)
  bad=$(jq -r '.verify_errors // 0' "$RESULTS/$n/${key}_$k.json" 2>/dev/null || echo 0)
  [ "${bad:-0}" -gt 0 ] 2>/dev/null && line="$bad bad words; first: $line"
  echo "${line:-exit $rc, nothing on stderr}" | tr '|' '/'
}

# two_mount_check NAME MNT: the two-client check, TWO_RUNS times on the same file name
# (so stale entries of a previous run are part of the test). Never fails.
two_mount_check() { mount_check "$1" "$2" 2 two; }
# four_mount_check NAME MNT: the same with four clients, one task each.
four_mount_check() { mount_check "$1" "$2" 4 four; }

# mount_check NAME MNT NCLIENTS KEY: NCLIENTS-1 extra clients on MNT.2 ... (NAME_mount2),
# then TWO_RUNS verified strided runs with the tasks spread over the clients round-robin,
# each reading back its neighbour's blocks through another client. Never fails.
mount_check() {
  local n=$1 m=$2 nc=$3 key=$4 k rc j paths mounted=()
  local args=(ior -a POSIX -np $NTASKS -b 47008 -t 47008 -s $UNAL_SEG -w -W -e -r -R -C)
  rm -f "$RESULTS/$n"/"${key}"_*
  if [ "$n" != local ] && ! mountpoint -q "$m"; then
    for ((k = 1; k <= TWO_RUNS; k++)); do echo "FAIL: $m not mounted" >"$RESULTS/$n/${key}_$k.status"; done
    return 0
  fi
  paths="$m/$key"
  for ((j = 2; j <= nc; j++)); do
    log "$n: $key-client check: client $j on $m.$j"
    if ! "${n}_mount2" "$m.$j" >>"$DIR/logs/$n.setup.log" 2>&1 || ! mountpoint -q "$m.$j"; then
      log "$n: client $j failed to mount (see $DIR/logs/$n.setup.log)"
      for ((k = 1; k <= TWO_RUNS; k++)); do echo "FAIL: mount $j failed" >"$RESULTS/$n/${key}_$k.status"; done
      "${n}_umount2" "$m.$j" >>"$DIR/logs/$n.setup.log" 2>&1 || true
      for j in "${mounted[@]}"; do "${n}_umount2" "$j" >>"$DIR/logs/$n.setup.log" 2>&1 || true; done
      return 0
    fi
    mounted+=("$m.$j")
    paths+=",$m.$j/$key"
  done
  for ((k = 1; k <= TWO_RUNS; k++)); do
    rc=0
    echo "$ $BENCH ${args[*]} -o $paths --json   # $key-client run $k" >>"$DIR/logs/$n.suite.log"
    timeout -s INT -k 30 "$STEP_TIMEOUT" "$BENCH" "${args[@]}" -o "$paths" --json \
      >"$RESULTS/$n/${key}_$k.json" 2>"$RESULTS/$n/${key}_$k.err" || rc=$?
    cat "$RESULTS/$n/${key}_$k.err" >>"$DIR/logs/$n.suite.log"
    if [ $rc = 0 ]; then
      echo ok >"$RESULTS/$n/${key}_$k.status"
    else
      echo "FAIL: $(two_reason "$k" "$n" "$rc" "$key")" >"$RESULTS/$n/${key}_$k.status"
      rm -f "$m/$key" 2>/dev/null || true  # what the failed run left
      for j in "${mounted[@]}"; do rm -f "$j/$key" 2>/dev/null || true; done
    fi
    log "$n: $key-client run $k: $(cat "$RESULTS/$n/${key}_$k.status")"
  done
  rm -f "$m/$key" 2>/dev/null || true
  for j in "${mounted[@]}"; do
    "${n}_umount2" "$j" >>"$DIR/logs/$n.setup.log" 2>&1 || log "$n: could not unmount $j"
  done
  return 0
}

# two_cell NAME [KEY]: "passes/runs", and the first failure's reason if any.
two_cell() {
  local k pass=0 runs=0 why="" s key=${2:-two}
  for ((k = 1; k <= TWO_RUNS; k++)); do
    [ -f "$RESULTS/$1/${key}_$k.status" ] || continue
    s=$(cat "$RESULTS/$1/${key}_$k.status"); runs=$((runs + 1))
    if [ "$s" = ok ]; then pass=$((pass + 1)); elif [ -z "$why" ]; then why=$s; fi
  done
  [ $runs = 0 ] && { echo "not run"; return; }
  echo "$pass/$runs${why:+; $why}"
}

# two_median NAME PHASE [KEY]: the median bandwidth of PHASE over the passing runs, or empty.
two_median() {
  local k v=() key=${3:-two}
  for ((k = 1; k <= TWO_RUNS; k++)); do
    [ "$(cat "$RESULTS/$1/${key}_$k.status" 2>/dev/null)" = ok ] || continue
    v+=("$(jq -r --arg p "$2" '.phases[] | select(.phase == $p) | .bw_mib_s.mean' "$RESULTS/$1/${key}_$k.json")")
  done
  [ ${#v[@]} = 0 ] && return 0
  printf '%s\n' "${v[@]}" | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

# Rows of the table: key|label|json file|phase|field ("bw" MiB/s, "ops" ops/s; "pass" and
# "med": the two-client check's passes, and its median MiB/s over the passing runs; "cpu":
# CPU s per GiB of the role named in the phase column, from FILE.cpu).
ROWS=(
  "fpp_w|file-per-process 1 MiB write, fsync (MiB/s)|fpp_w|write|bw"
  "fpp_r|file-per-process 1 MiB read, cold (MiB/s)|fpp_r|read|bw"
  "rand_w|4 KiB random write, fsync at the end (ops/s)|rand_w|write|ops"
  "rand_r|4 KiB random read, cold (ops/s)|rand_r|read|ops"
  "shared_w|shared file N-1 strided 1 MiB write, verified (MiB/s)|shared_w|write|bw"
  "shared_r|shared file N-1 strided 1 MiB read, cold, verified (MiB/s)|shared_r|read|bw"
  "unal_w|shared file strided 47008-byte write, verified (MiB/s)|unal_w|write|bw"
  "unal_r|shared file strided 47008-byte read, cold, verified (MiB/s)|unal_r|read|bw"
  "md_c|mdtest file create (ops/s)|md|file_create|ops"
  "md_s|mdtest file stat (ops/s)|md|file_stat|ops"
  "md_r|mdtest file remove (ops/s)|md|file_remove|ops"
  "fpp_w_cc|file-per-process 1 MiB write: client CPU s per GiB (lower is better)|fpp_w|client|cpu"
  "fpp_w_cs|file-per-process 1 MiB write: servers' CPU s per GiB (lower is better)|fpp_w|server|cpu"
  "fpp_w_ct|file-per-process 1 MiB write: client + servers CPU s per GiB (lower is better)|fpp_w|total|cpu"
  "fpp_r_cc|file-per-process 1 MiB read: client CPU s per GiB (lower is better)|fpp_r|client|cpu"
  "fpp_r_cs|file-per-process 1 MiB read: servers' CPU s per GiB (lower is better)|fpp_r|server|cpu"
  "fpp_r_ct|file-per-process 1 MiB read: client + servers CPU s per GiB (lower is better)|fpp_r|total|cpu"
  "two_p|two mounts: strided 47008-byte write / read through the other mount, warm, verified: passes of 3|two|-|pass"
  "two_w|two mounts: write (MiB/s, median of passing runs)|two|write|med"
  "two_r|two mounts: read through the other mount, warm, verified (MiB/s, median)|two|read|med"
  "four_p|four mounts, one task each: strided 47008-byte write / read through another mount, verified: passes of 3|four|-|pass"
  "four_w|four mounts: write (MiB/s, median of passing runs)|four|write|med"
  "four_r|four mounts: read through another mount, warm, verified (MiB/s, median)|four|read|med"
)

# value NAME FILE PHASE FIELD: the phase's mean figure, or empty.
value() {
  [ "$4" = med ] && { two_median "$1" "$3" "$2"; return; }
  [ "$4" = pass ] && return 0
  if [ "$4" = cpu ]; then
    awk -v r="$3" '$1 == r { print $2 }' "$RESULTS/$1/$2.cpu" 2>/dev/null || true
    return 0
  fi
  local f field=bw_mib_s v=()
  [ "$4" = ops ] && field=ops_per_s
  # The median over the runs (KEY.json, KEY.r2.json, ...; --runs), or the one run.
  for f in "$RESULTS/$1/$2.json" "$RESULTS/$1/$2".r*.json; do
    [ -s "$f" ] || continue
    v+=($(jq -r --arg p "$3" --arg k "$field" \
      'if .ok then (.phases[] | select(.phase == $p) | .[$k].mean) else empty end' "$f" 2>/dev/null || true))
  done
  [ ${#v[@]} = 0 ] && return 0
  printf '%s\n' "${v[@]}" | sort -g |
    awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

fmt_num() {
  LC_ALL=C awk -v v="$1" 'BEGIN { if (v >= 100) printf "%.0f", v; else if (v >= 1) printf "%.1f", v; else printf "%.3f", v }'
}
fmt_ratio() { LC_ALL=C awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f×", a / b; else print "–" }'; }

short() {
  case "$1" in
    stripefs) echo StripeFS ;; local) echo "local dir" ;; moosefs) echo MooseFS ;;
    fuse-passthrough) echo "FUSE passthrough" ;;
    glusterfs) echo GlusterFS ;; ceph) echo CephFS ;; *) echo "$1" ;;
  esac
}

label() {
  case "$1" in
    stripefs) echo "StripeFS ($NSERVERS OSS)" ;; local) echo "local dir" ;;
    fuse-passthrough) echo "FUSE passthrough (sfs-fuse-passthrough)" ;;
    moosefs) echo "MooseFS ($NSERVERS chunkservers)" ;; glusterfs) echo "GlusterFS ($NSERVERS bricks)" ;;
    ceph) echo "CephFS ($NSERVERS OSDs, ceph-fuse)" ;; *) echo "$1" ;;
  esac
}

# print_table "NAME NAME ...": one markdown table, figures then StripeFS's ratio to each peer.
print_table() {
  local names=($1) n row key lab file phase field line v sv peers=()
  for n in "${names[@]}"; do [ "$n" != stripefs ] && peers+=("$n"); done
  local sfs_ok=0 first=1
  [[ " ${names[*]} " == *" stripefs "* ]] && [ -s "$RESULTS/stripefs/fpp_w.json" ] && sfs_ok=1
  line="| workload |"
  for n in "${names[@]}"; do line+=" $(label "$n") |"; done
  if [ $sfs_ok = 1 ]; then for n in "${peers[@]}"; do line+=" StripeFS ÷ $(short "$n") |"; done; fi
  echo "$line"
  line="|---|"
  for n in "${names[@]}"; do line+="---:|"; done
  if [ $sfs_ok = 1 ]; then for n in "${peers[@]}"; do line+="---:|"; done; fi
  echo "$line"
  for row in "${ROWS[@]}"; do
    IFS='|' read -r key lab file phase field <<<"$row"
    line="| $lab |"
    for n in "${names[@]}"; do
      if [ "$(cat "$RESULTS/$n/status" 2>/dev/null)" != ok ] && [ ! -s "$RESULTS/$n/$file.json" ] &&
        [ ! -f "$RESULTS/$n/${file}_1.status" ]; then
        # A peer that never ran: the reason in the first row, a dash below it.
        if [ $first = 1 ]; then line+=" $(cat "$RESULTS/$n/status" 2>/dev/null || echo 'not run') |"
        else line+=" – |"; fi
        continue
      fi
      if [ "$field" = pass ]; then line+=" $(two_cell "$n" "$file") |"; continue; fi
      v=$(value "$n" "$file" "$phase" "$field")
      if [ -n "$v" ]; then line+=" $(fmt_num "$v") |"
      elif [ "$field" = cpu ]; then line+=" – |"  # no such process, or not measured
      else line+=" failed |"; fi
    done
    if [ $sfs_ok = 1 ]; then
      sv=$(value stripefs "$file" "$phase" "$field")
      for n in "${peers[@]}"; do
        v=$(value "$n" "$file" "$phase" "$field")
        if [ -n "$sv" ] && [ -n "$v" ]; then line+=" $(fmt_ratio "$sv" "$v") |"; else line+=" – |"; fi
      done
    fi
    echo "$line"
    first=0
  done
}
