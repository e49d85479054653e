# Helpers shared by scripts/bench-peers.sh and scripts/bench-real.sh, and used by
# the peers' set-up scripts (scripts/peers/*.sh): packages, the benchmark's network
# namespace, waiting, unmounting, stopping daemons. Sourced, not run.
# Expects from the caller: DIR (with DIR/logs), NETNS, NS_MFS_ADDR and a log function;
# sets CURRENT_PEER's failure reason through fail.

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
  # (not `ip | grep -q`: under pipefail, ip's SIGPIPE when grep quits early fails the test)
  [[ "$(ip -n "$NETNS" addr show dev lo)" == *"$NS_MFS_ADDR/32"* ]] ||
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
  # /proc/self/mounts, not mountpoint(1): that fails on a FUSE mount whose
  # daemon died (ENOTCONN), which then stayed and broke the next setup.
  awk -v m="$1" '$2 == m {found = 1} END {exit !found}' /proc/self/mounts || return 0
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

# cleanup: the EXIT trap: tears down the peer being set up or measured (unless KEEP=1)
# and the network namespace, keeping the exit status.
cleanup() {
  local rc=$?
  if [ $KEEP = 0 ] && [ -n "${CURRENT_PEER:-}" ]; then
    log "interrupted during $CURRENT_PEER: tearing it down"
    ( "${CURRENT_PEER}_teardown" "$DIR/mnt/$CURRENT_PEER" ) >>"$DIR/logs/$CURRENT_PEER.setup.log" 2>&1 || true
  fi
  [ $KEEP = 0 ] && ns_down
  exit $rc
}
