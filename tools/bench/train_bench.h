// `sfs-bench train`: a training data loader's epochs over many small files
// (issue 18): N files of 4-256 KiB (mean about 105 KiB), a new seeded
// permutation every epoch split across K loader threads as DistributedSampler
// splits it across ranks, read whole. Through libsfs (--mds) with the client
// cache off, on (LRU only), or on with the epoch's order as the hint; or over
// plain POSIX on any directory (local ext4, a FUSE mount) for a baseline.
#pragma once

namespace sfs::bench {

// argv[0] is "train". Returns the process exit code.
int RunTrain(int argc, char** argv);

}  // namespace sfs::bench
