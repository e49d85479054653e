#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test suite (unit and
# integration: real sfs-mds/sfs-oss processes on loopback and real FUSE mounts).
#   scripts/test.sh            the default run (well inside CI's budget)
#   SFS_LONG=1 scripts/test.sh also the long fault/stress forms
#   SFS_FUZZ_SECONDS=60 / SFS_RDMA=1  longer fuzzing / the RDMA suites in the soft-RoCE VM
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
BUILD_DIR=${BUILD_DIR:-build}
# The RDMA suite needs a verbs device: it runs inside ../shared/rdma-vm when SFS_RDMA=1.
meson test -C "$BUILD_DIR" --print-errorlogs --num-processes 2 --no-suite rdma "$@"
# A short fuzz run of the frame codec and the MDS/OSS request handlers (a clang
# build of its own; about 3 minutes from scratch). SFS_FUZZ_SECONDS=0 skips it.
if [ "${SFS_FUZZ_SECONDS:-5}" != 0 ]; then
  bash scripts/fuzz.sh --seconds "${SFS_FUZZ_SECONDS:-5}"
fi
# The RDMA transport's tests, for real over soft-RoCE in a throw-away VM.
if [ "${SFS_RDMA:-0}" = 1 ]; then
  ../shared/rdma-vm/run meson test -C "$BUILD_DIR" --setup rdma --suite rdma --no-rebuild --print-errorlogs
fi
# One closing line that any CI reads: the meson test results.
python3 - "$BUILD_DIR/meson-logs/testlog.json" <<'PY'
import json, sys
res = [json.loads(l)["result"] for l in open(sys.argv[1]) if l.strip()]
ok = sum(r in ("OK", "EXPECTEDFAIL") for r in res)
print(f"tests: {ok} passed, {len(res) - ok} failed")
PY
