#!/usr/bin/env bash
# A local StripeFS cluster on 127.0.0.1: 1 sfs-mds + N sfs-oss, state under one directory.
#
#   scripts/cluster.sh up [--oss N] [--dir DIR] [--mount MNT] [--build BUILD_DIR] [--cluster-key FILE]
#   scripts/cluster.sh down [--dir DIR]
#   scripts/cluster.sh status [--dir DIR]
#   scripts/cluster.sh kill-mds | restart-mds [--dir DIR]
#   scripts/cluster.sh kill-oss K | restart-oss K [--dir DIR]
#
# DIR (default .cluster) holds mds/, ostK/, logs/ (each daemon's stderr log and
# stdout), pids/, mds.addr and ossK.addr. Daemons listen on port 0 (a free
# port); `up` waits for each one's `LISTENING host:port` line on its stdout,
# read through a pipe with a deadline (SFS_START_TIMEOUT seconds, default 30),
# and prints the MDS address. A restart reuses the recorded address, so
# clients and OSSes find the daemon where it was. kill-* sends SIGKILL.
# --cluster-key FILE: every daemon gets that cluster key (docs/security.md),
# made (32 random bytes, mode 0600) if FILE does not exist; restarts reuse it.
# SFS_MDS_FLAGS / SFS_OSS_FLAGS: extra sfs-mds / sfs-oss flags, word-split, for
# `up` and restarts, e.g. SFS_OSS_FLAGS="--kv-capacity 2G" scripts/cluster.sh up
# gives every OSS a KV-cache tier (docs/kv.md).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=.cluster
NOSS=4
MNT=""
KEY=""
BUILD=${BUILD_DIR:-$ROOT/build}
START_TIMEOUT=${SFS_START_TIMEOUT:-30}
STOP_TIMEOUT=${SFS_STOP_TIMEOUT:-10}

die() { echo "cluster.sh: $*" >&2; exit 1; }
usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

parse_opts() {
  while [ $# -gt 0 ]; do
    case "$1" in
      --oss) NOSS=${2:?--oss needs a number}; shift 2 ;;
      --dir) DIR=${2:?--dir needs a path}; shift 2 ;;
      --mount) MNT=${2:?--mount needs a path}; shift 2 ;;
      --build) BUILD=${2:?--build needs a path}; shift 2 ;;
      --cluster-key) KEY=${2:?--cluster-key needs a file}; shift 2 ;;
      *) echo "cluster.sh: unknown option: $1" >&2; usage ;;
    esac
  done
  [[ "$NOSS" =~ ^[0-9]+$ ]] && [ "$NOSS" -ge 1 ] || die "--oss wants a positive number"
  mkdir -p "$DIR"
  DIR=$(cd "$DIR" && pwd)
  BUILD=$(cd "$BUILD" 2>/dev/null && pwd) || BUILD=$BUILD
}

bin() {  # bin NAME → path of the built daemon
  local p
  for p in "$BUILD/mds/$1" "$BUILD/oss/$1" "$BUILD/client/fuse/$1"; do
    [ -x "$p" ] && { echo "$p"; return; }
  done
  command -v "$1" 2>/dev/null || die "$1 not found under $BUILD (build first: scripts/build.sh)"
}

# key_args: the --cluster-key flag every daemon gets, if `up` recorded a key.
key_args() {
  local k; k=$(cat "$DIR/cluster-key.path" 2>/dev/null) || return 0
  echo "--cluster-key $k"
}

# setup_key: records KEY for the daemons (made if absent), or none.
setup_key() {
  rm -f "$DIR/cluster-key.path"
  [ -n "$KEY" ] || return 0
  if [ ! -e "$KEY" ]; then
    (umask 077 && head -c 32 /dev/urandom >"$KEY") || die "cannot write cluster key $KEY"
  fi
  KEY=$(cd "$(dirname "$KEY")" && pwd)/$(basename "$KEY")
  echo "$KEY" >"$DIR/cluster-key.path"
}

pid_of() { cat "$DIR/pids/$1.pid" 2>/dev/null || true; }
alive() { local p; p=$(pid_of "$1"); [ -n "$p" ] && kill -0 "$p" 2>/dev/null; }

