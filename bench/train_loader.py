#!/usr/bin/env python3
"""The training loader benchmark of issue 18 with the real DataLoader: the
files `sfs-bench train --prepare` wrote (DIR/s000000.., 4-256 KiB), read by
torch.utils.data.DataLoader over stripefs.torch.FileDataset, K worker
processes, a new seeded permutation every epoch (EpochSampler).

    scripts/cluster.sh up --oss 2 --dir /tmp/cb                 # prints ADDR
    build/tools/sfs-bench train --mds ADDR -o /t -n 4000 --prepare --epochs 1
    PYTHONPATH=build/client/python /usr/bin/python3 bench/train_loader.py ADDR /t \\
        -n 4000 --workers 4 [--cache-ram 512M [--cache-dir D] [--hint]] [--drop-caches]
    # or through a mount (stripefs.torch.MountDataset; the mount's own -o cache_ram):
    PYTHONPATH=build/client/python /usr/bin/python3 bench/train_loader.py ADDR /t \\
        -n 4000 --workers 4 --mount MNT [--hint] [--drop-caches]

One line per epoch: seconds, samples/s, and the workers' summed cache hit
rate (each worker process has its own cache: docs/cache.md). Without --hint
the stock RandomSampler reads the same kind of permutation. With --mount the
workers read through the mount and share its one cache; the hit rate is the
mount's (user.sfs.cache.status) over the epoch. The epoch's time includes the
sampler's set_epoch, so the hint's hand-over is paid inside it.
"""
import argparse
import os
import time

import torch
from torch.utils.data import DataLoader, RandomSampler

from stripefs.torch import EpochSampler, FileDataset, MountDataset


class Counting(FileDataset):
    """Item -> (bytes read, this worker's hits, misses, worker id)."""

    def __getitem__(self, index):
        n = len(super().__getitem__(index))
        if not self.connect_options.get("cache_ram"):
            return (n, 0, 0, 0)
        st = self._fs().cache_status()
        info = torch.utils.data.get_worker_info()
        return (n, st["hits"], st["misses"], info.id if info else 0)


class CountingMount(MountDataset):
    """Item -> (bytes read, 0, 0, 0): the mount's counters are read per epoch."""

    def __getitem__(self, index):
        return (len(super().__getitem__(index)), 0, 0, 0)


def mount_counters(mnt):
    try:
        text = os.getxattr(mnt, "user.sfs.cache.status").decode()
    except OSError:
        return None  # a mount without a cache
    kv = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    return int(kv["hits"]), int(kv["misses"])


def drop_caches():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def keep(batch):
    return batch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("address")
    ap.add_argument("dir")
    ap.add_argument("-n", type=int, default=2000)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--cache-ram", default=None)
    ap.add_argument("--cache-dir", default=None, help="kept across epochs: DIR/worker-N")
    ap.add_argument("--hint", action="store_true")
    ap.add_argument("--mount", default=None, help="read through this sfs-mount of ADDR")
    ap.add_argument("--drop-caches", action="store_true",
                    help="drop the host's page caches before every epoch (root)")
    a = ap.parse_args()
    paths = ["%s/s%06d" % (a.dir, i) for i in range(a.n)]
    opts = {"cache_ram": a.cache_ram} if a.cache_ram else {}
    if a.cache_dir:
        opts.update(cache_dir=a.cache_dir, cache_size=a.cache_ram or "1G")
    ds = CountingMount(a.mount, paths) if a.mount else Counting(a.address, paths, **opts)
    if a.hint:
        sampler = EpochSampler(ds, seed=1, batch_size=a.batch, num_workers=a.workers)
    else:
        sampler = RandomSampler(ds, generator=torch.Generator().manual_seed(1))
    loader = DataLoader(ds, batch_size=a.batch, sampler=sampler, num_workers=a.workers,
                        collate_fn=keep)
    if a.mount:
        cached = mount_counters(a.mount) is not None
        mode = "mount, " + ("no cache" if not cached else ("cache+hint" if a.hint else "cache-lru"))
    else:
        mode = "no-cache" if not a.cache_ram else ("cache+hint" if a.hint else "cache-lru")
    print("train_loader: %s, %d files, %d workers, cache %s" % (mode, a.n, a.workers, a.cache_ram))
    for epoch in range(a.epochs):
        if a.drop_caches:
            drop_caches()
        before = mount_counters(a.mount) if a.mount else None
        t0 = time.monotonic()
        if a.hint:
            sampler.set_epoch(epoch)
        total, last = 0, {}
        for batch in loader:
            for n, hits, misses, w in batch:
                total += n
                last[w] = (hits, misses)
        dt = time.monotonic() - t0
        hits = sum(h for h, _ in last.values())
        misses = sum(m for _, m in last.values())
        if before is not None:
            after = mount_counters(a.mount)
            hits, misses = after[0] - before[0], after[1] - before[1]
        rate = hits / (hits + misses) if hits + misses else 0.0
        print("  epoch %d  %7.3f s  %8.1f samples/s  %6.1f MiB/s  hit %5.1f%%" %
              (epoch + 1, dt, a.n / dt, total / dt / 1048576, 100 * rate))


if __name__ == "__main__":
    main()
