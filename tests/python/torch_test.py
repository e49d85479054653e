#!/usr/bin/env python3
"""stripefs.torch with the stock torch.utils.data.DataLoader (Debian
python3-torch), num_workers=2, against a real cluster (binding_test's).

torch is a test dependency (scripts/install-deps.sh): without it this test
fails at import, it does not skip. Each worker process reports, with every
sample, its CRC and its own cache's counters (one cache per process,
docs/cache.md), so the parent can check per worker that the EpochSampler's
order reached the cache: its hint is its share of the epoch, and with the
prefetch waited for every read is a hit. Between epochs another client
rewrites some files; the workers' directory caches (DIR/worker-N, reused by
the same worker id next epoch) must not serve one stale sample.

MountDataset reads through two real sfs-mounts (SFS_MOUNT_BIN): one with a
client cache, which the EpochSampler's whole-epoch hint fills for all
workers, and one without, through which another node rewrites files.
"""
import os
import random
import subprocess
import sys
import tempfile
import time
import unittest
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import binding_test as bt  # noqa: E402  (its Cluster and result bookkeeping)
import stripefs  # noqa: E402
import torch  # noqa: E402  (required: a missing torch is a failure)
from torch.utils.data import DataLoader, RandomSampler  # noqa: E402
from stripefs.torch import EpochSampler, FileDataset, MountDataset  # noqa: E402

NUM_OSS = 2
FILES = 48
BATCH = 4
WORKERS = 2
CLUSTER = None
FS = None


def setUpModule():
    global CLUSTER, FS
    CLUSTER = bt.Cluster(os.environ["SFS_MDS_BIN"], os.environ["SFS_OSS_BIN"], NUM_OSS)
    FS = stripefs.connect(CLUSTER.address, rpc_timeout=20)
    CLUSTER.wait_osts_up(FS, NUM_OSS)


def tearDownModule():
    if FS is not None:
        FS.close()
    if CLUSTER is not None:
        CLUSTER.stop(keep=not bt.RESULT_OK[0])
        if not bt.RESULT_OK[0]:
            print("cluster kept in %s; logs:\n%s" % (CLUSTER.root, CLUSTER.logs()),
                  file=sys.stderr)


class ReportingDataset(FileDataset):
    """Item i -> (i, crc32 of its bytes, worker id, this worker's cache status).
    With wait=True a worker waits for its hinted prefetch before its first
    read, so the counters do not depend on timing."""

    def __init__(self, *args, wait=False, **kwargs):
        super().__init__(*args, **kwargs)
        self.wait = wait

    def _hint(self, info):
        super()._hint(info)
        if self.wait and self._order is not None:
            assert self._fs().wait_prefetch(30), "prefetch did not finish in 30 s"

    def __getitem__(self, index):
        data = super().__getitem__(index)
        info = torch.utils.data.get_worker_info()
        return (index, zlib.crc32(data), info.id if info else -1, self._fs().cache_status())


def as_list(batch):  # no collation: the tuples as they are
    return batch


def write_files(prefix, seed):
    rng = random.Random(seed)
    FS.mkdir(prefix)
    paths, crcs = [], []
    for i in range(FILES):
        blob = rng.randbytes(rng.randrange(4 << 10, 64 << 10))
        path = "%s/s%03d" % (prefix, i)
        with FS.open(path, "wb") as f:
            f.write(blob)
        paths.append(path)
        crcs.append(zlib.crc32(blob))
    return paths, crcs


