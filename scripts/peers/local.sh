# The local-directory baseline for bench-peers.sh: a plain directory DIR/mnt/local on the
# same disk as every peer's data. Sourced by scripts/bench-peers.sh.

local_setup() { rm -rf "${1:?}"; mkdir -p "$1"; }
local_teardown() { rm -rf "${1:?}"; }
