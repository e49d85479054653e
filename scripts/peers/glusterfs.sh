# GlusterFS 10 for bench-peers.sh: one glusterd with its own working directory, a
# distributed volume over NSERVERS bricks (local directories on the same disk), and the
# FUSE client (mount -t glusterfs), inside the benchmark's network namespace. Gluster
# refuses 127.0.0.1 (and "localhost") as a brick host, so bricks are on NS_GLUSTER_ADDR
# (127.0.0.2, on the namespace's lo); bricks on the root file system's host need `force`.
# State in DIR/glusterfs; glusterd's CLI socket and brick pid files stay in /var/run/gluster
# (one glusterd per machine). The two-client check mounts a second glusterfs client
# process (mount -t glusterfs again, its own log). Sourced by scripts/bench-peers.sh.

GLUSTER_VOL=sfsbench

gluster_cli() { in_ns gluster --mode=script "$@"; }

glusterfs_setup() {
  local mnt=$1 d="$DIR/glusterfs" k bricks=()
  need_pkgs glusterfs-server glusterfs-client
  glusterfs_teardown "$mnt"
  mkdir -p "$d/state" "$d/logs"
  sed "s|option working-directory .*|option working-directory $d/state|" \
    /etc/glusterfs/glusterd.vol >"$d/glusterd.vol"
  echo "starting glusterd (working directory $d/state)"
  in_ns glusterd -f "$d/glusterd.vol" -p "$d/glusterd.pid" -l "$d/logs/glusterd.log" ||
    fail "glusterd did not start"
  wait_for 30 "glusterd" gluster_cli volume list
  for ((k = 0; k < NSERVERS; k++)); do
    mkdir -p "$d/brick$k"
    bricks+=("$NS_GLUSTER_ADDR:$d/brick$k")
  done
  gluster_cli volume create "$GLUSTER_VOL" transport tcp "${bricks[@]}" force ||
    fail "gluster volume create failed"
  gluster_cli volume start "$GLUSTER_VOL" || fail "gluster volume start failed"
  glusterfs_mount "$mnt"
}

# glusterfs_mount MNT [LOGNAME]
glusterfs_mount() {
  in_ns mount -t glusterfs -o log-file="$DIR/glusterfs/logs/${2:-client}.log" \
    "$NS_GLUSTER_ADDR:/$GLUSTER_VOL" "$1" || fail "mount -t glusterfs failed"
  wait_for 20 "glusterfs mount" mountpoint -q "$1"
}

glusterfs_remount() { unmount_dir "$1"; glusterfs_mount "$1"; }
glusterfs_mount2() { glusterfs_mount "$1" "client${1##*.}"; }
glusterfs_umount2() { unmount_dir "$1"; }

glusterfs_teardown() {
  local mnt=$1 d="$DIR/glusterfs" f
  for f in 2 3 4; do unmount_dir "$mnt.$f"; done
  unmount_dir "$mnt"
  if [ -f "$d/glusterd.pid" ]; then
    gluster_cli volume stop "$GLUSTER_VOL" force || true
    gluster_cli volume delete "$GLUSTER_VOL" || true
  fi
  # Brick processes left behind (volume stop failed): their pid files name them.
  for f in /var/run/gluster/vols/"$GLUSTER_VOL"/*.pid; do [ -f "$f" ] && kill_pidfile "$f"; done
  kill_pidfile "$d/glusterd.pid"
  rm -rf "$d"
}

# For the suite's CPU rows (written blind: not run in the session that added it): the
# first mount's glusterfs client process as client, glusterd and the brick processes
# (their pid files) as servers.
glusterfs_pids() {
  local f p
  for f in "$DIR/glusterfs/glusterd.pid" /var/run/gluster/vols/"$GLUSTER_VOL"/*.pid; do
    p=$(cat "$f" 2>/dev/null) && [[ "$p" =~ ^[0-9]+$ ]] && echo "server $p"
  done
  p=$(pid_of_mount glusterfs "$DIR/mnt/glusterfs") && echo "client $p"
  return 0
}
