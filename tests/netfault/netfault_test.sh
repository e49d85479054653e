#!/bin/bash
# Issue 8 network-fault test: sfs-mds and sfs-oss in one network namespace,
# a libsfs client (sfs-bench ior -a SFS, shared file N-to-1 strided, with
# write and read verification) in another, joined by a veth pair. Faults are
# nftables rules inside the client's namespace only (this kernel has no
# sch_netem, so `tc netem` is not available; nft's `numgen random` drops a
# random share of packets instead):
#   - 5 % loss both ways -> the I/O completes and verifies;
#   - a 10 s cut (every packet dropped) in the middle of a run -> the I/O
#     stalls, then resumes (TCP retransmits; libsfs keeps calls pending up to
#     its 30 s rpc_timeout) and verifies.
# About 20 s in all on the 2-core test VM, so both always run.
# Usage: netfault_test.sh SFS_MDS SFS_OSS SFS_BENCH. Exit 0 pass, 1 fail,
# 77 skipped (not root, no ip/nft, or namespaces not permitted).
set -u
MDS_BIN=$1 OSS_BIN=$2 BENCH_BIN=$3
skip() { echo "netfault_test: SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root (network namespaces)"
command -v ip > /dev/null || skip "no ip (iproute2)"
command -v nft > /dev/null || skip "no nft (apt-get install nftables)"

TAG=$$
SRV=sfs-nf-s$TAG CLI=sfs-nf-c$TAG
SRV_IP=10.231.$((TAG % 250)).1 CLI_IP=10.231.$((TAG % 250)).2
DIR=$(mktemp -d /tmp/sfs-netfault.XXXXXX)
PIDS=()
cleanup() {
  # Everything this test started runs inside its two namespaces.
  for ns in "$CLI" "$SRV"; do
    ip netns pids "$ns" 2> /dev/null | xargs -r kill 2> /dev/null
  done
  for p in "${PIDS[@]}"; do kill "$p" 2> /dev/null; done
  wait 2> /dev/null
  ip netns del "$SRV" 2> /dev/null
  ip netns del "$CLI" 2> /dev/null
  rm -rf "$DIR"
}
trap cleanup EXIT
fail() { echo "netfault_test: FAIL: $*"; tail -5 "$DIR"/*.log 2> /dev/null; exit 1; }

ip netns add "$SRV" 2> /dev/null || skip "cannot create a network namespace"
ip netns add "$CLI" || fail "ip netns add"
ip link add nf$TAG-s netns "$SRV" type veth peer name nf$TAG-c netns "$CLI" || fail "veth"
for ns in "$SRV" "$CLI"; do ip netns exec "$ns" ip link set lo up; done
ip netns exec "$SRV" ip addr add "$SRV_IP/24" dev nf$TAG-s
ip netns exec "$SRV" ip link set nf$TAG-s up
ip netns exec "$CLI" ip addr add "$CLI_IP/24" dev nf$TAG-c
ip netns exec "$CLI" ip link set nf$TAG-c up

# Starts a daemon in the server namespace; waits for its LISTENING line.
start() {  # name argv...
  local name=$1; shift
  ip netns exec "$SRV" "$@" > "$DIR/$name.out" 2> "$DIR/$name.log" &
  PIDS+=($!)
  for _ in $(seq 100); do
    grep -q LISTENING "$DIR/$name.out" && return 0
    sleep 0.1
  done
  fail "$name did not print LISTENING"
}
mkdir -p "$DIR/mds" "$DIR/ost0" "$DIR/ost1"
start mds "$MDS_BIN" --data "$DIR/mds" --listen "$SRV_IP:0"
MDS_ADDR=$(awk '/LISTENING/ {print $2}' "$DIR/mds.out")
start oss "$OSS_BIN" --mds "$MDS_ADDR" --ost "$DIR/ost0" --ost "$DIR/ost1" --listen "$SRV_IP:0"

# Random loss of pct % of the client's packets, both ways (0 = none, 100 = a cut).
loss() {
  ip netns exec "$CLI" nft delete table inet sfsloss 2> /dev/null
  [ "$1" = 0 ] && return 0
  local match="numgen random mod 100 < $1"
  [ "$1" = 100 ] && match=""
  ip netns exec "$CLI" nft -f - << NFT || fail "nft"
table inet sfsloss {
  chain in { type filter hook input priority 0; $match counter drop; }
  chain out { type filter hook output priority 0; $match counter drop; }
}
NFT
}
# Packets the loss rules dropped so far.
dropped() {
  ip netns exec "$CLI" nft list table inet sfsloss | grep -o 'packets [0-9]*' |
    awk '{s += $2} END {print s + 0}'
}
# 4 tasks, one shared file, 47008-byte blocks, fsync, verify after the write
# and on read (each task reads its neighbour's blocks).
bench() {  # name segments iterations
  ip netns exec "$CLI" timeout 120 "$BENCH_BIN" ior -a SFS --mds "$MDS_ADDR" -np 4 \
    -b 47008 -t 47008 -s "$2" -i "$3" -w -W -r -R -C -e -o "/$1" > "$DIR/$1.log" 2>&1 &&
    ! grep -q "VERIFY FAILED" "$DIR/$1.log"
}

loss 5
start_s=$(date +%s.%N)
bench loss5 16 1 || fail "I/O under 5 % loss (exit $?)"
secs=$(echo "$(date +%s.%N) - $start_s" | bc)
drops=$(dropped)
echo "netfault_test: 5 % loss: 4 tasks x 16 x 47008 bytes written and verified in ${secs}s ($drops packets dropped)"
[ "${drops:-0}" -gt 0 ] || fail "the loss rule dropped nothing"
loss 0

bench cut 256 20 &
BENCH=$!
sleep 2
kill -0 $BENCH 2> /dev/null || fail "the run ended before the cut; make it longer"
loss 100
sleep 10
drops=$(dropped)
loss 0
cut_end=$(date +%s.%N)
[ "${drops:-0}" -gt 0 ] || fail "nothing tried to cross the cut link"
wait $BENCH || fail "I/O across a 10 s cut (exit $?)"
secs=$(echo "$(date +%s.%N) - $cut_end" | bc)
echo "netfault_test: 10 s cut ($drops packets dropped): the run resumed and verified; it finished ${secs}s after the link came back"
echo "netfault_test: PASS"
