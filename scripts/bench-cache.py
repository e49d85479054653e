#!/usr/bin/env python3
"""Epoch read times through the Python binding with and without the client
cache (docs/cache.md): N small files (4-256 KiB, mean ~110 KiB), a new seeded
permutation every epoch read by K threads (as DistributedSampler splits it),
for: no cache, a cache >= the dataset with LRU only, the same with the order
hint (prefetch(order) before each epoch), and a cache of half the dataset
with LRU and with the hint.

    scripts/cluster.sh up --oss 2 --dir /tmp/cb      # prints the MDS address
    PYTHONPATH=build/client/python scripts/bench-cache.py ADDR -n 2000 --epochs 3

Prints one line per case and epoch: seconds, samples/s, hit rate, and one
JSON object per case with --json. The servers' page cache is not dropped
(that needs root and disturbs the machine): epoch 1 of "no cache" is then
already a warm-server read, so the figures show what the client cache saves
beyond the network round trips and the OSS path.
"""
import argparse
import concurrent.futures
import json
import random
import time

import stripefs


def make_dataset(fs, root, n, seed):
    rng = random.Random(seed)
    try:
        fs.mkdir(root)
    except FileExistsError:
        pass
    paths, total = [], 0
    for i in range(n):
        # 4..256 KiB, skewed small: mean about 110 KiB.
        size = int(4096 + (256 << 10) * rng.random() ** 1.5)
        p = "%s/s%06d" % (root, i)
        paths.append(p)
        total += size
        if not fs.exists(p) or fs.stat(p).st_size != size:
            with fs.open(p, "wb") as f:
                f.write(rng.randbytes(size))
    return paths, total


def run_epoch(fs, paths, order, workers):
    shares = [order[w::workers] for w in range(workers)]

    def read_share(share):
        n = 0
        for i in share:
            with fs.open(paths[i]) as f:
                n += len(f.read())
        return n

    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        got = sum(pool.map(read_share, shares))
    return time.monotonic() - start, got


def run_case(args, paths, total, name, cache_bytes, hint):
    opts = {}
    if cache_bytes:
        opts = {"cache_ram": cache_bytes, "prefetch_threads": args.prefetch_threads}
    fs = stripefs.connect(args.address, **opts)
    out = {"case": name, "cache_bytes": cache_bytes, "hint": hint, "epochs": []}
    for epoch in range(args.epochs):
        order = list(range(len(paths)))
        random.Random(args.seed * 7919 + epoch).shuffle(order)
        before = fs.cache_status() if cache_bytes else None
        if hint:
            fs.prefetch([paths[i] for i in order])
        secs, got = run_epoch(fs, paths, order, args.workers)
        assert got == total, (got, total)
        e = {"epoch": epoch + 1, "seconds": round(secs, 3),
             "samples_per_s": round(len(paths) / secs, 1)}
        if cache_bytes:
            st = fs.cache_status()
            hits, misses = st["hits"] - before["hits"], st["misses"] - before["misses"]
            e["hit_rate"] = round(hits / max(1, hits + misses), 3)
            e["evictions"] = st["evictions"] - before["evictions"]
        out["epochs"].append(e)
        print("%-14s epoch %d: %7.3f s  %8.1f samples/s  hit_rate %s" %
              (name, epoch + 1, secs, len(paths) / secs, e.get("hit_rate", "-")), flush=True)
    fs.close()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("address")
    ap.add_argument("-n", "--files", type=int, default=2000)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--prefetch-threads", type=int, default=16)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dir", default="/bench-cache")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with stripefs.connect(args.address) as fs:
        paths, total = make_dataset(fs, args.dir, args.files, args.seed)
    print("dataset: %d files, %.1f MiB" % (len(paths), total / 2**20), flush=True)
    full, half = int(total * 1.1) + (64 << 20), total // 2
    cases = [("no-cache", 0, False), ("full-lru", full, False), ("full-hint", full, True),
             ("half-lru", half, False), ("half-hint", half, True)]
    results = [run_case(args, paths, total, *c) for c in cases]
    if args.json:
        print(json.dumps(results))


if __name__ == "__main__":
    main()
