# The FUSE ceiling for bench-peers.sh (peer `fuse-passthrough`): sfs-fuse-passthrough
# (tools/bench/fuse_passthrough.cc), a plain passthrough FUSE file system with sfs-mount's
# FUSE settings, mirroring DIR/passthrough/data (the same disk as every peer's data) on the
# mount point. Whatever a FUSE file system does beyond forwarding requests to the disk is
# what separates StripeFS from this. Its "second mount" is a second passthrough daemon over
# the same backing directory. No network: the daemon runs outside the namespace.
# Sourced by scripts/bench-peers.sh.

PT_DIR_NAME=passthrough

pt_bin() { echo "$BUILD/tools/sfs-fuse-passthrough"; }

# pt_start MNT PIDFILE: runs one passthrough daemon on MNT in the foreground, in the
# background of this shell, and waits for the mount.
pt_start() {
  local mnt=$1 pidfile=$2 bin; bin=$(pt_bin)
  setsid "$bin" "$DIR/$PT_DIR_NAME/data" "$mnt" -f -o allow_other \
    >>"$DIR/logs/fuse-passthrough.daemon.log" 2>&1 </dev/null &
  echo $! >"$pidfile"
  wait_for 20 "sfs-fuse-passthrough on $mnt" mountpoint -q "$mnt"
}

# pt_stop MNT PIDFILE: unmounts MNT and waits for its daemon to exit.
pt_stop() {
  unmount_dir "$1"
  kill_pidfile "$2"
}

fuse-passthrough_setup() {
  local mnt=$1 d="$DIR/$PT_DIR_NAME"
  if [ ! -x "$(pt_bin)" ]; then
    ninja -C "$BUILD" -j"${NINJA_JOBS:-2}" tools/sfs-fuse-passthrough ||
      fail "cannot build tools/sfs-fuse-passthrough in $BUILD"
  fi
  rm -rf "$d"; mkdir -p "$d/data"
  pt_start "$mnt" "$d/daemon.pid"
}

fuse-passthrough_remount() {
  local d="$DIR/$PT_DIR_NAME"
  pt_stop "$1" "$d/daemon.pid"
  pt_start "$1" "$d/daemon.pid"
}

fuse-passthrough_mount2() { pt_start "$1" "$DIR/$PT_DIR_NAME/daemon${1##*.}.pid"; }
fuse-passthrough_umount2() { pt_stop "$1" "$DIR/$PT_DIR_NAME/daemon${1##*.}.pid"; }

fuse-passthrough_teardown() {
  local mnt=$1 d="$DIR/$PT_DIR_NAME"
  for k in 2 3 4; do pt_stop "$mnt.$k" "$d/daemon$k.pid"; done
  pt_stop "$mnt" "$d/daemon.pid"
  rm -rf "$d"
}

# The processes whose CPU time the suite charges to this peer: the daemon is the client
# (there is no server process: the backing file system's work runs in the daemon).
fuse-passthrough_pids() {
  local p; p=$(cat "$DIR/$PT_DIR_NAME/daemon.pid" 2>/dev/null) || return 0
  echo "client $p"
}
