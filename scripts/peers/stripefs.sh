# StripeFS for bench-peers.sh: scripts/cluster.sh (1 sfs-mds + NSERVERS sfs-oss, one OST
# each) with state in DIR/sfs, run in the benchmark's network namespace, mounted with
# sfs-mount; a second, independent sfs-mount (its own libsfs client) of the same MDS for
# the two-client check. Sourced by scripts/bench-peers.sh.
# stripefs_pids names the processes whose CPU time the suite charges to it: the first
# mount's sfs-mount (client), the MDS and every OSS (servers).

stripefs_setup() {
  local mnt=$1 d="$DIR/sfs"
  [ -f "$ROOT/scripts/cluster.sh" ] || fail "scripts/cluster.sh not found"
  in_ns bash "$ROOT/scripts/cluster.sh" down --dir "$d" >/dev/null 2>&1 || true
  rm -rf "$d"
  in_ns bash "$ROOT/scripts/cluster.sh" up --oss "$NSERVERS" --dir "$d" --mount "$mnt" --build "$BUILD" ||
    fail "cluster.sh up failed (logs in $d/logs)"
  # SFS_STRIPE_COUNT (bench-real.sh --stripe-count): the mount root's default layout, as
  # an administrator sets one for a scratch directory (`lfs setstripe -c -1` on Lustre).
  if [ -n "${SFS_STRIPE_COUNT:-}" ]; then
    in_ns "$BUILD/tools/sfs" setstripe -c "$SFS_STRIPE_COUNT" "$mnt" ||
      fail "sfs setstripe -c $SFS_STRIPE_COUNT $mnt failed"
  fi
}

stripefs_mount() {
  in_ns "$BUILD/client/fuse/sfs-mount" "$(cat "$DIR/sfs/mds.addr")" "$1" -o allow_other ||
    fail "sfs-mount $1 failed"
  wait_for 20 "sfs-mount" mountpoint -q "$1"
}

# The old sfs-mount is waited for (it flushes and closes after the unmount), so it
# does not run beside the new one and stripefs_pids names the new one.
stripefs_remount() {
  local old t0=$SECONDS
  old=$(pid_of_mount sfs-mount "$1") || old=""
  unmount_dir "$1"
  if [ -n "$old" ]; then
    timeout 20 tail --pid="$old" -s 0.1 -f /dev/null 2>/dev/null || echo "sfs-mount $old still running 20 s after unmount"
    [ $((SECONDS - t0)) -ge 3 ] && echo "sfs-mount $old took $((SECONDS - t0)) s to exit after unmount"
  fi
  stripefs_mount "$1"
}

# The second client: another sfs-mount process of the same MDS.
stripefs_mount2() { stripefs_mount "$1"; }
stripefs_umount2() { unmount_dir "$1"; }

stripefs_teardown() {
  local mnt=$1 d="$DIR/sfs" f
  for f in 2 3 4; do unmount_dir "$mnt.$f"; done
  unmount_dir "$mnt"
  in_ns bash "$ROOT/scripts/cluster.sh" down --dir "$d" || true
  rm -rf "$d"
}

stripefs_pids() {
  local f p
  for f in "$DIR/sfs/pids/"*.pid; do
    [ -e "$f" ] && echo "server $(cat "$f")"
  done
  p=$(pid_of_mount sfs-mount "$DIR/mnt/stripefs") && echo "client $p"
  return 0
}
