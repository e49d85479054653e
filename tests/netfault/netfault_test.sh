#!/bin/bash
# Issue 8 network-fault test: sfs-mds and sfs-oss in one network namespace,
# a libsfs client (sfs-bench ior -a SFS, shared file N-to-1 strided, with
# write and read verification) in another, joined by a veth pair. Faults are
# made inside the client's namespace only. This kernel has no sch_netem
# (`modprobe sch_netem`: "Module sch_netem not found"; `tc qdisc add ... netem`:
# "Specified qdisc kind is unknown"), so:
#   - delay and reordering: iptables sends the client's TCP packets, each
#     direction to its own NFQUEUE, to sfs-nfq-delay (nfq_delay.cc), which
#     gives each packet its verdict after a delay; some packets held longer
#     are overtaken, so both TCP stacks see real reordering;
#       20 ms +- 10 ms each way -> the I/O completes and verifies;
#       reordering (10 % of packets held 8 ms longer than the 1 ms the others
#       are, both ways) -> the I/O completes and verifies, and the delayer
#       counted reordered packets;
#   - loss and a cut: nftables (`numgen random` drops a random share):
#       5 % loss both ways -> the I/O completes and verifies;
#       a 10 s cut (every packet dropped) in the middle of a run -> the I/O
#       stalls, then resumes (TCP retransmits; libsfs keeps calls pending up
#       to its 30 s rpc_timeout) and verifies.
# Each phase prints the write and read bandwidth sfs-bench measured (and the
# fault-free run's, for comparison). About 35 s in all on the 2-core test VM.
# At the end, offline `sfs fsck` of the MDS and both OSTs must be clean.
# Usage: netfault_test.sh SFS_MDS SFS_OSS SFS_BENCH [SFS_NFQ_DELAY [SFS]].
# Without SFS_NFQ_DELAY (or iptables) the delay and reorder phases are skipped
# with a line saying so and the test, having run the rest, exits 77 rather
# than 0, so that the skip is counted (scripts/test.sh fails the run for it);
# an empty or missing SFS skips the fsck. Exit 0 pass, 1 fail, 77 skipped (not
# root, no ip/nft, namespaces not permitted, or the delay phases skipped).
set -u
MDS_BIN=$1 OSS_BIN=$2 BENCH_BIN=$3 NFQ_BIN=${4:-} SFS_BIN=${5:-}
skip() { echo "netfault_test: SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root (network namespaces)"
command -v ip > /dev/null || skip "no ip (iproute2)"
command -v nft > /dev/null || skip "no nft (apt-get install nftables)"
command -v nsenter > /dev/null || skip "no nsenter (util-linux)"

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
# Fails unless the seconds $1 are at most $2 (the bound: 3-5 times what a
# loaded 2-core machine takes).
at_most() {  # secs bound what
  awk -v s="$1" -v b="$2" 'BEGIN {exit !(s <= b)}' || fail "$3 took ${1}s, more than ${2}s"
}
SKIPPED=""

# Commands run in a network namespace only. Not `ip netns exec`: that also
# makes a new mount namespace holding a copy of every mount of the moment, so
# the FUSE mount of a test running beside this one (meson runs two at once;
# this host's mounts are private, not shared) would outlive its unmount in
# the copy, for as long as the daemons here run, and its sfs-mount would not
# see the unmount.
# A command, not a function: `"${IN_CLI[@]}" prog &` leaves $! the program's
# pid (nsenter execs it), which delay_off signals for its counts.
IN_SRV=(nsenter --net="/run/netns/$SRV") IN_CLI=(nsenter --net="/run/netns/$CLI")
ip netns add "$SRV" 2> /dev/null || skip "cannot create a network namespace"
ip netns add "$CLI" || fail "ip netns add"
ip link add nf$TAG-s netns "$SRV" type veth peer name nf$TAG-c netns "$CLI" || fail "veth"
for ns in "$SRV" "$CLI"; do nsenter --net="/run/netns/$ns" ip link set lo up; done
"${IN_SRV[@]}" ip addr add "$SRV_IP/24" dev nf$TAG-s
"${IN_SRV[@]}" ip link set nf$TAG-s up
"${IN_CLI[@]}" ip addr add "$CLI_IP/24" dev nf$TAG-c
"${IN_CLI[@]}" ip link set nf$TAG-c up

# Starts a daemon in the server namespace; waits for its LISTENING line.
start() {  # name argv...
  local name=$1; shift
  "${IN_SRV[@]}" "$@" > "$DIR/$name.out" 2> "$DIR/$name.log" &
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
  "${IN_CLI[@]}" nft delete table inet sfsloss 2> /dev/null
  [ "$1" = 0 ] && return 0
  local match="numgen random mod 100 < $1"
  [ "$1" = 100 ] && match=""
  "${IN_CLI[@]}" nft -f - << NFT || fail "nft"
table inet sfsloss {
  chain in { type filter hook input priority 0; $match counter drop; }
  chain out { type filter hook output priority 0; $match counter drop; }
}
NFT
}
# Packets the loss rules dropped so far.
dropped() {
  "${IN_CLI[@]}" nft list table inet sfsloss | grep -o 'packets [0-9]*' |
    awk '{s += $2} END {print s + 0}'
}
# 4 tasks, one shared file, 47008-byte blocks, fsync, verify after the write
# and on read (each task reads its neighbour's blocks); the file is kept (-k)
# for the closing fsck.
bench() {  # name segments iterations
  "${IN_CLI[@]}" timeout 120 "$BENCH_BIN" ior -a SFS --mds "$MDS_ADDR" -np 4 \
    -b 47008 -t 47008 -s "$2" -i "$3" -w -W -r -R -C -e -k -o "/$1" > "$DIR/$1.log" 2>&1 &&
    ! grep -q "VERIFY FAILED" "$DIR/$1.log"
}
# "write X MiB/s, read Y MiB/s": the mean bandwidths of a bench run's summary.
bandwidth() {  # name
  awk '/^Summary of all tests/ {s = 1} s && ($1 == "write" || $1 == "read") {
         printf "%s%s %s MiB/s", sep, $1, $4; sep = ", "}' "$DIR/$1.log"
}

