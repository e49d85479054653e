#!/usr/bin/env bash
# The run command. On a fresh Debian 12 machine: installs what is missing,
# builds, starts a local StripeFS cluster (1 MDS + 4 OSS on 127.0.0.1, state
# under .cluster/), mounts it on ./mnt, and shows it working: a directory
# striped 4 wide, a 16 MiB file written into it with dd and read back with
# its checksum compared, and the file's layout. The cluster is left running.
#
#   scripts/quickstart.sh          set up (again) and demonstrate
#   scripts/quickstart.sh stop     unmount and stop the cluster
#
# Environment: BUILD_DIR (default build), SFS_QS_DIR (default .cluster),
# SFS_QS_MOUNT (default ./mnt), SFS_QS_OSS (default 4).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
DIR=${SFS_QS_DIR:-.cluster}
MNT=${SFS_QS_MOUNT:-./mnt}
NOSS=${SFS_QS_OSS:-4}

if [ "${1:-}" = stop ]; then
  scripts/cluster.sh down --dir "$DIR"
  echo "quickstart: cluster in $DIR stopped"
  exit 0
fi
[ $# -eq 0 ] || { echo "usage: scripts/quickstart.sh [stop]" >&2; exit 2; }

say() { printf '\n== %s\n' "$*"; }

say "installing dependencies"
bash scripts/install-deps.sh
say "building into $BUILD_DIR (what this runs: sfs-mds, sfs-oss, sfs-mount, sfs; scripts/test.sh builds the rest)"
BUILD_DIR=$BUILD_DIR bash scripts/build.sh mds/sfs-mds oss/sfs-oss client/fuse/sfs-mount tools/sfs
SFS=$BUILD_DIR/tools/sfs

say "starting 1 MDS + $NOSS OSS, mounted on $MNT"
if scripts/cluster.sh status --dir "$DIR" >/dev/null 2>&1; then
  echo "already running:"
else
  scripts/cluster.sh down --dir "$DIR" >/dev/null 2>&1 || true  # leftovers of a broken run
  scripts/cluster.sh up --oss "$NOSS" --dir "$DIR" --mount "$MNT" --build "$BUILD_DIR" >/dev/null
fi
scripts/cluster.sh status --dir "$DIR"

DEMO=$MNT/quickstart
say "a directory striped over $NOSS OSTs: $SFS setstripe -c $NOSS -S 1M $DEMO"
mkdir -p "$DEMO"
"$SFS" setstripe -c "$NOSS" -S 1M "$DEMO"
"$SFS" getstripe "$DEMO"

say "writing 16 MiB with dd, reading it back"
SRC=$DIR/quickstart-16M.src
dd if=/dev/urandom of="$SRC" bs=1M count=16 status=none
rm -f "$DEMO/data16M"
dd if="$SRC" of="$DEMO/data16M" bs=1M conv=fsync status=none
# A new open sees the file changed (close-to-open), so this read goes to the OSSes.
want=$(sha256sum <"$SRC" | cut -d' ' -f1)
got=$(sha256sum <"$DEMO/data16M" | cut -d' ' -f1)
ls -l "$DEMO/data16M"
echo "sha256 written: $want"
echo "sha256 read:    $got"
[ "$want" = "$got" ] || { echo "quickstart: MISMATCH" >&2; exit 1; }
echo "read back intact"

say "its layout: $SFS getstripe $DEMO/data16M"
"$SFS" getstripe "$DEMO/data16M"
say "space: $SFS df -h $MNT"
"$SFS" df -h "$MNT"

say "StripeFS is mounted on $MNT and left running"
echo "  stop it:   scripts/quickstart.sh stop   (or scripts/cluster.sh down --dir $DIR)"
echo "  logs:      $DIR/logs/"
