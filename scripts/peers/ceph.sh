# CephFS (Ceph 16) for bench-peers.sh, deployed by hand (no cephadm): 1 mon, 1 mgr,
# NSERVERS BlueStore OSDs each on a sparse file (ceph-osd --mkfs with bluestore_block_path),
# 1 MDS, size-1 pools, mounted with ceph-fuse; all on 127.0.0.1 inside the benchmark's
# network namespace, auth off, every file (conf, data, logs, sockets, pid files) under
# DIR/ceph. The two-client check mounts a second ceph-fuse as client.bench2 (its own
# session, admin socket and log). Sourced by scripts/bench-peers.sh.

CEPH_OSD_SIZE=${CEPH_OSD_SIZE:-20G}   # sparse: only what is written takes space

ceph_conf() {
  local d=$1
  cat <<CONF
[global]
fsid = $(cat "$d/fsid")
mon_host = v2:127.0.0.1:3300
public_addr = 127.0.0.1
cluster_addr = 127.0.0.1
auth_cluster_required = none
auth_service_required = none
auth_client_required = none
run_dir = $d/run
admin_socket = $d/run/\$name.asok
pid_file = $d/run/\$name.pid
log_file = $d/log/\$name.log
mon_cluster_log_file = $d/log/cluster.log
keyring = $d/keyring
osd_pool_default_size = 1
osd_pool_default_min_size = 1
mon_allow_pool_size_one = true
mon_allow_pool_delete = true
osd_pool_default_pg_autoscale_mode = off
osd_crush_chooseleaf_type = 0
mon_warn_on_pool_no_redundancy = false
[mon]
mon_data = $d/mon/\$name
[mgr]
mgr_data = $d/mgr/\$name
[osd]
osd_data = $d/osd/\$id
osd_objectstore = bluestore
# Not inside osd_data: BlueStore links osd_data/block to this path (a loop if it is that).
bluestore_block_path = $d/blocks/osd.\$id.img
bluestore_block_create = true
bluestore_block_size = $(numfmt --from=iec "$CEPH_OSD_SIZE")
osd_memory_target = 1073741824
[mds]
mds_data = $d/mds/\$name
CONF
}

cephc() { in_ns ceph -c "$DIR/ceph/ceph.conf" "$@"; }

ceph_mds_active() { cephc mds stat 2>/dev/null | grep -q 'up:active'; }

ceph_setup() {
  local mnt=$1 d="$DIR/ceph" k uuid id
  need_pkgs ceph-mon ceph-mgr ceph-osd ceph-mds ceph-fuse ceph-common
  ceph_teardown "$mnt"
  mkdir -p "$d"/{run,log,mon,mgr/ceph-x,mds/ceph-a,osd,blocks}
  cat /proc/sys/kernel/random/uuid >"$d/fsid"
  ceph_conf "$d" >"$d/ceph.conf"
  local conf="$d/ceph.conf"
  # Monitor: a monmap with one mon, a keyring (mkfs wants one even with auth off).
  ceph-authtool --create-keyring "$d/keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
  monmaptool --create --fsid "$(cat "$d/fsid")" --addv a "[v2:127.0.0.1:3300]" "$d/monmap" >/dev/null
  in_ns ceph-mon -c "$conf" --mkfs -i a --monmap "$d/monmap" --keyring "$d/keyring" || fail "ceph-mon --mkfs failed"
  echo "starting ceph-mon"
  in_ns ceph-mon -c "$conf" -i a || fail "ceph-mon did not start"
  wait_for 30 "ceph-mon" cephc -s --connect-timeout 5
  echo "starting ceph-mgr"
  in_ns ceph-mgr -c "$conf" -i x || fail "ceph-mgr did not start"
  for ((k = 0; k < NSERVERS; k++)); do
    uuid=$(cat /proc/sys/kernel/random/uuid)
    id=$(cephc osd new "$uuid") || fail "ceph osd new failed"
    mkdir -p "$d/osd/$id"
    echo "osd.$id: mkfs (BlueStore on a $CEPH_OSD_SIZE sparse file)"
    # --mkfs asks the mon for the OSD map: it too must run in the namespace.
    in_ns ceph-osd -c "$conf" -i "$id" --mkfs --osd-uuid "$uuid" >>"$d/log/osd-mkfs.log" 2>&1 ||
      fail "ceph-osd --mkfs failed for osd.$id (see $d/log/osd-mkfs.log)"
    echo "starting ceph-osd $id"
    in_ns ceph-osd -c "$conf" -i "$id" || fail "ceph-osd $id did not start"
  done
  wait_for 60 "$NSERVERS OSDs up" bash -c "nsenter --net=/run/netns/$NETNS ceph -c '$conf' osd stat | grep -q '$NSERVERS up'"
  cephc osd pool create cephfs_data 32 || fail "pool create failed"
  cephc osd pool create cephfs_metadata 16 || fail "pool create failed"
  for k in cephfs_data cephfs_metadata; do
    cephc osd pool set "$k" size 1 --yes-i-really-mean-it || fail "pool set size 1 failed"
  done
  cephc fs new cephfs cephfs_metadata cephfs_data || fail "ceph fs new failed"
  echo "starting ceph-mds"
  in_ns ceph-mds -c "$conf" -i a || fail "ceph-mds did not start"
  wait_for 60 "ceph-mds active" ceph_mds_active
  ceph_mount "$mnt"
}