# start NAME LISTEN CMD... : runs CMD as daemon NAME, stdout through a pipe we
# read with a deadline; records pid and address.
start() {
  local name=$1 listen=$2; shift 2
  local out="$DIR/logs/$name.out" log="$DIR/logs/$name.log" fd pid line=""
  alive "$name" && die "$name already running (pid $(pid_of "$name"))"
  mkdir -p "$DIR/logs" "$DIR/pids"
  echo "--- $(date -Is) start: $* --listen $listen" >>"$log"
  exec {fd}< <(exec setsid "$@" --listen "$listen" 2>>"$log" </dev/null)
  pid=$!
  echo "$pid" >"$DIR/pids/$name.pid"
  # Lines before it (`METRICS host:port` with --metrics-listen) are kept too.
  local pre=""
  while IFS= read -r -t "$START_TIMEOUT" -u "$fd" line && [[ "$line" == METRICS\ * ]]; do
    pre+="$line"$'\n'
  done
  if [[ "$line" != LISTENING\ * ]]; then
    exec {fd}<&-
    kill -9 "$pid" 2>/dev/null || true
    echo "cluster.sh: $name did not print LISTENING within ${START_TIMEOUT}s" \
         "(got: '${line}'); last lines of $log:" >&2
    tail -n 20 "$log" | sed 's/^/    | /' >&2
    exit 1
  fi
  printf '%s%s\n' "$pre" "$line" >"$out"
  # Keep draining the daemon's stdout into its .out file for as long as it lives.
  cat <&"$fd" >>"$out" 2>/dev/null &
  disown $! 2>/dev/null || true
  exec {fd}<&-
  echo "${line#LISTENING }" >"$DIR/$name.addr"
}

port_of() { local a; a=$(cat "$DIR/$1.addr" 2>/dev/null) || die "no recorded address for $1"; echo "${a##*:}"; }

start_mds() {
  local b; b=$(bin sfs-mds)
  mkdir -p "$DIR/mds"
  # shellcheck disable=SC2086  # SFS_MDS_FLAGS: extra sfs-mds flags, word-split on purpose
  # shellcheck disable=SC2046  # key_args: a flag and a path without spaces
  start mds "$1" "$b" --data "$DIR/mds" $(key_args) ${SFS_MDS_FLAGS:-}
}

start_oss() {
  local k=$1 b mds
  b=$(bin sfs-oss)
  mds=$(cat "$DIR/mds.addr") || die "no MDS address recorded in $DIR"
  mkdir -p "$DIR/ost$k"
  # shellcheck disable=SC2086  # SFS_OSS_FLAGS: extra sfs-oss flags, word-split on purpose
  # shellcheck disable=SC2046
  start "oss$k" "$2" "$b" --mds "$mds" --ost "$DIR/ost$k" $(key_args) ${SFS_OSS_FLAGS:-}
}

# wait_gone PID SECONDS: true iff PID exits within the deadline.
wait_gone() {
  kill -0 "$1" 2>/dev/null || return 0
  timeout "$2" tail --pid="$1" -s 0.1 -f /dev/null 2>/dev/null
  ! kill -0 "$1" 2>/dev/null
}

stop_daemon() {
  local name=$1 p
  p=$(pid_of "$name")
  if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then
    kill -CONT "$p" 2>/dev/null || true
    kill -TERM "$p" 2>/dev/null || true
    if ! wait_gone "$p" "$STOP_TIMEOUT"; then
      echo "cluster.sh: $name (pid $p) ignored SIGTERM for ${STOP_TIMEOUT}s; sending SIGKILL" >&2
      kill -KILL "$p" 2>/dev/null || true
      wait_gone "$p" 5 || true
    fi
  fi
  rm -f "$DIR/pids/$name.pid"
}

oss_names() { local f; for f in "$DIR"/pids/oss*.pid; do [ -e "$f" ] && basename "$f" .pid; done; true; }