def rewrite_some(rng, paths, crcs, open_for_writing):
    """Rewrites 1/8 of the files with new random bytes (open_for_writing(path)
    gives a file object), and their crcs."""
    for i in rng.sample(range(FILES), FILES // 8):
        blob = rng.randbytes(rng.randrange(4 << 10, 64 << 10))
        with open_for_writing(paths[i]) as f:
            f.write(blob)
        crcs[i] = zlib.crc32(blob)


def run_epoch(loader):
    """Every sample of one epoch; per worker, the last cache status it sent."""
    samples, last = [], {}
    for batch in loader:
        for index, crc, worker, status in batch:
            samples.append((index, crc))
            last[worker] = status
    return samples, last


class DataLoaderTest(unittest.TestCase):
    def test_hinted_epochs_are_hits_with_matching_crcs_and_no_stale_sample(self):
        paths, crcs = write_files("/train", 1)
        cache_dir = tempfile.mkdtemp(prefix="cache-", dir=CLUSTER.root)
        ds = ReportingDataset(CLUSTER.address, paths, wait=True, rpc_timeout=20,
                              cache_ram="4M", cache_dir=cache_dir, cache_size="64M")
        sampler = EpochSampler(ds, seed=11, batch_size=BATCH, num_workers=WORKERS)
        loader = DataLoader(ds, batch_size=BATCH, sampler=sampler, num_workers=WORKERS,
                            collate_fn=as_list)
        rng = random.Random(99)
        orders = []
        for epoch in range(3):
            if epoch > 0:  # another client rewrites 1/8 of the files between epochs
                rewrite_some(rng, paths, crcs, lambda p: FS.open(p, "wb"))
            sampler.set_epoch(epoch)
            samples, last = run_epoch(loader)
            order = [i for i, _ in samples]
            orders.append(order)
            self.assertEqual(sorted(order), list(range(FILES)), "epoch %d" % epoch)
            stale = [i for i, crc in samples if crc != crcs[i]]
            self.assertEqual(stale, [], "epoch %d: stale or wrong samples" % epoch)
            self.assertEqual(sorted(last), list(range(WORKERS)))
            share = FILES // WORKERS  # batches alternate between the two workers
            for w, st in last.items():
                where = "epoch %d worker %d: %r" % (epoch, w, st)
                self.assertEqual(st["hint_length"], share, where)
                self.assertEqual(st["misses"], 0, where)
                self.assertEqual(st["hits"], share, where)
                if epoch == 0:  # cold directories: the prefetch fetched the whole share
                    self.assertGreaterEqual(st["prefetch_files"], share, where)
            self.assertTrue(os.path.isdir(os.path.join(cache_dir, "worker-0")))
        self.assertEqual(len(set(map(tuple, orders))), 3, "a new permutation every epoch")

    def test_without_the_hint_a_cold_cache_misses_every_sample(self):
        # The baseline that makes the hits above mean something: same loader
        # shape, the stock RandomSampler (no order hint), RAM cache only.
        paths, crcs = write_files("/nohint", 2)
        ds = ReportingDataset(CLUSTER.address, paths, rpc_timeout=20, cache_ram="4M")
        loader = DataLoader(ds, batch_size=BATCH, num_workers=WORKERS, collate_fn=as_list,
                            sampler=RandomSampler(ds, generator=torch.Generator().manual_seed(5)))
        samples, last = run_epoch(loader)
        self.assertEqual(sorted(i for i, _ in samples), list(range(FILES)))
        self.assertEqual([i for i, crc in samples if crc != crcs[i]], [])
        for w, st in last.items():
            self.assertEqual(st["hint_length"], 0, st)
            self.assertEqual(st["hits"], 0, st)
            self.assertEqual(st["misses"], FILES // WORKERS, st)


class Mount:
    """A real sfs-mount of the cluster, in the foreground, at CLUSTER.root/name."""

    def __init__(self, name, options=None):
        self.path = os.path.join(CLUSTER.root, name)
        os.makedirs(self.path)
        argv = [os.environ["SFS_MOUNT_BIN"], CLUSTER.address, self.path, "-f"]
        if options:
            argv += ["-o", options]
        with open(os.path.join(CLUSTER.root, "logs", name + ".log"), "ab") as log:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + bt.START_TIMEOUT
        while not os.path.ismount(self.path):  # polls the condition, with a deadline
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.proc.kill()
                raise RuntimeError("%s not mounted (exit %r); log in %s"
                                   % (self.path, self.proc.poll(), CLUSTER.root))
            time.sleep(0.02)

    def counters(self):
        text = os.getxattr(self.path, "user.sfs.cache.status").decode()
        return {k.strip(): v.strip() for k, v in
                (line.split(":", 1) for line in text.splitlines() if ":" in line)}

    def stop(self):
        subprocess.run(["fusermount3", "-u", self.path], check=False)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise


class ReportingMountDataset(MountDataset):
    """Item i -> (i, crc32 of its bytes, worker id, None)."""

    def __getitem__(self, index):
        data = super().__getitem__(index)
        info = torch.utils.data.get_worker_info()
        return (index, zlib.crc32(data), info.id if info else -1, None)


class MountDataLoaderTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cached = Mount("mnt-cache", "cache_ram=16M")
        try:
            cls.plain = Mount("mnt-plain")
        except Exception:
            cls.cached.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.plain.stop()
        cls.cached.stop()

    def wait_prefetch(self, length):
        deadline = time.monotonic() + 30
        while True:  # each getxattr waits inside the mount up to 1 s for the hint
            c = {k: int(v) for k, v in self.cached.counters().items() if v.isdigit()}
            if c["hint_length"] == length and c["hint_done"] == length:
                return c
            self.assertLess(time.monotonic(), deadline, "prefetch not done in 30 s: %r" % c)
            os.getxattr(self.cached.path, "user.sfs.prefetch.wait")

    def test_the_mount_cache_serves_every_worker_the_hinted_epoch_and_no_stale_sample(self):
        paths, crcs = write_files("/mnt-train", 3)
        ds = ReportingMountDataset(self.cached.path, paths)
        sampler = EpochSampler(ds, seed=13, batch_size=BATCH, num_workers=WORKERS)
        loader = DataLoader(ds, batch_size=BATCH, sampler=sampler, num_workers=WORKERS,
                            collate_fn=as_list)
        rng = random.Random(7)
        orders = []
        for epoch in range(3):
            if epoch > 0:  # another node rewrites 1/8 of the files through its mount
                rewrite_some(rng, paths, crcs, lambda p: open(self.plain.path + p, "wb"))
            sampler.set_epoch(epoch)  # the whole order, once, to the mount's one cache
            self.assertIs(ds.hint_sent, True)
            before = self.wait_prefetch(FILES)
            samples, _ = run_epoch(loader)
            after = {k: int(v) for k, v in self.cached.counters().items() if v.isdigit()}
            order = [i for i, _ in samples]
            orders.append(order)
            self.assertEqual(sorted(order), list(range(FILES)), "epoch %d" % epoch)
            self.assertEqual([i for i, crc in samples if crc != crcs[i]], [],
                             "epoch %d: stale or wrong samples" % epoch)
            # Both workers' reads that reached the mount were served by the
            # prefetch (the kernel's page cache may answer some itself).
            self.assertEqual(after["misses"] - before["misses"], 0, "epoch %d" % epoch)
            if epoch == 0:  # nothing in the kernel's cache yet: every file came from it
                self.assertGreaterEqual(after["hits"] - before["hits"], FILES)
        self.assertEqual(len(set(map(tuple, orders))), 3, "a new permutation every epoch")

        # The same dataset through the mount without a cache: no hint is sent
        # (none can be), every sample still read right.
        plain = ReportingMountDataset(self.plain.path, paths)
        plain_sampler = EpochSampler(plain, seed=13, batch_size=BATCH, num_workers=WORKERS)
        plain_sampler.set_epoch(0)
        self.assertIs(plain.hint_sent, False)
        samples, _ = run_epoch(DataLoader(plain, batch_size=BATCH, sampler=plain_sampler,
                                          num_workers=WORKERS, collate_fn=as_list))
        self.assertEqual(sorted(i for i, _ in samples), list(range(FILES)))
        self.assertEqual([i for i, crc in samples if crc != crcs[i]], [])

    def test_paths_must_be_inside_the_file_system(self):
        with self.assertRaises(ValueError):
            MountDataset(self.cached.path, ["relative/name"])


if __name__ == "__main__":
    runner = unittest.TextTestRunner(verbosity=2, resultclass=bt.Result)
    sys.exit(not unittest.main(testRunner=runner, exit=False).result.wasSuccessful())