# ceph_mount MNT [CLIENT_NAME [PIDFILE]]: ceph-fuse runs in the foreground (-f) in the
# background of this shell, so that its pid is known: it writes no pid file of its own.
# A second client needs its own name: the admin socket and log are named after it.
ceph_mount() {
  local run="$DIR/ceph/run" name=${2:-client.admin} pidfile=${3:-ceph-fuse.pid}
  in_ns ceph-fuse -f -c "$DIR/ceph/ceph.conf" -n "$name" "$1" >>"$DIR/ceph/log/${pidfile%.pid}.out" 2>&1 &
  echo $! >"$run/$pidfile"
  wait_for 30 "ceph-fuse mount ($name)" mountpoint -q "$1"
}

# Extra clients (MNT.K) are client.benchK with their own pid file.
ceph_mount2() { ceph_mount "$1" "client.bench${1##*.}" "ceph-fuse.${1##*.}.pid"; }
ceph_umount2() { unmount_dir "$1"; kill_pidfile "$DIR/ceph/run/ceph-fuse.${1##*.}.pid"; }

# A new ceph-fuse fails with EDOM ("Numerical argument out of domain") while the old one
# is still flushing after the unmount: wait for it to be gone first.
ceph_remount() { unmount_dir "$1"; kill_pidfile "$DIR/ceph/run/ceph-fuse.pid"; ceph_mount "$1"; }

# ceph_kill PIDFILE: SIGKILL, not SIGTERM: an MDS told to stop while the mon is up gets
# blocklisted, "respawns" (re-executes and daemonizes again under a new pid) and lives on.
# Nothing of the cluster is kept, so there is nothing to shut down cleanly.
ceph_kill() {
  local p
  p=$(cat "$1" 2>/dev/null) || return 0
  [[ "$p" =~ ^[0-9]+$ ]] && kill -KILL "$p" 2>/dev/null &&
    timeout 10 tail --pid="$p" -s 0.2 -f /dev/null 2>/dev/null || true
  rm -f "$1"
}

ceph_teardown() {
  local mnt=$1 d="$DIR/ceph" f
  for f in 2 3 4; do ceph_umount2 "$mnt.$f"; done
  unmount_dir "$mnt"
  kill_pidfile "$d/run/ceph-fuse.pid"
  for f in "$d"/run/mds.*.pid "$d"/run/osd.*.pid "$d"/run/mgr.*.pid "$d"/run/mon.*.pid; do
    [ -f "$f" ] && ceph_kill "$f"
  done
  # Keep the daemons' logs for a post-mortem; drop the rest (the OSD block files).
  [ -d "$d/log" ] && { rm -rf "$DIR/logs/ceph"; cp -r "$d/log" "$DIR/logs/ceph"; }
  rm -rf "$d"
}

# For the suite's CPU rows (written blind: not run in the session that added it): the
# first ceph-fuse as client, mon, mgr, OSDs and MDS (their pid files) as servers.
ceph_pids() {
  local d="$DIR/ceph/run" f p
  for f in "$d"/mon.*.pid "$d"/mgr.*.pid "$d"/osd.*.pid "$d"/mds.*.pid; do
    p=$(cat "$f" 2>/dev/null) && [[ "$p" =~ ^[0-9]+$ ]] && echo "server $p"
  done
  p=$(cat "$d/ceph-fuse.pid" 2>/dev/null) && [[ "$p" =~ ^[0-9]+$ ]] && echo "client $p"
  return 0
}
