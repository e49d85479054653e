#!/usr/bin/env bash
# rank_mount.sh MNT0,MNT1,... PROG ARGS...: runs PROG ARGS with every "@MNT@" inside an
# argument replaced by MNT[rank % count], rank being this process's MPI rank (Open MPI's
# OMPI_COMM_WORLD_RANK, or PMIX_RANK / PMI_RANK). For scripts/bench-real.sh's two-mount
# run: `mpirun -np 4 rank_mount.sh A,B ior ... -o @MNT@/two` gives ranks 0 and 2 the
# path A/two and ranks 1 and 3 B/two, the same shared file seen through two client mounts,
# while IOR itself takes one -o path (it parses its options on every rank, so each rank
# opens the file through its own mount; offsets, verification and reports are IOR's own).
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: rank_mount.sh MNT0,MNT1,... PROG ARGS..." >&2; exit 2; }
IFS=, read -r -a mnts <<<"$1"
shift
rank=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${PMI_RANK:-}}}
[[ "$rank" =~ ^[0-9]+$ ]] || { echo "rank_mount.sh: no MPI rank in the environment" >&2; exit 2; }
mnt=${mnts[rank % ${#mnts[@]}]}
args=()
for a in "$@"; do args+=("${a//@MNT@/$mnt}"); done
exec "${args[@]}"
