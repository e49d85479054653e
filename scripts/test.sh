#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test suite (unit and
# integration: real sfs-mds/sfs-oss processes on loopback and real FUSE mounts).
#   scripts/test.sh            the default run (well inside CI's budget)
#   SFS_LONG=1 scripts/test.sh also the long fault/fuzz/stress forms
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
BUILD_DIR=${BUILD_DIR:-build}
# The RDMA suite needs a verbs device: it runs inside ../shared/rdma-vm when SFS_RDMA=1.
meson test -C "$BUILD_DIR" --print-errorlogs --num-processes 2 --no-suite rdma "$@"
# The RDMA transport's tests, for real over soft-RoCE in a throw-away VM.
if [ "${SFS_RDMA:-0}" = 1 ]; then
  ../shared/rdma-vm/run meson test -C "$BUILD_DIR" --setup rdma --suite rdma --no-rebuild --print-errorlogs
fi
