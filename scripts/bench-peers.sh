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

# --- packages ---------------------------------------------------------------------

APT_UPDATED=0
# need_pkgs PKG...: installs the packages that are not installed yet (idempotent).
need_pkgs() {
  local p missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing ${missing[*]}"
  if [ $APT_UPDATED = 0 ]; then apt-get update -qq >>"$DIR/logs/apt.log" 2>&1 || true; APT_UPDATED=1; fi
  # The packages must not start their own services (glusterd, mfsmaster, ceph-*) in the
  # host's network: a policy-rc.d that says "no" for the length of the install.
  local policy=/usr/sbin/policy-rc.d own_policy=0 rc=0
  if [ ! -e $policy ]; then printf '#!/bin/sh\nexit 101\n' >$policy; chmod +x $policy; own_policy=1; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" \
    >>"$DIR/logs/apt.log" 2>&1 || rc=$?
  [ $own_policy = 1 ] && rm -f $policy
  [ $rc = 0 ] || fail "apt-get install ${missing[*]} failed (see $DIR/logs/apt.log)"
}

# --- network namespace --------------------------------------------------------------

ns_up() {
  if ! ip netns list | grep -qw "^$NETNS"; then
    log "creating network namespace $NETNS (lo only, + $NS_MFS_ADDR/32)"
    ip netns add "$NETNS"
  fi
  ip -n "$NETNS" link set lo up
  ip -n "$NETNS" addr show dev lo | grep -q "$NS_MFS_ADDR/32" ||
    ip -n "$NETNS" addr add "$NS_MFS_ADDR/32" dev lo
}

ns_down() { ip netns list | grep -qw "^$NETNS" && ip netns del "$NETNS" || true; }

# in_ns CMD...: runs CMD in the namespace's network, but in this mount namespace, so
# FUSE mounts made there are visible here (`ip netns exec` would hide them).
in_ns() { nsenter --net="/run/netns/$NETNS" "$@"; }

# --- helpers for the peers -------------------------------------------------------------

# fail REASON: records why the current peer's setup failed (for the table) and fails.
fail() { echo "$*" >"$DIR/logs/${CURRENT_PEER:-main}.reason"; echo "FAILED: $*"; return 1; }

# wait_for SECONDS WHAT CMD...: polls CMD every 0.5 s until it succeeds or the deadline passes.
wait_for() {
  local secs=$1 what=$2 deadline; shift 2
  deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || { fail "$what not ready after ${secs}s"; return 1; }
    sleep 0.5
  done
}

# unmount_dir MNT: unmounts a FUSE mount, lazily if it is busy.
unmount_dir() {
  mountpoint -q "$1" 2>/dev/null || return 0
  fusermount3 -u "$1" 2>/dev/null || fusermount -u "$1" 2>/dev/null || umount "$1" 2>/dev/null ||
    umount -l "$1" || log "could not unmount $1"
}

# kill_pidfile FILE: SIGTERM to the pid in FILE, SIGKILL after 10 s.
kill_pidfile() {
  local p
  p=$(cat "$1" 2>/dev/null) || return 0
  [[ "$p" =~ ^[0-9]+$ ]] && kill -0 "$p" 2>/dev/null || { rm -f "$1"; return 0; }
  kill -TERM "$p" 2>/dev/null || true
  timeout 10 tail --pid="$p" -s 0.2 -f /dev/null 2>/dev/null || kill -KILL "$p" 2>/dev/null || true
  rm -f "$1"
}

# pid_of_mount NAME MNT: the pid of the process called NAME (argv[0]'s base name) that has
# MNT among its arguments, e.g. the FUSE daemon serving MNT.
pid_of_mount() {
  local c p args a
  for c in /proc/[0-9]*/cmdline; do
    mapfile -d '' -t args <"$c" 2>/dev/null || continue
    [ ${#args[@]} -gt 1 ] && [ "${args[0]##*/}" = "$1" ] || continue
    for a in "${args[@]:1}"; do
      if [ "$a" = "$2" ]; then p=${c#/proc/}; echo "${p%/cmdline}"; return 0; fi
    done
  done
  return 1
}

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

cleanup() {
  local rc=$?
  if [ $KEEP = 0 ] && [ -n "${CURRENT_PEER:-}" ]; then
    log "interrupted during $CURRENT_PEER: tearing it down"
    ( "${CURRENT_PEER}_teardown" "$DIR/mnt/$CURRENT_PEER" ) >>"$DIR/logs/$CURRENT_PEER.setup.log" 2>&1 || true
  fi
  [ $KEEP = 0 ] && ns_down
  exit $rc
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
