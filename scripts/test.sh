#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test suite (unit and
# integration: real sfs-mds/sfs-oss processes on loopback and real FUSE mounts).
#   scripts/test.sh            the default run (well inside CI's budget)
#   SFS_LONG=1 scripts/test.sh also the long fault/stress forms
#   SFS_FUZZ_SECONDS=60        longer fuzzing (0 skips it)
#   SFS_RDMA=0                 skip the RDMA suites (run in the soft-RoCE VM without a device)
#   SFS_SANITIZE=address|thread  instead, the ASan+UBSan or the TSan run (scripts/sanitize.sh)
#   SFS_SANITIZE=0             skip the short sanitizer form of the default run
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
case ${SFS_SANITIZE:-} in address|thread) exec bash scripts/sanitize.sh "$SFS_SANITIZE" "$@" ;; esac
bash scripts/build.sh
BUILD_DIR=${BUILD_DIR:-build}
# Suites a build drops without a word when an 'auto' dependency is missing
# (libfuse3: sfs-mount and every test that mounts; libibverbs/librdmacm: the
# RDMA suites; libnetfilter-queue: netfault_test's delayer), or when a
# meson.build stops finding the daemons' targets. Each must be in the build.
required=(fuse_unit_test fuse_posix_test fuse_random_ops_test fuse_multi_mount_test
          fuse_lease_test fuse_statahead_test fuse_close_test fuse_programs_test fuse_fault_test fuse_mirror_test
          fuse_write_behind_test fuse_wire_flags_test fuse_lock_test cli_test recovery_test
          overload_memory_test lossyfs_test power_loss_test fuse_space_test fence_test bench_cluster_test netfault_test
          metrics_test metrics_integration_test config_test python_binding_test auth_test capability_test qos_integration_test fuse_ec_test
          rdma_test bulk_copy_test rdma_cluster_test ec_test ops_test package_test cache_test kv_test kv_integration_test python_kv_test
          rebuild_test tenant_integration_test tenant_qos_integration_test cluster_key_test key_rotation_test open_path_integration_test python_torch_test python_kv_restore_test)
tests_json=$(meson introspect --tests "$BUILD_DIR")
have=$(python3 -c 'import json, sys; print(*[t["name"] for t in json.load(sys.stdin)])' \
  <<<"$tests_json")
missing=()
for t in "${required[@]}"; do [[ " $have " == *" $t "* ]] || missing+=("$t"); done
[ -f "$BUILD_DIR/tests/netfault/sfs-nfq-delay" ] || missing+=(sfs-nfq-delay)
if [ ${#missing[@]} -gt 0 ]; then
  echo "test.sh: not in the build: ${missing[*]} (is libfuse3-dev, libibverbs-dev," \
    "librdmacm-dev, libnetfilter-queue-dev, python3-dev or pybind11-dev missing? see $BUILD_DIR/meson-logs/meson-log.txt)" >&2
  exit 1
fi
rdma_tests=$(python3 -c 'import json, sys
print(*[t["name"] for t in json.load(sys.stdin) if "stripefs:rdma" in t["suite"]])' \
  <<<"$tests_json")
meson_failed=()
# Meson reads <build>/NAME.xml after each gtest binary; one that dies writes
# none, and an earlier run's must not stand in for it.
find "$BUILD_DIR" -maxdepth 1 -name '*.xml' -delete
# The RDMA suites need a verbs device: they run below (inside ../shared/rdma-vm here).
meson test -C "$BUILD_DIR" --print-errorlogs --num-processes 2 --no-suite rdma "$@" ||
  meson_failed+=(--meson-failed "meson test (exit status $?)")
# A short fuzz run of the frame codec and the MDS/OSS request handlers (a clang
# build of its own; about 3 minutes from scratch). SFS_FUZZ_SECONDS=0 skips it.
if [ "${SFS_FUZZ_SECONDS:-5}" != 0 ]; then
  bash scripts/fuzz.sh --seconds "${SFS_FUZZ_SECONDS:-5}"
fi
# Sanitizers, short form: ASan+UBSan on the unit suite and a few integration
# tests, TSan on a few concurrency tests (builds of their own; scripts/sanitize.sh).
if [ "${SFS_SANITIZE:-short}" != 0 ]; then
  bash scripts/sanitize.sh short
fi
# The RDMA suites (transport and a real cluster over verbs): directly when this
# host has an RDMA device, else inside the soft-RoCE VM of ../shared/rdma-vm
# (about a minute under emulation, plus its one-time package install).
# SFS_RDMA=0 skips them.
# Only this run's RDMA results count: an earlier run's logs go first.
rm -f "$BUILD_DIR"/meson-logs/testlog-rdma.*
rdma_skipped=""
RDMA_TEST=(meson test -C "$BUILD_DIR" --setup rdma --suite rdma --no-rebuild --print-errorlogs)
if [ "${SFS_RDMA:-1}" = 0 ]; then
  rdma_skipped="SFS_RDMA=0 asked for it"
elif ls /sys/class/infiniband/* >/dev/null 2>&1; then
  "${RDMA_TEST[@]}" || meson_failed+=(--meson-failed "the RDMA suites (exit status $?)")
elif [ -f ../shared/rdma-vm/run ]; then
  bash ../shared/rdma-vm/run "${RDMA_TEST[@]}" ||
    meson_failed+=(--meson-failed "the RDMA suites in ../shared/rdma-vm (exit status $?)")
else
  rdma_skipped="this host has no RDMA device (/sys/class/infiniband) and no ../shared/rdma-vm"
  echo "test.sh: the RDMA suites did not run: $rdma_skipped" >&2
fi
# One closing line that any CI reads, "tests: P passed, F failed, S skipped"
# (GoogleTest cases one by one); non-zero exit on any failure and on any skip
# not in scripts/test-summary.py's short allow-list.
python3 scripts/test-summary.py "$BUILD_DIR" ${rdma_skipped:+--rdma-skipped "$rdma_skipped"} \
  --rdma-tests "$rdma_tests" "${meson_failed[@]}"