do_mount() {
  local addr mnt=$1 deadline b
  b=$(bin sfs-mount)
  addr=$(cat "$DIR/mds.addr")
  mkdir -p "$mnt"
  mnt=$(cd "$mnt" && pwd)
  mountpoint -q "$mnt" && die "$mnt is already a mountpoint"
  "$b" "$addr" "$mnt" -o allow_other >>"$DIR/logs/mount.log" 2>&1 ||
    { tail -n 20 "$DIR/logs/mount.log" >&2; die "sfs-mount $addr $mnt failed"; }
  echo "$mnt" >"$DIR/mount"
  deadline=$((SECONDS + START_TIMEOUT))
  until mountpoint -q "$mnt"; do  # polls a condition, with a deadline
    [ $SECONDS -lt $deadline ] || { tail -n 20 "$DIR/logs/mount.log" >&2; die "$mnt not mounted after ${START_TIMEOUT}s"; }
    sleep 0.1
  done
}

do_unmount() {
  local mnt
  mnt=$(cat "$DIR/mount" 2>/dev/null) || return 0
  if mountpoint -q "$mnt" 2>/dev/null; then
    fusermount3 -u "$mnt" 2>/dev/null || umount "$mnt" 2>/dev/null || umount -l "$mnt" ||
      echo "cluster.sh: could not unmount $mnt" >&2
  fi
  rm -f "$DIR/mount"
}

cmd_up() {
  parse_opts "$@"
  setup_key
  start_mds 127.0.0.1:0
  local k
  for ((k = 0; k < NOSS; k++)); do start_oss "$k" 127.0.0.1:0; done
  [ -n "$MNT" ] && do_mount "$MNT"
  echo "$(cat "$DIR/mds.addr")"
}

cmd_down() {
  parse_opts "$@"
  do_unmount
  local n p
  # SIGTERM every OSS at once (each takes a moment to exit), then wait for each.
  for n in $(oss_names); do
    p=$(pid_of "$n"); [ -n "$p" ] && kill -CONT "$p" 2>/dev/null && kill -TERM "$p" 2>/dev/null
  done
  for n in $(oss_names); do stop_daemon "$n"; done
  stop_daemon mds
}

cmd_status() {
  parse_opts "$@"
  local n rc=0
  for n in mds $(oss_names); do
    if alive "$n"; then
      printf '%-6s up    pid %-8s %s\n' "$n" "$(pid_of "$n")" "$(cat "$DIR/$n.addr" 2>/dev/null)"
    else
      printf '%-6s DOWN  %s\n' "$n" "$(cat "$DIR/$n.addr" 2>/dev/null)"; rc=1
    fi
  done
  if [ -f "$DIR/mount" ]; then
    local mnt; mnt=$(cat "$DIR/mount")
    if mountpoint -q "$mnt"; then echo "mount  up    $mnt"; else echo "mount  DOWN  $mnt"; rc=1; fi
  fi
  return $rc
}

cmd_kill() {  # cmd_kill NAME
  local p; p=$(pid_of "$1")
  [ -n "$p" ] && kill -0 "$p" 2>/dev/null || die "$1 is not running"
  kill -KILL "$p"
  wait_gone "$p" 5 || die "$1 (pid $p) survived SIGKILL"
  echo "killed $1 (pid $p)"
}

oss_arg() {
  [[ "${1:-}" =~ ^[0-9]+$ ]] || die "$2 wants an OSS number"
}

main() {
  local cmd=${1:-}; [ $# -gt 0 ] && shift
  case "$cmd" in
    up) cmd_up "$@" ;;
    down) cmd_down "$@" ;;
    status) cmd_status "$@" ;;
    kill-mds) parse_opts "$@"; cmd_kill mds ;;
    restart-mds) parse_opts "$@"; alive mds && die "mds is running (kill-mds first)"
                 start_mds "127.0.0.1:$(port_of mds)"; echo "$(cat "$DIR/mds.addr")" ;;
    kill-oss) oss_arg "${1:-}" kill-oss; local k=$1; shift; parse_opts "$@"; cmd_kill "oss$k" ;;
    restart-oss) oss_arg "${1:-}" restart-oss; local k=$1; shift; parse_opts "$@"
                 alive "oss$k" && die "oss$k is running (kill-oss $k first)"
                 start_oss "$k" "127.0.0.1:$(port_of "oss$k")"; echo "$(cat "$DIR/oss$k.addr")" ;;
    *) usage ;;
  esac
}

main "$@"
