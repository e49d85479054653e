#!/usr/bin/env bash
# Side-by-side benchmark: StripeFS next to MooseFS, GlusterFS, CephFS and a local directory.
#
#   scripts/bench-peers.sh [--peers stripefs,fuse-passthrough,local,moosefs,glusterfs,ceph] [--quick]
#                          [--dir DIR] [--servers N] [--build BUILD_DIR] [--keep] [--runs N]
#
# Sets up each system on this machine, from Debian 12 packages (installed here when
# missing), with the same number of data servers (N, default 2: StripeFS OSSes, MooseFS
# chunkservers, Gluster bricks, Ceph OSDs) and all state on the same disk under DIR
# (default /tmp/sfs-peers); mounts each under DIR/mnt/NAME; runs the same sfs-bench
# suite (-a POSIX) on every mount; prints one markdown table with StripeFS's ratio to
# each peer. Peer `fuse-passthrough` is the FUSE ceiling: a plain passthrough FUSE file
# system of ours (tools/bench/fuse_passthrough.cc) over a directory on the same disk.
# For the file-per-process 1 MiB write and read the table also gives the CPU seconds per
# GiB moved of each peer's client daemon and of its servers (from /proc/PID/stat, for the
# processes each peer script's NAME_pids names). Then the
# two-client check on every system: a second, independent client mount (DIR/mnt/NAME.2),
# a strided shared file written with even tasks through one mount and odd tasks through
# the other, read back and verified through the other mount, cache warm, 3
# times; its passes and failures ("FAIL: reason") are rows of the table. The four-client
# check does the same with four independent clients (DIR/mnt/NAME.2 .. .4), one task each.
# Every daemon and FUSE client runs inside a network namespace of this
# script's own, which has only `lo` (plus 192.0.2.1/32 on it for MooseFS), so no
# traffic can leave the machine. A peer that fails to set up is reported in the table
# as "setup failed: reason" and the others go on. At the end every peer is unmounted
# and its daemons stopped, unless --keep. --quick runs small sizes (a smoke run).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PEERS_DIR="$ROOT/scripts/peers"
ALL_PEERS=stripefs,fuse-passthrough,local,moosefs,glusterfs,ceph
PEERS=$ALL_PEERS
DIR=/tmp/sfs-peers
NSERVERS=2
QUICK=0
KEEP=0
RUNS=1   # --runs N: the one-mount suite N times per peer; the table shows medians
BUILD=${BUILD_DIR:-$ROOT/build}
NETNS=sfs-peers
NS_MFS_ADDR=192.0.2.1   # TEST-NET-1, only ever on the namespace's lo
NS_GLUSTER_ADDR=127.0.0.2

log() { printf '[bench-peers %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { log "error: $*"; exit 1; }
usage() { sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

parse_opts() {
  while [ $# -gt 0 ]; do
    case "$1" in
      --peers) PEERS=${2:?--peers needs a list}; shift 2 ;;
      --dir) DIR=${2:?--dir needs a path}; shift 2 ;;
      --servers) NSERVERS=${2:?--servers needs a number}; shift 2 ;;
      --build) BUILD=${2:?--build needs a path}; shift 2 ;;
      --quick) QUICK=1; shift ;;
      --keep) KEEP=1; shift ;;
      --runs) RUNS=${2:?--runs needs a number}; shift 2 ;;
      -h|--help) usage ;;
      *) echo "bench-peers.sh: unknown option: $1" >&2; usage ;;
    esac
  done
  [[ "$NSERVERS" =~ ^[1-9][0-9]*$ ]] || die "--servers wants a positive number"
  [[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || die "--runs wants a positive number"
  local p
  for p in ${PEERS//,/ }; do
    [[ ",$ALL_PEERS," == *",$p,"* ]] || die "unknown peer '$p' (known: $ALL_PEERS)"
  done
  [ "$(id -u)" = 0 ] || die "must run as root (packages, mounts, network namespace, drop_caches)"
  mkdir -p "$DIR"
  DIR=$(cd "$DIR" && pwd)
  RESULTS="$DIR/results"
}

# shellcheck source=peers/common.sh
. "$PEERS_DIR/common.sh"
# shellcheck source=peers/stripefs.sh
. "$PEERS_DIR/stripefs.sh"
# shellcheck source=peers/fuse_passthrough.sh
. "$PEERS_DIR/fuse_passthrough.sh"
# shellcheck source=peers/local.sh
. "$PEERS_DIR/local.sh"
# shellcheck source=peers/moosefs.sh
. "$PEERS_DIR/moosefs.sh"
# shellcheck source=peers/glusterfs.sh
. "$PEERS_DIR/glusterfs.sh"
# shellcheck source=peers/ceph.sh
. "$PEERS_DIR/ceph.sh"
# shellcheck source=peers/suite.sh
. "$PEERS_DIR/suite.sh"

# --- per peer: set up, run, tear down ------------------------------------------------------

# run_peer NAME: sets NAME up, runs the suite on its mount, records the outcome.
run_peer() {
  local name=$1 mnt="$DIR/mnt/$1" t0=$SECONDS ok=1 k
  rm -rf "${RESULTS:?}/$name"; mkdir -p "$RESULTS/$name"
  # Start from empty, unmounted mount points (a failed run may have left files under them).
  for k in 2 3 4; do unmount_dir "$mnt.$k"; done
  unmount_dir "$mnt"; rm -rf "$mnt" "$mnt".[234]; mkdir -p "$mnt" "$mnt.2" "$mnt.3" "$mnt.4"
  log "=== $name: setting up"
  # Run in the background and wait: a subshell started with `&` keeps `set -e`, one on
  # the left of `||` would not.
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
  log "$name: up in $((SECONDS - t0)) s, mounted on $mnt; running the suite"
  if run_suite "$name" "$mnt"; then
    echo ok >"$RESULTS/$name/status"
  else
    echo "suite failed: $(cat "$RESULTS/$name/error" 2>/dev/null || echo see log)" >"$RESULTS/$name/status"
  fi
  # The two- and four-client checks record their failures themselves (RESULTS/NAME/two_K.status).
  two_mount_check "$name" "$mnt"
  four_mount_check "$name" "$mnt"
  log "$name: $(cat "$RESULTS/$name/status") after $((SECONDS - t0)) s"
  if [ $KEEP = 0 ]; then
    log "$name: tearing down"
    "${name}_teardown" "$mnt" >>"$DIR/logs/$name.setup.log" 2>&1 || log "$name: teardown had errors"
  fi
}

main() {
  parse_opts "$@"
  mkdir -p "$DIR/logs" "$RESULTS" "$DIR/mnt"
  rm -rf "$DIR"/logs/*.reason "${RESULTS:?}"/*
  need_pkgs iproute2 util-linux fuse3 jq
  suite_sizes
  find_bench
  ns_up
  trap cleanup EXIT
  trap 'exit 130' INT TERM
  local name
  for name in ${PEERS//,/ }; do
    CURRENT_PEER=$name
    run_peer "$name"
    CURRENT_PEER=""
  done
  print_table "${PEERS//,/ }" | tee "$RESULTS/table.md"
  log "table saved in $RESULTS/table.md; logs in $DIR/logs"
}

main "$@"
