# MooseFS 3.0 for bench-peers.sh: mfsmaster + NSERVERS mfschunkservers + mfsmount, state
# in DIR/moosefs, inside the benchmark's network namespace. Chunkservers refuse a master
# on any 127.x address, so everything listens on NS_MFS_ADDR (192.0.2.1), which only the
# namespace's lo carries. Goal 1 and trash time 0 on the root: no replication (like
# StripeFS's stripes and a distributed Gluster volume) and a removal frees space at once.
# The two-client check mounts a second mfsmount (its own session with the master).
# Sourced by scripts/bench-peers.sh.

MFS_MASTER_PORT=9420   # chunkservers → master; clients use 9421, mfscli 9419
MFS_CS_PORT0=9422

moosefs_master_cfg() {
  local d=$1
  cat <<CFG
WORKING_USER = root
WORKING_GROUP = root
NICE_LEVEL = 0
DATA_PATH = $d/master
EXPORTS_FILENAME = $d/mfsexports.cfg
TOPOLOGY_FILENAME = $d/mfstopology.cfg
MATOML_LISTEN_HOST = $NS_MFS_ADDR
MATOCS_LISTEN_HOST = $NS_MFS_ADDR
MATOCL_LISTEN_HOST = $NS_MFS_ADDR
CFG
}

moosefs_cs_cfg() {  # moosefs_cs_cfg DIR K
  local d=$1 k=$2
  cat <<CFG
WORKING_USER = root
WORKING_GROUP = root
NICE_LEVEL = 0
DATA_PATH = $d/cs$k
HDD_CONF_FILENAME = $d/cs$k/mfshdd.cfg
BIND_HOST = $NS_MFS_ADDR
MASTER_HOST = $NS_MFS_ADDR
MASTER_PORT = $MFS_MASTER_PORT
CSSERV_LISTEN_HOST = $NS_MFS_ADDR
CSSERV_LISTEN_PORT = $((MFS_CS_PORT0 + k))
CFG
}

# True once NSERVERS chunkservers are connected to the master's chunkserver port.
moosefs_cs_ready() {
  [ "$(in_ns ss -Htn state established "( sport = :$MFS_MASTER_PORT )" | wc -l)" -ge "$NSERVERS" ]
}

moosefs_setup() {
  local mnt=$1 d="$DIR/moosefs" k
  need_pkgs moosefs-master moosefs-chunkserver moosefs-client
  moosefs_teardown "$mnt"
  mkdir -p "$d/master"
  moosefs_master_cfg "$d" >"$d/mfsmaster.cfg"
  echo "* / rw,alldirs,maproot=0" >"$d/mfsexports.cfg"
  : >"$d/mfstopology.cfg"
  cp /var/lib/mfs/metadata.mfs.empty "$d/master/metadata.mfs"
  echo "starting mfsmaster on $NS_MFS_ADDR"
  in_ns mfsmaster -c "$d/mfsmaster.cfg" start || fail "mfsmaster did not start"
  for ((k = 0; k < NSERVERS; k++)); do
    mkdir -p "$d/cs$k/chunks"
    echo "$d/cs$k/chunks" >"$d/cs$k/mfshdd.cfg"
    moosefs_cs_cfg "$d" "$k" >"$d/cs$k/mfschunkserver.cfg"
    echo "starting mfschunkserver $k"
    in_ns mfschunkserver -c "$d/cs$k/mfschunkserver.cfg" start || fail "mfschunkserver $k did not start"
  done
  wait_for 30 "$NSERVERS chunkservers connected to the master" moosefs_cs_ready
  moosefs_mount "$mnt"
  # The tools talk to the master directly, so they too must run in the namespace.
  in_ns mfssettrashtime -r 0 "$mnt" >/dev/null || fail "mfssettrashtime failed"
  in_ns mfssetgoal -r 1 "$mnt" >/dev/null || fail "mfssetgoal failed"
}

moosefs_mount() {
  in_ns mfsmount "$1" -H "$NS_MFS_ADDR" -o allow_other || fail "mfsmount failed"
  wait_for 20 "mfsmount" mountpoint -q "$1"
}

moosefs_remount() { unmount_dir "$1"; moosefs_mount "$1"; }
moosefs_mount2() { moosefs_mount "$1"; }
moosefs_umount2() { unmount_dir "$1"; }

moosefs_teardown() {
  local mnt=$1 d="$DIR/moosefs" cfg f
  for f in 2 3 4; do unmount_dir "$mnt.$f"; done
  unmount_dir "$mnt"
  for cfg in "$d"/cs*/mfschunkserver.cfg; do
    [ -f "$cfg" ] && in_ns mfschunkserver -c "$cfg" stop || true
  done
  [ -f "$d/mfsmaster.cfg" ] && in_ns mfsmaster -c "$d/mfsmaster.cfg" stop || true
  rm -rf "$d"
}

# For the suite's CPU rows (written blind: not run in the session that added it): the
# first mount's mfsmount as client, the master and every chunkserver (found by their -c
# config path) as servers.
moosefs_pids() {
  local d="$DIR/moosefs" cfg p
  p=$(pid_of_mount mfsmaster "$d/mfsmaster.cfg") && echo "server $p"
  for cfg in "$d"/cs*/mfschunkserver.cfg; do
    p=$(pid_of_mount mfschunkserver "$cfg") && echo "server $p"
  done
  p=$(pid_of_mount mfsmount "$DIR/mnt/moosefs") && echo "client $p"
  return 0
}
