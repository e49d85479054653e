// `sfs-bench kv`: the KV-cache tier's raw rates through libsfs-kv (docs/kv.md
// "Numbers"): multi_put and multi_get GB/s of N blocks, the latency of one
// block's get (p50/p99), and a batched exists. Not the model-level restore
// benchmark of issue 19 (prefill vs restore): that is still to be built.
#pragma once

namespace sfs::bench {

// argv[0] is "kv". Returns the process exit code.
int RunKv(int argc, char** argv);

}  // namespace sfs::bench
