# Helpers shared by scripts/bench-qos.sh, bench-capcost.sh and bench-metrics.sh (local
# clusters started by hand, each daemon's output under $WORK). Sourced, not run.
# Expects from the caller: BUILD, WORK, MDS (for mount_fs) and a pids array.

# wait_line FILE PREFIX: the first line of FILE starting with PREFIX (deadline 30 s).
wait_line() {
  local deadline=$((SECONDS + 30))
  until grep -q "^$2" "$1" 2>/dev/null; do
    [ $SECONDS -lt $deadline ] || { echo "no '$2' in $1" >&2; exit 1; }
    sleep 0.05  # polls a condition, with a deadline
  done
  grep -m1 "^$2" "$1" | cut -d' ' -f2
}

# mount_fs DIR [OPTS]: sfs-mount in the background until DIR is a mount point.
mount_fs() {
  mkdir -p "$1"
  "$BUILD/client/fuse/sfs-mount" "$MDS" "$1" -f -o "allow_other${2:+,$2}" \
    >"$WORK/$(basename "$1").log" 2>&1 & pids+=($!)
  local deadline=$((SECONDS + 30))
  until mountpoint -q "$1"; do
    [ $SECONDS -lt $deadline ] || { echo "mount $1 failed" >&2; cat "$WORK/$(basename "$1").log" >&2; exit 1; }
    sleep 0.05  # polls a condition, with a deadline
  done
}
