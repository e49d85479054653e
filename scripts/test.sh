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
# The RDMA suites need a verbs device: they run below (inside ../shared/rdma-vm here).
meson test -C "$BUILD_DIR" --print-errorlogs --num-processes 2 --no-suite rdma "$@"
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
if [ "${SFS_RDMA:-1}" != 0 ]; then
  RDMA_TEST=(meson test -C "$BUILD_DIR" --setup rdma --suite rdma --no-rebuild --print-errorlogs)
  if ls /sys/class/infiniband/* >/dev/null 2>&1; then
    "${RDMA_TEST[@]}"
  elif [ -f ../shared/rdma-vm/run ]; then
    bash ../shared/rdma-vm/run "${RDMA_TEST[@]}"
  else
    echo "test.sh: no RDMA device and no ../shared/rdma-vm: the RDMA suites did not run" >&2
  fi
fi
# One closing line that any CI reads: the meson test results.
python3 - "$BUILD_DIR"/meson-logs/testlog.json "$BUILD_DIR"/meson-logs/testlog-rdma.json <<'PY'
import json, os, sys
res = [json.loads(l)["result"] for f in sys.argv[1:] if os.path.exists(f)
       for l in open(f) if l.strip()]
ok = sum(r in ("OK", "EXPECTEDFAIL") for r in res)
skipped = sum(r == "SKIP" for r in res)
print(f"tests: {ok} passed, {len(res) - ok - skipped} failed, {skipped} skipped")
PY