# Delay/reorder through sfs-nfq-delay: one instance per direction, each on its
# own queue, fed by iptables rules for the client's TCP packets on the veth.
NFQ_PIDS=()
delay_on() {  # sfs-nfq-delay flags (the same both ways)
  local q
  for q in 0 1; do
    rm -f "$DIR/nfq$q.out"  # the last phase's READY must not count
    "${IN_CLI[@]}" "$NFQ_BIN" --queue $q --seed $((TAG + q)) "$@" \
      > "$DIR/nfq$q.out" 2> "$DIR/nfq$q.log" &
    NFQ_PIDS+=($!)
    for _ in $(seq 100); do
      grep -q READY "$DIR/nfq$q.out" 2> /dev/null && break
      sleep 0.05
    done
    grep -q READY "$DIR/nfq$q.out" 2> /dev/null || fail "sfs-nfq-delay --queue $q did not start (5 s): $(cat "$DIR/nfq$q.log")"
  done
  "${IN_CLI[@]}" iptables -A OUTPUT -o nf$TAG-c -p tcp -j NFQUEUE --queue-num 0 \
    --queue-bypass || fail "iptables NFQUEUE (output)"
  "${IN_CLI[@]}" iptables -A INPUT -i nf$TAG-c -p tcp -j NFQUEUE --queue-num 1 \
    --queue-bypass || fail "iptables NFQUEUE (input)"
}
# Removes the rules, stops the delayers; their two count lines go to
# $DIR/counts. (Not in a subshell: it must wait for its own children.)
delay_off() {
  local alive=1 p
  for p in "${NFQ_PIDS[@]}"; do kill -0 "$p" 2> /dev/null || alive=0; done
  "${IN_CLI[@]}" iptables -F OUTPUT
  "${IN_CLI[@]}" iptables -F INPUT
  kill "${NFQ_PIDS[@]}" 2> /dev/null
  wait "${NFQ_PIDS[@]}" 2> /dev/null
  NFQ_PIDS=()
  cat "$DIR/nfq0.log" "$DIR/nfq1.log" > "$DIR/counts"
  [ $alive = 1 ] && [ "$(grep -c '^sfs-nfq-delay queue' "$DIR/counts")" = 2 ] ||
    fail "an sfs-nfq-delay died during the run: $(cat "$DIR/counts")"
}
# Sum of field $1 ("packets", "reordered") over the count lines on stdin.
count_of() {
  awk -v f="$1" '{for (i = 2; i <= NF; i++) if ($i ~ "^" f) s += $(i - 1)} END {print s + 0}'
}

