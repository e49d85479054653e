# StripeFS for bench-peers.sh: scripts/cluster.sh (1 sfs-mds + NSERVERS sfs-oss, one OST
# each) with state in DIR/sfs, run in the benchmark's network namespace, mounted with
# sfs-mount. Sourced by scripts/bench-peers.sh.

stripefs_setup() {
  local mnt=$1 d="$DIR/sfs"
  [ -f "$ROOT/scripts/cluster.sh" ] || fail "scripts/cluster.sh not found"
  in_ns bash "$ROOT/scripts/cluster.sh" down --dir "$d" >/dev/null 2>&1 || true
  rm -rf "$d"
  in_ns bash "$ROOT/scripts/cluster.sh" up --oss "$NSERVERS" --dir "$d" --mount "$mnt" --build "$BUILD" ||
    fail "cluster.sh up failed (logs in $d/logs)"
}

stripefs_remount() {
  local mnt=$1 d="$DIR/sfs"
  unmount_dir "$mnt"
  in_ns "$BUILD/client/fuse/sfs-mount" "$(cat "$d/mds.addr")" "$mnt" -o allow_other
  wait_for 20 "sfs-mount" mountpoint -q "$mnt"
}

stripefs_teardown() {
  local mnt=$1 d="$DIR/sfs"
  unmount_dir "$mnt"
  in_ns bash "$ROOT/scripts/cluster.sh" down --dir "$d" || true
  rm -rf "$d"
}
