#!/usr/bin/env bash
# Sanitizer runs (issue 15): the test suites built with AddressSanitizer +
# UndefinedBehaviorSanitizer, or with ThreadSanitizer, each in a build dir of
# its own (gcc, debugoptimized, no RDMA: the RDMA suites need a device).
#
#   scripts/sanitize.sh address [TEST...] [meson test args]   build-asan: the
#                                named tests, else every suite of the default run
#                                (unit, integration, bench-smoke)
#   scripts/sanitize.sh thread [TEST...] [meson test args]    build-tsan: the
#                                named tests, else the concurrency-heavy ones
#                                (TSAN_TESTS below)
#   scripts/sanitize.sh short    CI's form: ASan+UBSan on the unit suite and
#                                ASAN_SHORT_INTEGRATION, TSan on TSAN_SHORT
#   SFS_SANITIZE=address|thread scripts/test.sh    the same as the first two
#
# Only the targets the chosen tests need are built. The daemons the
# integration tests start (sfs-mds, sfs-oss, sfs-mount, sfs) come from the
# same build dir, so they are sanitized too, with the same *SAN_OPTIONS. A
# report fails its test: in a test binary by its exit status (ASan and UBSan
# stop at the first report, LSan and TSan exit non-zero at the end); in a
# daemon also by tests/harness (TestCluster's teardown fails the test when any
# log of the cluster holds a report, even one of a daemon a test killed).
# Suppressions live in scripts/sanitize/*.supp, each with its reason, and only
# for faults of third-party code.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
MODE=${1:-}
[[ $# -gt 0 ]] && shift

# The concurrency-heavy tests: RPC lanes, held calls and reconnects
# (rpc_test); the deferred-close queue (client_lib_test); lease and lock
# tables (lease_table_test, lock_table_test); the MDS's destroy batches over
# real OSS services (destroy_batch_test); the MDS's group commit and destroy
# queue (mds_test); the OSS's fd cache, range locks and workers (oss_test);
# through real daemons and mounts: write-behind, leases, deferred closes,
# cluster-wide locks, several mounts.
TSAN_TESTS=(rpc_test client_lib_test lease_table_test lock_table_test destroy_batch_test
            mds_test oss_test fuse_write_behind_test fuse_lease_test fuse_close_test
            fuse_lock_test fuse_multi_mount_test)
TSAN_SHORT=(rpc_test client_lib_test lease_table_test fuse_close_test)
ASAN_SHORT_INTEGRATION=(libsfs_io_test fuse_posix_test fuse_write_behind_test)

# intercept_send=0: the runtime checks a send's buffers only after the real
# sendmsg returned; by then the peer may have answered and the buffer's owner
# (an RPC caller whose frame another caller's sendmsg carried, tcp_channel.cc)
# freed it: a use-after-free the program never commits (rpc_test, RpcLaneTest).
COMMON=intercept_send=0
export ASAN_OPTIONS=$COMMON:detect_leaks=1:halt_on_error=1:abort_on_error=0:print_summary=1:check_initialization_order=1:strict_init_order=1
export LSAN_OPTIONS=suppressions=$ROOT/scripts/sanitize/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:print_summary=1:suppressions=$ROOT/scripts/sanitize/ubsan.supp
# halt_on_error=0: a test binary reports every race it meets and exits 66.
export TSAN_OPTIONS=$COMMON:halt_on_error=0:exitcode=66:second_deadlock_stack=1:suppressions=$ROOT/scripts/sanitize/tsan.supp

# configure DIR SANITIZERS: a debugoptimized build with -Db_sanitize (set up
# once; regenerated when a meson.build changed, so that introspection below
# sees today's tests and targets).
configure() {
  local dir=$1 san=$2
  if [[ -f $dir/build.ninja ]]; then
    ninja -C "$dir" build.ninja >/dev/null
    return 0
  fi
  meson setup "$dir" -Dbuildtype=debugoptimized -Db_sanitize="$san" -Drdma=disabled \
    -Dfuzz=false -Dmpi=disabled -Dcpp_args="-fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
    >/dev/null
}

# build DIR [TEST...] [meson test args]: builds what the named tests run (their
# executables and their `depends`, e.g. the daemons), or everything when no
# test is named (arguments that name no test are ignored).
build() {
  local dir=$1; shift
  local targets=()
  if [[ $# -gt 0 ]]; then
    mapfile -t targets < <(meson introspect "$dir" --tests --targets | python3 -c '
import json, os, sys
info = json.load(sys.stdin)
by_id = {t["id"]: t for t in info["targets"]}
want = set(sys.argv[2:])
out = set()
for t in info["tests"]:
    if t["name"] in want:
        out.update(c for c in t["cmd"] if c.startswith(sys.argv[1] + "/"))
        out.update(f for d in t["depends"] if d in by_id for f in by_id[d]["filename"])
print("\n".join(os.path.relpath(f, sys.argv[1]) for f in sorted(out)))
' "$(cd "$dir" && pwd)" "$@")
  fi
  ninja -C "$dir" -j"${NINJA_JOBS:-2}" "${targets[@]}"
}

# run DIR MULTIPLIER [meson test args]: the tests, timeouts stretched for the
# sanitizer's slowdown.
run() {
  local dir=$1 mult=$2; shift 2
  meson test -C "$dir" --no-rebuild --print-errorlogs --num-processes 2 \
    --timeout-multiplier "$mult" "$@"
}

# unit_tests DIR: the names of the unit suite's tests.
unit_tests() {
  meson introspect "$1" --tests | python3 -c '
import json, sys
print(" ".join(t["name"] for t in json.load(sys.stdin)
               if any(s.split(":")[-1] == "unit" for s in t["suite"])))'
}

# asan [TEST...] [meson test args]: with no test named, every test there is.
asan() {
  configure build-asan address,undefined
  build build-asan "$@"
  run build-asan 3 "$@"
}

tsan() {
  configure build-tsan thread
  [[ $# -gt 0 ]] || set -- "${TSAN_TESTS[@]}"
  build build-tsan "$@"
  run build-tsan 5 "$@"
}

start=$SECONDS
case $MODE in
  address) asan "$@" ;;
  thread) tsan "$@" ;;
  short)
    configure build-asan address,undefined
    asan $(unit_tests build-asan) "${ASAN_SHORT_INTEGRATION[@]}"
    tsan "${TSAN_SHORT[@]}"
    ;;
  *) echo "usage: scripts/sanitize.sh address|thread|short [meson test args]" >&2; exit 2 ;;
esac
echo "sanitize.sh: $MODE passed in $((SECONDS - start)) s"