bench base 32 1 || fail "I/O without faults (exit $?)"
echo "netfault_test: no fault: 4 tasks x 32 x 47008 bytes: $(bandwidth base)"

if [ -z "$NFQ_BIN" ] || ! command -v iptables > /dev/null; then
  SKIPPED="delay and reorder phases (no sfs-nfq-delay built or no iptables)"
  echo "netfault_test: SKIP: $SKIPPED"
else
  delay_on --delay-ms 20 --jitter-ms 10
  bench delay 16 1 || { rc=$?; delay_off; fail "I/O under 20 +- 10 ms delay (exit $rc)"; }
  delay_off
  counts=$(cat "$DIR/counts")
  echo "netfault_test: 20 +- 10 ms delay each way: 4 tasks x 16 x 47008 bytes verified: $(bandwidth delay)"
  echo "$counts" | sed 's/^/netfault_test:   /'
  [ "$(echo "$counts" | count_of packets)" -gt 0 ] || fail "no packet went through the delayers"
  echo "$counts" | awk '{for (i = 1; i < NF; i++) if ($i == "delay") d = $(i + 1); if (d + 0 < 15) bad = 1}
    END {exit bad}' || fail "the packets were not delayed ~20 ms"

  delay_on --delay-ms 1 --reorder-pct 10 --reorder-ms 8
  bench reorder 32 1 || { rc=$?; delay_off; fail "I/O under reordering (exit $rc)"; }
  delay_off
  counts=$(cat "$DIR/counts")
  echo "netfault_test: reordering (10 % of packets 8 ms late) each way: 4 tasks x 32 x 47008 bytes verified: $(bandwidth reorder)"
  echo "$counts" | sed 's/^/netfault_test:   /'
  [ "$(echo "$counts" | count_of reordered)" -gt 0 ] || fail "no packet was reordered"
fi

loss 5
start_s=$(date +%s.%N)
bench loss5 16 1 || fail "I/O under 5 % loss (exit $?): $(grep -m3 -iE "error|fail|VERIFY" "$DIR/loss5.log" | tr '\n' ' ')"
secs=$(echo "$(date +%s.%N) - $start_s" | bc)
drops=$(dropped)
echo "netfault_test: 5 % loss: 4 tasks x 16 x 47008 bytes written and verified in ${secs}s ($drops packets dropped): $(bandwidth loss5)"
[ "${drops:-0}" -gt 0 ] || fail "the loss rule dropped nothing"
at_most "$secs" 30 "the run under 5 % loss (typically 4 s)"
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
# TCP's backed-off retransmit comes up to ~6 s after the link does, then the rest of the run.
at_most "$secs" 40 "finishing the run after the cut (typically 8 s)"

# Nothing the faults did is left behind: offline sfs fsck of the MDS (stopped
# with SIGTERM, which commits and releases its LevelDB lock) and both OSTs.
if [ -n "$SFS_BIN" ]; then
  kill "${PIDS[0]}" && wait "${PIDS[0]}" 2> /dev/null
  "$SFS_BIN" fsck --mds-data "$DIR/mds" --ost "$DIR/ost0" --ost "$DIR/ost1" > "$DIR/fsck.log" 2>&1 ||
    fail "sfs fsck after the faults: $(cat "$DIR/fsck.log")"
  echo "netfault_test: sfs fsck clean: $(tail -1 "$DIR/fsck.log")"
fi
# A sanitized build (scripts/sanitize.sh): a report in any log fails the test.
if grep -E -A20 '(ERROR|WARNING): [A-Za-z]+Sanitizer|: runtime error: ' "$DIR"/*.log; then
  fail "a sanitizer report (above)"
fi
if [ -n "$SKIPPED" ]; then
  echo "netfault_test: SKIP: everything else passed, but not the $SKIPPED"
  exit 77
fi
echo "netfault_test: PASS"
