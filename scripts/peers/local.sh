# The local-directory baseline for bench-peers.sh: a plain directory DIR/mnt/local on the
# same disk as every peer's data. Its "second mount" is a bind mount: the same kernel and
# page cache, so the two-client check is a baseline there, not a test of coherence.
# Sourced by scripts/bench-peers.sh.

local_setup() { rm -rf "${1:?}"; mkdir -p "$1"; }
local_mount2() { mount --bind "${1%.*}" "$1" || fail "mount --bind failed"; }
local_umount2() { umount "$1" 2>/dev/null || umount -l "$1" || true; }
local_teardown() { local k; for k in 2 3 4; do local_umount2 "${1:?}.$k"; done; rm -rf "${1:?}"; }
