#!/usr/bin/env bash
# Configures (once) and builds StripeFS into ./build (release) or $BUILD_DIR:
# everything, or only the ninja targets given as arguments (the run command
# builds just the daemons, the mount and the CLI).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
BUILD_TYPE=${BUILD_TYPE:-release}
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  meson setup "$BUILD_DIR" --buildtype="$BUILD_TYPE" >/dev/null
fi
ninja -C "$BUILD_DIR" ${NINJA_JOBS:+-j$NINJA_JOBS} "$@"
