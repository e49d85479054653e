#!/usr/bin/env bash
# Runs every libFuzzer target in fuzz/ for a bounded time.
#
#   scripts/fuzz.sh [--seconds N] [--build DIR]
#
# Installs clang and its libFuzzer runtime (Debian packages) if missing,
# configures a clang build with ASan+UBSan and -Dfuzz=true (default dir
# build-fuzz), builds only the fuzz targets, then runs each for N seconds
# (default 60; CI uses --seconds 5) over its corpus in fuzz/corpus/<target>/
# (seeds are committed; new inputs found are added there). A crash stops the
# run with the target's crash-* file copied to fuzz/crashes/; fix it, add a unit
# test feeding it, and keep the input in fuzz/regressions/<target>/ (replayed
# on every run as a second, read-only corpus).
set -euo pipefail

SECONDS_EACH=60
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build-fuzz
while [[ $# -gt 0 ]]; do
  case $1 in
    --seconds) SECONDS_EACH=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    *) echo "usage: scripts/fuzz.sh [--seconds N] [--build DIR]" >&2; exit 2 ;;
  esac
done

if ! command -v clang++ >/dev/null || ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  sudo=""; [[ $(id -u) -ne 0 ]] && sudo=sudo
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get install -y -qq clang libclang-rt-14-dev >/dev/null 2>&1 ||
    { $sudo apt-get update -qq && $sudo apt-get install -y -qq clang libclang-rt-14-dev >/dev/null; }
fi

TARGETS=(frame_fuzzer oss_request_fuzzer mds_request_fuzzer)
# Boost 1.74 does not detect clang's C++20 coroutines with libstdc++, so say so; clang 14
# cannot emit -fsanitize=function data for split coroutines ("difference across sections").
if [[ ! -f $BUILD/build.ninja ]]; then
  CXX=clang++ CC=clang meson setup "$BUILD" "$ROOT" -Dfuzz=true -Dtests=false -Dfuse=disabled \
    -Drdma=disabled -Dbuildtype=debugoptimized -Db_sanitize=address,undefined -Db_lundef=false \
    "-Dcpp_args=-DBOOST_ASIO_HAS_CO_AWAIT -DBOOST_ASIO_HAS_STD_COROUTINE -fno-sanitize=function"
fi
ninja -C "$BUILD" -j"${FUZZ_JOBS:-2}" "${TARGETS[@]/#/fuzz/}"

export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
for t in "${TARGETS[@]}"; do
  corpus=$ROOT/fuzz/corpus/${t%_fuzzer}
  mkdir -p "$corpus"
  echo "== $t: ${SECONDS_EACH}s"
  # Log lines of the servers under test go to the log only; the summary is printed.
  log=$WORK/$t.log
  if (cd "$WORK" && TMPDIR=$WORK "$BUILD/fuzz/$t" -max_total_time="$SECONDS_EACH" \
        -max_len=65536 -rss_limit_mb=4096 -print_final_stats=1 "$corpus" \
        $(ls -d "$ROOT/fuzz/regressions/${t%_fuzzer}" 2>/dev/null) >"$log" 2>&1); then
    grep -E '^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss_mb)' "$log" || true
  else
    grep -v -E '^[0-9-]+T[0-9:.]+Z [IWED] ' "$log" | tail -n 40 >&2
    mkdir -p "$ROOT/fuzz/crashes"
    cp "$WORK"/crash-* "$WORK"/leak-* "$WORK"/timeout-* "$WORK"/oom-* "$ROOT/fuzz/crashes/" 2>/dev/null || true
    echo "fuzz.sh: $t failed; its input is in fuzz/crashes/" >&2
    exit 1
  fi
done
echo "fuzz.sh: all targets ran ${SECONDS_EACH}s without a crash"
